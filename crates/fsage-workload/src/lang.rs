//! Filebench's workload-model language (`.f` files), the subset its standard personalities use.
//! Anything outside it is refused with the file, line and keyword: a silently skipped line would
//! make the numbers mean something else than the user thinks.

use crate::error::Error;
use crate::model::{FilesetDef, FlowopDef, FlowopKind, Model, SizeDist, ThreadDef};
use std::collections::HashMap;

/// A value of a variable or an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(u64),
    Str(String),
    Gamma { mean: f64, shape: f64 },
}

/// One statement: its line and text (`{` and `}` are statements of their own).
#[derive(Debug, Clone)]
struct Stmt {
    line: usize,
    text: String,
}

fn statements(text: &str) -> Vec<Stmt> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        // Strip a comment outside quotes.
        let mut in_q = false;
        let mut cut = raw.len();
        for (k, c) in raw.char_indices() {
            match c {
                '"' => in_q = !in_q,
                '#' if !in_q => {
                    cut = k;
                    break;
                }
                _ => {}
            }
        }
        let mut cur = String::new();
        let mut in_q = false;
        for c in raw[..cut].chars() {
            match c {
                '"' => {
                    in_q = !in_q;
                    cur.push(c);
                }
                '{' | '}' if !in_q => {
                    if !cur.trim().is_empty() {
                        out.push(Stmt {
                            line,
                            text: cur.trim().to_string(),
                        });
                    }
                    cur.clear();
                    out.push(Stmt {
                        line,
                        text: c.to_string(),
                    });
                }
                _ => cur.push(c),
            }
        }
        if !cur.trim().is_empty() {
            out.push(Stmt {
                line,
                text: cur.trim().to_string(),
            });
        }
    }
    out
}

/// Splits `a=1,b=cvar(x=1,y=2),c` at the commas outside parentheses and quotes.
fn split_attrs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut in_q = false;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '"' => in_q = !in_q,
            '(' if !in_q => depth += 1,
            ')' if !in_q => depth -= 1,
            ',' if !in_q && depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
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

struct Parser<'a> {
    origin: &'a str,
    vars: HashMap<String, Value>,
    overrides: &'a HashMap<String, String>,
}

impl Parser<'_> {
    fn err(&self, line: usize, msg: impl Into<String>) -> Error {
        Error::Parse {
            origin: self.origin.to_string(),
            line,
            msg: msg.into(),
        }
    }

    /// A literal value (no `$`).
    fn literal(&self, line: usize, raw: &str) -> Result<Value, Error> {
        let raw = raw.trim();
        if let Some(q) = raw.strip_prefix('"') {
            return Ok(Value::Str(q.trim_end_matches('"').to_string()));
        }
        if let Some(inner) = raw.strip_prefix("cvar(").and_then(|r| r.strip_suffix(')')) {
            return self.cvar(line, inner);
        }
        if raw.starts_with("cvar") {
            return Err(self.err(line, format!("bad cvar {raw:?}: expected cvar(...)")));
        }
        if let Some(v) = parse_size(raw) {
            return Ok(Value::Int(v));
        }
        Ok(Value::Str(raw.to_string()))
    }

    fn cvar(&self, line: usize, inner: &str) -> Result<Value, Error> {
        let mut ty = None;
        let mut params = None;
        for a in split_attrs(inner) {
            match a.split_once('=') {
                Some(("type", v)) => ty = Some(v.trim().to_string()),
                Some(("parameters", v)) => params = Some(v.trim().to_string()),
                _ => return Err(self.err(line, format!("cvar: unsupported attribute {a:?}"))),
            }
        }
        match ty.as_deref() {
            Some("cvar-gamma") => {}
            Some(t) => {
                return Err(self.err(
                    line,
                    format!("cvar type {t:?} is not supported (only cvar-gamma)"),
                ))
            }
            None => return Err(self.err(line, "cvar without type=")),
        }
        let (mut mean, mut shape) = (None, None);
        for p in params.unwrap_or_default().split(';') {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            let (k, v) = p.split_once(':').ok_or_else(|| {
                self.err(line, format!("cvar parameter {p:?}: expected key:value"))
            })?;
            let num: f64 = match parse_size(v) {
                Some(n) if !v.contains('.') => n as f64,
                _ => v
                    .trim()
                    .parse()
                    .map_err(|_| self.err(line, format!("cvar parameter {k}: bad number {v:?}")))?,
            };
            match k.trim() {
                "mean" => mean = Some(num),
                "gamma" => shape = Some(num),
                other => {
                    return Err(self.err(
                        line,
                        format!("cvar-gamma parameter {other:?} is not supported (mean, gamma)"),
                    ))
                }
            }
        }
        let mean = mean.ok_or_else(|| self.err(line, "cvar-gamma needs mean:"))?;
        let shape = shape.unwrap_or(1.5);
        if !(mean > 0.0 && shape > 0.0 && mean.is_finite() && shape.is_finite()) {
            return Err(self.err(line, "cvar-gamma mean and gamma must be positive"));
        }
        Ok(Value::Gamma { mean, shape })
    }

    /// A value that may be `$var`.
    fn value(&self, line: usize, raw: &str) -> Result<Value, Error> {
        let raw = raw.trim();
        if let Some(name) = raw.strip_prefix('$') {
            return self
                .vars
                .get(name)
                .cloned()
                .ok_or_else(|| self.err(line, format!("undefined variable ${name}")));
        }
        self.literal(line, raw)
    }

    fn int(&self, line: usize, key: &str, raw: Option<&str>) -> Result<u64, Error> {
        let raw = raw.ok_or_else(|| self.err(line, format!("{key} needs a value")))?;
        match self.value(line, raw)? {
            Value::Int(v) => Ok(v),
            other => Err(self.err(
                line,
                format!("bad size or number for {key}: {}", show(&other, raw)),
            )),
        }
    }
}

fn show(v: &Value, raw: &str) -> String {
    match v {
        Value::Str(s) if raw.starts_with('$') => format!("{raw} = {s:?}"),
        Value::Str(s) => format!("{s:?}"),
        Value::Gamma { .. } => format!("{raw} (a distribution)"),
        Value::Int(i) => i.to_string(),
    }
}

/// Splits `key=value` / `key`.
fn kv(a: &str) -> (&str, Option<&str>) {
    match a.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (a.trim(), None),
    }
}

fn boolean(v: Option<&str>) -> bool {
    !matches!(v.map(|s| s.trim()), Some("false" | "0" | "off"))
}

/// What `set $var=value` lines say, in order: (line, name, raw value).
pub fn set_lines(text: &str) -> Vec<(usize, String, String)> {
    statements(text)
        .into_iter()
        .filter_map(|s| {
            let rest = s.text.strip_prefix("set")?;
            let rest = rest.trim_start().strip_prefix('$')?;
            let (name, val) = rest.split_once('=')?;
            Some((s.line, name.trim().to_string(), val.trim().to_string()))
        })
        .collect()
}

/// Parses and checks a workload; `overrides` replace the values of `set $var=` lines.
pub fn parse(
    text: &str,
    origin: &str,
    overrides: &HashMap<String, String>,
) -> Result<Model, Error> {
    let mut p = Parser {
        origin,
        vars: HashMap::new(),
        overrides,
    };
    let stmts = statements(text);
    let mut model = Model::default();
    let mut i = 0;
    // Process and thread currently open: (name, instances) and the thread being filled.
    while i < stmts.len() {
        let st = &stmts[i];
        let line = st.line;
        let (kw, rest) = split_kw(&st.text);
        match kw {
            "set" => {
                let r = rest.trim();
                let Some(r) = r.strip_prefix('$') else {
                    return Err(p.err(
                        line,
                        format!("set {r}: only `set $var=value` is supported"),
                    ));
                };
                let (name, val) = r
                    .split_once('=')
                    .ok_or_else(|| p.err(line, format!("set ${r}: expected $var=value")))?;
                let name = name.trim().to_string();
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(p.err(line, format!("bad variable name {name:?}")));
                }
                let raw = p
                    .overrides
                    .get(&name)
                    .map(String::as_str)
                    .unwrap_or(val.trim());
                let v = p.value(line, raw)?;
                p.vars.insert(name, v);
                i += 1;
            }
            "echo" | "usage" => i += 1,
            "define" => {
                let (what, attrs) = split_kw(rest);
                match what {
                    "fileset" => {
                        let fs = fileset(&p, line, attrs)?;
                        if model.filesets.iter().any(|f| f.name == fs.name) {
                            return Err(p.err(line, format!("fileset {} defined twice", fs.name)));
                        }
                        model.filesets.push(fs);
                        i += 1;
                    }
                    "process" => {
                        i = process(&p, &stmts, i, attrs, &mut model)?;
                    }
                    other => {
                        return Err(p.err(
                            line,
                            format!(
                                "define {other} is not supported (fsage knows define fileset and \
                                 define process)"
                            ),
                        ))
                    }
                }
            }
            "run" => {
                let r = rest.trim();
                model.run_secs = Some(if r.is_empty() {
                    60
                } else {
                    p.int(line, "run", Some(r))?
                });
                model.run_line = Some(line);
                i += 1;
            }
            other => {
                return Err(p.err(
                    line,
                    format!("unsupported keyword {other:?} (fsage reads set, define fileset, define process, thread, flowop, run, echo)"),
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
    Ok(model)
}

/// A value as `.f` text.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Str(s) => s.clone(),
        Value::Gamma { mean, shape } => {
            format!("cvar(type=cvar-gamma,parameters=mean:{mean};gamma:{shape})")
        }
    }
}

fn split_kw(s: &str) -> (&str, &str) {
    let s = s.trim();
    match s.find(char::is_whitespace) {
        Some(k) => (&s[..k], &s[k..]),
        None => (s, ""),
    }
}

fn fileset(p: &Parser, line: usize, attrs: &str) -> Result<FilesetDef, Error> {
    let mut fs = FilesetDef {
        name: String::new(),
        path: None,
        size: SizeDist::Fixed(0),
        entries: 0,
        dirwidth: 0,
        prealloc: 0,
        readonly: false,
        reuse: false,
        line,
    };
    let mut have_size = false;
    for a in split_attrs(attrs) {
        let (k, v) = kv(&a);
        match k {
            "name" => fs.name = v.unwrap_or_default().to_string(),
            "path" => {
                fs.path = Some(match p.value(line, v.unwrap_or_default())? {
                    Value::Str(s) => s,
                    other => value_text(&other),
                })
            }
            "size" | "filesize" => {
                have_size = true;
                let raw = v.ok_or_else(|| p.err(line, "size needs a value"))?;
                fs.size = match p.value(line, raw)? {
                    Value::Int(b) => SizeDist::Fixed(b),
                    Value::Gamma { mean, shape } => SizeDist::Gamma { mean, shape },
                    other => {
                        return Err(p.err(line, format!("bad size {}", show(&other, raw))))
                    }
                };
            }
            "entries" => fs.entries = p.int(line, "entries", v)?,
            "dirwidth" => fs.dirwidth = p.int(line, "dirwidth", v)?,
            "prealloc" => {
                fs.prealloc = match v {
                    None => 100,
                    Some(_) => p.int(line, "prealloc", v)?,
                }
            }
            "readonly" => fs.readonly = boolean(v),
            "reuse" => fs.reuse = boolean(v),
            "paralloc" | "cached" | "trusttree" => {} // how Filebench builds it, not what is built
            other => {
                return Err(p.err(
                    line,
                    format!("fileset attribute {other:?} is not supported (name, path, size, entries, dirwidth, prealloc, readonly, reuse)"),
                ))
            }
        }
    }
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
                "fileset needs a name of letters, digits, _ - . (got {:?})",
                fs.name
            ),
        ));
    }
    if !have_size {
        return Err(p.err(line, format!("fileset {} needs size=", fs.name)));
    }
    if fs.entries == 0 {
        return Err(p.err(
            line,
            format!("fileset {} needs entries= of at least 1", fs.name),
        ));
    }
    if fs.entries > 100_000_000 {
        return Err(p.err(
            line,
            format!(
                "fileset {}: entries={} is more than 10^8",
                fs.name, fs.entries
            ),
        ));
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

/// `define process ... { thread ... { flowop ... } }`; returns the index after its `}`.
fn process(
    p: &Parser,
    stmts: &[Stmt],
    mut i: usize,
    attrs: &str,
    model: &mut Model,
) -> Result<usize, Error> {
    let line = stmts[i].line;
    let mut name = String::new();
    let mut instances = 1u64;
    for a in split_attrs(attrs) {
        let (k, v) = kv(&a);
        match k {
            "name" => name = v.unwrap_or_default().to_string(),
            "instances" => instances = p.int(line, "instances", v)?,
            other => {
                return Err(p.err(
                    line,
                    format!("process attribute {other:?} is not supported (name, instances)"),
                ))
            }
        }
    }
    i += 1;
    if stmts.get(i).map(|s| s.text.as_str()) != Some("{") {
        return Err(p.err(line, format!("process {name}: expected {{")));
    }
    i += 1;
    let first_thread = model.threads.len();
    loop {
        let Some(st) = stmts.get(i) else {
            return Err(p.err(line, format!("process {name}: missing }}")));
        };
        let (kw, rest) = split_kw(&st.text);
        match kw {
            "}" => {
                i += 1;
                break;
            }
            "thread" => {
                let mut t = ThreadDef {
                    process: name.clone(),
                    name: String::new(),
                    instances: 1,
                    memsize: None,
                    flowops: Vec::new(),
                    line: st.line,
                };
                for a in split_attrs(rest) {
                    let (k, v) = kv(&a);
                    match k {
                        "name" => t.name = v.unwrap_or_default().to_string(),
                        "instances" => t.instances = p.int(st.line, "instances", v)?,
                        "memsize" => t.memsize = Some(p.int(st.line, "memsize", v)?),
                        "useism" => {}
                        other => {
                            return Err(p.err(
                                st.line,
                                format!("thread attribute {other:?} is not supported (name, instances, memsize)"),
                            ))
                        }
                    }
                }
                i += 1;
                if stmts.get(i).map(|s| s.text.as_str()) != Some("{") {
                    return Err(p.err(st.line, format!("thread {}: expected {{", t.name)));
                }
                i += 1;
                loop {
                    let Some(fl) = stmts.get(i) else {
                        return Err(p.err(st.line, format!("thread {}: missing }}", t.name)));
                    };
                    let (kw, rest) = split_kw(&fl.text);
                    match kw {
                        "}" => {
                            i += 1;
                            break;
                        }
                        "flowop" => {
                            t.flowops.push(flowop(p, fl.line, rest)?);
                            i += 1;
                        }
                        other => {
                            return Err(p.err(
                                fl.line,
                                format!(
                                    "unsupported keyword {other:?} inside a thread (only flowop)"
                                ),
                            ))
                        }
                    }
                }
                if t.flowops.is_empty() {
                    return Err(p.err(t.line, format!("thread {} has no flowop", t.name)));
                }
                model.threads.push(t);
            }
            other => {
                return Err(p.err(
                    st.line,
                    format!("unsupported keyword {other:?} inside a process (only thread)"),
                ))
            }
        }
    }
    if instances > 1 {
        for t in &mut model.threads[first_thread..] {
            t.instances *= instances;
        }
    }
    Ok(i)
}

fn flowop(p: &Parser, line: usize, rest: &str) -> Result<FlowopDef, Error> {
    let (kind_s, attrs) = split_kw(rest);
    let kind = FlowopKind::from_name(kind_s).ok_or_else(|| {
        p.err(
            line,
            format!(
                "unknown flowop {kind_s:?} (fsage runs {})",
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
        line,
    };
    for a in split_attrs(attrs) {
        let (k, v) = kv(&a);
        match k {
            "name" => f.name = v.unwrap_or_default().to_string(),
            "filesetname" | "filename" => {
                f.fileset_name = Some(match p.value(line, v.unwrap_or_default())? {
                    Value::Str(s) => s,
                    other => value_text(&other),
                })
            }
            "fd" => f.fd = p.int(line, "fd", v)? as u32,
            "srcfd" => f.srcfd = Some(p.int(line, "srcfd", v)? as u32),
            "iosize" => f.iosize = Some(p.int(line, "iosize", v)?),
            "iters" => f.iters = p.int(line, "iters", v)?.max(1),
            "random" => f.random = boolean(v),
            "dsync" => f.dsync = boolean(v),
            "directio" => f.directio = boolean(v),
            other => {
                return Err(p.err(
                    line,
                    format!("flowop attribute {other:?} is not supported (name, filesetname, fd, srcfd, iosize, iters, random, dsync, directio)"),
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
    Ok(f)
}

/// Cross-references: filesets named by flowops exist, I/O flowops have an iosize.
fn check(p: &Parser, m: &mut Model) -> Result<(), Error> {
    if m.threads.is_empty() {
        return Err(p.err(
            m.run_line.unwrap_or(1),
            "the workload defines no process with a thread",
        ));
    }
    let names: Vec<String> = m.filesets.iter().map(|f| f.name.clone()).collect();
    for t in &mut m.threads {
        if t.instances == 0 || t.instances > 10_000 {
            return Err(p.err(
                t.line,
                format!("thread {}: instances must be 1 to 10000", t.name),
            ));
        }
        for f in &mut t.flowops {
            if let Some(n) = &f.fileset_name {
                f.fileset = Some(names.iter().position(|x| x == n).ok_or_else(|| {
                    p.err(
                        f.line,
                        format!("flowop {}: undefined fileset {n:?}", f.name),
                    )
                })?);
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
    fn attrs_split_outside_parentheses() {
        let a = split_attrs("name=x,size=cvar(type=cvar-gamma,parameters=mean:1;gamma:2),prealloc");
        assert_eq!(a.len(), 3);
        assert!(a[1].starts_with("size=cvar("));
    }
}
