//! Parallel execution with one decision sequence: the planner alone decides, in order, and the
//! file operations run on N worker threads. Every directory belongs to one worker (or, for trees
//! with few directories, every file name does), and each worker runs its operations in the order
//! they were decided, so a delete never overtakes its create. Directories are all made before the
//! first file. The op log is written in decision order, so it is the same for every N.
//! Named-path steps (mkdir, rename, ... of Git replay) may depend on any earlier step: each waits
//! for everything queued, then runs on the calling thread.

use crate::backend::{Backend, FreeSpace, OpError};
use crate::op::{FileRef, Operation, Step};
use crate::posix::Posix;
use fsage_plan::DirTree;
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
    failures: Mutex<Vec<(Step, OpError)>>,
    failed: AtomicBool,
    in_flight: AtomicU64,
}

pub struct Parallel {
    posix: Arc<Posix>,
    threads: usize,
    senders: Vec<SyncSender<Vec<Step>>>,
    pending: Vec<Vec<Step>>,
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

    fn start(&mut self) {
        // Sharding by directory keeps each directory's lock on one thread; a tree with few
        // directories would leave threads idle, so there the file name decides.
        self.by_dir = self.posix.tree().len() >= 8 * self.threads;
        for _ in 0..self.threads {
            let (tx, rx) = sync_channel::<Vec<Step>>(64);
            let posix = Arc::clone(&self.posix);
            let shared = Arc::clone(&self.shared);
            self.senders.push(tx);
            self.pending.push(Vec::with_capacity(BATCH));
            self.workers
                .push(std::thread::spawn(move || worker(rx, &posix, &shared)));
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

    /// The worker of a planner step; `None` for a named-path step, which runs alone.
    fn shard(&self, step: &Step) -> Option<usize> {
        let (dir, created) = match &step.op {
            Operation::Create {
                file: FileRef::Planned { dir, created },
                ..
            }
            | Operation::Delete {
                file: FileRef::Planned { dir, created },
                ..
            } => (*dir, *created),
            _ => return None,
        };
        let key = if self.by_dir { dir as u64 } else { created };
        Some((key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % self.threads)
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

fn worker(rx: Receiver<Vec<Step>>, posix: &Posix, shared: &Shared) {
    // Creates this worker saw refused: a later delete of the same file has nothing to delete.
    let mut refused: HashSet<u64> = HashSet::new();
    for batch in rx {
        for step in &batch {
            if let Err(e) = posix.apply_shared(step) {
                let created = step.planned().map(|op| op.file.created);
                let gone = matches!(step.op, Operation::Delete { .. })
                    && rustix::io::Errno::from_io_error(&e.err) == Some(rustix::io::Errno::NOENT)
                    && created.is_some_and(|c| refused.remove(&c));
                if !gone {
                    if let (true, true, Some(c)) = (step.is_create(), e.is_no_space(), created) {
                        refused.insert(c);
                    }
                    shared
                        .failures
                        .lock()
                        .expect("no panics holding it")
                        .push((step.clone(), e));
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

    fn apply(&mut self, step: &Step) -> Result<(), OpError> {
        if self.workers.is_empty() {
            self.start();
        }
        let Some(shard) = self.shard(step) else {
            self.drain();
            return self.posix.apply_shared(step);
        };
        self.pending[shard].push(step.clone());
        if self.pending[shard].len() >= BATCH {
            self.send(shard);
        }
        Ok(())
    }

    fn take_failures(&mut self) -> Vec<(Step, OpError)> {
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
