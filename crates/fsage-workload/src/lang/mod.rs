//! Filebench's workload-model language (`.f` files), as Filebench 1.5's grammar defines it:
//! tokens first (statements may run over several lines), then statements. Anything fsage cannot
//! honour is refused with the file, line and construct: a silently skipped line would make the
//! numbers mean something else than the user thinks. What fsage accepts without acting on it
//! (`debug`, `psrun`'s sampling interval, `stats`) is said once, in [`Model::notes`].
//!
//! The jobs, one file each: `lex.rs` (tokens), `parser.rs` (the token stream, attribute lists
//! and expressions), `dist.rs` (random variables and `cvar`s), `statements.rs` (`set`,
//! filesets, processes, threads and flowops), `check.rs` (cross-references); this file reads
//! the statements in turn.

mod check;
mod dist;
mod lex;
mod parser;
mod statements;

use crate::error::Error;
use crate::model::{FlowopKind, Model};
use crate::randvar::RandVar;
use check::check;
pub use lex::parse_size;
use lex::{lex, Tk};
use parser::{Composite, Parser};
use statements::{fileset, override_value, process, randvar_text, set};
use std::collections::HashMap;

/// A value of a variable or an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(u64),
    Str(String),
    /// A random variable and the text it was written as.
    Rand(RandVar, String),
}

/// A value as `.f` text.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Str(s) => s.clone(),
        Value::Rand(_, text) => text.clone(),
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
