//! Running an experiment's cells on a Slurm cluster, without a scheduler of fsage's own.
//!
//! `submit` plans the cells and hands those not done to `sbatch`: first one job per base image
//! (a file system in a state: made once in the image directory, which every node must see), then
//! for each base one job array of its cells, which waits for its base job (`afterok`) and is
//! cancelled by Slurm if that job fails (`--kill-on-invalid-dep=yes`). Each array task runs
//! `fsage experiment run-cell DIR ID...` ([`run_cells`]), which goes through the same runner
//! loop and the same [`LabExecutor`] as a local `experiment run`, with the cell's working copy in
//! node-local memory, and writes `DIR/cells/ID.json` atomically. The job ids are recorded in
//! `DIR/slurm/submissions.json`, which `status` and `cancel` read: nothing but the jobs recorded
//! there is ever asked about or cancelled.
//!
//! A base per array (rather than one array for all cells) lets the cells of a fresh file system
//! start while another base is still aging, and a base that fails stops only its own cells.

use crate::lab::LabExecutor;
use crate::runner::{self, CellState, RunObserver, RunSummary, Status};
use crate::spec::{Cell, Plan};
use crate::storage::Scratch;
use crate::Error;
use fsage_sys::Blame;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the batch scripts, task lists, logs and job ids go, under the output directory.
pub const SLURM_DIR: &str = "slurm";
/// The record of every submission (job ids and what each job runs).
pub const SUBMISSIONS: &str = "submissions.json";

/// What can go wrong between fsage and Slurm.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error(
        "{0} not found: install Slurm's client commands (Debian: slurm-client) or put them on PATH"
    )]
    Missing(&'static str),
    #[error("{cmd} failed ({status}): {stderr}")]
    Failed {
        cmd: String,
        status: String,
        stderr: String,
    },
    #[error("{cmd} answered {answer:?}, not a job id")]
    NoJobId { cmd: String, answer: String },
    #[error("jobs of an earlier submission are still queued or running ({jobs}): wait for them, or `fsage experiment cancel {dir}` first")]
    StillQueued { jobs: String, dir: String },
    #[error("{path}: {what}: {err}")]
    Io {
        path: PathBuf,
        what: &'static str,
        err: std::io::Error,
    },
    #[error("{path}: not a submission record: {err}")]
    BadRecord { path: PathBuf, err: String },
    #[error("{0}")]
    BadPartition(String),
    #[error(
        "{err}; jobs already submitted: {jobs} (recorded in {dir}/slurm/submissions.json): \
         cancel them with `fsage experiment cancel {dir}`, or let them run and `submit` again once \
         they end to submit the rest"
    )]
    Partial {
        err: Box<SlurmError>,
        jobs: String,
        dir: String,
    },
    #[error("{path}: the fsage binary the jobs are to run: {err}")]
    Binary { path: PathBuf, err: String },
    #[error("cells per task must be at least 1")]
    CellsPerTask,
    #[error("--max-parallel must be at least 1")]
    MaxParallel,
}

impl From<SlurmError> for Error {
    fn from(e: SlurmError) -> Error {
        match e {
            SlurmError::Missing(_)
            | SlurmError::StillQueued { .. }
            | SlurmError::BadRecord { .. }
            | SlurmError::BadPartition(_)
            | SlurmError::CellsPerTask
            | SlurmError::MaxParallel => Error::input(e.to_string()),
            SlurmError::Io { ref err, .. }
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
                ) =>
            {
                Error::input(e.to_string())
            }
            _ => Error::operation(e.to_string()),
        }
    }
}

/// How to submit.
#[derive(Debug, Clone)]
pub struct SubmitOptions {
    /// The image directory (default `OUT/images`): on storage every node sees.
    pub images: Option<PathBuf>,
    pub partition: Option<String>,
    /// At most this many tasks of each array at once (`--array=...%N`).
    pub max_parallel: Option<u32>,
    /// Each job's time limit.
    pub time: Option<std::time::Duration>,
    /// Cells per array task (1: one cell per task).
    pub cells_per_task: usize,
    /// Given to every `sbatch` as they are, before the script.
    pub sbatch_args: Vec<String>,
    /// The fsage binary the jobs are to run: copied into `OUT/slurm/`, which they run.
    pub fsage: PathBuf,
    /// Where the cells' working copies go on the nodes (as in a local run).
    pub scratch: Scratch,
}

/// One job of a submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseJob {
    pub job_id: String,
    /// The file system and state (`LABEL-STATE`), and the cell whose base it makes.
    pub base: String,
    pub cell: String,
}

/// A job array: task `i` runs the cells of `tasks[i]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrayJob {
    pub job_id: String,
    pub base: String,
    /// The base job it waits for.
    pub after: String,
    pub tasks: Vec<Vec<String>>,
    /// The file the tasks read their cell ids from (line `i + 1` for task `i`).
    pub task_file: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    pub number: usize,
    pub submitted_unix: u64,
    pub bases: Vec<BaseJob>,
    pub arrays: Vec<ArrayJob>,
    /// Jobs `experiment cancel` cancelled: a base job among them that ended without its base was
    /// stopped on purpose, and its cells are left (to submit again), not failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancelled: Vec<String>,
}

impl Submission {
    /// Every job id of the submission (the arrays' ids stand for all their tasks).
    pub fn job_ids(&self) -> Vec<String> {
        self.bases
            .iter()
            .map(|b| b.job_id.clone())
            .chain(self.arrays.iter().map(|a| a.job_id.clone()))
            .collect()
    }
}

/// What `submit` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitSummary {
    pub out: PathBuf,
    pub total: usize,
    pub done: usize,
    /// Cells submitted (the failed ones included: they run again).
    pub submitted: usize,
    /// `None` when every cell was done: nothing was submitted.
    pub submission: Option<Submission>,
    pub warnings: Vec<String>,
}

/// The base a cell starts from, as a name: its file system and state. Cells of one plan with
/// the same name have the same base image (the image's content key adds only what the plan
/// fixes: the size, the profile's text, the library image's checksum).
pub fn base_group(cell: &Cell) -> String {
    // As the lab's base key: an aged base whose drive ages with it is one per drive model.
    match (&cell.state, crate::lab::aging_model(cell)) {
        (crate::spec::StateSpec::Aged { .. }, Some(m)) => {
            format!("{}-{}-{}", cell.fs.label, cell.state.id_part(), m.name)
        }
        _ => format!("{}-{}", cell.fs.label, cell.state.id_part()),
    }
}

/// The base whose drive state a cell starts from when it is another state's (`drive = aged.X`),
/// as a group name and a cell standing for it.
fn drive_source(cell: &Cell) -> Option<(String, Cell)> {
    let crate::spec::DriveSpec::Of {
        state,
        profile_file,
    } = cell.drive.as_ref()?
    else {
        return None;
    };
    let mut other = cell.clone();
    other.state = state.clone();
    other.profile_file = profile_file.clone();
    other.drive = None;
    Some((base_group(&other), other))
}

/// `experiment submit`: plans `file` into `out` (as `experiment run` does), then submits the
/// cells not done yet: one job per base, one job array per base waiting for it.
pub fn submit(file: &Path, out: &Path, opts: &SubmitOptions) -> Result<SubmitSummary, Error> {
    if opts.cells_per_task == 0 {
        return Err(SlurmError::CellsPerTask.into());
    }
    if opts.max_parallel == Some(0) {
        return Err(SlurmError::MaxParallel.into());
    }
    let sbatch = need("sbatch")?;
    need("squeue")?;
    let (spec, text) = crate::spec::load_with_text(file)?;
    let plan = spec.plan();
    if plan.cells.iter().any(|c| {
        c.placement
            .is_some_and(|p| p.drive == crate::spec::DriveBefore::Previous)
    }) {
        return Err(Error::input(format!(
            "{}: `drive = \"previous\"` runs the cells one after another on one drive each: \
             run it with `experiment run`, not as Slurm tasks running at once",
            file.display()
        )));
    }
    if !out.exists() {
        std::fs::create_dir_all(out).map_err(|e| {
            Error::input(format!(
                "{}: cannot make the output directory: {e} (it must be on storage every node \
                 can write)",
                out.display()
            ))
        })?;
    }
    let out = out
        .canonicalize()
        .map_err(|e| Error::input(format!("{}: {e}", out.display())))?;
    runner::prepare_out(&out, &plan, &text)?;
    let images = opts
        .images
        .clone()
        .unwrap_or_else(|| out.join("images"))
        .to_path_buf();
    // Checked, made and marked now, before any job starts: two base jobs starting at once
    // would otherwise each find the other's image in a directory without the marker.
    let images = crate::lab::open_images_dir(&images)?;
    let mut warnings = Vec::new();
    for d in [&out, &images] {
        if let Some(w) = local_only(d) {
            warnings.push(w);
        }
    }

    let subs = read_submissions(&out)?;
    let alive = alive_jobs(&subs)?;
    if !alive.is_empty() {
        let mut ids: Vec<String> = alive.into_keys().collect();
        ids.dedup();
        return Err(SlurmError::StillQueued {
            jobs: ids.join(", "),
            dir: fsage_sys::shell_arg(&out),
        }
        .into());
    }

    let rec = runner::recorded(&out)?;
    let todo: Vec<&Cell> = plan
        .cells
        .iter()
        .filter(|c| !rec.get(&c.id).is_some_and(|r| r.is_done()))
        .collect();
    let mut summary = SubmitSummary {
        out: out.clone(),
        total: plan.cells.len(),
        done: plan.cells.len() - todo.len(),
        submitted: todo.len(),
        submission: None,
        warnings,
    };
    if todo.is_empty() {
        return Ok(summary);
    }
    // By base, in plan order within each.
    let mut groups: Vec<(String, Vec<&Cell>)> = Vec::new();
    // The bases other bases' cells take their drive state from: made first, by jobs of their
    // own, which the bases needing them wait for (so no two jobs make one base).
    let mut sources: Vec<(String, Cell)> = Vec::new();
    let mut needs: BTreeMap<String, String> = BTreeMap::new();
    for c in todo {
        let g = base_group(c);
        if let Some((src, other)) = drive_source(c) {
            if !sources.iter().any(|(n, _)| *n == src) {
                // A cell of the plan whose own base it is stands for it, else the stand-in.
                let rep = plan
                    .cells
                    .iter()
                    .find(|p| base_group(p) == src && p.drive.is_none())
                    .cloned()
                    .unwrap_or(other);
                sources.push((src.clone(), rep));
            }
            needs.insert(g.clone(), src);
        }
        match groups.iter_mut().find(|(n, _)| *n == g) {
            Some((_, v)) => v.push(c),
            None => groups.push((g, vec![c])),
        }
    }

    let number = subs.len() + 1;
    let sdir = out.join(SLURM_DIR);
    let subdir = sdir.join(format!("submission-{number}"));
    let logs = sdir.join("logs");
    for d in [&subdir, &logs] {
        std::fs::create_dir_all(d).map_err(|err| SlurmError::Io {
            path: d.clone(),
            what: "cannot make the directory",
            err,
        })?;
    }
    // The jobs run a copy of this binary kept with the output directory, checked against its
    // checksum before each job runs it: a rebuild or an upgrade of the original meanwhile does
    // not change what queued jobs run.
    let (exe, exe_sha) = install_binary(&opts.fsage, &sdir)?;
    let base_sh = sdir.join("base.sh");
    let cells_sh = sdir.join("cells.sh");
    // The jobs start in OUT: a relative scratch directory is this command's.
    let scratch = match &opts.scratch {
        Scratch::Dir(d) => Scratch::Dir(
            std::path::absolute(d)
                .map_err(|e| Error::input(format!("--scratch {}: {e}", d.display())))?,
        ),
        s => s.clone(),
    };
    let run = RunArgs {
        fsage: &exe,
        sha: &exe_sha,
        out: &out,
        images: &images,
        scratch: &scratch,
    };
    write_script(&base_sh, &base_script(&run))?;
    write_script(&cells_sh, &cells_script(&run))?;

    let mut sub = Submission {
        number,
        submitted_unix: now_unix(),
        bases: Vec::new(),
        arrays: Vec::new(),
        cancelled: Vec::new(),
    };
    let common = |name: String, log: String| {
        let mut a = vec![
            "--parsable".to_string(),
            format!("--job-name={name}"),
            format!("--output={}", logs.join(log).display()),
            format!("--chdir={}", out.display()),
        ];
        if let Some(p) = &opts.partition {
            a.push(format!("--partition={p}"));
        }
        if let Some(t) = opts.time {
            a.push(format!("--time={}", slurm_time(t)));
        }
        a
    };
    // Recorded after every sbatch, so that a failure half way leaves the jobs already submitted
    // known to `status` and `cancel`.
    let record = |sub: &Submission| -> Result<(), Error> {
        let mut all = subs.clone();
        all.push(sub.clone());
        runner::write_json(&sdir.join(SUBMISSIONS), &all)
    };
    let exp = &plan.experiment;
    // An sbatch failing after others succeeded: the error names the jobs already submitted.
    let submit_job = |args: &[String], sub: &Submission| {
        sbatch_run(&sbatch, args).map_err(|err| {
            let ids = sub.job_ids();
            if ids.is_empty() {
                err
            } else {
                SlurmError::Partial {
                    err: Box::new(err),
                    jobs: ids.join(", "),
                    dir: out.display().to_string(),
                }
            }
        })
    };
    // `--max-parallel`: every job waits for the one submitted before it (`afterany`), and each
    // array runs at most N tasks at once, so that at most N of the submission's jobs run at a
    // time (the bases are then made one after another).
    let mut last_job: Option<String> = None;
    let chain = |deps: &mut Vec<String>, last: &Option<String>| {
        if let (Some(_), Some(l)) = (opts.max_parallel, last) {
            if !deps.iter().any(|d| d.ends_with(&format!(":{l}"))) {
                deps.push(format!("afterany:{l}"));
            }
        }
    };
    let dependency = |deps: &[String]| -> Vec<String> {
        if deps.is_empty() {
            Vec::new()
        } else {
            let mut a = vec![format!("--dependency={}", deps.join(","))];
            if deps.iter().any(|d| d.starts_with("afterok:")) {
                a.push("--kill-on-invalid-dep=yes".into());
            }
            a
        }
    };
    let mut source_jobs: BTreeMap<String, String> = BTreeMap::new();
    for (g, rep) in &sources {
        if groups.iter().any(|(n, _)| n == g) {
            continue; // its own base job (below) makes it
        }
        let mut args = common(format!("fsage-base-{exp}"), "base-%j.out".into());
        let mut deps = Vec::new();
        chain(&mut deps, &last_job);
        args.extend(dependency(&deps));
        args.extend(opts.sbatch_args.iter().cloned());
        args.push(base_sh.display().to_string());
        args.push(rep.id.clone());
        let id = submit_job(&args, &sub)?;
        last_job = Some(id.clone());
        sub.bases.push(BaseJob {
            job_id: id.clone(),
            base: g.clone(),
            cell: rep.id.clone(),
        });
        record(&sub)?;
        source_jobs.insert(g.clone(), id);
    }
    // Sources with cells of their own go first, so the bases needing them can wait for them.
    groups.sort_by_key(|(g, _)| !sources.iter().any(|(n, _)| n == g));
    for (g, cells) in &groups {
        let mut args = common(format!("fsage-base-{exp}"), "base-%j.out".into());
        let mut deps = Vec::new();
        if let Some(src) = needs.get(g).and_then(|s| source_jobs.get(s)) {
            deps.push(format!("afterok:{src}"));
        }
        chain(&mut deps, &last_job);
        args.extend(dependency(&deps));
        args.extend(opts.sbatch_args.iter().cloned());
        args.push(base_sh.display().to_string());
        args.push(cells[0].id.clone());
        let id = submit_job(&args, &sub)?;
        last_job = Some(id.clone());
        source_jobs.entry(g.clone()).or_insert_with(|| id.clone());
        sub.bases.push(BaseJob {
            job_id: id.clone(),
            base: g.clone(),
            cell: cells[0].id.clone(),
        });
        record(&sub)?;

        let tasks: Vec<Vec<String>> = cells
            .chunks(opts.cells_per_task)
            .map(|ch| ch.iter().map(|c| c.id.clone()).collect())
            .collect();
        let task_file = subdir.join(format!("{g}.tasks"));
        let lines: String = tasks.iter().map(|t| t.join(" ") + "\n").collect();
        fsage_sys::write_atomic(&task_file, lines.as_bytes())
            .map_err(|e| Error::operation(e.to_string()))?;
        let mut args = common(format!("fsage-{exp}"), "cells-%A_%a.out".into());
        args.push(format!(
            "--array=0-{}{}",
            tasks.len() - 1,
            opts.max_parallel.map_or(String::new(), |n| format!("%{n}"))
        ));
        let mut deps = vec![format!("afterok:{id}")];
        chain(&mut deps, &last_job);
        args.extend(dependency(&deps));
        args.extend(opts.sbatch_args.iter().cloned());
        args.push(cells_sh.display().to_string());
        args.push(task_file.display().to_string());
        let aid = submit_job(&args, &sub)?;
        last_job = Some(aid.clone());
        sub.arrays.push(ArrayJob {
            job_id: aid,
            base: g.clone(),
            after: id,
            tasks,
            task_file,
        });
        record(&sub)?;
    }
    summary.submission = Some(sub);
    Ok(summary)
}

/// A warning when `dir` is on a file system only this machine sees (tmpfs, ramfs): fine for a
/// one-node cluster, not for jobs on other nodes.
fn local_only(dir: &Path) -> Option<String> {
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    let t = fsage_sys::fs_stat(dir).ok()?.magic;
    (t == fsage_sys::TMPFS_MAGIC || t == RAMFS_MAGIC).then(|| {
        format!(
            "{}: in memory on this machine (tmpfs): jobs on other nodes cannot see it; give a \
             directory on shared storage unless the cluster is this one node",
            dir.display()
        )
    })
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Slurm's `--time` form, `D-HH:MM:SS`, rounded up to the second.
pub fn slurm_time(t: std::time::Duration) -> String {
    let s = t.as_secs() + u64::from(t.subsec_nanos() > 0);
    format!(
        "{}-{:02}:{:02}:{:02}",
        s / 86400,
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

fn need(cmd: &'static str) -> Result<PathBuf, SlurmError> {
    fsage_sys::find_cmd(cmd).ok_or(SlurmError::Missing(cmd))
}

/// `sh`-quoted.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The lines of a batch script that refuse to run `fsage` unless it is the binary `submit`
/// copied (its SHA-256 as recorded), and name it `$fsage`.
fn binary_check(fsage: &Path, sha: &str) -> String {
    format!(
        "fsage={}\n\
         if ! printf '%s  %s\\n' {sha} \"$fsage\" | sha256sum --check --status; then\n\
         \x20 echo \"fsage: $fsage is not the binary that experiment submit copied (SHA-256 {sha}): it was changed or removed; submit again\" >&2\n\
         \x20 exit 1\n\
         fi\n",
        quote(fsage)
    )
}

/// What a batch script runs: `fsage experiment run-cell OUT --images IMAGES --scratch S`.
struct RunArgs<'a> {
    fsage: &'a Path,
    sha: &'a str,
    out: &'a Path,
    images: &'a Path,
    scratch: &'a Scratch,
}

impl RunArgs<'_> {
    /// The check of the binary, then the command up to the cell ids.
    fn command(&self) -> (String, String) {
        (
            binary_check(self.fsage, self.sha),
            format!(
                "exec \"$fsage\" experiment run-cell {} --images {} --scratch {}",
                quote(self.out),
                quote(self.images),
                quote(Path::new(&self.scratch.to_string()))
            ),
        )
    }
}

fn base_script(run: &RunArgs) -> String {
    let (check, cmd) = run.command();
    format!(
        "#!/bin/sh\n\
         # Written by `fsage experiment submit`: makes the base image of cell $1's file system\n\
         # and state in the image directory (once: a base already made is kept).\n\
         {check}\
         {cmd} --base-only \"$1\"\n"
    )
}

fn cells_script(run: &RunArgs) -> String {
    let (check, cmd) = run.command();
    format!(
        "#!/bin/sh\n\
         # Written by `fsage experiment submit`: array task N runs the cells on line N+1 of $1.\n\
         set -eu\n\
         {check}\
         ids=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" \"$1\")\n\
         if [ -z \"$ids\" ]; then echo \"no cells for task $SLURM_ARRAY_TASK_ID in $1\" >&2; exit 1; fi\n\
         {cmd} $ids\n"
    )
}

/// Where `submit` keeps the binary its jobs run, under `OUT/slurm/`.
pub const BINARY: &str = "fsage";

/// Copies `src` (this fsage) to `SLURM_DIR/fsage` unless the copy there already has its content,
/// through a temporary file renamed into place (a job running the old copy keeps it), and
/// returns the copy's path and SHA-256.
fn install_binary(src: &Path, sdir: &Path) -> Result<(PathBuf, String), Error> {
    let bin_err = |path: &Path, err: String| SlurmError::Binary {
        path: path.to_path_buf(),
        err,
    };
    let sha = fsage_core::image::sha256_image(src).map_err(|e| bin_err(src, e.to_string()))?;
    let dst = sdir.join(BINARY);
    let same = std::fs::symlink_metadata(&dst).is_ok_and(|m| m.is_file())
        && fsage_core::image::sha256_image(&dst).is_ok_and(|s| s == sha);
    if !same {
        let (tmp, mut f) = fsage_sys::safe::create_temp_beside(&dst, 0o755)
            .map_err(|e| bin_err(&dst, e.to_string()))?;
        let r = (|| -> std::io::Result<()> {
            let mut from = std::fs::File::open(src)?;
            std::io::copy(&mut from, &mut f)?;
            f.sync_all()?;
            drop(f);
            let copied = fsage_core::image::sha256_image(&tmp)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            if copied != sha {
                return Err(std::io::Error::other(
                    "the copy's checksum differs from the original's (was it being rebuilt?)",
                ));
            }
            std::fs::rename(&tmp, &dst)
        })();
        if let Err(e) = r {
            let _ = std::fs::remove_file(&tmp);
            return Err(bin_err(&dst, format!("cannot copy {}: {e}", src.display())).into());
        }
    }
    fsage_sys::write_atomic(
        &sdir.join(format!("{BINARY}.sha256")),
        format!("{sha}  {}\n", dst.display()).as_bytes(),
    )
    .map_err(|e| Error::operation(e.to_string()))?;
    Ok((dst, sha))
}

fn write_script(path: &Path, text: &str) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    fsage_sys::write_atomic(path, text.as_bytes()).map_err(|e| Error::operation(e.to_string()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|err| {
        SlurmError::Io {
            path: path.to_path_buf(),
            what: "cannot make it executable",
            err,
        }
        .into()
    })
}

/// Runs a Slurm command and returns its standard output.
fn slurm_cmd(cmd: &Path, args: &[String]) -> Result<String, SlurmError> {
    let name = cmd
        .file_name()
        .map_or_else(|| cmd.display().to_string(), |n| n.to_string_lossy().into());
    let o = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|err| SlurmError::Io {
            path: cmd.to_path_buf(),
            what: "cannot run it",
            err,
        })?;
    if !o.status.success() {
        return Err(SlurmError::Failed {
            cmd: format!("{name} {}", args.join(" ")),
            status: o.status.to_string(),
            stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `sbatch --parsable ...`: the job id (`ID` or `ID;CLUSTER`).
fn sbatch_run(sbatch: &Path, args: &[String]) -> Result<String, SlurmError> {
    let answer = slurm_cmd(sbatch, args).map_err(|e| match e {
        // The user's `--partition` (or one in the sbatch arguments): bad input, not a failure.
        SlurmError::Failed { ref stderr, .. }
            if stderr.to_ascii_lowercase().contains("invalid partition") =>
        {
            SlurmError::BadPartition(format!(
                "sbatch refused the partition ({}): `sinfo --summarize` lists the cluster's \
                 partitions",
                stderr.lines().last().unwrap_or(stderr).trim()
            ))
        }
        e => e,
    })?;
    let id = answer.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SlurmError::NoJobId {
            cmd: "sbatch".into(),
            answer: answer.trim().to_string(),
        });
    }
    Ok(id)
}

/// The submissions recorded in `out` (none when it has no record).
pub fn read_submissions(out: &Path) -> Result<Vec<Submission>, Error> {
    let path = out.join(SLURM_DIR).join(SUBMISSIONS);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| {
            SlurmError::BadRecord {
                path,
                err: e.to_string(),
            }
            .into()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(SlurmError::Io {
            path,
            what: "cannot read",
            err,
        }
        .into()),
    }
}

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
fn alive_jobs(subs: &[Submission]) -> Result<BTreeMap<String, LiveJob>, Error> {
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

/// When a Slurm job of a submission ran (`OUT/slurm/tasks/JOB.json`, written as it ends):
/// what shows that `--max-parallel` held, without Slurm's accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// `ARRAYJOB_TASK`, or the job id of a base job.
    pub job: String,
    pub base_only: bool,
    pub cells: Vec<String>,
    pub host: String,
    /// Unix time, in seconds, from `run-cell`'s start to its end.
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub ok: bool,
}

/// Where the task records go, under `OUT/slurm/`.
pub const TASKS_DIR: &str = "tasks";

fn write_task_record(out: &Path, r: &TaskRecord) -> Result<(), Error> {
    let dir = out.join(SLURM_DIR).join(TASKS_DIR);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::operation(format!("{}: {e}", dir.display())))?;
    runner::write_json(&dir.join(format!("{}.json", r.job)), r)
}

fn unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// How `run-cell` runs.
#[derive(Debug, Clone, Default)]
pub struct RunCellOptions {
    /// The image directory (default `OUT/images`).
    pub images: Option<PathBuf>,
    /// Where the working copies go ([`Scratch`]; default: /dev/shm, a tmpfs).
    pub scratch: Scratch,
    /// Make the first cell's base image only (a submission's base job).
    pub base_only: bool,
}

/// What must hold on this node before a cell runs: root, its file systems' tools, the slow
/// device's /dev/fuse when a cell needs it.
fn preflight_cells(cells: &[&Cell]) -> Result<(), Error> {
    if !fsage_sys::is_root() {
        return Err(Error::input(
            "a cell mounts images and attaches loop devices: run it as root",
        ));
    }
    for c in cells {
        let kind = fsage_lab::FsKind::parse(&c.fs.kind).map_err(|e| Error::input(e.to_string()))?;
        kind.check_tools()
            .map_err(|e| Error::input(format!("{}: {e}", c.id)))?;
        // A cell that needs another kernel runs in a VM on the node, as in a local run.
        crate::guest::check_guest(&c.fs).map_err(|e| Error {
            message: format!("{}: {}", c.id, e.message),
            ..e
        })?;
        if (c.latency_us.is_some() || c.device_model.is_some()) && !Path::new("/dev/fuse").exists()
        {
            return Err(Error::input(format!(
                "{}: runs on the slow device, which needs /dev/fuse (not found on this node)",
                c.id
            )));
        }
    }
    Ok(())
}

/// `experiment run-cell OUT ID...`: runs the cells `ids` of `out`'s plan that are not done (or
/// with `base_only`, makes the base image of the first). A base image that cannot be made
/// fails the cells of that base that have no result, as a local run records them.
pub fn run_cells(
    out: &Path,
    ids: &[String],
    opts: &RunCellOptions,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let plan = runner::read_plan(out)?;
    let cells = runner::select(&plan, ids, out)?;
    let Some(first) = cells.first() else {
        return Err(Error::input("no cell id given"));
    };
    let start = unix_s();
    let r = run_selected(out, &cells, ids, opts, obs);
    if let Some(job) = crate::lab::slurm_job() {
        // Best effort: the record says when the job ran, not what it measured.
        let _ = write_task_record(
            out,
            &TaskRecord {
                job,
                base_only: opts.base_only,
                cells: ids.to_vec(),
                host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_default(),
                start_unix_s: start,
                end_unix_s: unix_s(),
                ok: r.is_ok(),
            },
        );
    }
    match r {
        // A base job that fails, at any step, records why in each cell of its base: without
        // Slurm's accounting nothing else would tell them from cells never run.
        Err(e)
            if opts.base_only && e.blame != Blame::Interrupted && !fsage_signals::interrupted() =>
        {
            record_base_failure(out, &plan, first, &e)?;
            Err(e)
        }
        r => r,
    }
}

fn run_selected(
    out: &Path,
    cells: &[&Cell],
    ids: &[String],
    opts: &RunCellOptions,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let first = cells[0];
    preflight_cells(cells)?;
    let images = opts.images.clone().unwrap_or_else(|| out.join("images"));
    let name = if opts.base_only {
        format!("base-{}", base_group(first))
    } else {
        first.id.clone()
    };
    let out_real = out.canonicalize().unwrap_or_else(|_| out.to_path_buf());
    let mut ex = LabExecutor::for_task(&out_real, &images, &opts.scratch, &name)?;
    let r = if opts.base_only {
        make_base(out, first, &mut ex, obs)
    } else {
        runner::run_ids(out, ids, &mut ex, obs)
    };
    let work = ex.work_dir().to_path_buf();
    drop(ex);
    // Empty after a clean run; never removed through a mount left in it.
    let _ = std::fs::remove_dir(&work);
    r
}

fn make_base(
    out: &Path,
    cell: &Cell,
    ex: &mut LabExecutor,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let t0 = std::time::Instant::now();
    ex.make_base_of(cell, obs)?;
    Ok(RunSummary {
        out: out.to_path_buf(),
        total: 0,
        done_before: 0,
        ran: 0,
        failed: 0,
        failed_kept: 0,
        interrupted: false,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Records the failure of `cell`'s base in every cell of that base not done (a failure of an
/// earlier submission is replaced by this one's), as a local run records it, so that `status`
/// says why these cells did not run (Slurm cancels their array: its dependency can no longer
/// be met).
fn record_base_failure(out: &Path, plan: &Plan, cell: &Cell, e: &Error) -> Result<(), Error> {
    let rec = runner::recorded(out)?;
    let g = base_group(cell);
    let started = now_unix();
    let job = crate::lab::slurm_job().map_or(String::new(), |j| format!(" (job {j})"));
    for c in plan
        .cells
        .iter()
        .filter(|c| base_group(c) == g && !rec.get(&c.id).is_some_and(|r| r.is_done()))
    {
        let res = crate::CellResult {
            format: crate::result::RESULT_FORMAT,
            cell: c.clone(),
            status: crate::CellStatus::Failed {
                error: format!("base image{job}: {}", e.message),
            },
            started_unix: started,
            seconds: 0.0,
            base_seconds: None,
            environment: None,
            samples: Vec::new(),
            workload_report: None,
        };
        runner::write_json(&runner::cell_path(out, c), &res)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits_are_written_as_slurm_reads_them() {
        use std::time::Duration;
        assert_eq!(slurm_time(Duration::from_secs(90)), "0-00:01:30");
        assert_eq!(
            slurm_time(Duration::from_secs(2 * 86400 + 3723)),
            "2-01:02:03"
        );
        assert_eq!(slurm_time(Duration::from_millis(1500)), "0-00:00:02");
    }

    #[test]
    fn scripts_quote_their_paths() {
        let s = cells_script(&RunArgs {
            fsage: Path::new("/opt/fsage"),
            sha: "ab12",
            out: Path::new("/shared/it's"),
            images: Path::new("/shared/img"),
            scratch: &Scratch::Tmpfs,
        });
        assert!(s.contains(r"'/shared/it'\''s'"), "{s}");
        assert!(s.contains("SLURM_ARRAY_TASK_ID + 1"), "{s}");
        assert!(s.contains("--scratch 'tmpfs' $ids"), "{s}");
        let b = base_script(&RunArgs {
            fsage: Path::new("/opt/fsage"),
            sha: "ab12",
            out: Path::new("/o"),
            images: Path::new("/i"),
            scratch: &Scratch::Images,
        });
        assert!(b.contains("--base-only \"$1\""), "{b}");
        assert!(b.contains("fsage='/opt/fsage'"), "{b}");
    }

    /// The scripts' check runs the copy only while it has the checksum `submit` recorded.
    #[test]
    fn a_batch_script_refuses_a_binary_changed_after_submission() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("orig");
        fsage_testkit::write_executable(&src, "#!/bin/sh\necho ran \"$@\"\n");
        let sdir = d.path().join("slurm");
        std::fs::create_dir(&sdir).unwrap();
        let (exe, sha) = install_binary(&src, &sdir).unwrap();
        assert_eq!(exe, sdir.join(BINARY));
        let script = sdir.join("base.sh");
        let args = RunArgs {
            fsage: &exe,
            sha: &sha,
            out: d.path(),
            images: d.path(),
            scratch: &Scratch::Tmpfs,
        };
        std::fs::write(&script, base_script(&args)).unwrap();
        let run = || Command::new("sh").arg(&script).arg("c1").output().unwrap();
        let o = run();
        assert!(o.status.success(), "{o:?}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("ran experiment run-cell"));
        // A rebuild of the original changes nothing; a change of the copy stops the job.
        fsage_testkit::write_executable(&src, "#!/bin/sh\necho other\n");
        assert!(run().status.success());
        fsage_testkit::write_executable(&exe, "#!/bin/sh\necho other\n");
        let o = run();
        assert_eq!(o.status.code(), Some(1), "{o:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("is not the binary"),
            "{o:?}"
        );
        // Installed again (a new submission): the copy is the new original.
        let (_, sha2) = install_binary(&src, &sdir).unwrap();
        assert_ne!(sha, sha2);
    }

    #[test]
    fn two_tasks_get_two_scratch_directories_and_a_task_run_again_the_same() {
        use crate::lab::scratch_prefix;
        let root = Path::new("/scratch");
        let a = scratch_prefix(root, Path::new("/o"), "c1");
        assert_eq!(a, scratch_prefix(root, Path::new("/o"), "c1"));
        assert_ne!(a, scratch_prefix(root, Path::new("/o"), "c2"));
        assert_ne!(a, scratch_prefix(root, Path::new("/p"), "c1"));
        assert!(a.starts_with(root));
    }
}
