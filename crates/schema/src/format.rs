//! The `format` keyword: which formats are checked and how. Unknown formats are accepted (kube is
//! lenient there), and formats only apply to the kinds they describe.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;

/// `Some(true)` when `v` satisfies `format`, `Some(false)` when it does not, `None` when the
/// format is unknown or does not apply to this kind of value.
pub(crate) fn check(format: &str, v: &Value) -> Option<bool> {
    match v {
        Value::Number(n) => match format {
            "int32" => Some(
                n.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
                    || n.as_f64().is_some_and(|f| {
                        f.fract() == 0.0 && f >= f64::from(i32::MIN) && f <= f64::from(i32::MAX)
                    }),
            ),
            "int64" => {
                Some(n.is_i64() || n.as_f64().is_some_and(|f| f.fract() == 0.0 && !n.is_u64()))
            }
            _ => None,
        },
        Value::String(s) => string_format(format, s),
        _ => None,
    }
}

fn string_format(format: &str, s: &str) -> Option<bool> {
    Some(match format {
        "date-time" | "datetime" => is_date_time(s),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "byte" => is_base64(s),
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some('3')),
        "uuid4" => is_uuid(s, Some('4')),
        "uuid5" => is_uuid(s, Some('5')),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        _ => return None,
    })
}

fn is_date_time(s: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(s).is_ok()
        // Also accepted by kube: no zone, and a zone offset without a colon.
        || chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
        || chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%z").is_ok()
}

/// Standard base64 with padding (what Go's `StdEncoding` decodes).
fn is_base64(s: &str) -> bool {
    if !s.len().is_multiple_of(4) {
        return false;
    }
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2 {
        return false;
    }
    body.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn is_uuid(s: &str, version: Option<char>) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if groups.len() != lens.len()
        || groups
            .iter()
            .zip(lens)
            .any(|(g, n)| g.len() != n || !g.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            let version_ok = groups[2].starts_with(v);
            // Versioned UUIDs also carry the RFC 4122 variant (8, 9, a or b).
            let variant_ok = groups[3]
                .chars()
                .next()
                .is_some_and(|c| matches!(c.to_ascii_lowercase(), '8' | '9' | 'a' | 'b'));
            version_ok && variant_ok
        }
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Colon- or hyphen-separated MAC-48/EUI-64/20-octet addresses, or dotted 4-hex-digit groups.
fn is_mac(s: &str) -> bool {
    let hex = |g: &str, n: usize| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit());
    for sep in [':', '-'] {
        let parts: Vec<&str> = s.split(sep).collect();
        if matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2)) {
            return true;
        }
    }
    let parts: Vec<&str> = s.split('.').collect();
    matches!(parts.len(), 3 | 4 | 10) && parts.iter().all(|p| hex(p, 4))
}

fn is_hostname(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    !s.is_empty()
        && s.len() <= 255
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats() {
        let cases = [
            ("int32", json!(2147483647), Some(true)),
            ("int32", json!(2147483648_i64), Some(false)),
            ("int64", json!(9223372036854775807_i64), Some(true)),
            ("int64", json!(18446744073709551615_u64), Some(false)),
            ("int32", json!("12"), None),
            ("date-time", json!("2024-01-02T03:04:05Z"), Some(true)),
            (
                "date-time",
                json!("2024-01-02T03:04:05.123+02:00"),
                Some(true),
            ),
            ("date-time", json!("2024-01-02T03:04:05"), Some(true)),
            ("date-time", json!("yesterday"), Some(false)),
            ("date", json!("2024-02-30"), Some(false)),
            ("date", json!("2024-02-29"), Some(true)),
            ("byte", json!("aGVsbG8="), Some(true)),
            ("byte", json!(""), Some(true)),
            ("byte", json!("aGVsbG8"), Some(false)),
            ("byte", json!("a*==aaaa"), Some(false)),
            (
                "uuid",
                json!("123e4567-E89B-12d3-a456-426614174000"),
                Some(true),
            ),
            (
                "uuid",
                json!("123e4567-e89b-12d3-a456-42661417400"),
                Some(false),
            ),
            (
                "uuid4",
                json!("123e4567-e89b-42d3-a456-426614174000"),
                Some(true),
            ),
            (
                "uuid4",
                json!("123e4567-e89b-12d3-a456-426614174000"),
                Some(false),
            ),
            ("ipv4", json!("10.0.0.1"), Some(true)),
            ("ipv4", json!("10.0.0.256"), Some(false)),
            ("ipv6", json!("fe80::1"), Some(true)),
            ("cidr", json!("10.0.0.0/8"), Some(true)),
            ("cidr", json!("10.0.0.0/33"), Some(false)),
            ("mac", json!("01:23:45:67:89:ab"), Some(true)),
            ("mac", json!("01:23:45:67:89"), Some(false)),
            ("hostname", json!("a-b.example.com"), Some(true)),
            ("hostname", json!("-a.example.com"), Some(false)),
            ("color", json!("blue"), None),
            ("uuid", json!(5), None),
        ];
        for (format, value, want) in cases {
            assert_eq!(check(format, &value), want, "{format} {value}");
        }
    }
}
