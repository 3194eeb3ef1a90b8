//! Byte counts for people: printing in binary units, and parsing what people type (`--capacity`).

const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `bytes` in the largest binary unit it reaches: exact multiples without a fraction
/// (`4 KiB`), others with one decimal (`1.5 MiB`); below 1 KiB in bytes (`1000 B`).
pub fn human_bytes(bytes: u64) -> String {
    let mut exponent = 0;
    while exponent + 1 < UNITS.len() && bytes >> (10 * (exponent + 1)) > 0 {
        exponent += 1;
    }
    let scale = 1u64 << (10 * exponent);
    if bytes % scale == 0 {
        return format!("{} {}", bytes / scale, UNITS[exponent]);
    }
    let text = format!("{:.1}", bytes as f64 / scale as f64);
    // 1023.96 KiB rounds to "1024.0"; say "1.0 MiB" instead.
    if text.starts_with("1024") && exponent + 1 < UNITS.len() {
        return format!(
            "{:.1} {}",
            bytes as f64 / (scale << 10) as f64,
            UNITS[exponent + 1]
        );
    }
    format!("{text} {}", UNITS[exponent])
}

/// Parses a byte count: a number, optionally with a fraction, then an optional unit among
/// `K M G T P E`, each optionally followed by `iB`, `i` or `B`, all meaning powers of 1024
/// (`4096`, `256MiB`, `4G`, `1.5 GiB`, `10k`; case does not matter). Fractions of a unit are
/// rounded down to whole bytes; a bare number must be whole.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty size: expected a number of bytes such as 4096, 256MiB or 4G".into());
    }
    let number_end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(number_end);
    let shift = unit_shift(unit.trim()).ok_or_else(|| {
        format!("`{trimmed}`: unknown unit `{}`; use K, M, G, T, P or E, optionally followed by iB or B", unit.trim())
    })?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(format!("`{trimmed}`: expected a number before the unit"));
    }
    if fraction.contains('.') {
        return Err(format!("`{trimmed}`: more than one decimal point"));
    }
    if shift == 0 && fraction.bytes().any(|b| b != b'0') {
        return Err(format!("`{trimmed}`: a number of bytes must be whole"));
    }
    // 19 decimal digits times 2^60 still fits in a u128, so the arithmetic below is exact.
    if fraction.len() > 19 {
        return Err(format!("`{trimmed}`: too many decimal places"));
    }
    let too_large = || format!("`{trimmed}` is too large (the maximum is 16 EiB - 1 byte)");
    let whole_value = whole
        .bytes()
        .try_fold(0u128, |acc, digit| {
            acc.checked_mul(10)?.checked_add(u128::from(digit - b'0'))
        })
        .and_then(|w| w.checked_mul(1u128 << shift))
        .ok_or_else(too_large)?;
    let fraction_value = if fraction.is_empty() {
        0
    } else {
        // Digits only, at most 19 of them: no overflow.
        let digits: u128 = fraction
            .bytes()
            .fold(0, |acc, d| acc * 10 + u128::from(d - b'0'));
        (digits << shift) / 10u128.pow(fraction.len() as u32)
    };
    whole_value
        .checked_add(fraction_value)
        .and_then(|total| u64::try_from(total).ok())
        .ok_or_else(too_large)
}

/// log2 of the unit's size, `None` if it is not a unit we know.
fn unit_shift(unit: &str) -> Option<u32> {
    let lower = unit.to_ascii_lowercase();
    let prefix = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('i'))
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let shift = match prefix {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        "e" => 60,
        _ => return None,
    };
    // "iB" and "i" need a prefix: "5i" is not a unit.
    (shift != 0 || lower.is_empty() || lower == "b").then_some(shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn human_bytes_picks_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1000), "1000 B");
        assert_eq!(human_bytes(1024), "1 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes((1 << 20) - 1), "1.0 MiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
        assert_eq!(human_bytes(34_359_738_368), "32 GiB");
    }

    #[test]
    fn parse_size_accepts_the_usual_spellings() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("4gb"), Ok(4 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("10k"), Ok(10240));
        assert_eq!(parse_size(" 2 TiB "), Ok(2 << 40));
        assert_eq!(parse_size("5Ki"), Ok(5120));
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("0.5K"), Ok(512));
        assert_eq!(parse_size("0.1K"), Ok(102));
        assert_eq!(parse_size(".5K"), Ok(512));
        assert_eq!(
            parse_size("15.99999999999999999999E").unwrap_err(),
            "`15.99999999999999999999E`: too many decimal places"
        );
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn parse_size_says_what_is_wrong() {
        let err = |s: &str| parse_size(s).unwrap_err();
        assert!(err("").contains("empty"));
        assert!(err("4X").contains("unknown unit `X`"));
        assert!(err("-4G").contains("unknown unit `-4G`"));
        assert!(err("G").contains("expected a number"));
        assert!(err("1.2.3K").contains("decimal point"));
        assert!(err("1.5").contains("whole"));
        assert!(err("16E").contains("too large"));
        assert!(err("18446744073709551616").contains("too large"));
        assert!(err("99999999999999999999999999999999999999999999").contains("too large"));
        assert!(err("5i").contains("unknown unit"));
    }

    proptest! {
        #[test]
        fn parse_size_never_panics(s in ".*") {
            let _ = parse_size(&s);
        }

        #[test]
        fn exact_human_bytes_parse_back(n in 0u64..1 << 20, exponent in 0u32..5) {
            let bytes = n << (10 * exponent);
            let text = human_bytes(bytes);
            if !text.contains('.') {
                prop_assert_eq!(parse_size(&text), Ok(bytes));
            }
        }
    }
}

/// A duration for people: "7.4s", "42s", "3m 05s", "1h 02m", "12 days" (estimates of long runs
/// reach years). The one duration formatter of fsage.
pub fn human_duration(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return format!("{secs}s");
    }
    if secs < 10.0 {
        return format!("{secs:.1}s");
    }
    let s = secs.round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, _) if h < 48 => format!("{h}h {m:02}m"),
        (h, _, _) => format!("{} days", (h as f64 / 24.0).round()),
    }
}

/// A percentage (`p` in percent) to three significant digits, with its sign: relative age edges
/// span many orders of magnitude (age bins of extracted profiles reach 1e-7 %). The one percentage
/// formatter of fsage's tables.
pub fn percent(p: f64) -> String {
    if p <= 0.0 || !p.is_finite() {
        return format!("{p}%");
    }
    let decimals = (2.0 - p.log10().floor()).clamp(0.0, 12.0) as usize;
    format!("{p:.decimals$}%")
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(7.44), "7.4s");
        assert_eq!(human_duration(42.0), "42s");
        assert_eq!(human_duration(185.0), "3m 05s");
        assert_eq!(human_duration(3720.0), "1h 02m");
        assert_eq!(human_duration(47.0 * 3600.0), "47h 00m");
        assert_eq!(human_duration(12.0 * 86400.0), "12 days");
    }

    #[test]
    fn percentages_keep_small_values_readable() {
        assert_eq!(percent(100.0), "100%");
        assert_eq!(percent(41.234), "41.2%");
        assert_eq!(percent(1.5625), "1.56%");
        assert_eq!(percent(0.0122), "0.0122%");
        assert_eq!(percent(0.5), "0.500%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.000_012_34), "0.0000123%");
        assert_ne!(percent(1e-9), "0.000%");
    }
}
