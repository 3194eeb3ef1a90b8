//! Parallel execution with one decision sequence: the planner alone decides, in order, and the
//! file operations run on N worker threads. Every directory belongs to one worker (or, for trees
//! with few directories, every file name does), and each worker runs its operations in the order
//! they were decided, so a delete never overtakes its create. Directories are all made before the
//! first file. The op log is written in decision order, so it is the same for every N.

use crate::backend::{Backend, FreeSpace, OpError};
use crate::posix::Posix;
use fsage_plan::{DirTree, Op, OpKind};
use std::collections::HashSet;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Operations queued but not yet done, so a checkpoint or the end can wait for them.
#[derive(Default)]
struct InFlight {
    count: Mutex<u64>,
    idle: Condvar,
}

pub struct Parallel {
    posix: Arc<Posix>,
    threads: usize,
    senders: Vec<SyncSender<Op>>,
    workers: Vec<JoinHandle<()>>,
    failures: Arc<Mutex<Vec<(Op, OpError)>>>,
    in_flight: Arc<InFlight>,
    by_dir: bool,
}

impl Parallel {
    pub fn new(posix: Posix, threads: usize) -> Parallel {
        Parallel {
            posix: Arc::new(posix),
            threads: threads.max(1),
            senders: Vec::new(),
            workers: Vec::new(),
            failures: Arc::default(),
            in_flight: Arc::default(),
            by_dir: true,
        }
    }

    fn start(&mut self, tree: &DirTree) {
        let tree = Arc::new(tree.clone());
        // Sharding by directory keeps each directory's lock on one thread; a tree with few
        // directories would leave threads idle, so there the file name decides.
        self.by_dir = tree.len() >= 8 * self.threads;
        for _ in 0..self.threads {
            let (tx, rx) = sync_channel::<Op>(4096);
            let posix = Arc::clone(&self.posix);
            let tree = Arc::clone(&tree);
            let failures = Arc::clone(&self.failures);
            let in_flight = Arc::clone(&self.in_flight);
            self.senders.push(tx);
            self.workers.push(std::thread::spawn(move || {
                worker(rx, &posix, &tree, &failures, &in_flight)
            }));
        }
    }

    fn shard(&self, op: &Op) -> usize {
        let key = if self.by_dir {
            op.file.dir as u64
        } else {
            op.file.created
        };
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % self.threads
    }

    /// Waits until every queued operation is done.
    pub fn drain(&self) {
        let mut n = self
            .in_flight
            .count
            .lock()
            .expect("no worker panics holding it");
        while *n > 0 {
            n = self
                .in_flight
                .idle
                .wait(n)
                .expect("no worker panics holding it");
        }
    }
}

fn worker(
    rx: Receiver<Op>,
    posix: &Posix,
    tree: &DirTree,
    failures: &Mutex<Vec<(Op, OpError)>>,
    in_flight: &InFlight,
) {
    // Creates this worker saw refused: a later delete of the same file has nothing to delete.
    let mut refused: HashSet<u64> = HashSet::new();
    for op in rx {
        if let Err(e) = posix.apply_shared(&op, tree) {
            let gone = op.kind == OpKind::Delete
                && e.err.raw_os_error() == Some(libc::ENOENT)
                && refused.remove(&op.file.created);
            if !gone {
                if op.kind == OpKind::Create && e.is_no_space() {
                    refused.insert(op.file.created);
                }
                failures.lock().expect("no panics holding it").push((op, e));
            }
        }
        let mut n = in_flight.count.lock().expect("no panics holding it");
        *n -= 1;
        if *n == 0 {
            in_flight.idle.notify_all();
        }
    }
}

impl Backend for Parallel {
    fn name(&self) -> String {
        format!("{}, {} threads", self.posix.name(), self.threads)
    }

    fn make_dirs(&mut self, tree: &DirTree) -> Result<(), OpError> {
        match Arc::get_mut(&mut self.posix) {
            Some(p) => p.make_dirs(tree),
            // Workers only start after the directories exist.
            None => Ok(()),
        }
    }

    fn apply(&mut self, op: &Op, tree: &DirTree) -> Result<(), OpError> {
        if self.workers.is_empty() {
            self.start(tree);
        }
        *self.in_flight.count.lock().expect("no panics holding it") += 1;
        let shard = self.shard(op);
        if self.senders[shard].send(*op).is_err() {
            unreachable!("workers live as long as the backend");
        }
        Ok(())
    }

    fn take_failures(&mut self) -> Vec<(Op, OpError)> {
        std::mem::take(&mut *self.failures.lock().expect("no panics holding it"))
    }

    fn has_failures(&self) -> bool {
        !self
            .failures
            .lock()
            .expect("no panics holding it")
            .is_empty()
    }

    fn free_space(&self) -> Option<FreeSpace> {
        self.posix.free_space()
    }

    fn finish(&mut self) -> Result<(), OpError> {
        self.drain();
        Ok(())
    }
}

impl Drop for Parallel {
    fn drop(&mut self) {
        self.senders.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
