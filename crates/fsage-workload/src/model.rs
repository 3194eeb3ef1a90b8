//! The workload after parsing: filesets, threads and their flowops, every variable resolved.

use serde::{Deserialize, Serialize};

pub use crate::kind::{DataOp, FileOp, FlowopKind, PaceOp};
pub use crate::randvar::{Dist, Param, RandVar};

/// File descriptors a thread may name (`fd=0` to `fd=63`).
pub const MAX_FD: u32 = 64;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Model {
    pub filesets: Vec<FilesetDef>,
    pub threads: Vec<ThreadDef>,
    /// `run N`: seconds (60 for a bare `run`); `None` without a run line.
    pub run_secs: Option<u64>,
    pub run_line: Option<usize>,
    /// Every variable's final value, as `.f` text, sorted by name.
    pub vars: Vec<(String, String)>,
    /// `set mode quit ...`: when a run ends.
    pub mode: QuitMode,
    /// `eventgen rate=N`: events per second for the rate-limit flowops (0: no limit).
    pub eventgen_hz: u64,
    /// What fsage accepted but does not act on (`debug`, `psrun`'s sampling), said once each.
    pub notes: Vec<String>,
}

/// `set mode quit timeout|firstdone|alldone`: does the run end at its time (the default), when
/// the first thread is done, or when every thread is done? A thread is done when a
/// `finishoncount`/`finishonbytes` is reached or (outside `timeout`) when its fileset has no
/// file left for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuitMode {
    #[default]
    Timeout,
    FirstDone,
    AllDone,
}

impl QuitMode {
    pub fn name(self) -> &'static str {
        match self {
            QuitMode::Timeout => "timeout",
            QuitMode::FirstDone => "firstdone",
            QuitMode::AllDone => "alldone",
        }
    }
}

/// How the sizes of a fileset's files are drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    Fixed(u64),
    /// Filebench's cvar-gamma: shape `shape` (its `gamma`), scale `mean / shape`.
    Gamma {
        mean: f64,
        shape: f64,
    },
    /// A random variable (`size=$randvar`, a cvar of another type).
    Rand(RandVar),
}

impl SizeDist {
    /// One file's size.
    pub fn sample(&self, rng: &mut fsage_plan::Rng) -> u64 {
        match self {
            SizeDist::Fixed(b) => *b,
            SizeDist::Gamma { mean, shape } => crate::gamma::size(rng, *mean, *shape),
            SizeDist::Rand(r) => r.sample(rng),
        }
    }

    pub fn mean(&self) -> f64 {
        match *self {
            SizeDist::Fixed(b) => b as f64,
            SizeDist::Gamma { mean, .. } => mean,
            SizeDist::Rand(ref r) => r.mean(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FilesetDef {
    pub name: String,
    /// The `.f` file's path: informational, fsage always lays a fileset out under its target.
    pub path: Option<String>,
    pub size: SizeDist,
    pub entries: u64,
    /// Mean number of entries per directory.
    pub dirwidth: u64,
    /// Percent of the entries that exist, with data, before the run.
    pub prealloc: u64,
    pub readonly: bool,
    pub reuse: bool,
    /// `define file`: one file (laid out as `TARGET/<name>/f0`).
    pub single_file: bool,
    /// `leafdirs=N`: the entries are N directories (for makedir, removedir, listdir), not files.
    pub dirs: bool,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThreadDef {
    pub process: String,
    pub name: String,
    pub instances: u64,
    pub memsize: Option<u64>,
    pub flowops: Vec<FlowopDef>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FlowopDef {
    pub kind: FlowopKind,
    pub name: String,
    pub fileset_name: Option<String>,
    /// Index into [`Model::filesets`].
    pub fileset: Option<usize>,
    pub fd: u32,
    pub srcfd: Option<u32>,
    pub iosize: Option<u64>,
    pub random: bool,
    pub dsync: bool,
    pub directio: bool,
    pub iters: u64,
    /// `iosize=$randvar`: drawn at every operation (`iosize` then holds the largest draw).
    pub iosize_dist: Option<RandVar>,
    /// `value=`: a count, a byte count, a semaphore value, hog loops or delay seconds.
    pub value: Option<u64>,
    /// `target=`: the flowop a limit, finish, sempost or wakeup refers to (by name).
    pub target: Option<String>,
    /// `indexed=`: which entry of the fileset (drawn, modulo the entries).
    pub indexed: Option<Param>,
    /// `workingset=`: random offsets fall in the first this many bytes (0: the whole file).
    pub workingset: u64,
    /// `opennext`: every operation takes another file of the fileset.
    pub opennext: bool,
    /// `blocking` (sempost): wait for the semaphore's high-water room.
    pub blocking: bool,
    /// `highwater=` (semblock).
    pub highwater: Option<u64>,
    pub line: usize,
}
