//! What Slurm says of a submission's jobs: `experiment status` places the cells not done in
//! their queued or running jobs, `experiment cancel` cancels the recorded jobs and nothing else.

use crate::runner::{self, CellState, Status};
use crate::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{need, read_submissions, slurm_cmd, Submission, SLURM_DIR, SUBMISSIONS};

/// A job (or array task) Slurm still knows about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveJob {
    /// `ID` of a job, `ARRAY_TASK` of an array task.
    pub id: String,
    /// Slurm's state (`PENDING`, `RUNNING`, ...).
    pub state: String,
    /// Why it waits, or the node it runs on.
    pub reason: String,
}

/// The jobs of `subs` that `squeue` still lists (queued, running, completing), by id; array
/// tasks as `ARRAY_TASK`. Every job is listed and only the recorded ones kept, so a job Slurm
/// has forgotten is no error.
pub(super) fn alive_jobs(subs: &[Submission]) -> Result<BTreeMap<String, LiveJob>, Error> {
    if subs.is_empty() {
        return Ok(BTreeMap::new());
    }
    let squeue = need("squeue")?;
    let ours: std::collections::BTreeSet<String> =
        subs.iter().flat_map(Submission::job_ids).collect();
    let text = slurm_cmd(
        &squeue,
        &[
            "--noheader".into(),
            "--array".into(),
            "--format=%F|%K|%T|%R".into(),
        ],
    )?;
    let mut alive = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.trim().splitn(4, '|').collect();
        let [job, task, state, reason] = f[..] else {
            continue;
        };
        if !ours.contains(job) {
            continue;
        }
        let id = if task == "N/A" || task.is_empty() {
            job.to_string()
        } else {
            format!("{job}_{task}")
        };
        alive.insert(
            id.clone(),
            LiveJob {
                id,
                state: state.to_string(),
                reason: reason.to_string(),
            },
        );
    }
    Ok(alive)
}

/// How the jobs that Slurm no longer lists ended, from `sacct` when the cluster keeps
/// accounting (empty otherwise: the cell files say what was done).
fn ended_jobs(subs: &[Submission]) -> BTreeMap<String, String> {
    let mut ended = BTreeMap::new();
    let Some(sacct) = fsage_sys::find_cmd("sacct") else {
        return ended;
    };
    let ids: Vec<String> = subs.iter().flat_map(Submission::job_ids).collect();
    if ids.is_empty() {
        return ended;
    }
    let Ok(text) = slurm_cmd(
        &sacct,
        &[
            "--noheader".into(),
            "--parsable2".into(),
            "--allocations".into(),
            "--format=JobID,State".into(),
            format!("--jobs={}", ids.join(",")),
        ],
    ) else {
        return ended;
    };
    for line in text.lines() {
        if let Some((id, state)) = line.split_once('|') {
            ended.insert(id.to_string(), state.to_string());
        }
    }
    ended
}

/// `experiment status` of a directory with submissions: the cell files' status, with each cell
/// not done yet placed in its Slurm job (queued or running), and the jobs of the last
/// submission.
pub fn annotate(mut st: Status, out: &Path) -> Result<Status, Error> {
    let subs = read_submissions(out)?;
    let Some(last) = subs.last() else {
        return Ok(st);
    };
    // The cell files say what is done wherever the directory is read; Slurm only adds where
    // the rest stand, so a machine without Slurm (or a cluster that does not answer) still
    // gets the status, with a note.
    let alive = match alive_jobs(&subs) {
        Ok(a) => a,
        Err(e) => {
            st.slurm_note = Some(format!(
                "Slurm was not asked ({e}): cells in queued or running jobs are counted as left"
            ));
            BTreeMap::new()
        }
    };
    let ended = ended_jobs(&subs);
    // The last submission's task of each cell.
    let mut task_of: BTreeMap<&str, String> = BTreeMap::new();
    for a in &last.arrays {
        for (i, t) in a.tasks.iter().enumerate() {
            for id in t {
                task_of.insert(id, format!("{}_{i}", a.job_id));
            }
        }
    }
    // Base jobs that ended without saying so in their log ("base image of ... ready") and
    // without failure records (those make their cells failed, not left).
    let asked = st.slurm_note.is_none();
    // Each with whether it is a failure: a job that ran (its log says so) and ended without its
    // base was killed (a time limit, its node lost); one without a log never ran, and was
    // cancelled by someone or forgotten by Slurm, so its cells are only left.
    let silent: BTreeMap<&str, (String, bool)> = last
        .bases
        .iter()
        .filter(|b| asked && !alive.keys().any(|k| k == &b.job_id))
        .filter(|b| !last.cancelled.contains(&b.job_id))
        .filter_map(|b| {
            let log = out
                .join(SLURM_DIR)
                .join("logs")
                .join(format!("base-{}.out", b.job_id));
            let Ok(text) = std::fs::read_to_string(&log) else {
                return Some((
                    b.base.as_str(),
                    (
                        format!(
                            "base job {} left no log {}: cancelled before it ran?",
                            b.job_id,
                            log.display()
                        ),
                        false,
                    ),
                ));
            };
            if text.contains("base image of ") && text.contains(" ready") {
                return None;
            }
            let last_line = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no log")
                .trim()
                .to_string();
            Some((
                b.base.as_str(),
                (
                    format!(
                        "base job {} ended without making its base: {last_line}",
                        b.job_id
                    ),
                    true,
                ),
            ))
        })
        .collect();
    let (mut queued, mut running, mut failed) = (0, 0, 0);
    for c in &mut st.cells {
        let Some(task) = task_of.get(c.id.as_str()) else {
            continue;
        };
        c.job = Some(task.clone());
        if c.state != CellState::Left {
            continue;
        }
        match alive.get(task) {
            Some(j) if j.state == "PENDING" || j.state == "REQUEUED" => {
                c.state = CellState::Queued {
                    slurm_state: j.state.clone(),
                    reason: j.reason.clone(),
                };
                queued += 1;
            }
            Some(j) => {
                c.state = CellState::Running {
                    slurm_state: j.state.clone(),
                    node: j.reason.clone(),
                };
                running += 1;
            }
            None => {
                c.slurm_state = ended.get(task).cloned();
                let base = last
                    .arrays
                    .iter()
                    .find(|a| task.starts_with(&format!("{}_", a.job_id)))
                    .map(|a| a.base.as_str());
                let ended = base.and_then(|b| silent.get(b));
                c.base_job_ended = ended.map(|(why, _)| why.clone());
                // A base job killed before it could record its cells' failure (out of time, its
                // node lost): the cells failed with it, and say why.
                if let Some((why, true)) = ended {
                    c.state = CellState::Failed { error: why.clone() };
                    failed += 1;
                }
            }
        }
    }
    st.left -= queued + running + failed;
    st.failed += failed;
    st.queued = queued;
    st.running = running;
    st.jobs = last
        .bases
        .iter()
        .map(|b| (b.job_id.clone(), format!("base {}", b.base)))
        .chain(last.arrays.iter().map(|a| {
            (
                a.job_id.clone(),
                format!("array of {} tasks for {}", a.tasks.len(), a.base),
            )
        }))
        .map(|(id, what)| {
            let live: Vec<&LiveJob> = alive
                .values()
                .filter(|j| j.id == id || j.id.starts_with(&format!("{id}_")))
                .collect();
            let state = if live.is_empty() {
                let unknown = if st.slurm_note.is_some() {
                    "unknown"
                } else {
                    "ended"
                };
                ended.get(&id).cloned().unwrap_or_else(|| unknown.into())
            } else {
                let mut s: Vec<String> = live.iter().map(|j| j.state.clone()).collect();
                s.sort();
                s.dedup();
                s.join(",")
            };
            runner::JobLine {
                job_id: id,
                what,
                state,
            }
        })
        .collect();
    Ok(st)
}

/// What `cancel` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelSummary {
    pub out: PathBuf,
    /// The recorded jobs that were queued or running, now cancelled.
    pub cancelled: Vec<String>,
}

/// `experiment cancel`: `scancel` of the recorded jobs Slurm still lists, and of nothing else.
/// A running cell gets SIGTERM: it stops, cleans up and records nothing, and the next `submit`
/// submits it again.
pub fn cancel(out: &Path) -> Result<CancelSummary, Error> {
    runner::read_plan(out)?;
    let subs = read_submissions(out)?;
    if subs.is_empty() {
        return Err(Error::input(format!(
            "{}: no Slurm submission recorded ({}/{SUBMISSIONS} is missing): nothing to cancel",
            out.display(),
            SLURM_DIR
        )));
    }
    let scancel = need("scancel")?;
    let alive = alive_jobs(&subs)?;
    let mut jobs: Vec<String> = alive
        .keys()
        .map(|id| id.split('_').next().unwrap_or(id).to_string())
        .collect();
    jobs.sort();
    jobs.dedup();
    if !jobs.is_empty() {
        // Recorded first: a base job stopped here must not read as a failure afterwards.
        let mut all = subs;
        if let Some(last) = all.last_mut() {
            last.cancelled.extend(jobs.iter().cloned());
            last.cancelled.sort();
            last.cancelled.dedup();
        }
        runner::write_json(&out.join(SLURM_DIR).join(SUBMISSIONS), &all)?;
        slurm_cmd(&scancel, &jobs)?;
    }
    Ok(CancelSummary {
        out: out.to_path_buf(),
        cancelled: jobs,
    })
}
