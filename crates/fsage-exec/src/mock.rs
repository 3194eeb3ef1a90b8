//! A backend that records steps instead of doing them, and fails on request: lets the run loop's
//! handling of full file systems, late (asynchronous) failures and checkpoints be tested without
//! root or a file system.

use crate::backend::{Backend, FreeSpace, OpError};
use crate::op::Step;
use fsage_plan::DirTree;
use std::collections::HashMap;
use std::io;

/// How the mock answers a step at a given position (0-based count of `apply` calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails at once with this errno.
    Now(i32),
    /// Accepts the step, then reports this errno through `take_failures`, as a threaded backend
    /// does.
    Late(i32),
}

#[derive(Debug, Default)]
pub struct Mock {
    /// Every step accepted, in order.
    pub applied: Vec<Step>,
    pub dirs_made: usize,
    pub finishes: usize,
    pub faults: HashMap<usize, Fault>,
    /// What `free_space` says (for the out-of-inodes count).
    pub free: Option<FreeSpace>,
    calls: usize,
    late: Vec<(Step, OpError)>,
}

impl Mock {
    pub fn new() -> Mock {
        Mock::default()
    }

    /// Makes call number `at` (0-based) fail as `fault` says.
    pub fn fail_at(mut self, at: usize, fault: Fault) -> Mock {
        self.faults.insert(at, fault);
        self
    }
}

fn err(step: &Step, errno: i32) -> OpError {
    OpError {
        op: step.verb(),
        path: format!("#{}", step.tick),
        err: io::Error::from_raw_os_error(errno),
    }
}

impl Backend for Mock {
    fn name(&self) -> String {
        "mock".into()
    }
    fn make_dirs(&mut self, tree: &DirTree) -> Result<(), OpError> {
        self.dirs_made = tree.len() - 1;
        Ok(())
    }
    fn apply(&mut self, step: &Step) -> Result<(), OpError> {
        let n = self.calls;
        self.calls += 1;
        match self.faults.get(&n) {
            Some(Fault::Now(e)) => Err(err(step, *e)),
            Some(Fault::Late(e)) => {
                self.late.push((step.clone(), err(step, *e)));
                Ok(())
            }
            None => {
                self.applied.push(step.clone());
                Ok(())
            }
        }
    }
    fn free_space(&self) -> Option<FreeSpace> {
        self.free
    }
    fn take_failures(&mut self) -> Vec<(Step, OpError)> {
        std::mem::take(&mut self.late)
    }
    fn has_failures(&self) -> bool {
        !self.late.is_empty()
    }
    fn finish(&mut self) -> Result<(), OpError> {
        self.finishes += 1;
        Ok(())
    }
}
