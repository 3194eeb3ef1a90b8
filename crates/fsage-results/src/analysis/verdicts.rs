//! How far from fresh, for an experiment: its output directory holds a `frag` measurement of every
//! base image (`frag/KEY.json`), so each aged (or library) base is set beside the fresh base of
//! the same file system and image size with the comparison `fsage frag --against-fresh` makes
//! ([`crate::against::against_fresh`]), no new measurement needed. The verdicts are made by
//! fsage-analysis (`verdicts::base_verdicts`); the caller reads the measurements and says which
//! base image each one is of ([`MeasuredBase`]).

use crate::against::AgainstFresh;
use crate::experiment::spec::{FsSpec, StateSpec};
use fsage_measure::FragReport;
use serde::Serialize;
use std::time::SystemTime;

/// One non-fresh base image of an experiment and its comparison with the fresh one.
#[derive(Debug, Clone, Serialize)]
pub struct BaseVerdict {
    /// The experiment's output directory.
    pub experiment: String,
    /// The file system's label in the experiment.
    pub fs: String,
    /// The state's label (`aged:LABEL`, `image:NAME`).
    pub state: String,
    pub image_size: u64,
    /// The frag measurements compared (names in the report).
    pub aged_frag: String,
    pub fresh_frag: Option<String>,
    /// The comparison, or why there is none.
    pub against: Option<AgainstFresh>,
    pub missing: Option<String>,
    /// What to keep in mind reading the comparison (e.g. measured by an older fsage).
    pub notes: Vec<String>,
}

impl BaseVerdict {
    /// The one line for people.
    pub fn line(&self) -> String {
        match (&self.against, &self.missing) {
            (Some(a), _) if self.notes.is_empty() => a.summary.clone(),
            (Some(a), _) => format!("{} (note: {})", a.summary, self.notes.join("; ")),
            (None, Some(why)) => format!("{} {}: no verdict: {why}", self.fs, self.state),
            (None, None) => format!("{} {}: no verdict", self.fs, self.state),
        }
    }
}

/// One layout measurement of an experiment's base image and what that image is.
#[derive(Debug, Clone)]
pub struct MeasuredBase<'a> {
    /// The measurement's name (its file name without `.json`).
    pub name: &'a str,
    pub report: &'a FragReport,
    pub fs: FsSpec,
    pub state: StateSpec,
    /// The image size.
    pub size: u64,
    /// When the measurement was written: of several of one fresh base (an edited experiment),
    /// the newest is compared with.
    pub modified: Option<SystemTime>,
}
