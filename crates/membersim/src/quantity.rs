//! Kubernetes resource quantities (`500m`, `2`, `128Mi`, `1G`, `1e3`) as the simulated
//! scheduler needs them: CPU in millicores and memory in bytes, rounded up.

/// Parses a quantity into thousandths of its unit (`"500m"` -> 500, `"2"` -> 2000,
/// `"1Ki"` -> 1_024_000), or `None` when it is not a quantity.
pub fn parse_milli(s: &str) -> Option<i128> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let (sign, body) = match s.as_bytes()[0] {
        b'-' => (-1i128, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let num_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(num_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    // (multiplier numerator, power-of-ten exponent) applied to the decimal number.
    let (mult, exp10): (i128, i32) = match suffix {
        "" => (1, 0),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        s if s.starts_with(['e', 'E']) => (1, s[1..].parse::<i32>().ok()?),
        _ => return None,
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int_part}{frac_part}");
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    // value = mantissa * mult * 10^(exp10 - frac_len); we want value * 1000.
    let exp = exp10 + 3 - frac_part.len() as i32;
    let scaled = mantissa.checked_mul(mult)?;
    let value = if exp >= 0 {
        scaled.checked_mul(10i128.checked_pow(exp as u32)?)?
    } else {
        let div = 10i128.checked_pow((-exp) as u32)?;
        // Round up, as Kubernetes does when a quantity is read at a coarser scale.
        (scaled + div - 1) / div
    };
    Some(sign * value)
}

/// CPU in millicores.
pub fn cpu_millis(s: &str) -> Option<i64> {
    parse_milli(s).and_then(|m| i64::try_from(m).ok())
}

/// Memory (or any plain count) in whole units, rounded up.
pub fn units(s: &str) -> Option<i64> {
    parse_milli(s).and_then(|m| i64::try_from((m + 999).div_euclid(1000)).ok())
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
        assert_eq!(cpu_millis("100u"), None);
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
        assert_eq!(parse_milli(""), None);
        assert_eq!(parse_milli("Mi"), None);
        assert_eq!(parse_milli("1..2"), None);
        assert_eq!(parse_milli("12x"), None);
    }
}
