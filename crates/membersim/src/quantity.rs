//! Kubernetes resource quantities as the simulated scheduler needs them: CPU in millicores
//! and memory or counts in whole units, rounded up (requests never under-count).

use flotilla_apimachinery::quantity::{Round, parse};

/// CPU in millicores.
pub fn cpu_millis(s: &str) -> Option<i64> {
    parse(s, true, Round::Up)
}

/// Memory (or any plain count) in whole units, rounded up.
pub fn units(s: &str) -> Option<i64> {
    parse(s, false, Round::Up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu() {
        assert_eq!(cpu_millis("500m"), Some(500));
        assert_eq!(cpu_millis("2"), Some(2000));
        assert_eq!(cpu_millis("0.5"), Some(500));
        assert_eq!(cpu_millis("1.25"), Some(1250));
        assert_eq!(cpu_millis("100u"), Some(1));
        assert_eq!(cpu_millis("0.0001"), Some(1));
    }

    #[test]
    fn memory() {
        assert_eq!(units("128Mi"), Some(128 * 1024 * 1024));
        assert_eq!(units("1Gi"), Some(1 << 30));
        assert_eq!(units("1G"), Some(1_000_000_000));
        assert_eq!(units("1000"), Some(1000));
        assert_eq!(units("1.5Gi"), Some(3 << 29));
        assert_eq!(units("1e3"), Some(1000));
        assert_eq!(units("2k"), Some(2000));
        assert_eq!(units("8Gi"), Some(8 << 30));
    }

    #[test]
    fn invalid() {
        for bad in ["", "Mi", "1..2", "12x"] {
            assert_eq!(units(bad), None, "{bad}");
        }
    }
}
