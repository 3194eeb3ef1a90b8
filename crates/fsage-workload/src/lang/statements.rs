//! The statements that build the model: `set`, `define file`/`fileset`, `define process` with
//! its threads, and flowops (composite ones expanded in place).

use super::lex::{lex, Tk};
use super::parser::{Attr, Parser};
use super::{show, Value};
use super::{
    MAX_COMPOSITE_DEPTH, MAX_ENTRIES, MAX_EXPANSION_STEPS, MAX_FLOWOPS_PER_THREAD, MAX_IOSIZE,
};
use crate::error::Error;
use crate::model::{FilesetDef, FlowopDef, FlowopKind, Model, QuitMode, SizeDist, ThreadDef};
use crate::randvar::{Dist, Param, RandVar};
use std::collections::HashMap;

pub(super) fn randvar_text(p: &Parser, attrs: &[Attr]) -> String {
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

pub(super) fn override_value(p: &mut Parser, line: usize, text: &str) -> Result<Value, Error> {
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

pub(super) fn set(p: &mut Parser, line: usize, model: &mut Model) -> Result<(), Error> {
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

pub(super) fn fileset(
    p: &mut Parser,
    line: usize,
    attrs: &[Attr],
    single: bool,
) -> Result<FilesetDef, Error> {
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
pub(super) fn process(p: &mut Parser, line: usize, model: &mut Model) -> Result<(), Error> {
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
pub(super) fn flowop_block(
    p: &mut Parser,
    out: &mut Vec<FlowopDef>,
    depth: usize,
) -> Result<(), Error> {
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

pub(super) fn flowop(
    p: &mut Parser,
    line: usize,
    kind_s: &str,
    attrs: &[Attr],
) -> Result<FlowopDef, Error> {
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
