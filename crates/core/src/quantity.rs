//! Resource quantities as Flotilla counts them: every resource is an `i64` in
//! its natural integer unit (CPU in millicores, everything else in whole units: bytes, pods,
//! devices), parsed with an explicit rounding direction and printed back canonically.
//!
//! Why integers in fixed units: summing thousands of pods' requests must be exact and cheap,
//! and the rounding direction matters for safety — requests round up and allocatable rounds
//! down, so the free capacity we publish is never more than the member really has.

use crate::resources::ResourceName;

pub use flotilla_apimachinery::quantity::Round;

/// Parses a Kubernetes quantity (`500m`, `2`, `1.5Gi`, `1e3`, `100M`) into the integer unit
/// of `resource` (millicores for CPU, whole units otherwise), saturating at the i64 range;
/// `None` when it is not a quantity.
pub fn parse(resource: &ResourceName, text: &str, round: Round) -> Option<i64> {
    flotilla_apimachinery::quantity::parse(text, resource.is_cpu(), round)
}

/// Prints a value of `resource` back as a canonical quantity: CPU as whole cores or
/// millicores, byte-sized resources with the largest binary suffix that divides them
/// exactly, other resources as plain integers.
pub fn format(resource: &ResourceName, value: i64) -> String {
    if resource.is_cpu() {
        return if value % 1000 == 0 {
            (value / 1000).to_string()
        } else {
            format!("{value}m")
        };
    }
    if resource.is_bytes() && value != 0 {
        for (suffix, shift) in [
            ("Ei", 60),
            ("Pi", 50),
            ("Ti", 40),
            ("Gi", 30),
            ("Mi", 20),
            ("Ki", 10),
        ] {
            let unit = 1i64 << shift;
            if value % unit == 0 {
                return format!("{}{suffix}", value / unit);
            }
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(s: &str, r: Round) -> Option<i64> {
        parse(&ResourceName::Cpu, s, r)
    }

    fn mem(s: &str, r: Round) -> Option<i64> {
        parse(&ResourceName::Memory, s, r)
    }

    #[test]
    fn cpu_in_millicores() {
        assert_eq!(cpu("500m", Round::Up), Some(500));
        assert_eq!(cpu("2", Round::Up), Some(2000));
        assert_eq!(cpu("0.25", Round::Up), Some(250));
        assert_eq!(cpu("1.0005", Round::Up), Some(1001));
        assert_eq!(cpu("1.0005", Round::Down), Some(1000));
        assert_eq!(cpu("1e3", Round::Up), Some(1_000_000));
        assert_eq!(cpu("100u", Round::Up), Some(1));
    }

    #[test]
    fn memory_in_bytes_rounded_as_asked() {
        assert_eq!(mem("128Mi", Round::Up), Some(128 << 20));
        assert_eq!(mem("1G", Round::Up), Some(1_000_000_000));
        assert_eq!(mem("1.5Ki", Round::Up), Some(1536));
        assert_eq!(mem("500m", Round::Up), Some(1));
        assert_eq!(mem("500m", Round::Down), Some(0));
        assert_eq!(mem("-1.5", Round::Up), Some(-1));
        assert_eq!(mem("-1.5", Round::Down), Some(-2));
        assert_eq!(mem("", Round::Up), None);
        assert_eq!(mem(".", Round::Up), None);
        assert_eq!(mem("1.2.3", Round::Up), None);
        assert_eq!(mem("12Zi", Round::Up), None);
        assert_eq!(
            mem("99999999999Ei", Round::Up),
            Some(i64::MAX),
            "absurd values saturate"
        );
    }

    #[test]
    fn canonical_output() {
        assert_eq!(format(&ResourceName::Cpu, 8000), "8");
        assert_eq!(format(&ResourceName::Cpu, 1500), "1500m");
        assert_eq!(format(&ResourceName::Cpu, 0), "0");
        assert_eq!(format(&ResourceName::Memory, 32 << 30), "32Gi");
        assert_eq!(format(&ResourceName::Memory, 1536), "1536");
        assert_eq!(format(&ResourceName::Memory, 3 << 10), "3Ki");
        assert_eq!(format(&ResourceName::Memory, 1_000_000_000), "1000000000");
        assert_eq!(format(&ResourceName::Pods, 110), "110");
        assert_eq!(format(&ResourceName::EphemeralStorage, 100 << 30), "100Gi");
        for v in [0, 1, 999, 1 << 20, (5 << 30) + 7] {
            let text = format(&ResourceName::Memory, v);
            assert_eq!(mem(&text, Round::Up), Some(v), "{text}");
        }
    }
}
