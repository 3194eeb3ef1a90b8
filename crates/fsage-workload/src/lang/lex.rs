//! Tokens of a `.f` file: words, `$variables`, quoted strings and punctuation, each with its
//! line (a statement may run over several lines); and Filebench's size grammar.

use crate::error::Error;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tk {
    Word(String),
    Var(String),
    Quoted(String),
    P(char),
}

#[derive(Debug, Clone)]
pub(super) struct Tok {
    pub(super) t: Tk,
    pub(super) line: usize,
}

pub(super) fn lex(text: &str, origin: &str) -> Result<Vec<Tok>, Error> {
    let mut out = Vec::new();
    let cs: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut line = 1;
    let word_char = |c: char| c.is_ascii_alphanumeric() || "/._:;-".contains(c);
    while i < cs.len() {
        let c = cs[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '#' => {
                while i < cs.len() && cs[i] != '\n' {
                    i += 1;
                }
            }
            '"' => {
                let start = line;
                let mut s = String::new();
                i += 1;
                while i < cs.len() && cs[i] != '"' {
                    if cs[i] == '\n' {
                        line += 1;
                    }
                    s.push(cs[i]);
                    i += 1;
                }
                if i >= cs.len() {
                    return Err(Error::Parse {
                        origin: origin.to_string(),
                        line: start,
                        msg: "a quoted string is not closed".into(),
                    });
                }
                i += 1;
                out.push(Tok {
                    t: Tk::Quoted(s),
                    line: start,
                });
            }
            '$' => {
                i += 1;
                let braced = i < cs.len() && (cs[i] == '{' || cs[i] == '(');
                if braced {
                    i += 1;
                }
                let mut s = String::new();
                while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                    s.push(cs[i]);
                    i += 1;
                }
                if braced && i < cs.len() && (cs[i] == '}' || cs[i] == ')') {
                    i += 1;
                }
                if s.is_empty() {
                    return Err(Error::Parse {
                        origin: origin.to_string(),
                        line,
                        msg: "`$` without a variable name".into(),
                    });
                }
                out.push(Tok {
                    t: Tk::Var(s),
                    line,
                });
            }
            '{' | '}' | '(' | ')' | '=' | ',' | '*' | '+' => {
                out.push(Tok { t: Tk::P(c), line });
                i += 1;
            }
            '-' | '/' if cs.get(i + 1).is_none_or(|n| n.is_whitespace()) => {
                out.push(Tok { t: Tk::P(c), line });
                i += 1;
            }
            c if word_char(c) => {
                let mut s = String::new();
                while i < cs.len() && word_char(cs[i]) {
                    s.push(cs[i]);
                    i += 1;
                }
                out.push(Tok {
                    t: Tk::Word(s),
                    line,
                });
            }
            other => {
                return Err(Error::Parse {
                    origin: origin.to_string(),
                    line,
                    msg: format!("illegal character {other:?}"),
                })
            }
        }
    }
    Ok(out)
}

/// `16k`, `1m`, `2g`, `131072`: a byte count or a plain number (Filebench's units are powers of
/// 1024).
///
/// Filebench's own grammar, not fsage-units': in a `.f` file `16kb` is 16 × 1024 (fsage-units
/// reads `KB` as × 1000), a plain number may have a fraction (`1.5`, for variables that are not
/// sizes) and fractions round to the nearest byte; calling fsage-units would change what
/// existing workload files mean.
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (num, mult) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1u64 << 10),
        'm' => (&t[..t.len() - 1], 1 << 20),
        'g' => (&t[..t.len() - 1], 1 << 30),
        't' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    let b = v * mult as f64;
    (0.0..1.8e19).contains(&b).then_some(b.round() as u64)
}
