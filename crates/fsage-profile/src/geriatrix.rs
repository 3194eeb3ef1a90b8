//! Import of the original Geriatrix three-file format, so that profiles made for Geriatrix (and
//! its built-ins) can be used as they are.
//!
//! Each file starts with a row count, then one row per bin of whitespace-separated numbers
//! (`<size> <weight>`, `<depth> <weight> <subdirs>`, `<age> <weight>`), then usually a trailing
//! `Format:` note. As in Geriatrix, exactly the announced number of rows is read and the rest
//! of the file ignored (the raw `grundman/size_distribution.txt` announces 22 rows but lists 23;
//! Geriatrix, and so we, use the first 22).

use std::path::Path;

use crate::check::{self, Num, Problem};
use crate::error::ProfileError;
use crate::model::{Fullness, Profile};

/// Fullness given to imported profiles, which carry none.
pub const IMPORT_FULLNESS: f64 = 0.8;

/// Imports `size_distribution.txt`, `dir_distribution.txt` and `age_distribution.txt` from `dir`.
/// The profile gets fullness 0.8, an empty description and a source naming `dir`; set them after.
pub fn import_geriatrix(dir: &Path, name: &str) -> Result<Profile, ProfileError> {
    let mut profile = import_geriatrix_files(
        &dir.join("size_distribution.txt"),
        &dir.join("dir_distribution.txt"),
        &dir.join("age_distribution.txt"),
        name,
    )?;
    profile.source = format!("Geriatrix-format profile in {}", dir.display());
    Ok(profile)
}

/// Imports the three files of a Geriatrix profile given one by one (sizes, directories, ages).
pub fn import_geriatrix_files(
    size: &Path,
    dir: &Path,
    age: &Path,
    name: &str,
) -> Result<Profile, ProfileError> {
    check::check_name(name).map_err(|m| ProfileError::whole(size.display().to_string(), m))?;
    let read = |path: &Path| {
        let origin = path.display().to_string();
        std::fs::read_to_string(path)
            .map(|text| (text, origin.clone()))
            .map_err(|e| ProfileError::whole(origin, format!("cannot read: {e}")))
    };
    let (text, origin) = read(size)?;
    let sizes = import_table(&text, &origin, "size", check::sizes_from_rows)?;
    let (text, origin) = read(dir)?;
    let depths = import_table(&text, &origin, "depth", check::depths_from_rows)?;
    let (text, origin) = read(age)?;
    let ages = import_table(&text, &origin, "age", check::ages_from_rows)?;
    Ok(Profile {
        name: name.to_owned(),
        description: String::new(),
        source: format!(
            "Geriatrix-format files {}, {}, {}",
            size.display(),
            dir.display(),
            age.display()
        ),
        fullness: Fullness::new(IMPORT_FULLNESS).expect("0.8 is a valid fullness"),
        sizes,
        depths,
        ages,
    })
}

/// Reads one file's rows and turns them into bins with `build`, placing every error on its line.
pub(crate) fn import_table<B>(
    text: &str,
    origin: &str,
    label: &str,
    build: impl Fn(&[Vec<Num>]) -> Result<Vec<B>, Problem>,
) -> Result<Vec<B>, ProfileError> {
    let rows = read_rows(text, origin, label)?;
    build(&rows.cells).map_err(|p| {
        let line = p.bin.and_then(|i| rows.lines.get(i).copied());
        ProfileError::on_line(origin, line.unwrap_or(rows.count_line), p.message)
    })
}

/// The rows of one file and where they are.
struct Rows {
    /// 1-based line of the row count.
    count_line: usize,
    /// 1-based line of each row.
    lines: Vec<usize>,
    cells: Vec<Vec<Num>>,
}

/// The announced rows.
fn read_rows(text: &str, origin: &str, label: &str) -> Result<Rows, ProfileError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let Some((count_line, count_text)) = lines.next() else {
        return Err(ProfileError::whole(
            origin,
            "empty file: expected a row count on the first line",
        ));
    };
    let count: usize = count_text.parse().map_err(|_| {
        ProfileError::on_line(
            origin,
            count_line,
            format!("expected the number of rows, found `{count_text}`"),
        )
    })?;
    let mut rows = Rows {
        count_line,
        lines: Vec::new(),
        cells: Vec::new(),
    };
    for (line, content) in lines {
        // Like Geriatrix, read exactly the announced rows; what follows (normally the `Format:`
        // note) is ignored.
        if rows.cells.len() == count {
            break;
        }
        if content.starts_with("Format:") {
            return Err(ProfileError::on_line(
                origin,
                line,
                format!(
                    "line {count_line} announces {count} rows, but only {} precede the Format: note",
                    rows.cells.len()
                ),
            ));
        }
        let cells = content
            .split_whitespace()
            .map(|token| parse_number(token).ok_or(token))
            .collect::<Result<Vec<Num>, &str>>()
            .map_err(|token| {
                let what = format!("`{token}` is not a number");
                ProfileError::on_line(
                    origin,
                    line,
                    Problem::in_bin(label, rows.cells.len(), what).message,
                )
            })?;
        rows.lines.push(line);
        rows.cells.push(cells);
    }
    if rows.cells.len() < count {
        return Err(ProfileError::on_line(
            origin,
            count_line,
            format!(
                "announces {count} rows, but the file has only {}",
                rows.cells.len()
            ),
        ));
    }
    Ok(rows)
}

fn parse_number(token: &str) -> Option<Num> {
    token
        .parse::<i128>()
        .map(Num::Int)
        .ok()
        .or_else(|| token.parse::<f64>().ok().map(Num::Float))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            let _ = import_table(&text, "f", "size", check::sizes_from_rows);
        }

        #[test]
        fn number_like_text_never_panics(text in "[0-9 .e\n-]{0,80}(Format:)?") {
            let _ = import_table(&text, "f", "depth", check::depths_from_rows);
            let _ = import_table(&text, "f", "age", check::ages_from_rows);
        }
    }
}
