//! What a reproduction's output directory records (`DIR/reproduction.json`): which reproduction
//! ran there, at what scale, and where its experiment or Git series are. Running one is
//! fsage-repro's, which re-exports these where they were.

use fsage_sys::{Error, FsKind};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The record's format tag.
pub const RECORD_FORMAT: &str = "fsage-reproduction/1";
/// The record's file name in the output directory.
pub const RECORD_FILE: &str = "reproduction.json";
/// Where an experiment reproduction's experiment runs (an experiment output directory).
pub const EXPERIMENT_DIR: &str = "experiment";
/// Where a Git reproduction's series go (`NAME.json`).
pub const GIT_DIR: &str = "git";

/// What `DIR/reproduction.json` holds: which reproduction ran here and at what scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub format: String,
    pub name: String,
    pub paper: String,
    pub figure: String,
    /// The scale, in bytes, and what it is the size of.
    pub scale_bytes: u64,
    pub scale_of: String,
    /// The paper's own size.
    pub paper_scale: String,
    /// The drive models, as the run names them (scaled: `MODEL@SIZE`).
    pub models: Vec<String>,
    /// The repository replayed (Git reproductions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// The Git-aging runs (Git reproductions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git_runs: Vec<GitRun>,
    pub made_by: String,
}

impl Record {
    /// `1 GiB (each file system ...; the paper: 59 GB ...)`: the scale said plainly.
    pub fn scale_text(&self) -> String {
        format!(
            "scaled: {} is {} (the paper: {})",
            fsage_units::format_size(self.scale_bytes),
            self.scale_of,
            self.paper_scale
        )
    }
}

/// One Git-aging run of a reproduction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitRun {
    /// Names its files: `git/NAME.json`, `images/NAME.img`.
    pub name: String,
    pub fs: String,
    /// The partition (image) size.
    pub size: u64,
    pub every: u64,
    /// The models each grep's trace is costed on (built-in names).
    pub cost_models: Vec<String>,
    /// Warm-cache measurements under this memory limit (Conway's Figure 5), in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_mem_limit: Option<u64>,
    /// The published series this run answers (`aged/clean 4 GB partition`); `None`: every
    /// series of its file system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<String>,
}

impl GitRun {
    /// The kind its `fs` names (the catalogue names only ext4, xfs and btrfs; ext4 otherwise).
    pub fn fs_kind(&self) -> FsKind {
        FsKind::by_name(&self.fs).unwrap_or(FsKind::EXT4)
    }
}

/// Reads `DIR/reproduction.json`.
pub fn read_record(dir: &Path) -> Result<Record, Error> {
    let file = dir.join(RECORD_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, "", e))?;
    let r: Record = serde_json::from_str(&text).map_err(|e| {
        Error::input(format!(
            "{}: not a reproduction record: {e}",
            file.display()
        ))
    })?;
    if r.format != RECORD_FORMAT {
        return Err(Error::input(format!(
            "{}: format {:?}, not {RECORD_FORMAT:?}",
            file.display(),
            r.format
        )));
    }
    Ok(r)
}
