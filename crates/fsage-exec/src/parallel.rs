//! Parallel execution with one decision sequence: the planner alone decides, in order, and the
//! file operations run on N worker threads. Every directory belongs to one worker (or, for trees
//! with few directories, every file name does), and each worker runs its operations in the order
//! they were decided, so a delete never overtakes its create. Directories are all made before the
//! first file. The op log is written in decision order, so it is the same for every N.

use crate::backend::{Backend, FreeSpace, OpError};
use crate::posix::Posix;
use fsage_plan::{DirTree, Op, OpKind};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Operations go to a worker in batches: one channel hand-over (and at most one wake-up) per batch
/// instead of per operation. A batch keeps its operations' order.
const BATCH: usize = 64;

/// What the workers report back: failures, and how many operations are queued but not done.
#[derive(Default)]
struct Shared {
    failures: Mutex<Vec<(Op, OpError)>>,
    failed: AtomicBool,
    in_flight: AtomicU64,
}

pub struct Parallel {
    posix: Arc<Posix>,
    threads: usize,
    senders: Vec<SyncSender<Vec<Op>>>,
    pending: Vec<Vec<Op>>,
    workers: Vec<JoinHandle<()>>,
    shared: Arc<Shared>,
    by_dir: bool,
}

impl Parallel {
    pub fn new(posix: Posix, threads: usize) -> Parallel {
        Parallel {
            posix: Arc::new(posix),
            threads: threads.max(1),
            senders: Vec::new(),
            pending: Vec::new(),
            workers: Vec::new(),
            shared: Arc::default(),
            by_dir: true,
        }
    }

    fn start(&mut self, tree: &DirTree) {
        let tree = Arc::new(tree.clone());
        // Sharding by directory keeps each directory's lock on one thread; a tree with few
        // directories would leave threads idle, so there the file name decides.
        self.by_dir = tree.len() >= 8 * self.threads;
        for _ in 0..self.threads {
            let (tx, rx) = sync_channel::<Vec<Op>>(64);
            let posix = Arc::clone(&self.posix);
            let tree = Arc::clone(&tree);
            let shared = Arc::clone(&self.shared);
            self.senders.push(tx);
            self.pending.push(Vec::with_capacity(BATCH));
            self.workers.push(std::thread::spawn(move || {
                worker(rx, &posix, &tree, &shared)
            }));
        }
    }

    fn send(&mut self, shard: usize) {
        let batch = std::mem::replace(&mut self.pending[shard], Vec::with_capacity(BATCH));
        self.shared
            .in_flight
            .fetch_add(batch.len() as u64, Ordering::SeqCst);
        if self.senders[shard].send(batch).is_err() {
            unreachable!("workers live as long as the backend");
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

    /// Hands over every partial batch and waits until every queued operation is done. Only at
    /// checkpoints and at the end, so a short sleep loop is cheap enough.
    pub fn drain(&mut self) {
        for shard in 0..self.pending.len() {
            if !self.pending[shard].is_empty() {
                self.send(shard);
            }
        }
        while self.shared.in_flight.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn worker(rx: Receiver<Vec<Op>>, posix: &Posix, tree: &DirTree, shared: &Shared) {
    // Creates this worker saw refused: a later delete of the same file has nothing to delete.
    let mut refused: HashSet<u64> = HashSet::new();
    for batch in rx {
        for op in &batch {
            if let Err(e) = posix.apply_shared(op, tree) {
                let gone = op.kind == OpKind::Delete
                    && e.err.raw_os_error() == Some(libc::ENOENT)
                    && refused.remove(&op.file.created);
                if !gone {
                    if op.kind == OpKind::Create && e.is_no_space() {
                        refused.insert(op.file.created);
                    }
                    shared
                        .failures
                        .lock()
                        .expect("no panics holding it")
                        .push((*op, e));
                    shared.failed.store(true, Ordering::SeqCst);
                }
            }
        }
        shared
            .in_flight
            .fetch_sub(batch.len() as u64, Ordering::SeqCst);
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
        let shard = self.shard(op);
        self.pending[shard].push(*op);
        if self.pending[shard].len() >= BATCH {
            self.send(shard);
        }
        Ok(())
    }

    fn take_failures(&mut self) -> Vec<(Op, OpError)> {
        let mut f = self.shared.failures.lock().expect("no panics holding it");
        self.shared.failed.store(false, Ordering::SeqCst);
        std::mem::take(&mut *f)
    }

    fn has_failures(&self) -> bool {
        self.shared.failed.load(Ordering::Relaxed)
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
        if !self.workers.is_empty() {
            self.drain();
        }
        self.senders.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
