//! Human durations as kubectl users read them in `AGE`-like columns: `45s`, `3m20s`, `5h12m`,
//! `3d4h`, `2y100d`. The precision shrinks as the duration grows (two or three significant
//! figures), and the breakpoints match what kube-apiserver prints so that a Flotilla table looks
//! like a Kubernetes one.

use chrono::{DateTime, Duration, Utc};

const MINUTE: i64 = 60;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
const YEAR: i64 = 365 * DAY;

/// Formats a duration the way Kubernetes prints ages.
///
/// Clocks of different machines disagree a little, so a duration down to one second in the
/// future still reads `0s`; anything further in the future is `<invalid>`.
pub fn human_duration(d: Duration) -> String {
    // Whole seconds, truncated toward zero: -1.5s counts as -1s (tolerated), -2s does not.
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 2 * MINUTE {
        return format!("{seconds}s");
    }
    let minutes = seconds / MINUTE;
    if minutes < 10 {
        let s = seconds % MINUTE;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = seconds / HOUR;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = seconds / DAY;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if seconds < 2 * YEAR {
        return format!("{days}d");
    }
    let years = seconds / YEAR;
    if seconds < 8 * YEAR {
        let d = days % 365;
        return if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        };
    }
    format!("{years}y")
}

/// Parses an RFC 3339 timestamp (`metadata.creationTimestamp`, `MicroTime` fields) into UTC.
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The age of an object created at `creation_timestamp` (RFC 3339) as of `now`;
/// `<unknown>` when the timestamp is missing, empty or unparsable.
pub fn age(creation_timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    match creation_timestamp.and_then(parse_timestamp) {
        Some(created) => human_duration(now.signed_duration_since(created)),
        None => "<unknown>".to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn secs(s: i64) -> String {
        human_duration(Duration::seconds(s))
    }

    #[test]
    fn seconds_up_to_two_minutes() {
        assert_eq!(secs(0), "0s");
        assert_eq!(secs(45), "45s");
        assert_eq!(secs(119), "119s");
    }

    #[test]
    fn minutes_and_seconds_under_ten_minutes() {
        assert_eq!(secs(120), "2m");
        assert_eq!(secs(200), "3m20s");
        assert_eq!(secs(599), "9m59s");
    }

    #[test]
    fn minutes_under_three_hours() {
        assert_eq!(secs(600), "10m");
        assert_eq!(secs(601), "10m");
        assert_eq!(secs(3 * HOUR - 1), "179m");
    }

    #[test]
    fn hours_and_minutes_under_eight_hours() {
        assert_eq!(secs(3 * HOUR), "3h");
        assert_eq!(secs(5 * HOUR + 12 * MINUTE + 30), "5h12m");
        assert_eq!(secs(8 * HOUR - 1), "7h59m");
    }

    #[test]
    fn hours_under_two_days() {
        assert_eq!(secs(8 * HOUR), "8h");
        assert_eq!(secs(47 * HOUR + 59 * MINUTE), "47h");
    }

    #[test]
    fn days_and_hours_under_eight_days() {
        assert_eq!(secs(2 * DAY), "2d");
        assert_eq!(secs(3 * DAY + 4 * HOUR + 5 * MINUTE), "3d4h");
        assert_eq!(secs(8 * DAY - 1), "7d23h");
    }

    #[test]
    fn days_under_two_years() {
        assert_eq!(secs(8 * DAY), "8d");
        assert_eq!(secs(45 * DAY + 3 * HOUR), "45d");
        assert_eq!(secs(2 * YEAR - 1), "729d");
    }

    #[test]
    fn years_and_days() {
        assert_eq!(secs(2 * YEAR), "2y");
        assert_eq!(secs(2 * YEAR + 100 * DAY), "2y100d");
        assert_eq!(secs(8 * YEAR - 1), "7y364d");
        assert_eq!(secs(8 * YEAR), "8y");
        assert_eq!(secs(20 * YEAR + 100 * DAY), "20y");
    }

    #[test]
    fn future_within_clock_skew_is_zero() {
        assert_eq!(human_duration(Duration::milliseconds(-500)), "0s");
        assert_eq!(human_duration(Duration::milliseconds(-1500)), "0s");
        assert_eq!(secs(-1), "0s");
        assert_eq!(secs(-2), "<invalid>");
        assert_eq!(secs(-3600), "<invalid>");
    }

    #[test]
    fn age_from_creation_timestamp() {
        let now = parse_timestamp("2024-05-01T12:00:00Z").unwrap();
        assert_eq!(age(Some("2024-05-01T11:56:40Z"), now), "3m20s");
        assert_eq!(age(Some("2024-04-28T08:00:00Z"), now), "3d4h");
        assert_eq!(age(Some("2024-05-01T13:00:00+01:00"), now), "0s");
        assert_eq!(age(Some("2024-05-01T11:59:59.500000Z"), now), "0s");
        assert_eq!(age(None, now), "<unknown>");
        assert_eq!(age(Some(""), now), "<unknown>");
        assert_eq!(age(Some("yesterday"), now), "<unknown>");
    }
}
