//! The published numbers (`docs/reproductions/published.csv`, compiled in): one row per point a
//! paper states, with the paper, the figure and where the number is read (seed file and line, or
//! the authors' data file).

use serde::{Deserialize, Serialize};

/// The file's text, as the repository holds it.
pub const PUBLISHED_CSV: &str = include_str!("../../../../docs/reproductions/published.csv");

/// Where the file lives in the repository (named in errors and on the report).
pub const PUBLISHED_PATH: &str = "docs/reproductions/published.csv";

/// One published point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedPoint {
    /// The reproduction it belongs to (`geriatrix-fig7`), or a figure no reproduction covers.
    pub reproduction: String,
    pub paper: String,
    pub figure: String,
    /// The file system.
    pub fs: String,
    /// The drive, by fsage's model name for it (`crucial-m4-64g`), or the paper's device.
    pub device: String,
    /// What the number is of (`aged loss`, `aged/clean`, `warm 1536 MB`).
    pub series: String,
    /// Where on the figure's x axis: a workload, a pull count, a latency.
    pub x: String,
    /// The number, or the low end of a published range (`76-78` is 76 to 78).
    pub low: f64,
    /// The high end (the same as `low` for one number); `None`: no upper bound ("over 50").
    pub high: Option<f64>,
    /// `% loss` (aged slower than unaged, in percent of unaged), `x` (aged over clean), `s/GiB`,
    /// `s wait in 60 s`.
    pub unit: String,
    /// `text` (stated in the paper), `data` (the authors' data files), `derived` (computed from
    /// them).
    pub kind: String,
    /// The paper's text or data the number is read from.
    pub source: String,
    pub note: String,
}

impl PublishedPoint {
    /// `76-78`, `2`, `≥ 50`.
    pub fn value_text(&self) -> String {
        let f = |v: f64| {
            let s = format!("{v:.2}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        match self.high {
            None => format!("≥ {}", f(self.low)),
            Some(h) if h == self.low => f(self.low),
            Some(h) => format!("{}-{}", f(self.low), f(h)),
        }
    }
    /// The middle of the range (the low end when it is open): where a bar or marker is drawn.
    pub fn mid(&self) -> f64 {
        self.high.map_or(self.low, |h| (self.low + h) / 2.0)
    }
    /// The x as a number, when it is one (a pull count).
    pub fn x_number(&self) -> Option<f64> {
        self.x.trim().parse().ok()
    }
    /// `Paper, Figure N (source)`: how the report cites it.
    pub fn citation(&self) -> String {
        format!(
            "{}, {}: {} ({})",
            self.paper, self.figure, self.source, self.kind
        )
    }
}

/// Every published point of the file in the repository.
pub fn published() -> Vec<PublishedPoint> {
    parse(PUBLISHED_CSV, PUBLISHED_PATH).expect("the compiled-in published.csv is checked by tests")
}

/// The points of one reproduction, in file order.
pub fn published_for(reproduction: &str) -> Vec<PublishedPoint> {
    published()
        .into_iter()
        .filter(|p| p.reproduction == reproduction)
        .collect()
}

const COLUMNS: [&str; 13] = [
    "reproduction",
    "paper",
    "figure",
    "fs",
    "device",
    "series",
    "x",
    "low",
    "high",
    "unit",
    "kind",
    "source",
    "note",
];

/// What is wrong with a published-numbers file, naming the file and the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishedError {
    #[error("{origin}: empty")]
    Empty { origin: String },
    #[error("{origin}:{line}: {problem}")]
    Line {
        origin: String,
        /// Counted from 1.
        line: usize,
        problem: RowProblem,
    },
}

/// What is wrong with one line of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowProblem {
    #[error("the columns must be {}", COLUMNS.join(","))]
    Columns,
    #[error("{found} fields, not {}", COLUMNS.len())]
    FieldCount { found: usize },
    #[error("{column}: {value:?} is not a number")]
    NotANumber { column: &'static str, value: String },
    #[error("high is below low")]
    HighBelowLow,
    #[error("{column} is empty")]
    EmptyField { column: &'static str },
    #[error("a quote inside an unquoted field")]
    QuoteInside,
    #[error("text after a closing quote")]
    TextAfterQuote,
    #[error("an unclosed quote")]
    UnclosedQuote,
}

/// Parses the file (`origin` names it in errors, with the line).
pub fn parse(text: &str, origin: &str) -> Result<Vec<PublishedPoint>, PublishedError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, head)) = lines.next() else {
        return Err(PublishedError::Empty {
            origin: origin.into(),
        });
    };
    let at_line = |line: usize| {
        move |problem: RowProblem| PublishedError::Line {
            origin: origin.into(),
            line,
            problem,
        }
    };
    let head = split(head).map_err(at_line(1))?;
    if head != COLUMNS {
        return Err(at_line(1)(RowProblem::Columns));
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let at = at_line(i + 1);
        let f = split(line).map_err(at)?;
        if f.len() != COLUMNS.len() {
            return Err(at(RowProblem::FieldCount { found: f.len() }));
        }
        let num = |k: usize| -> Result<f64, PublishedError> {
            f[k].trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    at(RowProblem::NotANumber {
                        column: COLUMNS[k],
                        value: f[k].clone(),
                    })
                })
        };
        let low = num(7)?;
        let high = if f[8].trim().is_empty() {
            None
        } else {
            Some(num(8)?)
        };
        if high.is_some_and(|h| h < low) {
            return Err(at(RowProblem::HighBelowLow));
        }
        for k in [0, 1, 2, 3, 6, 9, 10, 11] {
            if f[k].trim().is_empty() {
                return Err(at(RowProblem::EmptyField { column: COLUMNS[k] }));
            }
        }
        out.push(PublishedPoint {
            reproduction: f[0].clone(),
            paper: f[1].clone(),
            figure: f[2].clone(),
            fs: f[3].clone(),
            device: f[4].clone(),
            series: f[5].clone(),
            x: f[6].clone(),
            low,
            high,
            unit: f[9].clone(),
            kind: f[10].clone(),
            source: f[11].clone(),
            note: f[12].clone(),
        });
    }
    Ok(out)
}

/// One CSV line's fields (RFC 4180 quoting: `"a, b"`, `""` for a quote inside).
fn split(line: &str) -> Result<Vec<String>, RowProblem> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    cur.push('"');
                }
                '"' => quoted = false,
                _ => cur.push(c),
            }
        } else {
            match c {
                '"' if cur.is_empty() && !was_quoted => {
                    quoted = true;
                    was_quoted = true;
                }
                ',' => {
                    out.push(std::mem::take(&mut cur));
                    was_quoted = false;
                }
                '"' => return Err(RowProblem::QuoteInside),
                _ if was_quoted => return Err(RowProblem::TextAfterQuote),
                _ => cur.push(c),
            }
        }
    }
    if quoted {
        return Err(RowProblem::UnclosedQuote);
    }
    out.push(cur);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_file_parses_and_every_point_has_a_source() {
        let all = parse(PUBLISHED_CSV, PUBLISHED_PATH).unwrap();
        assert!(all.len() > 40, "{}", all.len());
        for p in &all {
            assert!(!p.source.is_empty() && !p.paper.is_empty() && !p.figure.is_empty());
        }
        // Spot checks against the papers' text (seeds/001:214, seeds/004:138, seeds/004:142).
        let g7: Vec<_> = all
            .iter()
            .filter(|p| p.reproduction == "geriatrix-fig7" && p.device == "crucial-m4-64g")
            .collect();
        let ext4 = g7.iter().find(|p| p.fs == "ext4").unwrap();
        assert_eq!((ext4.low, ext4.high), (76.0, Some(78.0)));
        assert_eq!(ext4.value_text(), "76-78");
        assert!(ext4.source.contains("001:214"));
        let btrfs = g7.iter().find(|p| p.fs == "btrfs").unwrap();
        assert_eq!((btrfs.low, btrfs.high), (61.0, Some(67.0)));
        let c3 = published_for("conway-fig3");
        assert!(c3
            .iter()
            .any(|p| p.x == "1100" && p.low == 10.0 && p.kind == "text"));
        assert!(c3.iter().any(|p| p.x == "10000" && p.low == 20.6));
        let c4 = published_for("conway-fig4");
        assert!(c4.iter().any(|p| p.x == "800" && p.low == 1.25));
        let s8 = published_for("slippery-fig8");
        assert!(s8
            .iter()
            .any(|p| p.high.is_none() && p.value_text() == "≥ 50"));
    }

    #[test]
    fn quoting_and_bad_rows_are_read_or_refused_with_the_line() {
        assert_eq!(
            split(r#"a,"b, c","say ""hi""",,d"#).unwrap(),
            vec!["a", "b, c", "say \"hi\"", "", "d"]
        );
        assert!(split(r#"a,"b"#).is_err());
        let head = COLUMNS.join(",");
        let e = parse(
            &format!("{head}\nr,p,f,ext4,d,s,x,abc,,%,text,src,\n"),
            "t.csv",
        )
        .unwrap_err();
        assert!(
            matches!(
                &e,
                PublishedError::Line {
                    line: 2,
                    problem: RowProblem::NotANumber { column: "low", .. },
                    ..
                }
            ),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.starts_with("t.csv:2: low: \"abc\" is not a number"),
            "{e}"
        );
        let e = parse(
            &format!("{head}\nr,p,f,ext4,d,s,x,5,3,%,text,src,\n"),
            "t.csv",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("below"), "{e}");
        let e = parse("a,b\n", "t.csv").unwrap_err().to_string();
        assert!(
            e.starts_with("t.csv:1: the columns must be reproduction,"),
            "{e}"
        );
        let e = parse(&format!("{head}\nr,\"p\"x\n"), "t.csv").unwrap_err();
        assert_eq!(e.to_string(), "t.csv:2: text after a closing quote");
        assert_eq!(
            parse("\n", "t.csv").unwrap_err().to_string(),
            "t.csv: empty"
        );
    }
}
