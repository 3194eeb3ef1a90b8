//! Backends: where steps become (or do not become) file system operations. One interface, like
//! fio's I/O engines, so the run loop does not care which one it drives.

use crate::op::Step;
use fsage_plan::DirTree;
use std::fmt;

/// An operation that failed, with what a user needs to find the cause.
#[derive(Debug)]
pub struct OpError {
    pub op: &'static str,
    pub path: String,
    pub err: std::io::Error,
}

impl OpError {
    /// The file system is full (or out of inodes, or over quota): the run can adapt.
    pub fn is_no_space(&self) -> bool {
        use rustix::io::Errno;
        matches!(
            Errno::from_io_error(&self.err),
            Some(Errno::NOSPC | Errno::DQUOT)
        )
    }

    /// Read-only, no permission, or a name already taken: the target is at fault, not the file
    /// system (the user can fix it).
    pub fn is_target_problem(&self) -> bool {
        use rustix::io::Errno;
        matches!(
            Errno::from_io_error(&self.err),
            Some(Errno::ROFS | Errno::ACCESS | Errno::PERM | Errno::EXIST)
        )
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // io::Error's text already ends in "(os error N)", the errno.
        write!(f, "{} {}: {}", self.op, self.path, self.err)
    }
}

impl std::error::Error for OpError {}

/// What statvfs says is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeSpace {
    pub bytes: u64,
    /// `None` where the file system has no fixed inode count (btrfs reports 0 files).
    pub inodes: Option<u64>,
}

pub trait Backend {
    /// A short name for reports ("posix", "dry-run").
    fn name(&self) -> String;
    /// Makes every directory of the tree, parents first, before the first step; the backend keeps
    /// the tree to resolve the planner's directory ids.
    fn make_dirs(&mut self, tree: &DirTree) -> Result<(), OpError>;
    /// Carries out one step.
    fn apply(&mut self, step: &Step) -> Result<(), OpError>;
    /// Free bytes and free inodes of the file system, where there is one (for reporting why a
    /// create was refused).
    fn free_space(&self) -> Option<FreeSpace> {
        None
    }
    /// Failures of steps that ran asynchronously (after `apply` returned Ok), oldest first.
    fn take_failures(&mut self) -> Vec<(Step, OpError)> {
        Vec::new()
    }
    /// Cheap check whether `take_failures` has anything.
    fn has_failures(&self) -> bool {
        false
    }
    /// Waits for everything applied so far (a no-op for synchronous backends).
    fn finish(&mut self) -> Result<(), OpError> {
        Ok(())
    }
}

/// No I/O at all: the same decisions, at the planner's speed.
#[derive(Debug, Default)]
pub struct DryRun;

impl Backend for DryRun {
    fn name(&self) -> String {
        "dry-run".into()
    }
    fn make_dirs(&mut self, _tree: &DirTree) -> Result<(), OpError> {
        Ok(())
    }
    #[inline]
    fn apply(&mut self, _step: &Step) -> Result<(), OpError> {
        Ok(())
    }
}
