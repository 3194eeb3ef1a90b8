//! `fsage replay`: the same system calls as an aging run, from an op log, with no planner. Its speed
//! is the ceiling the POSIX backend is measured against.

use crate::cli::{ReplayArgs, WriteModeArg};
use crate::util::prepare_target;
use fsage_exec::{Backend, Posix, WriteMode};
use fsage_plan::{DirTree, LiveFile, Op, OpKind};
use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Instant;

/// Parses an op log into a directory tree and the operations, naming the line of any error.
pub fn parse(text: &str, origin: &str) -> Result<(DirTree, Vec<Op>), String> {
    let mut dirs: Vec<String> = Vec::new();
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut ops = Vec::new();
    let mut raw = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let err = |m: &str| format!("{origin}:{}: {m}: {line:?}", i + 1);
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 4 {
            return Err(err("expected 4 fields: TICK OP PATH SIZE"));
        }
        match f[1] {
            "mkdir" => {
                index.insert(f[2].to_string(), dirs.len() as u32 + 1);
                dirs.push(f[2].to_string());
            }
            "create" | "delete" => raw.push((i, f[0], f[1], f[2], f[3])),
            "enospc" => {}
            other => return Err(err(&format!("unknown operation {other:?}"))),
        }
    }
    let tree = DirTree::from_paths(&dirs).map_err(|m| format!("{origin}: {m}"))?;
    for (i, tick, verb, path, size) in raw {
        let err = |m: &str| format!("{origin}:{}: {m}", i + 1);
        let (dir, name) = match path.rsplit_once('/') {
            Some((d, n)) => (
                *index
                    .get(d)
                    .ok_or_else(|| err("directory not made earlier"))?,
                n,
            ),
            None => (0, path),
        };
        let created = name
            .strip_prefix('f')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| err("file names are f<tick>"))?;
        ops.push(Op {
            tick: tick.parse().map_err(|_| err("bad tick"))?,
            kind: if verb == "create" {
                OpKind::Create
            } else {
                OpKind::Delete
            },
            file: LiveFile {
                created,
                size: size.parse().map_err(|_| err("bad size"))?,
                dir,
            },
        });
    }
    Ok((tree, ops))
}

pub fn run(args: ReplayArgs) -> Result<ExitCode, String> {
    let text = std::fs::read_to_string(&args.op_log)
        .map_err(|e| format!("{}: {e}", args.op_log.display()))?;
    let (tree, ops) = parse(&text, &args.op_log.display().to_string())?;
    drop(text);
    prepare_target(&args.target, args.force)?;
    let mode = match args.write_mode {
        WriteModeArg::Fallocate => WriteMode::Fallocate,
        WriteModeArg::Write => WriteMode::Write,
    };
    let mut b = Posix::open(&args.target, mode, 0)
        .map_err(|e| format!("{}: {e}", args.target.display()))?;
    let start = Instant::now();
    b.make_dirs(&tree).map_err(|e| e.to_string())?;
    for op in &ops {
        b.apply(op, &tree).map_err(|e| e.to_string())?;
    }
    b.finish().map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "replayed {} directories and {} operations in {:.3}s: {:.0} ops/s",
        tree.len() - 1,
        ops.len(),
        secs,
        ops.len() as f64 / secs.max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}
