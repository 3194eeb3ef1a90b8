//! The runner: goes through a [`Plan`]'s cells in order and writes each cell's result to the
//! output directory the moment the cell ends, so that a crash or Ctrl-C loses at most the running
//! cell and a second run skips what is done.
//!
//! What a cell does (make or restore an image, attach a slow device, run the workload) is behind
//! [`Executor`]: [`crate::lab::LabExecutor`] does it on this machine, and a mock tests the loop
//! (skipping, failures, interruption, status) without root.
//!
//! The output directory holds:
//! - `experiment.json`: a marker (which experiment, made by which fsage), so that the runner
//!   never writes into a directory it did not make;
//! - `experiment.toml`: the experiment file as it was at the last run, and `plan.json`, its cells;
//! - `cells/ID.json`: one [`CellResult`] per finished or failed cell;
//! - `aging/` and `frag/`: the aging reports and layout measurements of the images made for the
//!   states (written by the executor), which `fsage report` draws beside the cells.

use crate::result::{self, CellResult, CellStatus, Environment, RESULT_FORMAT};
use crate::spec::{Cell, Plan};
use crate::{Error, Sample};
use fsage_sys::Blame;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// An output directory's marker file, its status and reading its plan are fsage-results'.
pub use fsage_results::experiment::status::{
    read_plan, CellLine, CellState, JobLine, Status, MARKER,
};

/// Where the cell results go, under the output directory.
pub const CELLS_DIR: &str = "cells";

/// What one cell gave.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CellRun {
    pub samples: Vec<Sample>,
    pub environment: Option<Environment>,
    pub workload_report: Option<serde_json::Value>,
    /// Ctrl-C (or SIGTERM) cut the workload short: the cell is not recorded.
    pub interrupted: bool,
    /// Seconds this cell spent making its state's base image (aging), when it made it.
    pub base_seconds: Option<f64>,
}

/// Runs cells. An error names the step that failed ("mount: ...") and goes into the cell's result,
/// and the runner goes on with the next cell; an interrupted one stops the run.
pub trait Executor {
    fn run_cell(&mut self, cell: &Cell, obs: &mut dyn RunObserver) -> Result<CellRun, Error>;
    /// The runner is done (or stops): release what is held (devices, mounts, scratch images).
    fn finish(&mut self) {}
}

/// What the runner tells its caller.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// Before the first cell: how many cells are done, failed (and not retried) and to run.
    Start {
        total: usize,
        done: usize,
        failed: usize,
        to_run: usize,
    },
    CellStart {
        /// Position among the cells to run this time, from 1.
        index: usize,
        to_run: usize,
        cell: &'a Cell,
        /// Estimated seconds left, from the cells run so far (`None` before the first).
        eta_s: Option<f64>,
    },
    CellEnd {
        result: &'a CellResult,
        path: &'a Path,
    },
    /// A step inside a cell worth telling (aging an image, a warning of the workload).
    Note(&'a str),
}

pub trait RunObserver {
    fn event(&mut self, e: &Event);
}

/// An observer that ignores everything.
pub struct Quiet;
impl RunObserver for Quiet {
    fn event(&mut self, _e: &Event) {}
}

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Run the cells recorded as failed again (by default they are kept as they are).
    pub retry_failed: bool,
}

/// What a run came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub out: PathBuf,
    pub total: usize,
    /// Done before this run started.
    pub done_before: usize,
    /// Run this time, and of those, failed.
    pub ran: usize,
    pub failed: usize,
    /// Failed earlier and not retried.
    pub failed_kept: usize,
    pub interrupted: bool,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Marker {
    made_by: String,
    experiment: String,
}

/// Makes `out` ready for `plan`: a new (or empty) directory, or one an earlier run of an
/// experiment made. Refuses anything else, so nothing the user had is overwritten.
pub fn prepare_out(out: &Path, plan: &Plan, spec_text: &str) -> Result<(), Error> {
    let marker = out.join(MARKER);
    if out.exists() {
        if !out.is_dir() {
            return Err(Error::input(format!(
                "{}: exists and is not a directory",
                out.display()
            )));
        }
        if !marker.exists() {
            let mut rd = std::fs::read_dir(out)
                .map_err(|e| Error::input(format!("{}: {e}", out.display())))?;
            if rd.next().is_some() {
                return Err(Error::input(format!(
                    "{}: not empty and not an experiment's output directory (no {MARKER}); give \
                     an empty or new directory",
                    out.display()
                )));
            }
        } else {
            let text = std::fs::read_to_string(&marker)
                .map_err(|e| Error::input(format!("{}: {e}", marker.display())))?;
            let m: Marker = serde_json::from_str(&text).map_err(|e| {
                Error::input(format!("{}: not an fsage marker: {e}", marker.display()))
            })?;
            if m.experiment != plan.experiment {
                return Err(Error::input(format!(
                    "{}: holds the results of experiment {:?}, not {:?}; give another directory",
                    out.display(),
                    m.experiment,
                    plan.experiment
                )));
            }
        }
    }
    std::fs::create_dir_all(out.join(CELLS_DIR))
        .map_err(|e| Error::input(format!("{}: cannot make the directory: {e}", out.display())))?;
    let m = Marker {
        made_by: format!("fsage {}", env!("CARGO_PKG_VERSION")),
        experiment: plan.experiment.clone(),
    };
    write_json(&marker, &m)?;
    write(&out.join("experiment.toml"), spec_text.as_bytes())?;
    write_json(&out.join("plan.json"), plan)?;
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    fsage_sys::write_atomic(path, bytes).map_err(|e| Error::operation(e.to_string()))
}

/// Writes `v` as pretty JSON with a final newline, atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), Error> {
    let mut s = serde_json::to_vec_pretty(v).expect("plain data serialises");
    s.push(b'\n');
    write(path, &s)
}

/// The path of a cell's result.
pub fn cell_path(out: &Path, cell: &Cell) -> PathBuf {
    out.join(CELLS_DIR).join(format!("{}.json", cell.id))
}

/// The results recorded in `out`, by cell id (unreadable files are left out).
pub(crate) fn recorded(out: &Path) -> Result<BTreeMap<String, CellResult>, Error> {
    Ok(recorded_and_unreadable(out)?.0)
}

/// Results by cell id, and the files that are not readable results (with why).
type Recorded = (BTreeMap<String, CellResult>, Vec<(PathBuf, String)>);

/// The results recorded in `out`, and the files in `cells/` that are not readable results.
fn recorded_and_unreadable(out: &Path) -> Result<Recorded, Error> {
    let dir = out.join(CELLS_DIR);
    if !dir.exists() {
        return Ok((BTreeMap::new(), Vec::new()));
    }
    let set = result::read_dir(&dir)?;
    Ok((
        set.results
            .into_iter()
            .map(|(_, r)| (r.cell.id.clone(), r))
            .collect(),
        set.skipped,
    ))
}

/// Runs every cell of `plan` that has no result in `out` yet (and the failed ones with
/// `retry_failed`), writing each result as it ends. Stops between cells when
/// [`fsage_signals::interrupted`] says so, or inside one when the executor reports it.
pub fn run(
    plan: &Plan,
    spec_text: &str,
    out: &Path,
    opts: &RunOptions,
    exec: &mut dyn Executor,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let t0 = Instant::now();
    prepare_out(out, plan, spec_text)?;
    let (before, unreadable) = recorded_and_unreadable(out)?;
    for (p, why) in &unreadable {
        // Kept aside, not overwritten: the cell runs again and its new result goes beside it.
        let aside = p.with_extension("json.unreadable");
        let moved = std::fs::rename(p, &aside).is_ok();
        obs.event(&Event::Note(&format!(
            "warning: {why}{}",
            if moved {
                format!("; moved to {}", aside.display())
            } else {
                String::new()
            }
        )));
    }
    let mut done_before = 0;
    let mut failed_kept = 0;
    let mut todo: Vec<&Cell> = Vec::new();
    for c in &plan.cells {
        match before.get(&c.id) {
            Some(r) if r.is_done() => done_before += 1,
            Some(_) if !opts.retry_failed => failed_kept += 1,
            _ => todo.push(c),
        }
    }
    obs.event(&Event::Start {
        total: plan.cells.len(),
        done: done_before,
        failed: failed_kept,
        to_run: todo.len(),
    });
    let mut summary = RunSummary {
        out: out.to_path_buf(),
        total: plan.cells.len(),
        done_before,
        ran: 0,
        failed: 0,
        failed_kept,
        interrupted: false,
        seconds: 0.0,
    };
    run_cells(&todo, out, exec, obs, &mut summary)?;
    summary.seconds = t0.elapsed().as_secs_f64();
    Ok(summary)
}

/// Runs `todo` in order through `exec`, writing each cell's result to `out/cells/` (atomically)
/// as it ends, and counts into `summary`. The one loop every runner goes through: `experiment
/// run` on this machine and `experiment run-cell` in a Slurm task alike.
fn run_cells(
    todo: &[&Cell],
    out: &Path,
    exec: &mut dyn Executor,
    obs: &mut dyn RunObserver,
    summary: &mut RunSummary,
) -> Result<(), Error> {
    let mut spent = 0.0;
    for (i, cell) in todo.iter().enumerate() {
        if fsage_signals::interrupted() {
            summary.interrupted = true;
            break;
        }
        let eta_s = (i > 0).then(|| spent / i as f64 * (todo.len() - i) as f64);
        obs.event(&Event::CellStart {
            index: i + 1,
            to_run: todo.len(),
            cell,
            eta_s,
        });
        let started_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let tc = Instant::now();
        let ran = exec.run_cell(cell, obs);
        let seconds = tc.elapsed().as_secs_f64();
        spent += seconds
            - ran
                .as_ref()
                .ok()
                .and_then(|r| r.base_seconds)
                .unwrap_or(0.0);
        let (status, run) = match ran {
            Ok(r) if r.interrupted => {
                summary.interrupted = true;
                break;
            }
            Ok(r) => (CellStatus::Done, r),
            // A step cut short by Ctrl-C is not the cell's failure: it runs again next time.
            Err(e) if fsage_signals::interrupted() || e.blame == Blame::Interrupted => {
                summary.interrupted = true;
                break;
            }
            Err(e) => {
                summary.failed += 1;
                (CellStatus::Failed { error: e.message }, CellRun::default())
            }
        };
        let res = CellResult {
            format: RESULT_FORMAT,
            cell: (*cell).clone(),
            status,
            started_unix,
            seconds,
            base_seconds: run.base_seconds,
            environment: run.environment,
            samples: run.samples,
            workload_report: run.workload_report,
        };
        let path = cell_path(out, cell);
        write_json(&path, &res)?;
        summary.ran += 1;
        obs.event(&Event::CellEnd {
            result: &res,
            path: &path,
        });
    }
    exec.finish();
    Ok(())
}

/// `experiment run-cell`: runs the cells `ids` of the plan an output directory holds (its
/// `plan.json`, written by `experiment run` or `submit`), the ones not done yet, through `exec`
/// (a failed one runs again: it was asked for by name). Writes nothing but `out/cells/ID.json`,
/// so that many of these may run at once on the nodes of a cluster.
pub fn run_ids(
    out: &Path,
    ids: &[String],
    exec: &mut dyn Executor,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let t0 = Instant::now();
    let plan = read_plan(out)?;
    let cells = select(&plan, ids, out)?;
    let before = recorded(out)?;
    let todo: Vec<&Cell> = cells
        .into_iter()
        .filter(|c| !before.get(&c.id).is_some_and(CellResult::is_done))
        .collect();
    let mut summary = RunSummary {
        out: out.to_path_buf(),
        total: ids.len(),
        done_before: ids.len() - todo.len(),
        ran: 0,
        failed: 0,
        failed_kept: 0,
        interrupted: false,
        seconds: 0.0,
    };
    obs.event(&Event::Start {
        total: summary.total,
        done: summary.done_before,
        failed: 0,
        to_run: todo.len(),
    });
    run_cells(&todo, out, exec, obs, &mut summary)?;
    summary.seconds = t0.elapsed().as_secs_f64();
    Ok(summary)
}

/// The cells of `plan` named by `ids`, in the order given; an id the plan lacks is refused.
pub fn select<'a>(plan: &'a Plan, ids: &[String], out: &Path) -> Result<Vec<&'a Cell>, Error> {
    ids.iter()
        .map(|id| {
            plan.cells.iter().find(|c| &c.id == id).ok_or_else(|| {
                Error::input(format!(
                    "{}: the experiment has no cell {id:?} (see `fsage experiment status {}`)",
                    out.join("plan.json").display(),
                    fsage_sys::shell_arg(out)
                ))
            })
        })
        .collect()
}

/// Reads an output directory.
pub fn status(out: &Path) -> Result<Status, Error> {
    let plan = read_plan(out)?;
    let mut rec = recorded(out)?;
    let mut cells = Vec::new();
    let (mut done, mut failed, mut left) = (0, 0, 0);
    let mut secs = Vec::new();
    for c in &plan.cells {
        let state = match rec.remove(&c.id) {
            Some(r) => match r.status {
                CellStatus::Done => {
                    done += 1;
                    secs.push(r.seconds - r.base_seconds.unwrap_or(0.0));
                    let ops = (!r.samples.is_empty()).then(|| {
                        r.samples.iter().map(|s| s.ops_per_s).sum::<f64>() / r.samples.len() as f64
                    });
                    CellState::Done {
                        seconds: r.seconds,
                        ops_per_s: ops,
                    }
                }
                CellStatus::Failed { error } => {
                    failed += 1;
                    CellState::Failed { error }
                }
            },
            None => {
                left += 1;
                CellState::Left
            }
        };
        cells.push(CellLine {
            id: c.id.clone(),
            state,
            job: None,
            slurm_state: None,
            base_job_ended: None,
        });
    }
    let mean_cell_s = (!secs.is_empty()).then(|| secs.iter().sum::<f64>() / secs.len() as f64);
    let (estimate_left_s, estimate_from) = match mean_cell_s {
        Some(m) => (
            m * left as f64,
            format!(
                "the mean of the {} finished cells, without the time spent making base images; \
                 base images still to make (aging) are not included",
                secs.len()
            ),
        ),
        None => (
            plan.estimate_s * left as f64 / plan.cells.len().max(1) as f64,
            "the plan's allowance (no cell finished yet; aging not included)".to_string(),
        ),
    };
    Ok(Status {
        experiment: plan.experiment,
        out: out.to_path_buf(),
        total: plan.cells.len(),
        done,
        failed,
        left,
        mean_cell_s,
        estimate_left_s,
        estimate_from,
        cells,
        not_in_plan: rec.into_keys().collect(),
        queued: 0,
        running: 0,
        jobs: Vec::new(),
        slurm_note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec;

    const SPEC: &str =
        "name = \"mock\"\nduration = \"1s\"\nrepetitions = 2\nimage_size = \"1GiB\"\n\
        [[fs]]\nkind = \"ext4\"\n[[fs]]\nkind = \"xfs\"\n\
        [[state]]\nkind = \"fresh\"\n\
        [devices]\nlatencies = [\"0\", \"1ms\"]\n\
        [[workload]]\nname = \"varmail\"\n";

    /// Answers with ops/s made from the cell, fails the cells it is told to, and raises the
    /// interrupt after a number of cells.
    struct Mock {
        ran: Vec<String>,
        fail: Vec<String>,
        interrupt_after: Option<usize>,
    }

    impl Executor for Mock {
        fn run_cell(&mut self, cell: &Cell, _obs: &mut dyn RunObserver) -> Result<CellRun, Error> {
            if self.interrupt_after == Some(self.ran.len()) {
                return Ok(CellRun {
                    interrupted: true,
                    ..Default::default()
                });
            }
            self.ran.push(cell.id.clone());
            if self.fail.contains(&cell.id) {
                return Err(Error::operation("mount: EIO"));
            }
            let ops = 1000.0 * (1 + cell.rep) as f64 / (1.0 + cell.latency_us().unwrap_or(0.0));
            Ok(CellRun {
                samples: vec![Sample {
                    fs: cell.fs.label.clone(),
                    state: cell.state.state(),
                    workload: cell.workload.label.clone(),
                    latency_us: cell.latency_us(),
                    device_model: cell.device_label(),
                    rep: cell.rep,
                    ops_per_s: ops,
                    flowops: vec![],
                    flash: None,
                    platform: Default::default(),
                }],
                ..Default::default()
            })
        }
    }

    fn mock(fail: Vec<String>, interrupt_after: Option<usize>) -> Mock {
        Mock {
            ran: vec![],
            fail,
            interrupt_after,
        }
    }

    fn results(out: &Path) -> BTreeMap<String, CellResult> {
        recorded(out).unwrap()
    }

    #[test]
    fn an_interrupted_run_resumes_without_running_finished_cells_again() {
        let sp = spec::parse(SPEC, "mock.toml", Path::new(".")).unwrap();
        let plan = sp.plan();
        assert_eq!(plan.cells.len(), 8);
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");

        // Uninterrupted, for the reference.
        let out_ref = d.path().join("ref");
        let mut m = mock(vec![], None);
        let s = run(
            &plan,
            SPEC,
            &out_ref,
            &RunOptions::default(),
            &mut m,
            &mut Quiet,
        )
        .unwrap();
        assert_eq!((s.ran, s.failed, s.interrupted), (8, 0, false));

        // Stopped during the fourth cell: three are recorded, the fourth is not.
        let mut m = mock(vec![], Some(3));
        let s = run(
            &plan,
            SPEC,
            &out,
            &RunOptions::default(),
            &mut m,
            &mut Quiet,
        )
        .unwrap();
        assert!(s.interrupted);
        assert_eq!(s.ran, 3);
        assert_eq!(results(&out).len(), 3);
        let st = status(&out).unwrap();
        assert_eq!((st.done, st.failed, st.left), (3, 0, 5));

        // The second run does only the five left, in plan order.
        let mut m = mock(vec![], None);
        let s = run(
            &plan,
            SPEC,
            &out,
            &RunOptions::default(),
            &mut m,
            &mut Quiet,
        )
        .unwrap();
        assert_eq!((s.done_before, s.ran), (3, 5));
        let want: Vec<String> = plan.cells[3..].iter().map(|c| c.id.clone()).collect();
        assert_eq!(m.ran, want);

        // Same samples as the uninterrupted run.
        let a: Vec<_> = results(&out).into_values().map(|r| r.samples).collect();
        let b: Vec<_> = results(&out_ref).into_values().map(|r| r.samples).collect();
        assert_eq!(a, b);
        let st = status(&out).unwrap();
        assert_eq!((st.done, st.failed, st.left), (8, 0, 0));
        assert_eq!(st.estimate_left_s, 0.0);
    }

    #[test]
    fn a_failed_cell_is_recorded_the_rest_go_on_and_it_is_retried_only_when_asked() {
        let sp = spec::parse(SPEC, "mock.toml", Path::new(".")).unwrap();
        let plan = sp.plan();
        let bad = plan.cells[2].id.clone();
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let mut m = mock(vec![bad.clone()], None);
        let s = run(
            &plan,
            SPEC,
            &out,
            &RunOptions::default(),
            &mut m,
            &mut Quiet,
        )
        .unwrap();
        assert_eq!((s.ran, s.failed), (8, 1));
        let r = &results(&out)[&bad];
        assert_eq!(
            r.status,
            CellStatus::Failed {
                error: "mount: EIO".into()
            }
        );
        let st = status(&out).unwrap();
        assert_eq!((st.done, st.failed, st.left), (7, 1, 0));

        // Kept by default...
        let mut m = mock(vec![], None);
        let s = run(
            &plan,
            SPEC,
            &out,
            &RunOptions::default(),
            &mut m,
            &mut Quiet,
        )
        .unwrap();
        assert_eq!((s.ran, s.failed_kept), (0, 1));
        // ...run again when asked.
        let opts = RunOptions { retry_failed: true };
        let s = run(&plan, SPEC, &out, &opts, &mut m, &mut Quiet).unwrap();
        assert_eq!(s.ran, 1);
        assert_eq!(m.ran, vec![bad.clone()]);
        assert!(results(&out)[&bad].is_done());
    }

    #[test]
    fn cells_on_a_device_model_run_and_their_results_record_the_model() {
        let text = SPEC.replace("[\"0\", \"1ms\"]", "[\"0\", \"hdd-7200\"]");
        let plan = spec::parse(&text, "mock.toml", Path::new("."))
            .unwrap()
            .plan();
        let on_model: Vec<&Cell> = plan
            .cells
            .iter()
            .filter(|c| c.device_model().is_some())
            .collect();
        // Two file systems, one state, two repetitions on the model.
        assert_eq!(on_model.len(), 4);
        assert!(on_model.iter().all(|c| c.id.contains("-hdd-7200-")));
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let mut m = mock(vec![], None);
        let s = run(
            &plan,
            &text,
            &out,
            &RunOptions::default(),
            &mut m,
            &mut Quiet,
        )
        .unwrap();
        assert_eq!((s.ran, s.failed), (8, 0));
        let res = results(&out);
        for c in on_model {
            assert!(m.ran.contains(&c.id), "{} did not run", c.id);
            let r = &res[&c.id];
            assert!(r.is_done());
            // The result holds the model as run: its name, kind and file text.
            let model = r.cell.device_model().expect("the model is recorded");
            assert_eq!(model.name, "hdd-7200");
            assert!(matches!(model.kind, fsage_device::ModelKind::Hdd(_)));
            assert!(model.text.contains("7200"), "{}", model.text);
            assert_eq!(r.cell.latency_us(), None);
        }
        // The analysis keeps the model's cells apart from the plain 0-latency ones.
        let samples: Vec<Sample> = res.values().flat_map(|r| r.samples.clone()).collect();
        let a = crate::analyze(&samples, &Default::default());
        let on = |m: Option<&str>| {
            a.means
                .iter()
                .filter(|g| g.device_model.as_deref() == m)
                .count()
        };
        assert_eq!((on(None), on(Some("hdd-7200"))), (2, 2));
        assert!(a
            .notes
            .iter()
            .any(|n| n.starts_with("hdd-7200: a device model")));
    }

    #[test]
    fn the_output_directory_must_be_new_empty_or_this_experiments() {
        let sp = spec::parse(SPEC, "mock.toml", Path::new(".")).unwrap();
        let plan = sp.plan();
        let d = tempfile::tempdir().unwrap();
        let full = d.path().join("full");
        std::fs::create_dir(&full).unwrap();
        std::fs::write(full.join("thesis.tex"), "x").unwrap();
        let e = run(
            &plan,
            SPEC,
            &full,
            &RunOptions::default(),
            &mut mock(vec![], None),
            &mut Quiet,
        )
        .unwrap_err();
        assert!(e.message.contains("not empty"), "{e}");
        assert_eq!(
            std::fs::read_to_string(full.join("thesis.tex")).unwrap(),
            "x"
        );

        let out = d.path().join("out");
        run(
            &plan,
            SPEC,
            &out,
            &RunOptions::default(),
            &mut mock(vec![], Some(0)),
            &mut Quiet,
        )
        .unwrap();
        let other = SPEC.replace("\"mock\"", "\"other\"");
        let plan2 = spec::parse(&other, "o.toml", Path::new("."))
            .unwrap()
            .plan();
        let e = run(
            &plan2,
            &other,
            &out,
            &RunOptions::default(),
            &mut mock(vec![], None),
            &mut Quiet,
        )
        .unwrap_err();
        assert!(e.message.contains("experiment \"mock\""), "{e}");
        let e = status(d.path()).unwrap_err();
        assert!(
            e.message.contains("not an experiment's output directory"),
            "{e}"
        );
    }

    #[test]
    fn status_estimates_from_finished_cells_and_lists_results_no_longer_in_the_plan() {
        let sp = spec::parse(SPEC, "mock.toml", Path::new(".")).unwrap();
        let plan = sp.plan();
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let st = {
            prepare_out(&out, &plan, SPEC).unwrap();
            status(&out).unwrap()
        };
        assert_eq!(st.left, 8);
        assert!((st.estimate_left_s - plan.estimate_s).abs() < 1e-9);
        run(
            &plan,
            SPEC,
            &out,
            &RunOptions::default(),
            &mut mock(vec![], Some(2)),
            &mut Quiet,
        )
        .unwrap();
        // Make the two finished cells take 10 s and 30 s.
        for (i, (_, mut r)) in results(&out).into_iter().enumerate() {
            r.seconds = [10.0, 30.0][i];
            write_json(&cell_path(&out, &r.cell), &r).unwrap();
        }
        let st = status(&out).unwrap();
        assert_eq!(st.mean_cell_s, Some(20.0));
        assert!((st.estimate_left_s - 120.0).abs() < 1e-9);
        // An edit of the experiment: one latency fewer.
        let edited = SPEC.replace("[\"0\", \"1ms\"]", "[\"0\"]");
        let plan2 = spec::parse(&edited, "mock.toml", Path::new("."))
            .unwrap()
            .plan();
        prepare_out(&out, &plan2, &edited).unwrap();
        let st = status(&out).unwrap();
        assert_eq!(st.total, 4);
        assert_eq!(st.done + st.not_in_plan.len(), 2);
    }
}
