//! Operations any source can ask of a backend: the planner's creates and deletes of sized files,
//! and the named-path operations Git replay and workloads need (mkdir, rmdir, write at an offset,
//! truncate, rename, delete). And the [`OpSource`] trait: where the run loop takes them from.

use crate::report::StopReason;
use fsage_plan::{DirId, DirTree, LiveFile, Op, OpKind};

/// Which file an operation names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRef {
    /// The planner's `f<created>` in a directory of the tree: no path string on the hot path.
    Planned { dir: DirId, created: u64 },
    /// A path relative to the target, `/`-separated, with no `.`, `..` or empty component.
    Path(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// A new file of `size` bytes (fallocated or written, as the backend is set up).
    Create {
        file: FileRef,
        size: u64,
    },
    /// Removes a file; `size` is what it held, where the source knows (the op log records it).
    Delete {
        file: FileRef,
        size: Option<u64>,
    },
    Mkdir {
        path: String,
    },
    Rmdir {
        path: String,
    },
    /// Writes `len` bytes of data at `offset` into an existing file.
    Write {
        path: String,
        offset: u64,
        len: u64,
    },
    Truncate {
        path: String,
        size: u64,
    },
    /// Renames a file or directory (replacing a file at `to`, as rename(2) does).
    Rename {
        from: String,
        to: String,
    },
}

/// One operation at its place in the sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub tick: u64,
    pub op: Operation,
}

impl Step {
    pub fn is_create(&self) -> bool {
        matches!(self.op, Operation::Create { .. })
    }

    /// The planner's decision this step carries out, if it is one.
    pub fn planned(&self) -> Option<Op> {
        match &self.op {
            Operation::Create {
                file: FileRef::Planned { dir, created },
                size,
            } => Some(Op {
                tick: self.tick,
                kind: OpKind::Create,
                file: LiveFile {
                    created: *created,
                    size: *size,
                    dir: *dir,
                },
            }),
            Operation::Delete {
                file: FileRef::Planned { dir, created },
                size,
            } => Some(Op {
                tick: self.tick,
                kind: OpKind::Delete,
                file: LiveFile {
                    created: *created,
                    size: size.unwrap_or(0),
                    dir: *dir,
                },
            }),
            _ => None,
        }
    }

    /// The step's path relative to the target, for messages (`tree` names planned directories).
    pub fn path(&self, tree: &DirTree) -> String {
        match &self.op {
            Operation::Create { file, .. } | Operation::Delete { file, .. } => match file {
                FileRef::Planned { dir, created } => tree.file_path(*dir, &format!("f{created}")),
                FileRef::Path(p) => p.clone(),
            },
            Operation::Mkdir { path }
            | Operation::Rmdir { path }
            | Operation::Write { path, .. }
            | Operation::Truncate { path, .. } => path.clone(),
            Operation::Rename { from, .. } => from.clone(),
        }
    }

    /// The verb of the op log and of error messages.
    pub fn verb(&self) -> &'static str {
        match self.op {
            Operation::Create { .. } => "create",
            Operation::Delete { .. } => "delete",
            Operation::Mkdir { .. } => "mkdir",
            Operation::Rmdir { .. } => "rmdir",
            Operation::Write { .. } => "write",
            Operation::Truncate { .. } => "truncate",
            Operation::Rename { .. } => "rename",
        }
    }
}

impl From<Op> for Step {
    fn from(op: Op) -> Step {
        let file = FileRef::Planned {
            dir: op.file.dir,
            created: op.file.created,
        };
        Step {
            tick: op.tick,
            op: match op.kind {
                OpKind::Create => Operation::Create {
                    file,
                    size: op.file.size,
                },
                OpKind::Delete => Operation::Delete {
                    file,
                    size: Some(op.file.size),
                },
            },
        }
    }
}

/// Checks a relative path from a source the user gave (an op log, a repository): plain components
/// only, so that a backend can never be steered outside its target.
pub(crate) fn check_relative(path: &str) -> Result<(), BadPath> {
    if path.is_empty()
        || path.starts_with('/')
        || path
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == ".." || c.contains('\0'))
    {
        return Err(BadPath::NotRelative(path.to_string()));
    }
    Ok(())
}

/// A path from a source the user gave that fsage will not use; the caller adds where it stood.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadPath {
    #[error("{0:?} is not a plain relative path")]
    NotRelative(String),
    /// An op log's `%XX` escape that is not two hex digits.
    #[error("bad escape in path {0:?}")]
    BadEscape(String),
    #[error("path {0:?} is not UTF-8")]
    NotUtf8(String),
}

/// Where the run loop takes its operations from: the planner, an op log, later a Git history.
pub trait OpSource {
    /// Directories to make before the first step (the planner's tree; just the root otherwise).
    fn tree(&self) -> &DirTree;
    /// The next step, or `None` when the source has no more.
    fn next_step(&mut self) -> Option<Step>;
    /// The file system refused a create for lack of space: the source drops it and adapts.
    fn refused(&mut self, _step: &Step) {}
    /// A step the backend carried out (or accepted, for an asynchronous one).
    fn applied(&mut self, _step: &Step) {}
    /// Steps decided so far.
    fn position(&self) -> u64;
    /// Steps in all, where known.
    fn total(&self) -> Option<u64> {
        None
    }
    /// Why `next_step` returned `None`.
    fn exhausted(&self) -> StopReason {
        StopReason::Converged
    }
    /// Bytes written so far over the capacity, where the source counts them.
    fn overwrites(&self) -> Option<f64> {
        None
    }
    /// p-value of the age histogram's fit if the run ended now, where the source has one; asked
    /// for every 1000 steps when a confidence stop is set.
    fn fit(&mut self) -> Option<f64> {
        None
    }
    /// RMSE of the age histogram if the run ended now (may walk every live file: asked rarely).
    fn age_rmse(&self) -> Option<f64> {
        None
    }
    /// The planner's phase, for a progress line.
    fn phase(&self) -> Option<fsage_plan::Phase> {
        None
    }
    /// Writes a state file a run can resume from; `Ok(false)` for a source that cannot resume.
    fn save_state(
        &self,
        _path: &std::path::Path,
        _record: &crate::checkpoint::RunRecord,
    ) -> Result<bool, crate::checkpoint::StateError> {
        Ok(false)
    }
}
