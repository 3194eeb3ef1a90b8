//! Small helpers shared by the subcommands.

use fsage_units::{Quantity, UnitError};
use std::time::Duration;

/// A duration above 0, as a clap value parser (clap names the flag in the error): the grammar
/// of fsage-units, where a bare number other than 0 is refused (`90` could be seconds or
/// minutes).
pub fn positive_duration(text: &str) -> Result<Duration, UnitError> {
    let d = fsage_units::parse_duration(text)?;
    if d.is_zero() {
        return Err(UnitError {
            text: text.trim().to_string(),
            kind: Quantity::Duration,
            reason: "must be more than 0".into(),
        });
    }
    Ok(d)
}

/// A think-time rule for costing traces (`--think`): recorded, none, median or fixed:DURATION.
pub fn parse_think(s: &str) -> Result<fsage_device::Think, fsage_device::Error> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(positive_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(positive_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(positive_duration("1.5s"), Ok(Duration::from_millis(1500)));
        let e = positive_duration("90").unwrap_err().to_string();
        assert!(e.contains("give a unit: 90s"), "{e}");
        assert!(positive_duration("0")
            .unwrap_err()
            .to_string()
            .contains("more than 0"));
        assert!(positive_duration("0s").is_err());
        assert!(positive_duration("-3s").is_err());
        assert!(positive_duration("soon").is_err());
    }
}
