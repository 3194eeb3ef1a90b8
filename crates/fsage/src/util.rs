//! Small helpers shared by the subcommands.

use crate::exit::{bad_input, CmdError};
use std::time::Duration;

/// "90s", "30m", "2h", "1d", "1.5h" or a bare number of seconds.
pub fn parse_duration(flag: &str, text: &str) -> Result<Duration, CmdError> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        Some((i, 'd')) => (&t[..i], 86400.0),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * mult < 1e12 => Ok(Duration::from_secs_f64(v * mult)),
        _ => Err(bad_input(format!(
            "{flag} {text:?}: expected a positive duration such as 90s, 30m, 2h or a number of seconds"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("--max-time", "90s").unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            parse_duration("--max-time", "2h").unwrap(),
            Duration::from_secs(7200)
        );
        assert_eq!(
            parse_duration("--max-time", "1.5").unwrap(),
            Duration::from_millis(1500)
        );
        let e = parse_duration("--max-time", "soon").unwrap_err();
        assert!(e.to_string().contains("--max-time"), "{e}");
        assert!(parse_duration("--max-time", "-3s").is_err());
    }
}
