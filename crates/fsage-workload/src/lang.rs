//! Filebench's workload-model language (`.f` files), as Filebench 1.5's grammar defines it:
//! tokens first (statements may run over several lines), then statements. Anything fsage cannot
//! honour is refused with the file, line and construct: a silently skipped line would make the
//! numbers mean something else than the user thinks. What fsage accepts without acting on it
//! (`debug`, `psrun`'s sampling interval, `stats`) is said once, in [`Model::notes`].

use crate::error::Error;
use crate::model::{
    FileOp, FilesetDef, FlowopDef, FlowopKind, Model, PaceOp, QuitMode, SizeDist, ThreadDef,
};
use crate::randvar::{Dist, Param, RandVar};
use std::collections::HashMap;

/// A value of a variable or an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(u64),
    Str(String),
    /// A random variable and the text it was written as.
    Rand(RandVar, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Tk {
    Word(String),
    Var(String),
    Quoted(String),
    P(char),
}

#[derive(Debug, Clone)]
struct Tok {
    t: Tk,
    line: usize,
}

fn lex(text: &str, origin: &str) -> Result<Vec<Tok>, Error> {
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

/// One `key[=value]` of an attribute list; the value is a token range, evaluated on demand.
#[derive(Debug, Clone)]
struct Attr {
    key: String,
    line: usize,
    val: Option<(usize, usize)>,
}

/// `define flowop name=X, $param... { flowops }`: its parameters and where its body starts.
#[derive(Debug, Clone)]
struct Composite {
    body: usize,
}

struct Parser<'a> {
    origin: &'a str,
    toks: Vec<Tok>,
    pos: usize,
    vars: HashMap<String, Value>,
    /// Scopes of composite flowops being expanded: their `$param=value` bindings.
    locals: Vec<HashMap<String, Value>>,
    overrides: &'a HashMap<String, String>,
    composites: HashMap<String, Composite>,
    notes: Vec<String>,
    /// Flowop statements read so far, a composite's body once per call (see
    /// [`MAX_EXPANSION_STEPS`]).
    steps: u64,
}

// Bounds on what a workload file expands to: no file, however small, can make the parser (and
// so `bench show` and `experiment plan`) run for ever or fill the memory, nor a run ask for more
// than a machine has. Each refusal names the file, the line and the bound.

/// Flowops of one thread once composite flowops are expanded (iterations times body).
pub const MAX_FLOWOPS_PER_THREAD: usize = 10_000;
/// Flowops of all threads once expanded.
pub const MAX_FLOWOPS: usize = 100_000;
/// Flowop statements the parser reads, a composite's body again at each call (12 levels of 8
/// calls would be 8^12).
pub const MAX_EXPANSION_STEPS: u64 = 1_000_000;
/// Composite flowops called inside composites.
pub const MAX_COMPOSITE_DEPTH: usize = 16;
/// Thread instances of all threads (a process's `instances=` multiplies its threads').
pub const MAX_THREADS: u64 = 10_000;
/// Entries of one fileset, and of all filesets.
pub const MAX_ENTRIES: u64 = 100_000_000;
/// A flowop's `iosize=` (each thread holds a buffer that large; a drawn one is capped there).
pub const MAX_IOSIZE: u64 = 1 << 30;
/// `cvar-erlang`'s shape: each draw sums that many exponential draws.
pub const MAX_ERLANG_SHAPE: f64 = 1000.0;

impl Parser<'_> {
    fn err(&self, line: usize, msg: impl Into<String>) -> Error {
        Error::Parse {
            origin: self.origin.to_string(),
            line,
            msg: msg.into(),
        }
    }

    fn note(&mut self, msg: String) {
        if !self.notes.contains(&msg) {
            self.notes.push(msg);
        }
    }

    fn peek(&self) -> Option<&Tk> {
        self.toks.get(self.pos).map(|t| &t.t)
    }

    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |t| t.line)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn is_p(&self, c: char) -> bool {
        self.peek() == Some(&Tk::P(c))
    }

    fn expect_p(&mut self, c: char, what: &str) -> Result<(), Error> {
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

    fn shown(&self) -> String {
        match self.peek() {
            None => "the end of the file".into(),
            Some(Tk::Word(w)) => format!("{w:?}"),
            Some(Tk::Var(v)) => format!("${v}"),
            Some(Tk::Quoted(q)) => format!("\"{q}\""),
            Some(Tk::P(c)) => format!("`{c}`"),
        }
    }

    /// Skips a balanced `(...)` or `{...}` starting at the current token.
    fn skip_group(&mut self) -> Result<(), Error> {
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
    fn skip_value(&mut self) -> Result<(), Error> {
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
    fn attrs(&mut self) -> Result<Vec<Attr>, Error> {
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

    fn lookup(&self, line: usize, name: &str) -> Result<Value, Error> {
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
    fn eval_range(&mut self, (s, e): (usize, usize)) -> Result<Value, Error> {
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

    fn attr_value(&mut self, a: &Attr) -> Result<Value, Error> {
        match a.val {
            Some(r) => self.eval_range(r),
            None => Err(self.err(a.line, format!("{} needs a value", a.key))),
        }
    }

    /// The raw text of an attribute's value (for messages).
    fn raw(&self, a: &Attr) -> String {
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

    fn expr(&mut self) -> Result<Value, Error> {
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

    fn atom(&mut self) -> Result<Value, Error> {
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

    fn text_of(&self, s: usize, e: usize) -> String {
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

    fn int(&mut self, a: &Attr) -> Result<u64, Error> {
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

    fn float(&mut self, a: &Attr) -> Result<f64, Error> {
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
    fn param(&mut self, a: &Attr) -> Result<Param, Error> {
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

    fn string(&mut self, a: &Attr) -> Result<String, Error> {
        Ok(match self.attr_value(a)? {
            Value::Str(s) => s,
            other => value_text(&other),
        })
    }

    fn boolean(&mut self, a: &Attr) -> Result<bool, Error> {
        if a.val.is_none() {
            return Ok(true);
        }
        Ok(match self.attr_value(a)? {
            Value::Int(v) => v != 0,
            Value::Str(s) => !matches!(s.as_str(), "false" | "off" | "no"),
            Value::Rand(..) => return Err(self.err(a.line, format!("{} cannot be random", a.key))),
        })
    }

    /// `cvar(type=cvar-NAME, parameters=k:v;k:v, min=, max=, round=)`.
    fn cvar(&mut self, line: usize, attrs: &[Attr]) -> Result<RandVar, Error> {
        let mut ty = None;
        let mut params = String::new();
        let mut r = RandVar {
            dist: Dist::Uniform { lo: 0.0, hi: 1.0 },
            min: 0.0,
            max: None,
            round: 0.0,
        };
        for a in attrs {
            match a.key.as_str() {
                "type" => ty = Some(self.string(a)?),
                "parameters" => params = self.raw(a),
                "min" => r.min = self.float(a)?,
                "max" => r.max = Some(self.float(a)?),
                "round" => r.round = self.float(a)?,
                other => {
                    return Err(self.err(
                        line,
                        format!(
                        "cvar: unsupported attribute {other:?} (type, parameters, min, max, round)"
                    ),
                    ))
                }
            }
        }
        let ty = ty.ok_or_else(|| self.err(line, "cvar without type="))?;
        let mut kv: HashMap<String, f64> = HashMap::new();
        for p in params.split(';') {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            let (k, v) = p.split_once(':').ok_or_else(|| {
                self.err(line, format!("cvar parameter {p:?}: expected key:value"))
            })?;
            let num = match parse_size(v) {
                Some(n) if !v.contains('.') => n as f64,
                _ => v
                    .trim()
                    .parse()
                    .map_err(|_| self.err(line, format!("cvar parameter {k}: bad number {v:?}")))?,
            };
            kv.insert(k.trim().to_string(), num);
        }
        let known: &[&str] = match ty.as_str() {
            "cvar-gamma" => &["mean", "gamma"],
            "cvar-uniform" => &["lower", "upper"],
            "cvar-normal" => &["mean", "sigma"],
            "cvar-lognormal" => &["shape", "scale"],
            "cvar-exponential" => &["mean"],
            "cvar-triangular" => &["lower", "upper", "mode"],
            "cvar-weibull" => &["shape", "scale"],
            "cvar-erlang" => &["shape", "rate"],
            t => return Err(self.err(
                line,
                format!("cvar type {t:?} is not supported (cvar-gamma, -uniform, -normal, -lognormal, -exponential, -triangular, -weibull, -erlang)"),
            )),
        };
        if let Some(k) = kv.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(self.err(
                line,
                format!(
                    "{ty} parameter {k:?} is not supported ({})",
                    known.join(", ")
                ),
            ));
        }
        let g = |k: &str, d: f64| kv.get(k).copied().unwrap_or(d);
        r.dist = match ty.as_str() {
            "cvar-gamma" => {
                // Filebench's defaults: mean 4096, gamma 1.5.
                let (mean, shape) = (g("mean", 4096.0), g("gamma", 1.5));
                if !(mean > 0.0 && shape > 0.0 && mean.is_finite() && shape.is_finite()) {
                    return Err(self.err(line, "cvar-gamma mean and gamma must be positive"));
                }
                Dist::Gamma {
                    mean,
                    shape,
                    shift: 0.0,
                }
            }
            "cvar-uniform" => Dist::Uniform {
                lo: g("lower", 0.0),
                hi: g("upper", 1.0),
            },
            "cvar-normal" => Dist::Normal {
                mean: g("mean", 0.0),
                sigma: g("sigma", 1.0),
            },
            "cvar-lognormal" => Dist::LogNormal {
                mu: g("scale", 1.0),
                sigma: g("shape", 1.0),
            },
            "cvar-exponential" => Dist::Exponential {
                mean: g("mean", 1.0),
            },
            "cvar-triangular" => Dist::Triangular {
                lo: g("lower", 0.0),
                hi: g("upper", 1.0),
                mode: g("mode", 0.5),
            },
            "cvar-weibull" => Dist::Weibull {
                shape: g("shape", 1.0),
                scale: g("scale", 1.0),
            },
            _ => {
                let shape = g("shape", 1.0);
                if shape > MAX_ERLANG_SHAPE {
                    return Err(self.err(
                        line,
                        format!("{ty}: shape {shape} is more than {MAX_ERLANG_SHAPE} (each draw sums that many)"),
                    ));
                }
                Dist::Erlang {
                    shape: shape.max(1.0) as u32,
                    rate: g("rate", 1.0),
                }
            }
        };
        let bad = match &r.dist {
            Dist::Uniform { lo, hi } | Dist::Triangular { lo, hi, .. } => {
                lo > hi || lo.is_nan() || hi.is_nan()
            }
            Dist::Weibull { shape, scale } => !(*shape > 0.0 && *scale > 0.0),
            Dist::Erlang { rate, .. } => rate.is_nan() || *rate <= 0.0,
            Dist::Exponential { mean } => mean.is_nan() || *mean <= 0.0,
            _ => false,
        };
        if bad {
            return Err(self.err(line, format!("{ty}: parameters out of range")));
        }
        Ok(r)
    }

    /// `randvar(...)` or `define randvar`: type uniform (default), gamma or tabular, with
    /// `mean`, `gamma` (thousandths of the shape, as Filebench reads it), `min`, `round`,
    /// `randtable`, `seed`, `randsrc`.
    fn randvar(&mut self, line: usize, attrs: &[Attr], define: bool) -> Result<RandVar, Error> {
        let mut ty = "uniform".to_string();
        let (mut mean, mut gamma, mut min, mut round) = (None, 1500.0, 0.0, 0.0);
        let mut table: Option<Vec<(f64, f64, f64)>> = None;
        for a in attrs {
            match a.key.as_str() {
                "name" if define => {}
                "type" => ty = self.string(a)?,
                "mean" => mean = Some(self.float(a)?),
                "gamma" => gamma = self.float(a)?,
                "min" => min = self.float(a)?,
                "round" => round = self.float(a)?,
                "seed" | "randsrc" => {
                    let what = a.key.clone();
                    self.note(format!(
                        "randvar {what}=: every draw comes from --seed (the file's {what} is not used)"
                    ));
                }
                "randtable" => table = Some(self.randtable(a)?),
                other => {
                    return Err(self.err(
                        a.line,
                        format!("randvar attribute {other:?} is not supported (name, type, mean, gamma, min, round, seed, randsrc, randtable)"),
                    ))
                }
            }
        }
        let shape = gamma / 1000.0;
        let dist = match ty.as_str() {
            "uniform" => {
                let m = mean.unwrap_or(min + 0.5);
                Dist::Uniform {
                    lo: min,
                    hi: min + 2.0 * (m - min).max(0.0),
                }
            }
            "gamma" => {
                if shape.is_nan() || shape <= 0.0 {
                    return Err(self.err(line, "randvar gamma: gamma must be positive"));
                }
                // Filebench: with no mean the mean is the shape itself.
                let m = mean.unwrap_or(shape);
                Dist::Gamma {
                    mean: (m - min).max(0.0),
                    shape,
                    shift: min,
                }
            }
            "tabular" => {
                let rows = table
                    .clone()
                    .ok_or_else(|| self.err(line, "randvar tabular needs randtable="))?;
                let total: f64 = rows.iter().map(|r| r.0).sum();
                if (total - 100.0).abs() > 0.5 {
                    return Err(self.err(
                        line,
                        format!("randtable percents add up to {total}, not 100"),
                    ));
                }
                match mean {
                    None => Dist::Table { rows },
                    Some(m) => {
                        // Filebench scales the table to the given mean, keeping its minimum.
                        let lo = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
                        let tm = rows.iter().map(|r| r.0 * (r.1 + r.2) / 2.0).sum::<f64>() / total;
                        let k = if tm > lo { (m - min) / (tm - lo) } else { 1.0 };
                        Dist::Table {
                            rows: rows
                                .iter()
                                .map(|r| (r.0, min + (r.1 - lo) * k, min + (r.2 - lo) * k))
                                .collect(),
                        }
                    }
                }
            }
            t => {
                return Err(self.err(
                    line,
                    format!("randvar type {t:?} is not supported (uniform, gamma, tabular)"),
                ))
            }
        };
        if table.is_some() && ty != "tabular" {
            return Err(self.err(line, format!("randtable given to a {ty} randvar")));
        }
        Ok(RandVar {
            dist,
            min,
            max: None,
            round,
        })
    }

    /// `{{percent, low, high}, ...}`.
    fn randtable(&mut self, a: &Attr) -> Result<Vec<(f64, f64, f64)>, Error> {
        let Some((s, e)) = a.val else {
            return Err(self.err(a.line, "randtable needs a value"));
        };
        let save = self.pos;
        self.pos = s;
        let r = (|| {
            self.expect_p('{', "to open randtable")?;
            let mut rows = Vec::new();
            loop {
                self.expect_p('{', "to open a randtable row")?;
                let mut row = Vec::new();
                for k in 0..3 {
                    let line = self.line();
                    let v = match self.expr()? {
                        Value::Int(v) => v as f64,
                        other => {
                            return Err(self.err(
                                line,
                                format!("randtable: bad number {}", value_text(&other)),
                            ))
                        }
                    };
                    row.push(v);
                    if k < 2 {
                        self.expect_p(',', "between a randtable row's numbers")?;
                    }
                }
                self.expect_p('}', "to close a randtable row of three numbers")?;
                if row[1] > row[2] {
                    return Err(self.err(self.line(), "randtable row: low above high"));
                }
                rows.push((row[0], row[1], row[2]));
                if self.is_p(',') {
                    self.pos += 1;
                    if self.is_p('}') {
                        break;
                    }
                    continue;
                }
                break;
            }
            self.expect_p('}', "to close randtable")?;
            Ok(rows)
        })();
        let at = self.pos;
        self.pos = save;
        let rows = r?;
        if at != e {
            return Err(self.err(a.line, "unexpected text after randtable"));
        }
        Ok(rows)
    }
}

fn show(v: &Value, raw: &str) -> String {
    match v {
        Value::Str(s) if raw.starts_with('$') => format!("{raw} = {s:?}"),
        Value::Str(s) => format!("{s:?}"),
        Value::Rand(..) => format!("{raw} (a distribution)"),
        Value::Int(i) => i.to_string(),
    }
}

/// What `set $var=value` statements say, in order: (first line, last line, name).
pub fn set_lines(text: &str) -> Vec<(usize, usize, String)> {
    let Ok(toks) = lex(text, "") else {
        return Vec::new();
    };
    let overrides = HashMap::new();
    let mut p = Parser {
        origin: "",
        toks,
        pos: 0,
        vars: HashMap::new(),
        locals: Vec::new(),
        overrides: &overrides,
        composites: HashMap::new(),
        notes: Vec::new(),
        steps: 0,
    };
    let mut out = Vec::new();
    while p.pos < p.toks.len() {
        let t = &p.toks[p.pos];
        if t.t == Tk::Word("set".into()) {
            if let (Some(Tk::Var(name)), Some(Tk::P('='))) = (
                p.toks.get(p.pos + 1).map(|t| t.t.clone()),
                p.toks.get(p.pos + 2).map(|t| t.t.clone()),
            ) {
                let first = t.line;
                p.pos += 3;
                if p.skip_value().is_ok() {
                    let last = p.toks[p.pos - 1].line;
                    out.push((first, last, name));
                    continue;
                }
                return out;
            }
        }
        p.pos += 1;
    }
    out
}

/// Parses and checks a workload; `overrides` replace the values of `set $var=` lines.
pub fn parse(
    text: &str,
    origin: &str,
    overrides: &HashMap<String, String>,
) -> Result<Model, Error> {
    let toks = lex(text, origin)?;
    let mut p = Parser {
        origin,
        toks,
        pos: 0,
        vars: HashMap::new(),
        locals: Vec::new(),
        overrides,
        composites: HashMap::new(),
        notes: Vec::new(),
        steps: 0,
    };
    let mut model = Model::default();
    while p.pos < p.toks.len() {
        let line = p.line();
        let tok = p.next().expect("in range").t;
        let kw = match tok {
            Tk::Word(w) => w,
            Tk::P('}') => {
                return Err(p.err(
                    line,
                    "unbalanced `}`: no block is open here (a `{` is missing or a `}` is doubled)",
                ))
            }
            Tk::P('{') => {
                return Err(p.err(
                    line,
                    "a `{` that no `define process`, `thread` or `define flowop` opens",
                ))
            }
            Tk::Var(v) => return Err(p.err(line, format!("${v} where a statement should start"))),
            Tk::Quoted(q) => {
                return Err(p.err(line, format!("\"{q}\" where a statement should start")))
            }
            Tk::P(c) => return Err(p.err(line, format!("`{c}` where a statement should start"))),
        };
        match kw.as_str() {
            "set" => set(&mut p, line, &mut model)?,
            "echo" | "usage" => {
                while matches!(p.peek(), Some(Tk::Quoted(_) | Tk::Var(_))) {
                    p.pos += 1;
                }
            }
            "define" => {
                let what = match p.next().map(|t| t.t) {
                    Some(Tk::Word(w)) => w,
                    _ => return Err(p.err(line, "define what? (file, fileset, randvar, flowop, process)")),
                };
                match what.as_str() {
                    "file" | "files" | "fileset" | "filesets" => {
                        let attrs = p.attrs()?;
                        let fs = fileset(&mut p, line, &attrs, what.starts_with("file") && !what.starts_with("fileset"))?;
                        if model.filesets.iter().any(|f| f.name == fs.name) {
                            return Err(p.err(line, format!("fileset {} defined twice", fs.name)));
                        }
                        model.filesets.push(fs);
                    }
                    "randvar" => {
                        let attrs = p.attrs()?;
                        let name = attrs
                            .iter()
                            .find(|a| a.key == "name")
                            .and_then(|a| a.val)
                            .and_then(|(s, _)| match &p.toks[s].t {
                                Tk::Var(v) => Some(v.clone()),
                                _ => None,
                            })
                            .ok_or_else(|| p.err(line, "define randvar needs name=$variable"))?;
                        let r = p.randvar(line, &attrs, true)?;
                        let text = format!("randvar({})", randvar_text(&p, &attrs));
                        // An override of a randvar's variable replaces the distribution.
                        let v = match p.overrides.get(&name) {
                            Some(o) => override_value(&mut p, line, o)?,
                            None => Value::Rand(r, text),
                        };
                        p.vars.insert(name, v);
                    }
                    "flowop" => {
                        let attrs = p.attrs()?;
                        let name = match attrs.iter().find(|a| a.key == "name") {
                            Some(a) => p.string(a)?,
                            None => return Err(p.err(line, "define flowop needs name=")),
                        };
                        for a in &attrs {
                            if a.key != "name" && !a.key.starts_with('$') {
                                return Err(p.err(
                                    a.line,
                                    format!("define flowop attribute {:?} is not supported (name and $parameters)", a.key),
                                ));
                            }
                        }
                        if FlowopKind::from_name(&name).is_some() {
                            return Err(p.err(line, format!("define flowop {name}: a built-in flowop has that name")));
                        }
                        p.expect_p('{', &format!("after define flowop {name}"))?;
                        let body = p.pos;
                        p.pos -= 1;
                        p.skip_group()?;
                        p.composites.insert(name, Composite { body });
                    }
                    "process" | "processes" => process(&mut p, line, &mut model)?,
                    other => {
                        return Err(p.err(
                            line,
                            format!("define {other} is not supported (file, fileset, randvar, flowop, process)"),
                        ))
                    }
                }
            }
            "eventgen" => {
                for a in p.attrs()? {
                    match a.key.as_str() {
                        "rate" => model.eventgen_hz = p.int(&a)?,
                        other => {
                            return Err(p.err(a.line, format!("eventgen attribute {other:?} is not supported (rate)")))
                        }
                    }
                }
            }
            "run" | "sleep" => {
                let secs = match p.peek().cloned() {
                    Some(Tk::Var(v)) => {
                        p.pos += 1;
                        match p.lookup(line, &v)? {
                            Value::Int(n) => Some(n),
                            other => {
                                return Err(p.err(line, format!("{kw} ${v}: not a number ({})", value_text(&other))))
                            }
                        }
                    }
                    Some(Tk::Word(w)) if parse_size(&w).is_some() => {
                        p.pos += 1;
                        parse_size(&w)
                    }
                    _ if kw == "sleep" => {
                        return Err(p.err(line, "sleep needs a number of seconds"))
                    }
                    _ => None,
                };
                if model.run_secs.is_some() {
                    p.note(format!("{kw} on line {line}: the run is one, timed by the first run/psrun/sleep"));
                } else {
                    model.run_secs = Some(secs.unwrap_or(60));
                    model.run_line = Some(line);
                }
            }
            "psrun" => {
                let mut nums = Vec::new();
                while let Some(Tk::Word(w)) = p.peek().cloned() {
                    let n = w.trim_start_matches('-');
                    match parse_size(n) {
                        Some(v) if nums.len() < 2 => {
                            nums.push(v);
                            p.pos += 1;
                        }
                        _ => break,
                    }
                }
                p.note("psrun: run as `run`; its per-interval statistics are not printed".into());
                if model.run_secs.is_none() {
                    model.run_secs = Some(nums.get(1).copied().filter(|&n| n > 0).unwrap_or(60));
                    model.run_line = Some(line);
                }
            }
            "stats" => {
                if let Some(Tk::Word(_)) = p.peek() {
                    p.pos += 1;
                }
                if let Some(Tk::Quoted(_)) = p.peek() {
                    p.pos += 1;
                }
                p.note("stats: fsage measures the whole run and prints it at the end (stats commands have no effect)".into());
            }
            "debug" => {
                match p.next().map(|t| t.t) {
                    Some(Tk::Word(w)) if parse_size(&w).is_some() => {}
                    _ => return Err(p.err(line, "debug needs a level (a number)")),
                }
                p.note("debug: accepted, no effect".into());
            }
            "quit" => break,
            "create" => {
                return Err(p.err(
                    line,
                    "unsupported keyword \"create\" (Filebench 1.4's `create files/processes`; in 1.5 `run` creates everything)",
                ))
            }
            "system" => {
                return Err(p.err(line, "unsupported keyword \"system\": fsage does not run shell commands from a workload"))
            }
            other => {
                return Err(p.err(
                    line,
                    format!("unsupported keyword {other:?} (fsage reads set, define, eventgen, run, psrun, sleep, stats, debug, echo, usage, quit)"),
                ))
            }
        }
    }
    check(&p, &mut model)?;
    // Every override must name a variable the workload sets.
    for k in overrides.keys() {
        if !p.vars.contains_key(k) {
            return Err(Error::UnknownVar {
                origin: origin.to_string(),
                var: k.clone(),
            });
        }
    }
    model.vars = {
        let mut v: Vec<(String, String)> = p
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), value_text(v)))
            .collect();
        v.sort();
        v
    };
    model.notes = p.notes;
    Ok(model)
}

fn randvar_text(p: &Parser, attrs: &[Attr]) -> String {
    attrs
        .iter()
        .filter(|a| a.key != "name")
        .map(|a| match a.val {
            Some(_) => format!("{}={}", a.key, p.raw(a)),
            None => a.key.clone(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn override_value(p: &mut Parser, line: usize, text: &str) -> Result<Value, Error> {
    let toks = lex(text, p.origin).map_err(|_| p.err(line, format!("bad value {text:?}")))?;
    if toks.is_empty() {
        return Ok(Value::Str(String::new()));
    }
    let saved = std::mem::replace(&mut p.toks, toks);
    let save_pos = std::mem::replace(&mut p.pos, 0);
    // Lines inside the override text are 1: say the set line instead.
    for t in &mut p.toks {
        t.line = line;
    }
    let v = p.expr();
    let done = p.pos >= p.toks.len();
    p.toks = saved;
    p.pos = save_pos;
    let v = v?;
    if !done {
        return Err(p.err(line, format!("bad value {text:?}")));
    }
    Ok(v)
}

fn set(p: &mut Parser, line: usize, model: &mut Model) -> Result<(), Error> {
    match p.next().map(|t| t.t) {
        Some(Tk::Var(name)) => {
            p.expect_p('=', &format!("after set ${name}"))?;
            let s = p.pos;
            p.skip_value()?;
            let e = p.pos;
            let v = match p.overrides.get(&name) {
                Some(o) => override_value(p, line, &o.clone())?,
                None => p.eval_range((s, e))?,
            };
            p.vars.insert(name, v);
            Ok(())
        }
        Some(Tk::Word(w)) if w == "mode" => {
            let a = p.next().map(|t| t.t);
            let b = p.peek().cloned();
            match (a, b) {
                (Some(Tk::Word(q)), Some(Tk::Word(m))) if q == "quit" => {
                    p.pos += 1;
                    model.mode = match m.as_str() {
                        "timeout" => QuitMode::Timeout,
                        "firstdone" => QuitMode::FirstDone,
                        "alldone" => QuitMode::AllDone,
                        other => {
                            return Err(p.err(
                                line,
                                format!(
                                    "set mode quit {other}: expected timeout, firstdone or alldone"
                                ),
                            ))
                        }
                    };
                    Ok(())
                }
                (Some(Tk::Word(n)), _) if n == "nousestats" => Ok(()),
                _ => Err(p.err(
                    line,
                    "set mode: expected `quit timeout|firstdone|alldone` or `nousestats`",
                )),
            }
        }
        Some(other) => Err(p.err(
            line,
            format!(
                "set {}: only `set $var=value` and `set mode ...` are supported",
                match other {
                    Tk::Word(w) => w,
                    Tk::Quoted(q) => q,
                    Tk::P(c) => c.to_string(),
                    Tk::Var(v) => v,
                }
            ),
        )),
        None => Err(p.err(line, "set what?")),
    }
}

/// A value as `.f` text.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Str(s) => s.clone(),
        Value::Rand(_, text) => text.clone(),
    }
}

fn fileset(p: &mut Parser, line: usize, attrs: &[Attr], single: bool) -> Result<FilesetDef, Error> {
    let mut fs = FilesetDef {
        name: String::new(),
        path: None,
        size: SizeDist::Fixed(0),
        entries: if single { 1 } else { 0 },
        dirwidth: 0,
        prealloc: 0,
        readonly: false,
        reuse: false,
        single_file: single,
        dirs: false,
        line,
    };
    let mut have_size = single;
    for a in attrs {
        match a.key.as_str() {
            "name" => fs.name = p.string(a)?,
            "path" => fs.path = Some(p.string(a)?),
            "size" | "filesize" => {
                have_size = true;
                let raw = p.raw(a);
                fs.size = match p.attr_value(a)? {
                    Value::Int(b) => SizeDist::Fixed(b),
                    Value::Rand(r, _) => match r.dist {
                        Dist::Gamma {
                            mean,
                            shape,
                            shift,
                        } if shift == 0.0 && r.min == 0.0 && r.max.is_none() && r.round == 0.0 => {
                            SizeDist::Gamma { mean, shape }
                        }
                        _ => SizeDist::Rand(r),
                    },
                    other => return Err(p.err(a.line, format!("bad size {}", show(&other, &raw)))),
                };
            }
            "entries" if !single => fs.entries = p.int(a)?,
            "leafdirs" if !single => {
                fs.entries = p.int(a)?;
                fs.dirs = true;
            }
            "dirwidth" => fs.dirwidth = p.int(a)?,
            "prealloc" => {
                fs.prealloc = match a.val {
                    None => 100,
                    Some(_) => match p.attr_value(a)? {
                        Value::Str(s) if s == "true" => 100,
                        Value::Str(s) if s == "false" => 0,
                        _ => p.int(a)?,
                    },
                }
            }
            "readonly" => fs.readonly = p.boolean(a)?,
            "reuse" => fs.reuse = p.boolean(a)?,
            "writeonly" => {
                p.boolean(a)?;
            }
            // How Filebench builds or caches it, not what is built.
            "paralloc" | "trusttree" | "cached" => {
                if a.val.is_some() {
                    p.attr_value(a)?;
                }
            }
            "dirgamma" | "dirdepthrv" => {
                let v = p.attr_value(a)?;
                if !matches!(v, Value::Int(0)) {
                    p.note(format!(
                        "fileset {}: {}= is accepted but fsage's tree has the same width everywhere (dirwidth is its mean)",
                        if fs.name.is_empty() { "?" } else { &fs.name },
                        a.key
                    ));
                }
            }
            other => {
                return Err(p.err(
                    a.line,
                    format!(
                        "{} attribute {other:?} is not supported (name, path, size, {}dirwidth, prealloc, paralloc, readonly, writeonly, reuse, cached, trusttree, dirgamma, dirdepthrv)",
                        if single { "file" } else { "fileset" },
                        if single { "" } else { "entries, leafdirs, " }
                    ),
                ))
            }
        }
    }
    let what = if single { "file" } else { "fileset" };
    if fs.name.is_empty()
        || !fs
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        || fs.name.starts_with('.')
    {
        return Err(p.err(
            line,
            format!(
                "{what} needs a name of letters, digits, _ - . (got {:?})",
                fs.name
            ),
        ));
    }
    if !have_size && !fs.dirs {
        return Err(p.err(line, format!("fileset {} needs size=", fs.name)));
    }
    if fs.entries == 0 {
        return Err(p.err(
            line,
            format!(
                "fileset {} needs entries= (or leafdirs=) of at least 1",
                fs.name
            ),
        ));
    }
    if fs.entries > MAX_ENTRIES {
        return Err(p.err(
            line,
            format!(
                "fileset {}: entries={} is more than {MAX_ENTRIES}",
                fs.name, fs.entries
            ),
        ));
    }
    // A tree one directory wide never holds more than one leaf (planning it never ended).
    if fs.dirwidth == 1 && fs.entries > 1 {
        return Err(p.err(
            line,
            format!(
                "fileset {}: dirwidth=1 cannot hold {} entries (at least 2, or 0 for one directory)",
                fs.name, fs.entries
            ),
        ));
    }
    if fs.dirs {
        fs.size = SizeDist::Fixed(0);
    }
    if fs.dirwidth == 0 {
        fs.dirwidth = fs.entries.max(1);
    }
    if fs.prealloc > 100 {
        return Err(p.err(
            line,
            format!(
                "fileset {}: prealloc={} is not a percentage",
                fs.name, fs.prealloc
            ),
        ));
    }
    Ok(fs)
}

/// `define process ... { thread ... { flowop ... } }`.
fn process(p: &mut Parser, line: usize, model: &mut Model) -> Result<(), Error> {
    let mut name = String::new();
    let mut instances = 1u64;
    for a in p.attrs()? {
        match a.key.as_str() {
            "name" => name = p.string(&a)?,
            "instances" => {
                instances = p.int(&a)?;
                // Zero would run the threads once anyway (Filebench starts none).
                if instances == 0 || instances > 10_000 {
                    return Err(p.err(a.line, "process instances must be 1 to 10000"));
                }
            }
            "nice" => {
                p.int(&a)?;
                p.note("process nice=: not applied (fsage's threads share one process)".into());
            }
            other => {
                return Err(p.err(
                    a.line,
                    format!("process attribute {other:?} is not supported (name, instances, nice)"),
                ))
            }
        }
    }
    p.expect_p('{', &format!("after define process {name}"))?;
    let first_thread = model.threads.len();
    loop {
        let tline = p.line();
        match p.next().map(|t| t.t) {
            Some(Tk::P('}')) => break,
            Some(Tk::Word(w)) if w == "thread" => {
                let mut t = ThreadDef {
                    process: name.clone(),
                    name: String::new(),
                    instances: 1,
                    memsize: None,
                    flowops: Vec::new(),
                    line: tline,
                };
                for a in p.attrs()? {
                    match a.key.as_str() {
                        "name" => t.name = p.string(&a)?,
                        "instances" => t.instances = p.int(&a)?,
                        "memsize" => t.memsize = Some(p.int(&a)?),
                        "useism" => {
                            p.boolean(&a)?;
                        }
                        "ioprio" => {
                            p.int(&a)?;
                            p.note("thread ioprio=: not applied".into());
                        }
                        other => {
                            return Err(p.err(
                                a.line,
                                format!("thread attribute {other:?} is not supported (name, instances, memsize, useism, ioprio)"),
                            ))
                        }
                    }
                }
                p.expect_p('{', &format!("after thread {}", t.name))?;
                flowop_block(p, &mut t.flowops, 0)?;
                if t.flowops.is_empty() {
                    return Err(p.err(t.line, format!("thread {} has no flowop", t.name)));
                }
                model.threads.push(t);
            }
            Some(Tk::Word(w)) => {
                return Err(p.err(
                    tline,
                    format!("unsupported keyword {w:?} inside a process (only thread)"),
                ))
            }
            None => return Err(p.err(line, format!("process {name}: missing }}"))),
            Some(_) => {
                p.pos -= 1;
                return Err(p.err(
                    tline,
                    format!("{} inside a process (only thread)", p.shown()),
                ));
            }
        }
    }
    if instances != 1 {
        for t in &mut model.threads[first_thread..] {
            t.instances = t.instances.saturating_mul(instances);
        }
    }
    Ok(())
}

/// Flowop statements up to the `}` that closes the block (already opened).
fn flowop_block(p: &mut Parser, out: &mut Vec<FlowopDef>, depth: usize) -> Result<(), Error> {
    let open = p.line();
    loop {
        let line = p.line();
        match p.next().map(|t| t.t) {
            Some(Tk::P('}')) => return Ok(()),
            Some(Tk::Word(w)) if w == "flowop" => {
                p.steps += 1;
                if p.steps > MAX_EXPANSION_STEPS {
                    return Err(p.err(
                        line,
                        format!(
                            "the workload expands to more than {MAX_EXPANSION_STEPS} flowop \
                             statements (each call of a composite flowop reads its body again): \
                             call composites less deeply or less often"
                        ),
                    ));
                }
                let kind_s = match p.next().map(|t| t.t) {
                    Some(Tk::Word(k)) => k,
                    _ => return Err(p.err(line, "flowop needs a type")),
                };
                let attrs = p.attrs()?;
                if let Some(c) = p.composites.get(&kind_s).cloned() {
                    if depth > MAX_COMPOSITE_DEPTH {
                        return Err(p.err(
                            line,
                            format!("flowop {kind_s}: composites nested more than {MAX_COMPOSITE_DEPTH} deep"),
                        ));
                    }
                    let mut scope = HashMap::new();
                    let mut iters = 1u64;
                    for a in &attrs {
                        match a.key.as_str() {
                            "name" => {}
                            "iters" => iters = p.int(a)?.max(1),
                            k if k.starts_with('$') => {
                                let v = p.attr_value(a)?;
                                scope.insert(k[1..].to_string(), v);
                            }
                            other => {
                                return Err(p.err(a.line, format!("composite flowop {kind_s}: attribute {other:?} is not supported (name, iters, $parameter=value)")))
                            }
                        }
                    }
                    let mut body = Vec::new();
                    let save = p.pos;
                    p.pos = c.body;
                    p.locals.push(scope);
                    let r = flowop_block(p, &mut body, depth + 1);
                    p.locals.pop();
                    p.pos = save;
                    r?;
                    // Checked before anything is copied: iters=10^18 of an empty or a large
                    // body is refused (or expands to nothing) at once.
                    if !body.is_empty() {
                        let room = MAX_FLOWOPS_PER_THREAD.saturating_sub(out.len()) as u128;
                        if body.len() as u128 * iters as u128 > room {
                            return Err(p.err(line, format!("flowop {kind_s}: iters={iters} of {} flowops makes more than the {MAX_FLOWOPS_PER_THREAD} flowops a thread may have once composites are expanded", body.len())));
                        }
                        for _ in 0..iters {
                            out.extend(body.iter().cloned());
                        }
                    }
                } else {
                    out.push(flowop(p, line, &kind_s, &attrs)?);
                }
            }
            Some(Tk::Word(w)) => {
                return Err(p.err(
                    line,
                    format!("unsupported keyword {w:?} inside a thread (only flowop)"),
                ))
            }
            None => return Err(p.err(open, "a block is never closed: missing }")),
            Some(_) => {
                p.pos -= 1;
                return Err(p.err(line, format!("{} inside a thread (only flowop)", p.shown())));
            }
        }
    }
}

fn flowop(p: &mut Parser, line: usize, kind_s: &str, attrs: &[Attr]) -> Result<FlowopDef, Error> {
    let kind = FlowopKind::from_name(kind_s).ok_or_else(|| {
        p.err(
            line,
            format!(
                "unknown flowop {kind_s:?} (fsage runs {}, and the flowops a define flowop names)",
                FlowopKind::ALL
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let mut f = FlowopDef {
        kind,
        name: String::new(),
        fileset_name: None,
        fileset: None,
        fd: 1,
        srcfd: None,
        iosize: None,
        random: false,
        dsync: false,
        directio: false,
        iters: 1,
        iosize_dist: None,
        value: None,
        target: None,
        indexed: None,
        workingset: 0,
        opennext: false,
        blocking: false,
        highwater: None,
        line,
    };
    for a in attrs {
        match a.key.as_str() {
            "name" => f.name = p.string(a)?,
            "filesetname" | "filename" => f.fileset_name = Some(p.string(a)?),
            // Out of u32's range is out of MAX_FD's, refused below.
            "fd" => f.fd = u32::try_from(p.int(a)?).unwrap_or(u32::MAX),
            "srcfd" => f.srcfd = Some(u32::try_from(p.int(a)?).unwrap_or(u32::MAX)),
            "iosize" => match p.param(a)? {
                Param::Fixed(v) if v > MAX_IOSIZE => {
                    return Err(p.err(
                        a.line,
                        format!("flowop {}: iosize={v} is more than {MAX_IOSIZE} (1 GiB)", f.name),
                    ))
                }
                Param::Fixed(v) => f.iosize = Some(v),
                Param::Rand(r) => {
                    let cap = r.upper_bound().unwrap_or(16.0 * 1048576.0).clamp(1.0, MAX_IOSIZE as f64);
                    f.iosize = Some(cap as u64);
                    f.iosize_dist = Some(RandVar {
                        max: Some(r.max.map_or(cap, |m| m.min(cap))),
                        ..r
                    });
                }
            },
            "iters" => f.iters = p.int(a)?.max(1),
            "random" => f.random = p.boolean(a)?,
            "dsync" => f.dsync = p.boolean(a)?,
            "directio" => f.directio = p.boolean(a)?,
            "workingset" => f.workingset = p.int(a)?,
            "opennext" => f.opennext = p.boolean(a)?,
            "indexed" => f.indexed = Some(p.param(a)?),
            "target" => f.target = Some(p.string(a)?),
            "value" => f.value = Some(p.int(a)?),
            "blocking" => f.blocking = p.boolean(a)?,
            "highwater" => f.highwater = Some(p.int(a)?),
            "noreadahead" => {
                p.boolean(a)?;
                p.note("flowop noreadahead: not applied".into());
            }
            other => {
                return Err(p.err(
                    a.line,
                    format!("flowop attribute {other:?} is not supported (name, filesetname, filename, fd, srcfd, iosize, iters, random, dsync, directio, workingset, opennext, indexed, target, value, blocking, highwater)"),
                ))
            }
        }
    }
    if f.name.is_empty() {
        return Err(p.err(line, format!("flowop {kind_s} needs name=")));
    }
    if f.fd >= crate::model::MAX_FD || f.srcfd.is_some_and(|s| s >= crate::model::MAX_FD) {
        return Err(p.err(
            line,
            format!(
                "flowop {}: fd must be below {}",
                f.name,
                crate::model::MAX_FD
            ),
        ));
    }
    if f.iosize == Some(0) {
        return Err(p.err(line, format!("flowop {}: iosize must be positive", f.name)));
    }
    if let Some(s) = f.iosize {
        if s > 1 << 30 {
            return Err(p.err(
                line,
                format!("flowop {}: iosize {s} is more than 1 GiB", f.name),
            ));
        }
    }
    if f.kind.needs_value() && f.value.is_none() {
        return Err(p.err(
            line,
            format!("flowop {} ({}) needs value=", f.name, f.kind.name()),
        ));
    }
    if f.kind.needs_target() && f.target.is_none() {
        return Err(p.err(
            line,
            format!("flowop {} ({}) needs target=", f.name, f.kind.name()),
        ));
    }
    Ok(f)
}

/// Cross-references: filesets named by flowops exist, I/O flowops have an iosize, targets exist.
fn check(p: &Parser, m: &mut Model) -> Result<(), Error> {
    if m.threads.is_empty() {
        return Err(p.err(
            m.run_line.unwrap_or(1),
            "the workload defines no process with a thread",
        ));
    }
    let names: Vec<String> = m.filesets.iter().map(|f| f.name.clone()).collect();
    let all_flowops: Vec<(FlowopKind, String)> = m
        .threads
        .iter()
        .flat_map(|t| t.flowops.iter().map(|f| (f.kind, f.name.clone())))
        .collect();
    let dirs: Vec<bool> = m.filesets.iter().map(|f| f.dirs).collect();
    let (mut threads, mut flowops, mut entries) = (0u64, 0usize, 0u64);
    for f in &m.filesets {
        entries = entries.saturating_add(f.entries);
        if entries > MAX_ENTRIES {
            return Err(p.err(
                f.line,
                format!(
                    "fileset {}: the filesets have more than {MAX_ENTRIES} entries in all",
                    f.name
                ),
            ));
        }
    }
    for t in &m.threads {
        threads = threads.saturating_add(t.instances);
        flowops += t.flowops.len();
        if threads > MAX_THREADS {
            return Err(p.err(
                t.line,
                format!(
                    "thread {}: the workload has more than {MAX_THREADS} thread instances in all",
                    t.name
                ),
            ));
        }
        if flowops > MAX_FLOWOPS {
            return Err(p.err(
                t.line,
                format!("thread {}: the workload has more than {MAX_FLOWOPS} flowops in all once composites are expanded", t.name),
            ));
        }
    }
    for t in &mut m.threads {
        if t.instances == 0 || t.instances > 10_000 {
            return Err(p.err(
                t.line,
                format!("thread {}: instances must be 1 to 10000", t.name),
            ));
        }
        let own: Vec<(FlowopKind, String)> =
            t.flowops.iter().map(|f| (f.kind, f.name.clone())).collect();
        let t_opens: Vec<(u32, String)> = t
            .flowops
            .iter()
            .filter(|f| {
                matches!(
                    f.kind,
                    FlowopKind::File(FileOp::OpenFile | FileOp::CreateFile)
                )
            })
            .filter_map(|f| Some((f.fd, f.fileset_name.clone()?)))
            .collect();
        for f in &mut t.flowops {
            if let Some(n) = &f.fileset_name {
                let i = names.iter().position(|x| x == n).ok_or_else(|| {
                    p.err(
                        f.line,
                        format!("flowop {}: undefined fileset {n:?}", f.name),
                    )
                })?;
                f.fileset = Some(i);
                if f.kind.on_dirs() != dirs[i] && f.kind.needs_fileset() {
                    return Err(p.err(
                        f.line,
                        format!(
                            "flowop {} ({}): fileset {n} holds {}",
                            f.name,
                            f.kind.name(),
                            if dirs[i] {
                                "directories (leafdirs=), not files"
                            } else {
                                "files, not directories (give it leafdirs=)"
                            }
                        ),
                    ));
                }
            } else if f.kind == FlowopKind::File(FileOp::DeleteFile) {
                // By fd: the file an openfile or createfile of this thread put there.
                let fd = f.fd;
                let by = t_opens
                    .iter()
                    .find(|(ofd, _)| *ofd == fd)
                    .map(|(_, n)| n.clone());
                match by.and_then(|n| names.iter().position(|x| *x == n)) {
                    Some(i) => f.fileset = Some(i),
                    None => {
                        return Err(p.err(
                            f.line,
                            format!("flowop {} (deletefile) needs filesetname= or an fd that an openfile or createfile of its thread opens", f.name),
                        ))
                    }
                }
            } else if f.kind.needs_fileset() {
                return Err(p.err(
                    f.line,
                    format!("flowop {} ({}) needs filesetname=", f.name, f.kind.name()),
                ));
            }
            if f.iosize.is_none() && f.kind.needs_iosize() {
                return Err(p.err(
                    f.line,
                    format!("flowop {} ({}) needs iosize=", f.name, f.kind.name()),
                ));
            }
            if let Some(tg) = &f.target {
                let ok = match f.kind {
                    // Semaphores and wakeups reach flowops of any thread.
                    FlowopKind::Pace(PaceOp::SemPost) => all_flowops
                        .iter()
                        .any(|(k, n)| *k == FlowopKind::Pace(PaceOp::SemBlock) && n == tg),
                    FlowopKind::Pace(PaceOp::Wakeup) => all_flowops
                        .iter()
                        .any(|(k, n)| *k == FlowopKind::Pace(PaceOp::Block) && n == tg),
                    _ => own.iter().any(|(_, n)| n == tg),
                };
                if !ok {
                    let what = match f.kind {
                        FlowopKind::Pace(PaceOp::SemPost) => "no semblock flowop has that name",
                        FlowopKind::Pace(PaceOp::Wakeup) => "no block flowop has that name",
                        _ => "no flowop of the same thread has that name",
                    };
                    return Err(p.err(f.line, format!("flowop {}: target {tg:?}: {what}", f.name)));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_powers_of_1024() {
        assert_eq!(parse_size("16k"), Some(16384));
        assert_eq!(parse_size("1m"), Some(1 << 20));
        assert_eq!(parse_size("1.5K"), Some(1536));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("131072"), Some(131072));
        assert_eq!(parse_size("12q"), None);
        assert_eq!(parse_size("k"), None);
    }

    #[test]
    fn tokens_cross_lines_and_keep_their_line() {
        let t = lex("set $a = 1\n  define fileset name=x,\n   size=cvar(type=cvar-gamma,parameters=mean:1;gamma:2) # c\n", "t").unwrap();
        assert_eq!(t[0].t, Tk::Word("set".into()));
        assert_eq!(t[1].t, Tk::Var("a".into()));
        let size = t
            .iter()
            .position(|x| x.t == Tk::Word("size".into()))
            .unwrap();
        assert_eq!(t[size].line, 3);
        assert!(t.iter().any(|x| x.t == Tk::Word("mean:1;gamma:2".into())));
    }
}
