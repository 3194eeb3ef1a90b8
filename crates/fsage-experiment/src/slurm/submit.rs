//! `experiment submit`: the plan's cells handed to `sbatch`, one job per base image and one job
//! array per base waiting for it, with the batch scripts and the copy of fsage they run.

use crate::runner;
use crate::spec::Cell;
use crate::storage::Scratch;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::jobs::alive_jobs;
use super::{
    base_group, need, now_unix, read_submissions, slurm_cmd, ArrayJob, BaseJob, SlurmError,
    Submission, SLURM_DIR, SUBMISSIONS,
};

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
        let run = || {
            std::process::Command::new("sh")
                .arg(&script)
                .arg("c1")
                .output()
                .unwrap()
        };
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
}
