//! The workload after parsing: filesets, threads and their flowops, every variable resolved.

use serde::{Deserialize, Serialize};

pub use crate::flowop::FlowopKind;

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
}

/// How the sizes of a fileset's files are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    Fixed(u64),
    /// Filebench's cvar-gamma: shape `shape` (its `gamma`), scale `mean / shape`.
    Gamma {
        mean: f64,
        shape: f64,
    },
}

impl SizeDist {
    pub fn mean(&self) -> f64 {
        match *self {
            SizeDist::Fixed(b) => b as f64,
            SizeDist::Gamma { mean, .. } => mean,
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
    pub line: usize,
}
