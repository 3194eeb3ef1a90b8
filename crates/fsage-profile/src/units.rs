//! Quantities for people. Sizes and durations are fsage-units' (the one grammar and its
//! printers), re-exported under the names this crate's users know; percentages are here.

pub use fsage_units::{
    format_duration as human_duration, format_size as human_bytes, parse_size, UnitError,
};

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
