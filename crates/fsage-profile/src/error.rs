//! The one error type of this crate: every problem names its file and, when it has one, its place.

use std::fmt;

/// Why a profile could not be read, and where.
///
/// Displayed as `file:line: message` (or `file: message` when the problem has no single place),
/// the form editors and terminals turn into links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileError {
    /// The file the profile came from (the `origin` given to [`crate::parse`], or a path).
    pub file: String,
    /// 1-based line of the problem, when it has one.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the problem, when known.
    pub column: Option<usize>,
    /// What is wrong, e.g. `size bin 3: weight -2 is negative`.
    pub message: String,
}

impl ProfileError {
    /// An error about a whole file (I/O, a missing section...).
    pub(crate) fn whole(file: impl Into<String>, message: impl Into<String>) -> Self {
        ProfileError {
            file: file.into(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// An error on a known line (import files have no useful columns).
    pub(crate) fn on_line(
        file: impl Into<String>,
        line: usize,
        message: impl Into<String>,
    ) -> Self {
        ProfileError {
            file: file.into(),
            line: Some(line),
            column: None,
            message: message.into(),
        }
    }

    /// An error at a byte offset of `text`, converted to line and column.
    pub(crate) fn at_offset(
        file: impl Into<String>,
        text: &str,
        offset: usize,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = line_column(text, offset);
        ProfileError {
            file: file.into(),
            line: Some(line),
            column: Some(column),
            message: message.into(),
        }
    }
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ProfileError {}

/// A profile that cannot be read is the user's to fix.
impl fsage_sys::Blamed for ProfileError {
    fn blame(&self) -> fsage_sys::Blame {
        fsage_sys::Blame::Input
    }
}

/// 1-based line and column (in characters) of a byte offset; offsets past the end or inside a
/// character are tolerated so that no span can make us panic.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    // Count characters by their first bytes (UTF-8 continuation bytes are 0b10xx_xxxx).
    let column = before[line_start..]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count()
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_lines_and_characters() {
        let text = "ab\nc\u{e9}d\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 1), (1, 2));
        assert_eq!(line_column(text, 3), (2, 1));
        assert_eq!(line_column(text, 6), (2, 3)); // after the two-byte é
        assert_eq!(line_column(text, 1000), (3, 1));
    }

    #[test]
    fn display_has_file_line_and_message() {
        let e = ProfileError::on_line("dabre.toml", 14, "size bin 3: weight -2 is negative");
        assert_eq!(
            e.to_string(),
            "dabre.toml:14: size bin 3: weight -2 is negative"
        );
        let e = ProfileError::whole("x.toml", "cannot read");
        assert_eq!(e.to_string(), "x.toml: cannot read");
    }
}
