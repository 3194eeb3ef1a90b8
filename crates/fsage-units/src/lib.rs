//! The one grammar of quantities in fsage: every flag, experiment file, device model file and
//! report option that takes a size, a duration, a latency or a bandwidth reads it here, and every
//! table prints it here, so that what one place accepts every place accepts.
//!
//! # The rule
//!
//! A quantity is a number (digits, optionally with a decimal fraction: `1.5`, `.5`), then a unit;
//! spaces may stand between them, and the case of letters does not matter. Quantities are never
//! negative.
//!
//! - **Sizes** (bytes): no unit or `B` means bytes and must be whole. `K`, `M`, `G`, `T`, `P`,
//!   `E`, alone or followed by `i` or `iB`, are powers of 1024 (`4G` = `4GiB` = 4 × 2³⁰).
//!   `KB`, `MB`, `GB`, `TB`, `PB`, `EB` are powers of 1000 (`205MB` = 205 × 10⁶), as in drive
//!   datasheets and GNU coreutils. A fraction of a unit is rounded down to whole bytes.
//! - **Durations and latencies**: `ns`, `us` (or `µs`), `ms`, `s`, `m` (or `min`), `h`, `d`. A
//!   number without a unit is refused, except `0`: a bare `5` could mean seconds or
//!   microseconds. Rounded to the nearest nanosecond. A latency is a duration of at most
//!   [`LATENCY_MAX_NS`] (60 s).
//! - **Bandwidths**: a size per second, the `/s` optional: `205MB/s`, `1.5GiB/s`, `500MiB`.
//!   Never 0.
//!
//! Printing: [`format_size`] (binary units, `1.5 GiB`), [`format_latency`] (`250 ns`, `100 µs`,
//! `1.5 ms`, `2 s`: exact to the nanosecond, and read back by [`parse_latency`]),
//! [`format_latency_round`] (measured latencies to three digits: `1.23 ms`),
//! [`format_duration`] (run lengths for people: `3m 05s`), [`format_bandwidth`] (`205 MB/s`).

use std::time::Duration;

/// The longest latency a device or an experiment accepts.
pub const LATENCY_MAX_NS: u64 = 60_000_000_000;

/// The rule in one line, for help texts and error hints.
pub const GRAMMAR: &str = "sizes: 4096, 4KiB, 4K (×1024), 4KB (×1000); durations: 250ns, 10us, \
                           1.5ms, 2s, 5m, 1h, 1d (a bare number only for 0); bandwidths: 205MB/s";

/// What kind of quantity a text was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Size,
    Duration,
    Latency,
    Bandwidth,
}

impl Quantity {
    fn name(self) -> &'static str {
        match self {
            Quantity::Size => "size",
            Quantity::Duration => "duration",
            Quantity::Latency => "latency",
            Quantity::Bandwidth => "bandwidth",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Quantity::Size => "sizes",
            Quantity::Duration => "durations",
            Quantity::Latency => "latencies",
            Quantity::Bandwidth => "bandwidths",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Quantity::Size => "4096, 256MiB, 4G or 205MB",
            Quantity::Duration => "90s, 30m, 2h or 1.5ms",
            Quantity::Latency => "0, 250ns, 100us or 1.5ms",
            Quantity::Bandwidth => "205MB/s or 1GiB/s",
        }
    }
}

/// A text that is not a quantity of the kind asked for: names the text, the kind, what is wrong
/// and an example of what would do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a {}: {reason} (e.g. {})", kind.name(), kind.example())]
pub struct UnitError {
    pub text: String,
    pub kind: Quantity,
    pub reason: String,
}

fn err(text: &str, kind: Quantity, reason: impl Into<String>) -> UnitError {
    UnitError {
        text: text.trim().to_string(),
        kind,
        reason: reason.into(),
    }
}

/// A number split from its unit: whole digits, fraction digits, and the unit text.
struct Number<'a> {
    whole: &'a str,
    fraction: &'a str,
    unit: &'a str,
}

fn split_number(text: &str, kind: Quantity) -> Result<Number<'_>, UnitError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(err(text, kind, "empty"));
    }
    if t.starts_with('-') {
        return Err(err(
            text,
            kind,
            format!("{} cannot be negative", kind.plural()),
        ));
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(err(text, kind, "no number before the unit"));
    }
    if fraction.contains('.') {
        return Err(err(text, kind, "more than one decimal point"));
    }
    if whole.len() > 30 || fraction.len() > 19 {
        return Err(err(text, kind, "too many digits"));
    }
    Ok(Number {
        whole,
        fraction,
        unit: unit.trim(),
    })
}

/// `number × scale` exactly, the fraction rounded down (`nearest`: to the nearest).
fn scaled(n: &Number, scale: u128, nearest: bool) -> Option<u128> {
    let digits = |s: &str| {
        s.bytes().try_fold(0u128, |a, d| {
            a.checked_mul(10)?.checked_add(u128::from(d - b'0'))
        })
    };
    let whole = digits(n.whole)?.checked_mul(scale)?;
    if n.fraction.is_empty() {
        return Some(whole);
    }
    let den = 10u128.pow(n.fraction.len() as u32);
    let num = digits(n.fraction)?.checked_mul(scale)?;
    let frac = if nearest {
        (num + den / 2) / den
    } else {
        num / den
    };
    whole.checked_add(frac)
}

/// The multiplier of a size unit, `None` if it is not one.
fn size_scale(unit: &str) -> Option<u128> {
    let u = unit.to_ascii_lowercase();
    let (prefix, binary) = if let Some(p) = u.strip_suffix("ib") {
        (p, true)
    } else if let Some(p) = u.strip_suffix('i') {
        (p, true)
    } else if let Some(p) = u.strip_suffix('b') {
        (p, p.is_empty())
    } else {
        (u.as_str(), true)
    };
    let power = match prefix {
        "" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        "e" => 6,
        _ => return None,
    };
    // "iB" and "i" need a prefix: "5i" is not a unit.
    if power == 0 && (u == "i" || u == "ib") {
        return None;
    }
    Some(if binary {
        1u128 << (10 * power)
    } else {
        1000u128.pow(power)
    })
}

/// Parses a size in bytes (see the rule at the top).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let k = Quantity::Size;
    let n = split_number(text, k)?;
    let scale = size_scale(n.unit).ok_or_else(|| {
        err(
            text,
            k,
            format!(
                "unknown unit `{}` (use B, K, M, G, T, P, E, optionally followed by iB, or KB, MB, \
                 GB... for powers of 1000)",
                n.unit
            ),
        )
    })?;
    if scale == 1 && n.fraction.bytes().any(|b| b != b'0') {
        return Err(err(text, k, "a number of bytes must be whole"));
    }
    scaled(&n, scale, false)
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| err(text, k, "too large (at most 16 EiB - 1 byte)"))
}

/// Nanoseconds per duration unit, `None` if it is not one.
fn duration_scale(unit: &str) -> Option<u128> {
    Some(match unit.to_lowercase().as_str() {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    })
}

fn parse_ns(text: &str, k: Quantity) -> Result<u64, UnitError> {
    let n = split_number(text, k)?;
    let scale = if n.unit.is_empty() {
        if n.whole.bytes().chain(n.fraction.bytes()).all(|b| b == b'0') {
            return Ok(0);
        }
        return Err(err(
            text,
            k,
            format!(
                "give a unit: {}s, {}ms, {}us...",
                text.trim(),
                text.trim(),
                text.trim()
            ),
        ));
    } else {
        duration_scale(n.unit).ok_or_else(|| {
            err(
                text,
                k,
                format!("unknown unit `{}` (use ns, us, ms, s, m, h or d)", n.unit),
            )
        })?
    };
    scaled(&n, scale, true)
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| err(text, k, "too long"))
}

/// Parses a duration (see the rule at the top).
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    parse_ns(text, Quantity::Duration).map(Duration::from_nanos)
}

/// Parses a latency in nanoseconds: a duration of at most [`LATENCY_MAX_NS`].
pub fn parse_latency(text: &str) -> Result<u64, UnitError> {
    let ns = parse_ns(text, Quantity::Latency)?;
    if ns > LATENCY_MAX_NS {
        return Err(err(text, Quantity::Latency, "at most 60s"));
    }
    Ok(ns)
}

/// Parses a bandwidth in bytes per second (see the rule at the top).
pub fn parse_bandwidth(text: &str) -> Result<u64, UnitError> {
    let k = Quantity::Bandwidth;
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let bytes = parse_size(t).map_err(|e| err(text, k, e.reason))?;
    if bytes == 0 {
        return Err(err(text, k, "must be more than 0"));
    }
    Ok(bytes)
}

const BINARY: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `bytes` in the largest binary unit it reaches: exact multiples without a fraction (`4 KiB`),
/// others with one decimal (`1.5 MiB`); below 1 KiB in bytes (`1000 B`).
pub fn format_size(bytes: u64) -> String {
    let mut exp = 0;
    while exp + 1 < BINARY.len() && bytes >> (10 * (exp + 1)) > 0 {
        exp += 1;
    }
    let scale = 1u64 << (10 * exp);
    if bytes % scale == 0 {
        return format!("{} {}", bytes / scale, BINARY[exp]);
    }
    let text = format!("{:.1}", bytes as f64 / scale as f64);
    // 1023.96 KiB rounds to "1024.0"; say "1.0 MiB" instead.
    if text.starts_with("1024") && exp + 1 < BINARY.len() {
        return format!(
            "{:.1} {}",
            bytes as f64 / (scale << 10) as f64,
            BINARY[exp + 1]
        );
    }
    format!("{text} {}", BINARY[exp])
}

/// A latency, exact to the nanosecond in the largest unit that keeps it to three decimals:
/// `0`, `250 ns`, `100 µs`, `1.5 ms`, `2 s`. [`parse_latency`] reads it back.
pub fn format_latency(ns: u64) -> String {
    if ns == 0 {
        return "0".into();
    }
    let (scale, unit) = if ns < 1_000 {
        (1, "ns")
    } else if ns < 1_000_000 {
        (1_000, "µs")
    } else if ns < 1_000_000_000 {
        (1_000_000, "ms")
    } else {
        (1_000_000_000, "s")
    };
    let whole = ns / scale;
    let frac = ns % scale;
    if frac == 0 {
        return format!("{whole} {unit}");
    }
    let digits = scale.ilog10() as usize;
    let f = format!("{frac:0digits$}");
    format!("{whole}.{} {unit}", f.trim_end_matches('0'))
}

/// A latency given in (fractional) microseconds, as the analyses keep them.
pub fn format_latency_us(us: f64) -> String {
    if !us.is_finite() || us < 0.0 {
        return format!("{us} µs");
    }
    format_latency((us * 1e3).round() as u64)
}

/// A measured latency (in µs, as the analyses keep them) to three significant digits, in the
/// unit that keeps it between 1 and 1000: `0`, `250 ns`, `12.3 µs`, `456 µs`, `1.23 ms`, `2 s`.
/// For measurements and axis ticks, where digits past the third are noise; settings print
/// exactly with [`format_latency`].
pub fn format_latency_round(us: f64) -> String {
    if !us.is_finite() || us < 0.0 {
        return format!("{us} µs");
    }
    let ns = us * 1e3;
    if ns == 0.0 {
        return "0".into();
    }
    // Round to three significant digits first, so that 999.7 µs becomes 1 ms.
    let step = 10f64.powi(ns.log10().floor() as i32 - 2);
    let ns = (ns / step).round() * step;
    let (scale, unit) = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        .into_iter()
        .find(|&(scale, _)| ns >= scale)
        .unwrap_or((1.0, "ns"));
    let v = ns / scale;
    let decimals = (2 - v.log10().floor() as i32).clamp(0, 3) as usize;
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

/// A duration for people: `7.4s`, `42s`, `3m 05s`, `1h 02m`, `12 days` (estimates of long runs
/// reach years).
pub fn format_duration(secs: f64) -> String {
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

/// A count per second for a progress line, in three or four digits: `512`, `27.9k`, `1.25M` (the
/// unit, `ops/s` or `ticks/s`, is the caller's).
pub fn format_rate(per_s: f64) -> String {
    if !per_s.is_finite() || per_s < 0.0 {
        format!("{per_s}")
    } else if per_s >= 999_950.0 {
        format!("{:.2}M", per_s / 1e6)
    } else if per_s >= 999.5 {
        format!("{:.1}k", per_s / 1e3)
    } else {
        format!("{per_s:.0}")
    }
}

/// A bandwidth in decimal units, as datasheets give them: `205 MB/s`, `1.2 GB/s`, `512 B/s`.
pub fn format_bandwidth(bytes_per_s: f64) -> String {
    let units = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let mut v = bytes_per_s;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    let s = if v >= 100.0 || i == 0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    };
    format!("{s} {}", units[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_binary_and_decimal() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("4gib"), Ok(4 << 30));
        assert_eq!(parse_size("4Gi"), Ok(4 << 30));
        assert_eq!(parse_size("205MB"), Ok(205_000_000));
        assert_eq!(parse_size("1 TB"), Ok(1_000_000_000_000));
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_size(".5K"), Ok(512));
        assert_eq!(parse_size("0.1K"), Ok(102));
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        let e = |s| parse_size(s).unwrap_err().to_string();
        assert!(e("-5GiB").contains("cannot be negative"), "{}", e("-5GiB"));
        assert!(e("4X").contains("unknown unit `X`"));
        assert!(e("1.5").contains("whole"));
        assert!(e("16E").contains("too large"));
        assert!(e("5i").contains("unknown unit"));
        assert!(e("").contains("empty"));
        assert!(e("G").contains("no number"));
        assert!(e("1.2.3K").contains("decimal point"));
    }

    #[test]
    fn durations_need_a_unit_except_zero() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("30min"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_latency("10µs"), Ok(10_000));
        assert_eq!(parse_latency("10 us"), Ok(10_000));
        assert_eq!(parse_latency("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_latency("250ns"), Ok(250));
        assert_eq!(parse_latency("0.0"), Ok(0));
        assert_eq!(parse_latency("60s"), Ok(LATENCY_MAX_NS));
        let e = |s| parse_latency(s).unwrap_err().to_string();
        assert!(e("5").contains("give a unit"), "{}", e("5"));
        assert!(e("61s").contains("at most 60s"));
        assert!(
            e("-1ms").contains("latencies cannot be negative"),
            "{}",
            e("-1ms")
        );
        assert!(e("1fortnight").contains("unknown unit"));
    }

    #[test]
    fn bandwidths() {
        assert_eq!(parse_bandwidth("205MB/s"), Ok(205_000_000));
        assert_eq!(parse_bandwidth("1MiB/s"), Ok(1 << 20));
        assert_eq!(parse_bandwidth("500MiB"), Ok(500 << 20));
        assert!(parse_bandwidth("0/s").is_err());
        assert!(parse_bandwidth("fast").is_err());
        assert_eq!(format_bandwidth(205e6), "205 MB/s");
        assert_eq!(format_bandwidth(1.25e9), "1.2 GB/s");
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size((1 << 20) - 1), "1.0 MiB");
        assert_eq!(format_size(u64::MAX), "16.0 EiB");
        assert_eq!(format_latency(0), "0");
        assert_eq!(format_latency(250), "250 ns");
        assert_eq!(format_latency(100_000), "100 µs");
        assert_eq!(format_latency(1_500_000), "1.5 ms");
        assert_eq!(format_latency(1_000_001), "1.000001 ms");
        assert_eq!(format_latency(2_000_000_000), "2 s");
        assert_eq!(format_latency_us(100.0), "100 µs");
        assert_eq!(format_latency_round(0.0), "0");
        assert_eq!(format_latency_round(0.25), "250 ns");
        assert_eq!(format_latency_round(12.345), "12.3 µs");
        assert_eq!(format_latency_round(456.4), "456 µs");
        assert_eq!(format_latency_round(999.7), "1 ms");
        assert_eq!(format_latency_round(1234.5), "1.23 ms");
        assert_eq!(format_latency_round(10_000.0), "10 ms");
        assert_eq!(format_latency_round(2e6), "2 s");
        assert_eq!(format_latency_round(0.0005), "0.5 ns");
        assert_eq!(format_duration(185.0), "3m 05s");
        assert_eq!(format_duration(12.0 * 86400.0), "12 days");
        assert_eq!(format_rate(512.4), "512");
        assert_eq!(format_rate(27_912.0), "27.9k");
        assert_eq!(format_rate(1_254_000.0), "1.25M");
        assert_eq!(format_rate(f64::NAN), "NaN");
        // No "1000.0k": a value that rounds up moves to the next unit.
        assert_eq!(format_rate(999_990.0), "1.00M");
        assert_eq!(format_rate(999.7), "1.0k");
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in ".*") {
            let _ = parse_size(&s);
            let _ = parse_duration(&s);
            let _ = parse_latency(&s);
            let _ = parse_bandwidth(&s);
        }

        #[test]
        fn latencies_print_and_read_back(ns in 0u64..=LATENCY_MAX_NS) {
            prop_assert_eq!(parse_latency(&format_latency(ns)), Ok(ns));
        }

        #[test]
        fn exact_sizes_print_and_read_back(n in 0u64..1 << 20, e in 0u32..5) {
            let b = n << (10 * e);
            let t = format_size(b);
            if !t.contains('.') {
                prop_assert_eq!(parse_size(&t), Ok(b));
            }
        }
    }
}
