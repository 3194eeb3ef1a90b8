//! Replaying an op log: the same system calls as an aging run, with no planner. Its speed is the
//! ceiling the POSIX backend is measured against, so it drives the backend directly rather than
//! through the run loop.

use crate::backend::{Backend, OpError};
use crate::oplog::{self, OpLogError};
use crate::posix::{Posix, WriteMode};
use crate::preflight::{prepare_target, TargetError};
use fsage_sys::{Blame, Blamed};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a replay did and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    /// Directories made (the root not counted).
    pub directories: usize,
    pub operations: usize,
    pub secs: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The op log or the target cannot be opened.
    #[error("{}: {err}", path.display())]
    Open { path: PathBuf, err: std::io::Error },
    #[error(transparent)]
    OpLog(#[from] OpLogError),
    #[error(transparent)]
    Target(#[from] TargetError),
    /// A step failed on the file system.
    #[error(transparent)]
    Op(#[from] OpError),
}

impl Blamed for ReplayError {
    fn blame(&self) -> Blame {
        match self {
            ReplayError::Open { .. } => Blame::Input,
            ReplayError::OpLog(e) => e.blame(),
            ReplayError::Target(e) => e.blame(),
            ReplayError::Op(_) => Blame::Operation,
        }
    }
}

/// Replays the op log at `op_log` into `target`, an empty directory (made if missing) unless
/// `force`. `mode` `None`: the target file system's default ([`WriteMode::default_for`]).
pub fn replay(
    op_log: &Path,
    target: &Path,
    mode: Option<WriteMode>,
    force: bool,
) -> Result<Replayed, ReplayError> {
    let open = |path: &Path| {
        let path = path.to_path_buf();
        move |err| ReplayError::Open { path, err }
    };
    let text = std::fs::read_to_string(op_log).map_err(open(op_log))?;
    let log = oplog::read(&text, &op_log.display().to_string())?;
    drop(text);
    prepare_target(target, force)?;
    let magic = fsage_sys::fs_stat(target).map_err(open(target))?.magic;
    let mode = match mode {
        Some(m) => {
            m.check_for(magic).map_err(|e| ReplayError::Open {
                path: target.to_path_buf(),
                err: std::io::Error::new(std::io::ErrorKind::Unsupported, e),
            })?;
            m
        }
        None => WriteMode::default_for(magic),
    };
    let mut b = Posix::open(target, mode, 0).map_err(open(target))?;
    let start = Instant::now();
    b.make_dirs(&log.tree)?;
    for step in &log.steps {
        b.apply(step)?;
    }
    b.finish()?;
    Ok(Replayed {
        directories: log.tree.len() - 1,
        operations: log.steps.len(),
        secs: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_op_log_is_bad_input_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let e = replay(
            &d.path().join("ops.txt"),
            &d.path().join("t"),
            Some(WriteMode::Fallocate),
            false,
        )
        .unwrap_err();
        assert_eq!(e.blame(), Blame::Input);
        assert!(e.to_string().contains("ops.txt"), "{e}");
        assert!(
            !d.path().join("t").exists(),
            "nothing made before the log is read"
        );
    }
}
