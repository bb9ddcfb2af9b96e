//! Kubernetes resource quantities (`500m`, `2`, `1.5Gi`, `1e3`, `100M`) as integers.
//!
//! Every consumer (member-sim's scheduler, the cluster status controller, Flotilla's scheduler)
//! works on integers in a fixed unit: milli-units (`milli = true`, CPU and fractional extended
//! resources) or whole units (bytes, pods). Summing thousands of requests must be exact, and the
//! rounding direction is the caller's: requests round up and capacities round down, so a
//! published free capacity is never more than a member really has.

/// Which way to round a quantity that does not fall on the integer unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Round {
    /// Towards +infinity (requests: never under-reserve).
    Up,
    /// Towards -infinity (capacities: never over-promise).
    Down,
}

/// Parses a Kubernetes quantity (`1.5`, `100m`, `2Gi`, `1e3`, `3E`) into an integer in units
/// (or milli-units), rounding as asked and saturating at the i64 range.
pub fn parse(text: &str, milli: bool, round: Round) -> Option<i64> {
    let s = text.trim();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let number_len = s
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b == b'.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_len);
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
        return None;
    }
    let (mut exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (rest.parse::<i32>().ok()?, 0)
        }
    };
    // Mantissa as an integer; digits beyond i128's reach only matter for absurd values,
    // which saturate below.
    let mut mantissa: i128 = 0;
    let mut overflow = false;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        match mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(b - b'0')))
        {
            Some(m) => mantissa = m,
            None => {
                overflow = true;
                break;
            }
        }
    }
    exp10 = exp10.saturating_sub(i32::try_from(frac_part.len()).ok()?);
    if milli {
        exp10 = exp10.saturating_add(3);
    }
    let value: Option<i128> = if overflow {
        None
    } else {
        mantissa.checked_mul(1i128 << exp2).and_then(|m| {
            if exp10 >= 0 {
                10i128
                    .checked_pow(exp10.unsigned_abs())
                    .and_then(|p| m.checked_mul(p))
            } else {
                // Round the magnitude; the sign is applied after.
                let up = (round == Round::Up) != negative;
                match 10i128.checked_pow(exp10.unsigned_abs()) {
                    Some(p) => Some(m / p + i128::from(up && m % p != 0)),
                    None => Some(i128::from(up && m != 0)),
                }
            }
        })
    };
    let magnitude = value.map_or(i64::MAX, |v| i64::try_from(v).unwrap_or(i64::MAX));
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        let cases: &[(&str, bool, Round, Option<i64>)] = &[
            ("1", true, Round::Up, Some(1000)),
            ("100m", true, Round::Up, Some(100)),
            ("1.5", true, Round::Down, Some(1500)),
            ("0.0005", true, Round::Up, Some(1)),
            ("0.0005", true, Round::Down, Some(0)),
            ("2Gi", false, Round::Up, Some(2 << 30)),
            ("1.5Ki", false, Round::Up, Some(1536)),
            ("1k", false, Round::Up, Some(1000)),
            ("1e3", false, Round::Up, Some(1000)),
            ("1E", false, Round::Up, Some(1_000_000_000_000_000_000)),
            ("1500m", false, Round::Up, Some(2)),
            ("1500m", false, Round::Down, Some(1)),
            ("-1", false, Round::Up, Some(-1)),
            ("110", false, Round::Down, Some(110)),
            ("99999999999999999999Ei", false, Round::Down, Some(i64::MAX)),
            ("1n", true, Round::Up, Some(1)),
            ("abc", false, Round::Up, None),
            ("1Qi", false, Round::Up, None),
            ("", false, Round::Up, None),
            ("1.2.3", false, Round::Up, None),
            ("1e", false, Round::Up, None),
        ];
        for (text, milli, round, want) in cases {
            assert_eq!(
                parse(text, *milli, *round),
                *want,
                "{text} milli={milli} {round:?}"
            );
        }
    }

    #[test]
    fn round_trip_of_binary_suffixes() {
        assert_eq!(parse("128Mi", false, Round::Up), Some(128 << 20));
        assert_eq!(parse("-1.5", false, Round::Up), Some(-1));
        assert_eq!(parse("-1.5", false, Round::Down), Some(-2));
        assert_eq!(parse("100u", true, Round::Up), Some(1));
        assert_eq!(parse(".", false, Round::Up), None);
    }
}
