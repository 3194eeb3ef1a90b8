//! Before a resumed run goes on, the target must hold exactly the live files of the saved plan:
//! after a crash it may hold files made after the last checkpoint, a file half made, or lack a file
//! whose delete came after it. This walks the plan's directories and mends each difference.

use crate::backend::{Backend, OpError};
use crate::op::Step;
use fsage_plan::{Op, OpKind, Planner};
use std::collections::HashMap;
use std::fs;
use std::path::Path;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// Files on disk the plan does not have (made after the checkpoint): removed.
    pub removed: u64,
    /// Live files missing or of the wrong size (deleted after the checkpoint, or half made): made.
    pub recreated: u64,
    /// Entries fsage did not make (not `f<tick>` files nor plan directories): left alone.
    pub foreign: u64,
}

fn io(op: &'static str, path: &Path, err: std::io::Error) -> OpError {
    OpError {
        op,
        path: path.display().to_string(),
        err,
    }
}

/// Makes `target` match `planner`'s live files. The backend must already have made (or reopened)
/// the directories.
pub fn reconcile<B: Backend>(
    target: &Path,
    planner: &Planner,
    backend: &mut B,
) -> Result<Reconciled, OpError> {
    let tree = planner.tree();
    let mut live: HashMap<u64, (u64, u32)> = planner
        .live_files()
        .map(|f| (f.created, (f.size, f.dir)))
        .collect();
    let mut subdirs: HashMap<(u32, &str), ()> = HashMap::new();
    for (id, path) in tree.created() {
        let name = path.rsplit('/').next().unwrap_or(path);
        subdirs.insert((tree.parent(id), name), ());
    }
    let mut out = Reconciled::default();
    let mut missing: Vec<(u64, u64, u32)> = Vec::new();
    for dir in 0..tree.len() as u32 {
        let dpath = target.join(tree.path(dir));
        let meta = fs::symlink_metadata(&dpath).map_err(|e| io("stat", &dpath, e))?;
        if !meta.is_dir() {
            return Err(io(
                "reconcile",
                &dpath,
                std::io::Error::other("a directory of the plan is not a directory"),
            ));
        }
        for entry in fs::read_dir(&dpath).map_err(|e| io("readdir", &dpath, e))? {
            let entry = entry.map_err(|e| io("readdir", &dpath, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if subdirs.contains_key(&(dir, name.as_ref())) {
                continue;
            }
            let created = name.strip_prefix('f').and_then(|n| n.parse::<u64>().ok());
            let ftype = entry
                .file_type()
                .map_err(|e| io("stat", &entry.path(), e))?;
            let Some(created) = created.filter(|_| ftype.is_file()) else {
                out.foreign += 1;
                continue;
            };
            let path = entry.path();
            match live.remove(&created) {
                Some((size, d)) if d == dir => {
                    let len = entry.metadata().map_err(|e| io("stat", &path, e))?.len();
                    if len != size {
                        fs::remove_file(&path).map_err(|e| io("unlink", &path, e))?;
                        missing.push((created, size, dir));
                    }
                }
                other => {
                    // Not live, or live elsewhere: this copy goes.
                    if let Some((size, d)) = other {
                        live.insert(created, (size, d));
                    }
                    fs::remove_file(&path).map_err(|e| io("unlink", &path, e))?;
                    out.removed += 1;
                }
            }
        }
    }
    missing.extend(live.into_iter().map(|(c, (s, d))| (c, s, d)));
    missing.sort_unstable();
    for (created, size, dir) in missing {
        let op = Op {
            tick: created,
            kind: OpKind::Create,
            file: fsage_plan::LiveFile { created, size, dir },
        };
        backend.apply(&Step::from(op))?;
        out.recreated += 1;
    }
    backend.finish()?;
    if let Some((_, e)) = backend.take_failures().into_iter().next() {
        return Err(e);
    }
    Ok(out)
}
