//! Our profile format: one TOML file per profile.
//!
//! ```toml
//! name = "dabre"                      # required, not empty
//! description = "Laptop root partition, ext4, 2017"   # optional, default ""
//! source = "Kadekodi et al., Geriatrix, USENIX ATC 2018, Table 3"   # optional, default ""
//! fullness = 0.8                      # required: default fullness, in (0, 1]
//!
//! [size]                              # [upper edge in bytes, weight]
//! bins = [[1024, 125594], [2048, 22133]]
//!
//! [depth]                             # [depth, weight, subdirs]
//! bins = [[0, 1, 28], [1, 303, 239]]
//!
//! [age]                               # [age, weight]
//! unit = "days"                       # optional, informational only (not kept)
//! bins = [[1, 2], [2, 0]]
//! ```
//!
//! - A size bin holds the files larger than the previous edge (0 bytes for the first bin) and at
//!   most its own edge; edges are whole numbers of bytes (or strings with a unit, `"4KiB"`, in
//!   the grammar of fsage-units), strictly increasing, at most 2^63-1.
//! - A depth bin holds the files `depth` directories below the root (0 = in the root); `subdirs`
//!   is how many directories sit at that depth (children of depth-`depth` directories, holding
//!   the files of depth `depth + 1`). Depths are whole numbers, strictly increasing.
//! - An age bin holds the files whose age relative to the oldest bin's age lies in
//!   (previous age / oldest, age / oldest]; ages are positive, strictly increasing, any unit.
//! - Weights are relative numbers of files (integers or floats), finite, not negative, and not
//!   all zero in a histogram; only their proportions matter.
//!
//! Every key not listed here is an error, as is a missing required key. Errors name the file,
//! the line (and column) and the problem. `FORMAT.md` beside this crate has the full reference.

use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;
use toml::{Spanned, Value};

use crate::check::{self, number, Num, Problem};
use crate::error::ProfileError;
use crate::model::{Fullness, Profile};
use crate::units::human_bytes;

/// The document as TOML sees it. Leaves are kept as spanned values so that we, not serde, check
/// their types and can point at them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: Spanned<Value>,
    description: Option<Spanned<Value>>,
    source: Option<Spanned<Value>>,
    fullness: Spanned<Value>,
    size: RawHistogram,
    depth: RawHistogram,
    age: RawAgeHistogram,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHistogram {
    bins: Spanned<Vec<Spanned<Value>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgeHistogram {
    unit: Option<Spanned<Value>>,
    bins: Spanned<Vec<Spanned<Value>>>,
}

/// Keys of the top level; a missing one has no useful place to point at.
const TOP_KEYS: [&str; 7] = [
    "name",
    "description",
    "source",
    "fullness",
    "size",
    "depth",
    "age",
];

/// Parses a profile in our TOML format; `origin` (usually the file name) prefixes every error.
pub fn parse(text: &str, origin: &str) -> Result<Profile, ProfileError> {
    let raw: RawProfile = toml::from_str(text).map_err(|e| syntax_error(&e, text, origin))?;
    let at = |span: std::ops::Range<usize>, message: String| {
        ProfileError::at_offset(origin, text, span.start, message)
    };
    let string = |value: &Spanned<Value>, key: &str| match value.get_ref() {
        Value::String(s) => Ok(s.clone()),
        other => Err(at(
            value.span(),
            format!("`{key}` must be a string, found {}", other.type_str()),
        )),
    };
    let optional = |value: &Option<Spanned<Value>>, key: &str| {
        value.as_ref().map_or(Ok(String::new()), |v| string(v, key))
    };

    let name = string(&raw.name, "name")?;
    check::check_name(&name).map_err(|m| at(raw.name.span(), m))?;
    let description = optional(&raw.description, "description")?;
    let source = optional(&raw.source, "source")?;
    let fullness =
        parse_fullness(raw.fullness.get_ref()).map_err(|m| at(raw.fullness.span(), m))?;
    if let Some(unit) = &raw.age.unit {
        string(unit, "unit")?;
    }

    let sizes = histogram(&raw.size.bins, "size", check::sizes_from_rows, &at)?;
    let depths = histogram(&raw.depth.bins, "depth", check::depths_from_rows, &at)?;
    let ages = histogram(&raw.age.bins, "age", check::ages_from_rows, &at)?;

    Ok(Profile {
        name,
        description,
        source,
        fullness,
        sizes,
        depths,
        ages,
    })
}

/// Reads and parses a profile file; errors name the path.
pub fn load(path: &Path) -> Result<Profile, ProfileError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ProfileError::whole(&origin, format!("cannot read the profile: {e}")))?;
    parse(&text, &origin)
}

/// Reads a `bins` array with `build`, placing each problem at its row, or at `bins` when it
/// concerns the whole histogram.
fn histogram<B>(
    bins: &Spanned<Vec<Spanned<Value>>>,
    label: &str,
    build: impl Fn(&[Vec<Num>]) -> Result<Vec<B>, Problem>,
    at: &impl Fn(std::ops::Range<usize>, String) -> ProfileError,
) -> Result<Vec<B>, ProfileError> {
    let rows = bins.get_ref();
    let cells = rows
        .iter()
        .enumerate()
        .map(|(i, row)| row_numbers(row.get_ref(), label, i).map_err(|m| at(row.span(), m)))
        .collect::<Result<Vec<_>, _>>()?;
    build(&cells).map_err(|p| {
        let span = p
            .bin
            .and_then(|i| rows.get(i))
            .map_or(bins.span(), |row| row.span());
        at(span, p.message)
    })
}

fn parse_fullness(value: &Value) -> Result<Fullness, String> {
    let u = match value {
        Value::Integer(i) => *i as f64,
        Value::Float(x) => *x,
        other => {
            return Err(format!(
                "fullness must be a number, found {}",
                other.type_str()
            ))
        }
    };
    Fullness::new(u).ok_or_else(|| format!("fullness {} is outside (0, 1]", number(u)))
}

/// The numbers of one bin row, or what is wrong with it.
fn row_numbers(row: &Value, label: &str, index: usize) -> Result<Vec<Num>, String> {
    let wrong = |what: String| Problem::in_bin(label, index, what).message;
    let Value::Array(cells) = row else {
        return Err(wrong(format!(
            "expected an array of numbers, found {}",
            row.type_str()
        )));
    };
    cells
        .iter()
        .enumerate()
        .map(|(j, cell)| match cell {
            Value::Integer(i) => Ok(Num::Int((*i).into())),
            Value::Float(x) => Ok(Num::Float(*x)),
            // A size edge may be written with a unit, in the one grammar of sizes.
            Value::String(s) if label == "size" && j == 0 => fsage_units::parse_size(s)
                .map(|b| Num::Int(b.into()))
                .map_err(|e| wrong(format!("edge: {e}"))),
            other => Err(wrong(format!(
                "element {} must be a number, found {}",
                j + 1,
                other.type_str()
            ))),
        })
        .collect()
}

/// A TOML or structure error, reworded in the terms of our format.
fn syntax_error(e: &toml::de::Error, text: &str, origin: &str) -> ProfileError {
    let message = e
        .message()
        .trim()
        .lines()
        .collect::<Vec<_>>()
        .join(": ")
        .replace("missing field", "missing key")
        .replace("unknown field", "unknown key")
        .replace(
            "expected struct RawHistogram",
            "expected a table with `bins`",
        )
        .replace(
            "expected struct RawAgeHistogram",
            "expected a table with `bins`",
        )
        .replace("expected a sequence", "expected an array");
    // toml says nothing about some errors (a control character in a comment, for one).
    let message = if message.is_empty() {
        "invalid TOML syntax".to_owned()
    } else {
        message
    };
    let top_level_missing = TOP_KEYS
        .iter()
        .any(|k| message == format!("missing key `{k}`"));
    match e.span() {
        Some(span) if !top_level_missing => {
            ProfileError::at_offset(origin, text, span.start, message)
        }
        _ => ProfileError::whole(origin, message),
    }
}

/// Writes a profile in the canonical form of our format: one bin per line, columns aligned,
/// sizes annotated in binary units. `parse(&to_toml(p), _) == Ok(p)` for every valid profile.
pub fn to_toml(p: &Profile) -> String {
    let mut out = String::new();
    let quote = |s: &str| Value::String(s.to_owned()).to_string();
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "# fsage aging profile (format: crates/fsage-profile/FORMAT.md)"
    );
    let _ = writeln!(out, "name = {}", quote(&p.name));
    let _ = writeln!(out, "description = {}", quote(&p.description));
    let _ = writeln!(out, "source = {}", quote(&p.source));
    let _ = writeln!(out, "fullness = {}", number(p.fullness.get()));

    out.push_str(
        "\n# [upper edge in bytes, weight]: files above the previous edge (0 for the first bin)\n\
         # and at most this edge.\n[size]\n",
    );
    let sizes = p.sizes.iter().map(|b| {
        let cells = vec![b.max_bytes.to_string(), number(b.weight)];
        (cells, Some(human_bytes(b.max_bytes)))
    });
    write_bins(&mut out, sizes.collect());

    out.push_str(
        "\n# [depth, weight, subdirs]: files `depth` directories below the root (0 = in the root);\n\
         # subdirs = directories at that depth, holding the files of depth + 1.\n[depth]\n",
    );
    let depths = p.depths.iter().map(|b| {
        let cells = vec![b.depth.to_string(), number(b.weight), b.subdirs.to_string()];
        (cells, None)
    });
    write_bins(&mut out, depths.collect());

    out.push_str(
        "\n# [age, weight]: files whose age / oldest age lies in (previous age, age] / oldest;\n\
         # any unit, the last age is the oldest.\n[age]\n",
    );
    let ages = p
        .ages
        .iter()
        .map(|b| (vec![number(b.age), number(b.weight)], None));
    write_bins(&mut out, ages.collect());
    out
}

/// `bins = [ ... ]` with one right-aligned row per line and optional trailing comments.
fn write_bins(out: &mut String, rows: Vec<(Vec<String>, Option<String>)>) {
    let columns = rows.iter().map(|(cells, _)| cells.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|(cells, _)| cells.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    out.push_str("bins = [\n");
    for (cells, comment) in &rows {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| format!("{cell:>w$}"))
            .collect();
        let row = format!("  [{}],", padded.join(", "));
        match comment {
            Some(c) => {
                let _ = writeln!(out, "{row}  # {c}");
            }
            None => {
                let _ = writeln!(out, "{row}");
            }
        }
    }
    out.push_str("]\n");
}
