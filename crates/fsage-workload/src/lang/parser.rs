//! The parser's state: the token stream, variables and composite flowops; attribute lists, the
//! expressions in them, and their values read as numbers, sizes, strings or booleans.

use super::lex::{parse_size, Tk, Tok};
use super::{show, value_text, Value};
use crate::error::Error;
use crate::randvar::Param;
use std::collections::HashMap;

/// One `key[=value]` of an attribute list; the value is a token range, evaluated on demand.
#[derive(Debug, Clone)]
pub(super) struct Attr {
    pub(super) key: String,
    pub(super) line: usize,
    pub(super) val: Option<(usize, usize)>,
}

/// `define flowop name=X, $param... { flowops }`: its parameters and where its body starts.
#[derive(Debug, Clone)]
pub(super) struct Composite {
    pub(super) body: usize,
}

pub(super) struct Parser<'a> {
    pub(super) origin: &'a str,
    pub(super) toks: Vec<Tok>,
    pub(super) pos: usize,
    pub(super) vars: HashMap<String, Value>,
    /// Scopes of composite flowops being expanded: their `$param=value` bindings.
    pub(super) locals: Vec<HashMap<String, Value>>,
    pub(super) overrides: &'a HashMap<String, String>,
    pub(super) composites: HashMap<String, Composite>,
    pub(super) notes: Vec<String>,
    /// Flowop statements read so far, a composite's body once per call (see
    /// [`MAX_EXPANSION_STEPS`]).
    pub(super) steps: u64,
}

impl Parser<'_> {
    pub(super) fn err(&self, line: usize, msg: impl Into<String>) -> Error {
        Error::Parse {
            origin: self.origin.to_string(),
            line,
            msg: msg.into(),
        }
    }

    pub(super) fn note(&mut self, msg: String) {
        if !self.notes.contains(&msg) {
            self.notes.push(msg);
        }
    }

    pub(super) fn peek(&self) -> Option<&Tk> {
        self.toks.get(self.pos).map(|t| &t.t)
    }

    pub(super) fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |t| t.line)
    }

    pub(super) fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    pub(super) fn is_p(&self, c: char) -> bool {
        self.peek() == Some(&Tk::P(c))
    }

    pub(super) fn expect_p(&mut self, c: char, what: &str) -> Result<(), Error> {
        if self.is_p(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(
                self.line(),
                format!("expected `{c}` {what}, found {}", self.shown()),
            ))
        }
    }

    pub(super) fn shown(&self) -> String {
        match self.peek() {
            None => "the end of the file".into(),
            Some(Tk::Word(w)) => format!("{w:?}"),
            Some(Tk::Var(v)) => format!("${v}"),
            Some(Tk::Quoted(q)) => format!("\"{q}\""),
            Some(Tk::P(c)) => format!("`{c}`"),
        }
    }

    /// Skips a balanced `(...)` or `{...}` starting at the current token.
    pub(super) fn skip_group(&mut self) -> Result<(), Error> {
        let line = self.line();
        let (open, close) = match self.peek() {
            Some(Tk::P('(')) => ('(', ')'),
            Some(Tk::P('{')) => ('{', '}'),
            _ => return Ok(()),
        };
        let mut depth = 0i32;
        while let Some(t) = self.next() {
            if t.t == Tk::P(open) {
                depth += 1;
            } else if t.t == Tk::P(close) {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
        }
        Err(self.err(line, format!("`{open}` is never closed")))
    }

    /// Skips one value: an atom (word, variable, string, `cvar(...)`, `{...}`) and any
    /// `* + - /` atoms after it.
    pub(super) fn skip_value(&mut self) -> Result<(), Error> {
        loop {
            match self.peek() {
                Some(Tk::Word(_)) => {
                    self.pos += 1;
                    if self.is_p('(') {
                        self.skip_group()?;
                    }
                }
                Some(Tk::Var(_)) | Some(Tk::Quoted(_)) => self.pos += 1,
                Some(Tk::P('{')) => self.skip_group()?,
                _ => {
                    return Err(self.err(
                        self.line(),
                        format!("expected a value, found {}", self.shown()),
                    ))
                }
            }
            if matches!(self.peek(), Some(Tk::P('*' | '+' | '-' | '/'))) {
                self.pos += 1;
                continue;
            }
            return Ok(());
        }
    }

    /// `key[=value], key[=value], ...`; the list ends at the first item not followed by a comma.
    pub(super) fn attrs(&mut self) -> Result<Vec<Attr>, Error> {
        let mut out = Vec::new();
        loop {
            let line = self.line();
            let key = match self.peek() {
                Some(Tk::Word(w)) => w.clone(),
                Some(Tk::Var(v)) => format!("${v}"),
                _ => return Ok(out),
            };
            self.pos += 1;
            let val = if self.is_p('=') {
                self.pos += 1;
                let s = self.pos;
                self.skip_value()?;
                Some((s, self.pos))
            } else {
                None
            };
            out.push(Attr { key, line, val });
            if self.is_p(',') {
                self.pos += 1;
                // A trailing comma before a `{` ends the list too.
                if !matches!(self.peek(), Some(Tk::Word(_) | Tk::Var(_))) {
                    return Ok(out);
                }
            } else {
                return Ok(out);
            }
        }
    }

    pub(super) fn lookup(&self, line: usize, name: &str) -> Result<Value, Error> {
        for scope in self.locals.iter().rev() {
            if let Some(v) = scope.get(name) {
                return Ok(v.clone());
            }
        }
        self.vars
            .get(name)
            .cloned()
            .ok_or_else(|| self.err(line, format!("undefined variable ${name}")))
    }

    /// Evaluates the token range of an attribute's value.
    pub(super) fn eval_range(&mut self, (s, e): (usize, usize)) -> Result<Value, Error> {
        let save = self.pos;
        self.pos = s;
        let v = self.expr();
        let at = self.pos;
        self.pos = save;
        let v = v?;
        if at != e {
            let line = self.toks.get(at).map_or(1, |t| t.line);
            return Err(self.err(line, "unexpected text after a value"));
        }
        Ok(v)
    }

    pub(super) fn attr_value(&mut self, a: &Attr) -> Result<Value, Error> {
        match a.val {
            Some(r) => self.eval_range(r),
            None => Err(self.err(a.line, format!("{} needs a value", a.key))),
        }
    }

    /// The raw text of an attribute's value (for messages).
    pub(super) fn raw(&self, a: &Attr) -> String {
        let Some((s, e)) = a.val else {
            return String::new();
        };
        self.toks[s..e]
            .iter()
            .map(|t| match &t.t {
                Tk::Word(w) => w.clone(),
                Tk::Var(v) => format!("${v}"),
                Tk::Quoted(q) => format!("\"{q}\""),
                Tk::P(c) => c.to_string(),
            })
            .collect::<Vec<_>>()
            .join("")
    }

    pub(super) fn expr(&mut self) -> Result<Value, Error> {
        let mut v = self.atom()?;
        while let Some(Tk::P(op @ ('*' | '+' | '-' | '/'))) = self.peek().cloned() {
            let line = self.line();
            self.pos += 1;
            let r = self.atom()?;
            let (Value::Int(a), Value::Int(b)) = (&v, &r) else {
                return Err(self.err(
                    line,
                    format!(
                        "`{op}` needs two numbers (got {} and {})",
                        value_text(&v),
                        value_text(&r)
                    ),
                ));
            };
            let x = match op {
                '*' => a.checked_mul(*b),
                '+' => a.checked_add(*b),
                '-' => a.checked_sub(*b),
                _ => a.checked_div(*b),
            };
            v = Value::Int(x.ok_or_else(|| {
                self.err(
                    line,
                    format!("{a} {op} {b} is out of range (or divides by 0)"),
                )
            })?);
        }
        Ok(v)
    }

    pub(super) fn atom(&mut self) -> Result<Value, Error> {
        let line = self.line();
        match self.next().map(|t| t.t) {
            Some(Tk::Var(n)) => self.lookup(line, &n),
            Some(Tk::Quoted(q)) => Ok(Value::Str(q)),
            Some(Tk::Word(w)) if (w == "cvar" || w == "randvar") && self.is_p('(') => {
                let start = self.pos - 1;
                self.pos += 1;
                let attrs = self.attrs()?;
                self.expect_p(')', &format!("to close {w}("))?;
                let text = self.text_of(start, self.pos);
                let r = if w == "cvar" {
                    self.cvar(line, &attrs)?
                } else {
                    self.randvar(line, &attrs, false)?
                };
                Ok(Value::Rand(r, text))
            }
            Some(Tk::Word(w)) if w == "cvar" || w == "randvar" => Err(self.err(
                line,
                format!("bad cvar {w:?}: expected cvar(type=...,parameters=...)"),
            )),
            Some(Tk::Word(w)) => Ok(match parse_size(&w) {
                Some(v) => Value::Int(v),
                None => match w.strip_prefix('-') {
                    Some(n) if parse_size(n).is_some() => {
                        return Err(self.err(line, format!("negative number {w}")))
                    }
                    _ => Value::Str(w),
                },
            }),
            Some(Tk::P('{')) => Err(self.err(line, "a `{` where a value was expected")),
            other => {
                self.pos -= 1;
                Err(self.err(
                    line,
                    format!(
                        "expected a value, found {}",
                        if other.is_none() {
                            "the end of the file".into()
                        } else {
                            self.shown()
                        }
                    ),
                ))
            }
        }
    }

    pub(super) fn text_of(&self, s: usize, e: usize) -> String {
        let mut out = String::new();
        for t in &self.toks[s..e.min(self.toks.len())] {
            match &t.t {
                Tk::Word(w) => out.push_str(w),
                Tk::Var(v) => {
                    out.push('$');
                    out.push_str(v)
                }
                Tk::Quoted(q) => {
                    out.push('"');
                    out.push_str(q);
                    out.push('"')
                }
                Tk::P(c) => out.push(*c),
            }
        }
        out
    }

    pub(super) fn int(&mut self, a: &Attr) -> Result<u64, Error> {
        let raw = self.raw(a);
        match self.attr_value(a)? {
            Value::Int(v) => Ok(v),
            Value::Str(s) if s == "true" => Ok(1),
            Value::Str(s) if s == "false" => Ok(0),
            other => Err(self.err(
                a.line,
                format!("bad size or number for {}: {}", a.key, show(&other, &raw)),
            )),
        }
    }

    pub(super) fn float(&mut self, a: &Attr) -> Result<f64, Error> {
        let raw = self.raw(a);
        match self.attr_value(a)? {
            Value::Int(v) => Ok(v as f64),
            Value::Str(s) => s
                .parse::<f64>()
                .map_err(|_| self.err(a.line, format!("{}: bad number {s:?}", a.key))),
            other => Err(self.err(
                a.line,
                format!("{}: bad number {}", a.key, show(&other, &raw)),
            )),
        }
    }

    /// A number or a random variable (`iosize=`, `indexed=`).
    pub(super) fn param(&mut self, a: &Attr) -> Result<Param, Error> {
        let raw = self.raw(a);
        match self.attr_value(a)? {
            Value::Int(v) => Ok(Param::Fixed(v)),
            Value::Rand(r, _) => Ok(Param::Rand(r)),
            other => Err(self.err(
                a.line,
                format!("bad size or number for {}: {}", a.key, show(&other, &raw)),
            )),
        }
    }

    pub(super) fn string(&mut self, a: &Attr) -> Result<String, Error> {
        Ok(match self.attr_value(a)? {
            Value::Str(s) => s,
            other => value_text(&other),
        })
    }

    pub(super) fn boolean(&mut self, a: &Attr) -> Result<bool, Error> {
        if a.val.is_none() {
            return Ok(true);
        }
        Ok(match self.attr_value(a)? {
            Value::Int(v) => v != 0,
            Value::Str(s) => !matches!(s.as_str(), "false" | "off" | "no"),
            Value::Rand(..) => return Err(self.err(a.line, format!("{} cannot be random", a.key))),
        })
    }
}
