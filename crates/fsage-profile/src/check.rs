//! Validation shared by both input formats and by [`Profile::validate`], so that a profile means
//! the same thing whichever way it arrived.

use std::fmt;

use crate::model::{AgeBin, DepthBin, Profile, SizeBin};
use crate::ProfileError;

/// Largest byte edge or subdirectory count accepted: TOML integers are signed 64-bit, and every
/// valid profile must be writable back to TOML.
pub const MAX_INT: u64 = i64::MAX as u64;
/// Deepest directory level: a path of 256 directories named `d<id>` stays within PATH_MAX (4096).
pub const MAX_DEPTH: u32 = 256;
/// Most directories a profile may ask for, at one depth and in all: about what ext4 or xfs can hold
/// in inodes (2^32), and what fsage numbers directories with.
pub const MAX_DIRS: u64 = u32::MAX as u64 - 1;
/// Most bins in one histogram.
pub const MAX_BINS: usize = 4096;

/// A number as written in the input, before we know what it must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i128),
    Float(f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Num::Int(i) => write!(f, "{i}"),
            Num::Float(x) => f.write_str(&number(x)),
        }
    }
}

impl Num {
    pub(crate) fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(x) => x,
        }
    }

    /// A whole number in `0..=max`; `what` names it in the message.
    pub(crate) fn to_uint(self, what: &str, max: u64) -> Result<u64, String> {
        let value = match self {
            Num::Int(i) if i < 0 => return Err(format!("{what} {self} is negative")),
            Num::Int(i) => u64::try_from(i).ok(),
            Num::Float(x) if !x.is_finite() => {
                return Err(format!("{what} {self} is not a finite number"))
            }
            Num::Float(x) if x < 0.0 => return Err(format!("{what} {self} is negative")),
            Num::Float(x) if x.fract() != 0.0 => {
                return Err(format!("{what} {self} is not an integer"))
            }
            // `as` saturates, and 2^64 and above are caught by the `max` test below.
            Num::Float(x) if x < 18_446_744_073_709_551_616.0 => Some(x as u64),
            Num::Float(_) => None,
        };
        value
            .filter(|&v| v <= max)
            .ok_or_else(|| format!("{what} {self} is too large (at most {max})"))
    }
}

/// Shortest text that reads back as exactly `x`, and is a valid TOML number when `x` is finite:
/// whole numbers without a fraction, others in Rust's round-trip notation (`0.1`, `1e-7`).
pub(crate) fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:?}")
    }
}

/// A problem found in a histogram: the 0-based bin it concerns (`None`: the histogram as a
/// whole) and a complete message such as `size bin 3: weight -2 is negative`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    pub bin: Option<usize>,
    pub message: String,
}

impl Problem {
    pub(crate) fn in_bin(label: &str, index: usize, what: impl fmt::Display) -> Problem {
        Problem {
            bin: Some(index),
            message: format!("{label} bin {}: {what}", index + 1),
        }
    }

    fn whole(label: &str, what: impl fmt::Display) -> Problem {
        Problem {
            bin: None,
            message: format!("{label}: {what}"),
        }
    }
}

fn arity(expected: usize, shape: &str, found: usize) -> String {
    format!("expected {expected} numbers ({shape}), found {found}")
}

/// Converts rows of numbers, then checks the histogram.
fn from_rows<B>(
    label: &str,
    rows: &[Vec<Num>],
    convert: impl Fn(&[Num]) -> Result<B, String>,
    check: impl Fn(&[B]) -> Result<(), Problem>,
) -> Result<Vec<B>, Problem> {
    let bins = rows
        .iter()
        .enumerate()
        .map(|(i, row)| convert(row).map_err(|m| Problem::in_bin(label, i, m)))
        .collect::<Result<Vec<B>, Problem>>()?;
    check(&bins)?;
    Ok(bins)
}

/// Rows `[edge in bytes, weight]`.
pub(crate) fn sizes_from_rows(rows: &[Vec<Num>]) -> Result<Vec<SizeBin>, Problem> {
    let convert = |row: &[Num]| match *row {
        [edge, weight] => Ok(SizeBin {
            max_bytes: edge.to_uint("edge", u64::MAX)?,
            weight: weight.to_f64(),
        }),
        _ => Err(arity(2, "edge in bytes, weight", row.len())),
    };
    from_rows("size", rows, convert, check_sizes)
}

/// Rows `[depth, weight, subdirs]`.
pub(crate) fn depths_from_rows(rows: &[Vec<Num>]) -> Result<Vec<DepthBin>, Problem> {
    let convert = |row: &[Num]| match *row {
        [depth, weight, subdirs] => Ok(DepthBin {
            // The bound makes the cast lossless.
            depth: depth.to_uint("depth", u32::MAX.into())? as u32,
            weight: weight.to_f64(),
            subdirs: subdirs.to_uint("subdirs", u64::MAX)?,
        }),
        _ => Err(arity(3, "depth, weight, subdirs", row.len())),
    };
    from_rows("depth", rows, convert, check_depths)
}

/// Rows `[age, weight]`.
pub(crate) fn ages_from_rows(rows: &[Vec<Num>]) -> Result<Vec<AgeBin>, Problem> {
    let convert = |row: &[Num]| match *row {
        [age, weight] => Ok(AgeBin {
            age: age.to_f64(),
            weight: weight.to_f64(),
        }),
        _ => Err(arity(2, "age, weight", row.len())),
    };
    from_rows("age", rows, convert, check_ages)
}

fn check_weight(w: f64) -> Result<(), String> {
    if w.is_nan() {
        Err("weight is NaN".into())
    } else if w.is_infinite() {
        Err(format!("weight {w} is infinite"))
    } else if w < 0.0 {
        Err(format!("weight {} is negative", number(w)))
    } else {
        Ok(())
    }
}

/// The checks every histogram shares: non-empty, per-bin key checks (given the previous bin, for
/// ordering), finite non-negative weights, not all zero, and a finite total so fractions exist.
fn check_hist<B>(
    label: &str,
    bins: &[B],
    weight: impl Fn(&B) -> f64,
    key: impl Fn(Option<&B>, &B) -> Result<(), String>,
) -> Result<(), Problem> {
    if bins.is_empty() {
        return Err(Problem::whole(
            label,
            "no bins; a histogram needs at least one",
        ));
    }
    if bins.len() > MAX_BINS {
        return Err(Problem::whole(
            label,
            format!("{} bins; at most {MAX_BINS} are allowed", bins.len()),
        ));
    }
    let mut previous = None;
    for (i, bin) in bins.iter().enumerate() {
        key(previous, bin)
            .and_then(|()| check_weight(weight(bin)))
            .map_err(|m| Problem::in_bin(label, i, m))?;
        previous = Some(bin);
    }
    let total: f64 = bins.iter().map(&weight).sum();
    if total == 0.0 {
        Err(Problem::whole(label, "all weights are zero"))
    } else if !total.is_finite() {
        Err(Problem::whole(
            label,
            "the weights add up to infinity; scale them down",
        ))
    } else {
        Ok(())
    }
}

pub(crate) fn check_sizes(bins: &[SizeBin]) -> Result<(), Problem> {
    check_hist(
        "size",
        bins,
        |b| b.weight,
        |prev, b| {
            if b.max_bytes > MAX_INT {
                Err(format!(
                    "edge {} is too large (at most {MAX_INT})",
                    b.max_bytes
                ))
            } else if let Some(p) = prev.filter(|p| b.max_bytes <= p.max_bytes) {
                Err(format!(
                    "edge {} is not above the previous edge {}: edges must be strictly increasing",
                    b.max_bytes, p.max_bytes
                ))
            } else {
                Ok(())
            }
        },
    )
}

pub(crate) fn check_depths(bins: &[DepthBin]) -> Result<(), Problem> {
    check_hist(
        "depth",
        bins,
        |b| b.weight,
        |prev, b| {
            if b.depth > MAX_DEPTH {
                Err(format!(
                    "depth {} is too deep: at most {MAX_DEPTH} (a deeper path would not fit in \
                     PATH_MAX)",
                    b.depth
                ))
            } else if b.subdirs > MAX_DIRS {
                Err(format!(
                    "subdirs {} is more directories than a file system holds (at most {MAX_DIRS})",
                    b.subdirs
                ))
            } else if let Some(p) = prev.filter(|p| b.depth <= p.depth) {
                Err(format!(
                "depth {} is not above the previous depth {}: depths must be strictly increasing",
                b.depth, p.depth
            ))
            } else {
                Ok(())
            }
        },
    )?;
    let total: u64 = bins.iter().map(|b| b.subdirs.min(MAX_DIRS + 1)).sum();
    if total > MAX_DIRS {
        return Err(Problem::whole(
            "depth",
            format!("{total} directories in all; a file system holds at most {MAX_DIRS}"),
        ));
    }
    Ok(())
}

pub(crate) fn check_ages(bins: &[AgeBin]) -> Result<(), Problem> {
    check_hist(
        "age",
        bins,
        |b| b.weight,
        |prev, b| {
            if !b.age.is_finite() {
                Err(format!("age {} is not a finite number", number(b.age)))
            } else if b.age <= 0.0 {
                Err(format!("age {} is not positive", number(b.age)))
            } else if let Some(p) = prev.filter(|p| b.age <= p.age) {
                Err(format!(
                    "age {} is not above the previous age {}: ages must be strictly increasing",
                    number(b.age),
                    number(p.age)
                ))
            } else {
                Ok(())
            }
        },
    )
}

pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        Err("name is empty".into())
    } else {
        Ok(())
    }
}

impl Profile {
    /// Checks the invariants the parsers enforce, for profiles built in code; the message is the
    /// same as the parser's, with the profile's name for a place.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let whole = |m: String| ProfileError::whole(&self.name, m);
        check_name(&self.name).map_err(whole)?;
        let problem = |p: Problem| whole(p.message);
        check_sizes(&self.sizes).map_err(problem)?;
        check_depths(&self.depths).map_err(problem)?;
        check_ages(&self.ages).map_err(problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_uint_explains_what_is_wrong() {
        assert_eq!(Num::Int(5).to_uint("edge", 10), Ok(5));
        assert_eq!(Num::Float(5.0).to_uint("edge", 10), Ok(5));
        assert_eq!(
            Num::Int(-1).to_uint("edge", 10).unwrap_err(),
            "edge -1 is negative"
        );
        assert_eq!(
            Num::Float(1.5).to_uint("edge", 10).unwrap_err(),
            "edge 1.5 is not an integer"
        );
        assert!(Num::Int(11)
            .to_uint("edge", 10)
            .unwrap_err()
            .contains("too large"));
        assert!(Num::Float(1e30)
            .to_uint("edge", u64::MAX)
            .unwrap_err()
            .contains("too large"));
        assert!(Num::Float(f64::NAN)
            .to_uint("d", 10)
            .unwrap_err()
            .contains("not a finite"));
        assert!(Num::Int(i128::MAX)
            .to_uint("d", u64::MAX)
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn number_is_short_and_exact() {
        assert_eq!(number(2.0), "2");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(0.1), "0.1");
        assert_eq!(number(10.74), "10.74");
        assert_eq!(number(1e300).parse::<f64>(), Ok(1e300));
        assert_eq!(number(1e-7).parse::<f64>(), Ok(1e-7));
    }

    #[test]
    fn histogram_checks() {
        let s = |e, w| SizeBin {
            max_bytes: e,
            weight: w,
        };
        assert!(check_sizes(&[s(1, 1.0), s(2, 0.0)]).is_ok());
        let p = check_sizes(&[s(1, 1.0), s(1, 1.0)]).unwrap_err();
        assert_eq!(p.bin, Some(1));
        assert!(
            p.message.starts_with("size bin 2: edge 1 is not above"),
            "{}",
            p.message
        );
        assert_eq!(check_sizes(&[]).unwrap_err().bin, None);
        assert_eq!(
            check_sizes(&[s(1, 0.0)]).unwrap_err().message,
            "size: all weights are zero"
        );
        let p = check_sizes(&[s(1, f64::MAX), s(2, f64::MAX)]).unwrap_err();
        assert!(p.message.contains("infinity"));
        let a = |age, w| AgeBin { age, weight: w };
        assert!(check_ages(&[a(0.0, 1.0)])
            .unwrap_err()
            .message
            .contains("not positive"));
        assert!(check_ages(&[a(f64::INFINITY, 1.0)])
            .unwrap_err()
            .message
            .contains("finite"));
        assert!(check_ages(&[a(1.0, f64::NAN)])
            .unwrap_err()
            .message
            .contains("NaN"));
    }
}
