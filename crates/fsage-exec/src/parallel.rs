//! Parallel execution with one decision sequence: the planner alone decides, in order, and the
//! file operations run on N worker threads. Every directory belongs to one worker, or every file
//! name does ([`Sharding`]; the rule may change only at a drain, when nothing is queued), and each
//! worker runs its operations in the order they were decided, so a delete never overtakes its
//! create. Directories are all made before the first file. The op log is written in decision
//! order, so it is the same for every N.
//! Named-path steps (mkdir, rename, ... of Git replay) may depend on any earlier step: each waits
//! for everything queued, then runs on the calling thread.

use crate::backend::{Backend, FreeSpace, OpError};
use crate::op::{FileRef, Operation, Step};
use crate::posix::Posix;
use fsage_plan::{DirId, DirTree};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Operations go to a worker in batches: one channel hand-over (and at most one wake-up) per batch
/// instead of per operation. A batch keeps its operations' order.
const BATCH: usize = 64;

/// Which key decides a planner operation's worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sharding {
    /// By directory while that splits the work evenly, by file while it does not: decided anew
    /// at every drain (every checkpoint, and before a named-path step), when no operation is
    /// queued, from how the operations decided since the last drain would have split by
    /// directory.
    #[default]
    Auto,
    /// The file's name: the workers share every stretch of work evenly, also when the planner
    /// works in a few directories for a while (grundman at 90 GB puts 51-88% of 200,000
    /// operations in a row on one worker's directories); two workers then meet in a directory
    /// and wait for its lock now and then.
    File,
    /// The directory: each directory's lock stays on one worker (agrawal at 2 GiB: 10% faster
    /// than by file), but a worker whose directories are quiet waits while the planner is
    /// blocked on the other's full queue.
    Directory,
    // `Auto` and `Directory` go by file for a tree with fewer than 8 directories per worker,
    // which would leave workers idle.
}

/// Under [`Sharding::Auto`], directories are kept together while the busiest worker's share of
/// the last interval's operations, split by directory, was at most this much above an even share.
const AUTO_MAX_SKEW: f64 = 1.1;

/// Under [`Sharding::Auto`], an interval with fewer operations than this keeps the current rule.
const AUTO_MIN_OPS: u64 = 4096;

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
    sharding: Sharding,
    /// Whether the directory decides a worker now (always false for a tree with fewer than 8
    /// directories per worker: it would leave workers idle).
    by_dir: bool,
    /// Operations decided since the last drain, by the worker their directory would pick.
    dir_split: Vec<u64>,
    /// Operations handed to workers by directory and by file (the report says which rule ran).
    ops_by_dir: u64,
    ops_by_file: u64,
}

impl Parallel {
    pub fn new(posix: Posix, threads: usize, sharding: Sharding) -> Parallel {
        Parallel {
            posix: Arc::new(posix),
            threads: threads.max(1),
            senders: Vec::new(),
            pending: Vec::new(),
            workers: Vec::new(),
            shared: Arc::default(),
            sharding,
            by_dir: false,
            dir_split: Vec::new(),
            ops_by_dir: 0,
            ops_by_file: 0,
        }
    }

    fn start(&mut self) {
        self.by_dir = self.may_shard_by_dir() && self.sharding != Sharding::File;
        self.dir_split = vec![0; self.threads];
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

    /// Whether the tree has directories enough (8 per worker) for every worker to get some.
    fn may_shard_by_dir(&self) -> bool {
        self.posix.tree().len() >= 8 * self.threads
    }

    /// The worker a directory number or a file's creation number picks (a multiplicative hash,
    /// so that neighbouring numbers spread).
    fn worker_of(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % self.threads
    }

    /// Under [`Sharding::Auto`], with nothing queued: by directory for the next interval if the
    /// last one's operations would have split evenly enough that way.
    fn choose_sharding(&mut self) {
        let total: u64 = self.dir_split.iter().sum();
        if self.sharding == Sharding::Auto && self.may_shard_by_dir() && total >= AUTO_MIN_OPS {
            let busiest = self.dir_split.iter().copied().max().unwrap_or(0) as f64;
            self.by_dir = busiest <= AUTO_MAX_SKEW * total as f64 / self.threads as f64;
        }
        self.dir_split.fill(0);
    }

    /// The worker a planner step goes to under the current rule, and the one its directory
    /// picks (what [`Sharding::Auto`] counts).
    fn workers_for(&self, dir: DirId, created: u64) -> (usize, usize) {
        let by_dir = self.worker_of(dir as u64);
        let to = if self.by_dir {
            by_dir
        } else {
            self.worker_of(created)
        };
        (to, by_dir)
    }

    /// The worker of a planner step; `None` for a named-path step, which runs alone.
    #[cfg(test)]
    fn shard(&self, step: &Step) -> Option<usize> {
        planned_key(step).map(|(dir, created)| self.workers_for(dir, created).0)
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
        // Nothing is queued: a directory may change workers without reordering its operations.
        self.choose_sharding();
    }
}

/// A planner step's directory and creation number; `None` for a named-path step.
fn planned_key(step: &Step) -> Option<(DirId, u64)> {
    match &step.op {
        Operation::Create {
            file: FileRef::Planned { dir, created },
            ..
        }
        | Operation::Delete {
            file: FileRef::Planned { dir, created },
            ..
        } => Some((*dir, *created)),
        _ => None,
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
        let total = self.ops_by_dir + self.ops_by_file;
        let few_dirs = !self.workers.is_empty() && !self.may_shard_by_dir();
        let rule = match self.sharding {
            Sharding::File => ", by file".to_string(),
            _ if few_dirs => ", by file (too few directories for each thread)".to_string(),
            Sharding::Directory => ", by directory".to_string(),
            Sharding::Auto if self.ops_by_dir == 0 && total > 0 => ", by file (auto)".to_string(),
            Sharding::Auto if self.ops_by_file == 0 => ", by directory (auto)".to_string(),
            Sharding::Auto => format!(
                ", by directory for {:.1}% of the operations and by file for the rest (auto)",
                100.0 * self.ops_by_dir as f64 / total as f64
            ),
        };
        format!("{}, {} threads{rule}", self.posix.name(), self.threads)
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
        let Some((dir, created)) = planned_key(step) else {
            self.drain();
            return self.posix.apply_shared(step);
        };
        let (shard, by_dir) = self.workers_for(dir, created);
        self.dir_split[by_dir] += 1;
        if self.by_dir {
            self.ops_by_dir += 1;
        } else {
            self.ops_by_file += 1;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::posix::WriteMode;

    /// A parallel backend on a temporary directory with `dirs` directories, its workers started.
    fn started(dirs: usize, sharding: Sharding) -> (tempfile::TempDir, Parallel) {
        let tmp = tempfile::tempdir().unwrap();
        let posix = Posix::open(tmp.path(), WriteMode::Fallocate, 1).unwrap();
        let mut p = Parallel::new(posix, 2, sharding);
        let paths: Vec<String> = (0..dirs).map(|i| format!("d{i}")).collect();
        p.make_dirs(&DirTree::from_paths(&paths).unwrap()).unwrap();
        p.start();
        (tmp, p)
    }

    fn create(dir: u32, created: u64) -> Step {
        Step {
            tick: created,
            op: Operation::Create {
                file: FileRef::Planned { dir, created },
                size: 4096,
            },
        }
    }

    fn delete(dir: u32, created: u64, tick: u64) -> Step {
        Step {
            tick,
            op: Operation::Delete {
                file: FileRef::Planned { dir, created },
                size: Some(4096),
            },
        }
    }

    /// The tree's directories of each worker taken in turn (as many of each), so that operations
    /// spread over them in order split evenly by directory.
    fn even_dirs(p: &Parallel) -> Vec<u32> {
        let n = p.posix.tree().len() as u32;
        let of = |w: usize| (0..n).filter(move |&d| p.worker_of(d as u64) == w);
        of(0).zip(of(1)).flat_map(|(a, b)| [a, b]).collect()
    }

    /// Operations per worker for 1,000 creates that all land in one directory.
    fn spread(sharding: Sharding) -> [usize; 2] {
        let (_tmp, p) = started(20, sharding);
        let mut n = [0; 2];
        for c in 0..1000 {
            n[p.shard(&create(3, c)).unwrap()] += 1;
        }
        n
    }

    #[test]
    fn by_file_a_busy_directory_keeps_both_workers_busy() {
        let n = spread(Sharding::File);
        assert!(n[0] >= 400 && n[1] >= 400, "{n:?}");
    }

    #[test]
    fn by_directory_a_busy_directory_stays_on_one_worker() {
        let n = spread(Sharding::Directory);
        assert!(n[0] == 1000 || n[1] == 1000, "{n:?}");
    }

    #[test]
    fn a_file_s_delete_goes_to_the_worker_of_its_create() {
        let (_tmp, p) = started(20, Sharding::File);
        for c in 0..200 {
            assert_eq!(p.shard(&create(3, c)), p.shard(&delete(3, c, 10_000 + c)));
        }
    }

    #[test]
    fn few_directories_are_shared_by_file_even_when_asked_by_directory() {
        for sharding in [Sharding::Directory, Sharding::Auto] {
            let (_tmp, p) = started(4, sharding);
            assert!(!p.by_dir);
            assert!(p
                .name()
                .ends_with("by file (too few directories for each thread)"));
        }
    }

    /// Applies a step and checks that the rule did not change while anything was queued: a delete
    /// could then overtake its create on the other worker.
    fn apply_checked(p: &mut Parallel, step: &Step) {
        let before = p.by_dir;
        p.apply(step).unwrap();
        if p.by_dir != before {
            let queued = p.shared.in_flight.load(Ordering::SeqCst)
                + p.pending.iter().map(|b| b.len() as u64).sum::<u64>();
            assert_eq!(
                queued, 0,
                "the rule changed at tick {} with work queued",
                step.tick
            );
        }
    }

    /// A file made under one rule and deleted under the other is found by its delete: the rule
    /// changes only when nothing is queued. Both directions: made by directory and deleted by
    /// file, made by file and deleted by directory.
    #[test]
    fn a_delete_after_a_rule_switch_finds_its_file() {
        let (tmp, mut p) = started(20, Sharding::Auto);
        let n = AUTO_MIN_OPS;
        for c in 0..n {
            apply_checked(&mut p, &create(3, c));
        }
        p.drain();
        assert!(!p.by_dir);
        for c in 0..n {
            apply_checked(&mut p, &delete(3, c, n + c));
        }
        p.drain();
        let even = even_dirs(&p);
        let dir_of = |c: u64| even[c as usize % even.len()];
        for c in n..3 * n {
            apply_checked(&mut p, &create(dir_of(c), c));
        }
        p.drain();
        assert!(p.by_dir, "{:?}", p.dir_split);
        for c in n..3 * n {
            apply_checked(&mut p, &delete(dir_of(c), c, 3 * n + c));
        }
        p.drain();
        let failures = p.take_failures();
        assert!(
            failures.is_empty(),
            "{} failed, first {:?}",
            failures.len(),
            failures.first()
        );
        for d in 0..p.posix.tree().len() as DirId {
            let dir = tmp.path().join(p.posix.tree().path(d));
            let files = std::fs::read_dir(&dir)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_file())
                .count();
            assert_eq!(files, 0, "{}", dir.display());
        }
    }

    /// Auto keeps its rule after an interval too short to judge.
    #[test]
    fn auto_keeps_its_rule_after_a_short_interval() {
        let (_tmp, mut p) = started(20, Sharding::Auto);
        for c in 0..AUTO_MIN_OPS - 1 {
            p.apply(&create(3, c)).unwrap();
        }
        p.drain();
        assert!(p.by_dir);
        assert_eq!(p.dir_split, vec![0, 0]);
    }

    /// Auto starts by directory, goes by file after an interval whose operations bunched in one
    /// directory, and back to directories after one spread over all of them.
    #[test]
    fn auto_follows_how_the_last_interval_split_by_directory() {
        let (tmp, mut p) = started(20, Sharding::Auto);
        assert!(p.by_dir);
        for c in 0..AUTO_MIN_OPS {
            p.apply(&create(3, c)).unwrap();
        }
        p.drain();
        assert!(!p.by_dir, "one busy directory: {:?}", p.dir_split);
        assert!(p.take_failures().is_empty());
        let even = even_dirs(&p);
        assert!(even.len() >= 4, "{even:?}");
        for c in AUTO_MIN_OPS..3 * AUTO_MIN_OPS {
            p.apply(&create(even[c as usize % even.len()], c)).unwrap();
        }
        p.drain();
        assert!(p.by_dir);
        assert!(p.take_failures().is_empty());
        // Every create ran, whatever worker it went to.
        assert!(tmp.path().join(p.posix.tree().file_path(3, "f0")).exists());
        let last = 3 * AUTO_MIN_OPS - 1;
        let dir = even[last as usize % even.len()];
        assert!(tmp
            .path()
            .join(p.posix.tree().file_path(dir, &format!("f{last}")))
            .exists());
        let name = p.name();
        assert!(name.contains("by directory for 33.3%"), "{name}");
    }
}
