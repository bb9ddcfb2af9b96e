//! The allocator's own view of the process's memory, for `/metrics`: RSS alone cannot say
//! how much of a component's memory is live objects and how much is the allocator's slack
//! (pages it keeps dirty, partly used slabs), and the two are fixed differently.

/// The heap gauges as OpenMetrics text, without `# EOF`; empty when the allocator keeps no
/// statistics (`--features system-allocator`) or cannot read them.
#[cfg(not(feature = "system-allocator"))]
pub fn metrics_text() -> String {
    use std::fmt::Write;
    use tikv_jemalloc_ctl::{epoch, stats};
    // jemalloc refreshes its statistics only when the epoch moves.
    if epoch::advance().is_err() {
        return String::new();
    }
    let gauges: [(&str, &str, Result<usize, tikv_jemalloc_ctl::Error>); 4] = [
        (
            "allocated",
            "Bytes in objects the process has allocated and not freed.",
            stats::allocated::read(),
        ),
        (
            "active",
            "Bytes in pages holding allocated objects (allocated plus slab slack).",
            stats::active::read(),
        ),
        (
            "resident",
            "Bytes of the allocator's pages in physical memory, metadata and dirty pages \
             included.",
            stats::resident::read(),
        ),
        (
            "retained",
            "Bytes of virtual memory the allocator keeps mapped but has returned to the \
             system.",
            stats::retained::read(),
        ),
    ];
    let mut text = String::new();
    for (name, help, value) in gauges {
        let Ok(value) = value else { continue };
        let _ = writeln!(text, "# TYPE flotilla_heap_{name}_bytes gauge");
        let _ = writeln!(text, "# UNIT flotilla_heap_{name}_bytes bytes");
        let _ = writeln!(text, "# HELP flotilla_heap_{name}_bytes {help}");
        let _ = writeln!(text, "flotilla_heap_{name}_bytes {value}");
    }
    text
}

#[cfg(feature = "system-allocator")]
pub fn metrics_text() -> String {
    String::new()
}

#[cfg(all(test, not(feature = "system-allocator")))]
mod tests {
    /// Reads a gauge's value out of the exposition.
    fn gauge(text: &str, name: &str) -> u64 {
        let prefix = format!("flotilla_heap_{name}_bytes ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} gauge in {text}"))
    }

    #[test]
    fn the_gauges_follow_what_the_process_allocates() {
        // Other tests of this binary allocate and free meanwhile: 256 MiB held, and a margin
        // of 64 MiB for them either way.
        const HELD: u64 = 256 << 20;
        const MARGIN: u64 = 64 << 20;
        let before = gauge(&super::metrics_text(), "allocated");
        let held = vec![7u8; 256 << 20];
        let during = super::metrics_text();
        assert!(
            gauge(&during, "allocated") >= before + HELD - MARGIN,
            "256 MiB held: {during}"
        );
        assert!(gauge(&during, "active") >= gauge(&during, "allocated"));
        assert!(gauge(&during, "resident") >= HELD - MARGIN);
        drop(held);
        let after = gauge(&super::metrics_text(), "allocated");
        assert!(
            after + HELD - MARGIN <= gauge(&during, "allocated"),
            "256 MiB freed: {after}"
        );
    }
}
