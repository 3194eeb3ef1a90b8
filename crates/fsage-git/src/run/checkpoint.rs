//! The run's checkpoint: what must not change on a resume, the series so far, the output
//! paths, and where the files beside the target go.

use super::{GitAgeOptions, Target};
use crate::series::GitSeries;
use crate::{Error, Result};
use fsage_slowdev::Latencies;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub(super) const STATE_FORMAT: &str = "fsage-git-state/1";

/// What must not change between a run and its resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RunKey {
    pub(super) repo: String,
    pub(super) mode: String,
    /// The aged file system's kind.
    pub(super) fs: String,
    /// A directory target: the clean instance's kind (an image's clean instance is of `fs`).
    #[serde(default)]
    pub(super) clean_fs: Option<String>,
    /// The clean instance's size (the image's, for an image target).
    pub(super) size: u64,
    pub(super) every: u64,
    pub(super) gc: bool,
    pub(super) first: String,
    pub(super) last: String,
    pub(super) commits: u64,
    /// The measuring device's latencies, for a plain latency (absent in checkpoints from before
    /// the option).
    #[serde(default)]
    pub(super) device: Option<Latencies>,
    /// The measuring device's model, text included, for any other model (absent in checkpoints
    /// from before models), so that a resume cannot switch it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) device_model: Option<fsage_device::ModelSpec>,
    /// Timed greps per measurement (1 in checkpoints from before repetitions).
    #[serde(default = "one")]
    pub(super) grep_reps: u32,
    /// The cost models, text included (none in checkpoints from before them).
    #[serde(default)]
    pub(super) cost_models: Vec<fsage_device::ModelSpec>,
    /// The think rule (`recorded` in checkpoints from before rules).
    #[serde(default = "recorded_think")]
    pub(super) think: fsage_device::Think,
    /// A sync after every pull (false in checkpoints from before the option).
    #[serde(default)]
    pub(super) sync_each_pull: bool,
    /// Warm-cache measurements (false in checkpoints from before the option).
    #[serde(default)]
    pub(super) warm_cache: bool,
    /// The memory limit (none in checkpoints from before the option).
    #[serde(default)]
    pub(super) mem_limit: Option<u64>,
    /// The run on one CPU (false in checkpoints from before the option).
    #[serde(default)]
    pub(super) one_cpu: bool,
    /// Measured as this build measures: greps on read-only mounts, btrfs synced with its own
    /// ioctl and its clean copy committed every 32 entries (false in checkpoints from before, which
    /// a resume would turn into a series of two kinds of measurement).
    #[serde(default)]
    pub(super) settled: bool,
    /// The modeled figures are the median of every timed grep's costed trace: true when that
    /// differs from costing the first grep alone (more than one grep, and cost models); false
    /// in checkpoints from before, which costed the first grep only (a resume would mix the two
    /// rules in one series; with one grep the rule is the same and they resume).
    #[serde(default)]
    pub(super) every_grep_costed: bool,
    /// A warm-cache run whose clean reference is cold by its fresh mount (one grep, no cache
    /// dropped): an older warm run's clean reference dropped the machine's caches, which emptied
    /// the aged instance's warm cache too, so its checkpoints are not resumed.
    #[serde(default)]
    pub(super) clean_cold_by_mount: bool,
}

impl RunKey {
    /// [`RunKey::every_grep_costed`] of a run with `grep_reps` greps and `cost_models`.
    pub(super) fn every_grep_costed(
        grep_reps: u32,
        cost_models: &[fsage_device::ModelSpec],
        warm_cache: bool,
    ) -> bool {
        grep_reps > 1 && !cost_models.is_empty() && !warm_cache
    }
}

pub(super) fn recorded_think() -> fsage_device::Think {
    fsage_device::Think::Recorded
}

pub(super) fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct State {
    pub(super) format: String,
    pub(super) key: RunKey,
    pub(super) series: GitSeries,
    /// Tree mode: op-log length and next tick at the checkpoint.
    pub(super) op_log_len: Option<u64>,
    pub(super) tick: u64,
    /// The output paths the run was given (none in checkpoints from before they were kept).
    #[serde(default)]
    pub(super) outputs: Outputs,
}

/// A run's output paths, absolute: a resume writes to them unless given the same again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Outputs {
    pub(super) json: Option<PathBuf>,
    pub(super) csv: Option<PathBuf>,
    pub(super) op_log: Option<PathBuf>,
}

impl Outputs {
    pub(super) fn given(opts: &GitAgeOptions) -> Outputs {
        let abs = |p: &Option<PathBuf>| {
            p.as_deref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
        };
        Outputs {
            json: abs(&opts.json),
            csv: abs(&opts.csv),
            op_log: abs(&opts.op_log),
        }
    }

    /// The paths given now, else the saved ones; a path given again that differs from the
    /// saved one is refused, naming both.
    pub(super) fn resumed(given: Outputs, saved: &Outputs, state_file: &Path) -> Result<Outputs> {
        let mut refused = Vec::new();
        let mut pick = |flag: &str, g: Option<PathBuf>, s: &Option<PathBuf>| match (g, s) {
            (Some(g), Some(s)) if g != *s => {
                refused.push(format!(
                    "{flag} {} (the run writes {})",
                    g.display(),
                    s.display()
                ));
                None
            }
            (g, s) => g.or_else(|| s.clone()),
        };
        let out = Outputs {
            json: pick("--json", given.json, &saved.json),
            csv: pick("--csv", given.csv, &saved.csv),
            op_log: pick("--op-log", given.op_log, &saved.op_log),
        };
        if !refused.is_empty() {
            return Err(Error::input(format!(
                "{}: a resumed run writes where it was started; drop or correct: {}",
                state_file.display(),
                refused.join("; ")
            )));
        }
        Ok(out)
    }
}

/// The checkpoint of a run on `target`: `IMAGE.fsage-git.json`, or for a directory target
/// `CLEAN_IMAGE.fsage-git.json` (never inside the file system being aged).
pub fn state_path(target: &Target) -> PathBuf {
    let t = target.files_base().to_string_lossy();
    PathBuf::from(format!("{}.fsage-git.json", t.trim_end_matches('/')))
}

/// Where a bundle is cloned for the run: `IMAGE.source.git` (or `CLEAN_IMAGE.source.git`); a
/// resume reuses it, a new run replaces it, the end of a run removes it.
pub fn source_clone_path(target: &Target) -> PathBuf {
    let t = target.files_base().to_string_lossy();
    PathBuf::from(format!("{}.source.git", t.trim_end_matches('/')))
}

/// Where the greps' traces are kept: `IMAGE.traces/` (or `CLEAN_IMAGE.traces/`), one file per
/// instance, measurement and timed grep ([`trace_file_name`]; a measurement taken again after a
/// stop writes over its own files).
pub fn traces_path(target: &Target) -> PathBuf {
    let t = target.files_base().to_string_lossy();
    PathBuf::from(format!("{}.traces", t.trim_end_matches('/')))
}

/// The name of a grep's trace in [`traces_path`]: `NNNNN-aged.json` or `NNNNN-clean.json` (by
/// pulls) for an instance's first grep, the name tools and older runs know, and
/// `NNNNN-aged-r1.json`, `-r2`... for the greps after it (`rep`, from 0).
pub fn trace_file_name(pulls: u64, which: &str, rep: u32) -> String {
    match rep {
        0 => format!("{pulls:05}-{which}.json"),
        r => format!("{pulls:05}-{which}-r{r}.json"),
    }
}

pub(super) fn save_state(path: &Path, st: &State) -> Result<()> {
    let json = serde_json::to_string_pretty(st).map_err(|e| Error::operation(e.to_string()))?;
    fsage_sys::write_atomic(path, json.as_bytes())
        .map_err(|e| Error::operation(format!("checkpoint: {e}")))
}

pub(super) fn load_state(path: &Path) -> Result<State> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        crate::Error::io(
            path,
            "no checkpoint to resume from (was the run started?)",
            e,
        )
    })?;
    let st: State = serde_json::from_str(&text).map_err(|e| {
        Error::input(format!(
            "{}: not a Git-aging checkpoint: {e}",
            path.display()
        ))
    })?;
    if st.format != STATE_FORMAT {
        return Err(Error::input(format!(
            "{}: format {:?}, expected {STATE_FORMAT:?}",
            path.display(),
            st.format
        )));
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(grep_reps: u32, cost_models: Vec<fsage_device::ModelSpec>) -> RunKey {
        RunKey {
            repo: "/r.bundle".into(),
            mode: "git".into(),
            fs: "btrfs".into(),
            clean_fs: None,
            size: 1 << 30,
            every: 100,
            gc: false,
            first: "a".into(),
            last: "b".into(),
            commits: 2,
            device: None,
            device_model: None,
            every_grep_costed: RunKey::every_grep_costed(grep_reps, &cost_models, false),
            clean_cold_by_mount: false,
            grep_reps,
            cost_models,
            think: fsage_device::Think::default(),
            sync_each_pull: true,
            warm_cache: false,
            mem_limit: None,
            one_cpu: false,
            settled: true,
        }
    }

    /// A checkpoint from a build that costed the first grep only resumes where the rule is the
    /// same (one grep, or no models) and is refused where the series would mix the two.
    #[test]
    fn a_checkpoint_that_costed_the_first_grep_only_resumes_only_where_the_rule_is_the_same() {
        let hdd = fsage_device::resolve("hdd-7200").unwrap();
        for (reps, models, same) in [
            (1, vec![hdd.clone()], true),
            (3, Vec::new(), true),
            (3, vec![hdd.clone()], false),
        ] {
            let now = key(reps, models);
            let mut v = serde_json::to_value(&now).unwrap();
            v.as_object_mut().unwrap().remove("every_grep_costed");
            let before: RunKey = serde_json::from_value(v).unwrap();
            assert_eq!(
                before == now,
                same,
                "{reps} greps, {} models",
                now.cost_models.len()
            );
        }
    }
}
