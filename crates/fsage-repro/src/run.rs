//! `fsage reproduce NAME --out DIR`: checks that this build has what the reproduction needs
//! (refusing, naming what is missing, before anything is written), records the reproduction and
//! its scale in `DIR/reproduction.json`, then runs it through the experiment runner or Git aging,
//! both resumable: the same command again goes on where a stopped run left off.

use crate::catalog::{self, GitRun, Kind, Need, Reproduction};
use crate::Error;
use std::path::{Path, PathBuf};

pub use fsage_results::repro::record::{
    read_record, Record, EXPERIMENT_DIR, GIT_DIR, RECORD_FILE, RECORD_FORMAT,
};

/// How to run a reproduction.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub out: PathBuf,
    /// The scale (default: the reproduction's own).
    pub scale: Option<u64>,
    /// Measure a Git reproduction every this many pulls instead of the paper's own step (a
    /// coarser series costs less time; published points it does not come near say so).
    pub every: Option<u64>,
    /// Where base images and Git-aging images go (default `OUT/images`).
    pub images: Option<PathBuf>,
    /// The repository whose history a Git reproduction replays.
    pub repo: Option<PathBuf>,
}

/// What the caller sees as it goes: steps, and the experiment runner's and Git aging's own
/// progress.
pub trait Observer {
    fn step(&mut self, msg: &str);
    fn experiment(&mut self) -> &mut dyn fsage_experiment::runner::RunObserver;
    fn git(&mut self) -> &mut dyn fsage_git::Observer;
}

/// What a run came to.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub record: Record,
    /// Every part finished.
    pub complete: bool,
    /// Stopped by a signal: run the same command again to go on.
    pub interrupted: bool,
    /// Experiment cells that failed.
    pub failed: usize,
}

/// The reproduction `name`, or an error listing the names.
pub fn lookup(name: &str) -> Result<&'static Reproduction, Error> {
    catalog::find(name).ok_or_else(|| {
        let names: Vec<&str> = catalog::REPRODUCTIONS.iter().map(|r| r.name).collect();
        Error::input(format!(
            "no reproduction is called {name:?}: one of {} (fsage reproduce list)",
            names.join(", ")
        ))
    })
}

/// Why each need this build lacks is missing, one line each; empty when it has them all.
/// `experiment` is the experiment file the reproduction would run, checked by the parser this
/// build has (an unknown setting is a missing one).
pub fn missing(r: &Reproduction, scale: u64) -> Vec<String> {
    let mut out = Vec::new();
    let mut settings_checked = false;
    for n in r.needs(scale) {
        match n {
            Need::Model(m) => {
                if let Err(e) = fsage_device::resolve(&m) {
                    out.push(format!(
                        "the drive model {m:?}: {} (issue 32: models of the papers' drives, \
                         scaled with MODEL@SIZE)",
                        e.message
                    ));
                }
            }
            Need::Setting { .. } if settings_checked => {}
            Need::Setting { .. } => {
                settings_checked = true;
                let Some(text) = r.experiment_toml(scale) else {
                    continue;
                };
                let keys: Vec<&str> = r
                    .needs(scale)
                    .iter()
                    .filter_map(|n| match n {
                        Need::Setting { key, .. } => Some(*key),
                        _ => None,
                    })
                    .collect();
                for n in r.needs(scale) {
                    let Need::Setting { key, value, why } = n else {
                        continue;
                    };
                    if !parser_knows(&probe(&text, key, &keys), key) {
                        out.push(format!(
                            "the experiment setting `{key} = \"{value}\"` ({why}): this build's \
                             experiment files have no `{key}` (issue 32)"
                        ));
                    }
                }
            }
            Need::GitOption { option, why } => {
                if !catalog::GIT_OPTIONS_BUILT.contains(&option) {
                    out.push(format!(
                        "Git aging's {option} ({why}): this build's git-age has no such \
                         measurement (issue 32)"
                    ));
                }
            }
            Need::Measurement(m) => out.push(format!("{m}: fsage does not make it")),
            Need::Kernel { fs, since, why } => {
                if let Err(m) = kernel_for(fs, since) {
                    out.push(format!("{m} (for {why})"));
                }
            }
        }
    }
    out
}

/// How a reproduction would run on this machine, where that changes what its numbers mean: a
/// file system this kernel lacks runs in a guest, emulated (TCG) unless KVM is usable.
pub fn notes(r: &Reproduction) -> Vec<String> {
    let mut out = Vec::new();
    for n in r.needs(r.default_scale) {
        let Need::Kernel { fs, .. } = n else {
            continue;
        };
        if fsage_lab::FsKind::parse(fs).is_ok_and(|k| k.check_kernel().is_ok()) {
            continue;
        }
        let kernel = fsage_vm::resolve_kernel(None, None)
            .map(|k| k.release)
            .unwrap_or_else(|_| "a cached kernel".into());
        out.push(match fsage_vm::accel::kvm_usable() {
            Ok(()) => format!("{fs} runs in a QEMU guest under {kernel} with KVM"),
            Err(_) => format!(
                "{fs} runs in a QEMU guest under {kernel}, emulated (TCG: no usable KVM): its \
                 timings are emulated"
            ),
        });
    }
    out
}

/// `6.1.0-56-amd64` as (6, 1).
fn version_of(release: &str) -> Option<(u64, u64)> {
    let mut p = release.split(['.', '-']);
    Some((p.next()?.parse().ok()?, p.next()?.parse().ok()?))
}

/// Whether a kernel with `fs`, of version `since` or later, runs here: this one, or a cached
/// guest kernel with QEMU (what a cell on `fs` would run under: the newest cached).
fn kernel_for(fs: &str, since: (u64, u64)) -> Result<(), String> {
    let want = format!("{}.{}", since.0, since.1);
    let here = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let kind = fsage_lab::FsKind::parse(fs).map_err(|e| e.to_string())?;
    if kind.check_kernel().is_ok() && version_of(here.trim()).is_some_and(|v| v >= since) {
        return Ok(());
    }
    if fsage_sys::find_cmd("qemu-system-x86_64").is_none() {
        return Err(format!(
            "{fs} under a kernel since {want}: this kernel ({}) {}, and qemu-system-x86_64 is \
             not installed to run a guest",
            here.trim(),
            if kind.check_kernel().is_ok() {
                "is older"
            } else {
                "has no such file system"
            }
        ));
    }
    match fsage_vm::resolve_kernel(None, None) {
        Ok(k) if version_of(&k.release).is_some_and(|v| v >= since) => Ok(()),
        Ok(k) => Err(format!(
            "{fs} in a guest under a kernel since {want}: the newest cached kernel is {} \
             (fsage vm kernel fetch VERSION)",
            k.release
        )),
        Err(e) => Err(format!(
            "{fs} in a guest under a kernel since {want}: {}",
            e.message
        )),
    }
}

/// `text` for asking the parser about `key` alone: the other settings a reproduction needs taken
/// out (the parser names only the first unknown key), and the device models replaced by a
/// built-in one every build has (they are checked on their own).
fn probe(text: &str, key: &str, settings: &[&str]) -> String {
    text.lines()
        .filter(|l| {
            !settings
                .iter()
                .any(|k| *k != key && l.starts_with(&format!("{k} = ")))
        })
        .map(|l| {
            if l.starts_with("latencies = ") {
                "latencies = [\"ssd-sata\"]"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether this build's experiment parser takes `key` in `text` (an experiment file that uses
/// it): parsing refuses an unknown key by name, at its line.
fn parser_knows(text: &str, key: &str) -> bool {
    match fsage_experiment::spec::parse(text, "reproduction", Path::new(".")) {
        Ok(_) => true,
        Err(e) => !e.message.contains(&format!("unknown key `{key}`")),
    }
}

/// Runs (or goes on with) the reproduction `name` into `opts.out`.
pub fn reproduce(name: &str, opts: &Options, obs: &mut dyn Observer) -> Result<Outcome, Error> {
    let r = lookup(name)?;
    let scale = opts.scale.unwrap_or(r.default_scale);
    if scale < 64 << 20 {
        return Err(Error::input(format!(
            "--scale {}: at least 64 MiB",
            fsage_units::format_size(scale)
        )));
    }
    let repo = match (r.kind, &opts.repo) {
        (Kind::Git, None) => {
            return Err(Error::input(format!(
                "{name} replays nginx's history: give --repo PATH (a clone or bundle of \
                 https://github.com/nginx/nginx, e.g. /work/shared/git/nginx.bundle on the lab \
                 machine)"
            )))
        }
        (Kind::Git, Some(p)) => Some(
            std::path::absolute(p)
                .map_err(|e| Error::io(p, "", e))?
                .display()
                .to_string(),
        ),
        _ => None,
    };
    match (opts.every, r.kind) {
        (Some(0), _) => return Err(Error::input("--every 0: at least 1 pull")),
        (Some(_), k) if k != Kind::Git => {
            return Err(Error::input(format!(
                "--every: {name} is not a Git reproduction (it has no pulls)"
            )))
        }
        _ => {}
    }
    let missing = missing(r, scale);
    if !missing.is_empty() {
        return Err(Error::operation(format!(
            "{name} ({} {}) cannot run as the paper did with this build of fsage; it refuses \
             rather than run another procedure. Missing:\n  - {}",
            r.paper,
            r.figure,
            missing.join("\n  - ")
        )));
    }
    let record = Record {
        format: RECORD_FORMAT.into(),
        name: r.name.into(),
        paper: r.paper.into(),
        figure: r.figure.into(),
        scale_bytes: scale,
        scale_of: r.scale_of.into(),
        paper_scale: r.paper_scale.into(),
        models: r.models(scale),
        repo,
        git_runs: r
            .git_runs(scale)
            .into_iter()
            .map(|g| GitRun {
                every: opts.every.unwrap_or(g.every),
                ..g
            })
            .collect(),
        made_by: format!("fsage {}", env!("CARGO_PKG_VERSION")),
    };
    prepare(&opts.out, &record)?;
    obs.step(&format!(
        "{} ({} {}), {}",
        r.name,
        r.paper,
        r.figure,
        record.scale_text()
    ));
    let images = opts
        .images
        .clone()
        .unwrap_or_else(|| opts.out.join("images"));
    match r.kind {
        Kind::Experiment => run_experiment(r, scale, &opts.out, &images, record, obs),
        Kind::Git => run_git(&opts.out, &images, record, obs),
        Kind::NotBuilt => unreachable!("a reproduction not built has a missing need"),
    }
}

/// Makes `out` this reproduction's: new or empty, or one a run of the same reproduction at the
/// same scale made (then the run goes on). Anything else is refused.
fn prepare(out: &Path, record: &Record) -> Result<(), Error> {
    let file = out.join(RECORD_FILE);
    if out.exists() {
        if !out.is_dir() {
            return Err(Error::input(format!(
                "{}: exists and is not a directory",
                out.display()
            )));
        }
        if file.exists() {
            let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, "", e))?;
            let old: Record = serde_json::from_str(&text).map_err(|e| {
                Error::input(format!(
                    "{}: not a reproduction record: {e}",
                    file.display()
                ))
            })?;
            if old.name != record.name || old.scale_bytes != record.scale_bytes {
                return Err(Error::input(format!(
                    "{}: holds {} at {}, not {} at {}; give another directory (or the same \
                     reproduction and --scale to go on)",
                    out.display(),
                    old.name,
                    fsage_units::format_size(old.scale_bytes),
                    record.name,
                    fsage_units::format_size(record.scale_bytes)
                )));
            }
            if old.git_runs != record.git_runs {
                let every = |r: &Record| {
                    r.git_runs
                        .iter()
                        .map(|g| format!("{} every {}", g.name, g.every))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(Error::input(format!(
                    "{}: holds runs {} ({}), not {}: give the same --every to go on, or \
                     another directory",
                    out.display(),
                    every(&old),
                    old.git_runs
                        .iter()
                        .map(|g| g.cost_models.join("+"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    every(record)
                )));
            }
            if old.repo != record.repo {
                return Err(Error::input(format!(
                    "{}: replayed {}, not {}: give the same --repo to go on",
                    out.display(),
                    old.repo.as_deref().unwrap_or("-"),
                    record.repo.as_deref().unwrap_or("-")
                )));
            }
            return Ok(());
        }
        let mut rd = std::fs::read_dir(out).map_err(|e| Error::io(out, "", e))?;
        if rd.next().is_some() {
            return Err(Error::input(format!(
                "{}: not empty and not a reproduction's output directory (no {RECORD_FILE}); \
                 give an empty or new directory",
                out.display()
            )));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, "cannot make the directory", e))?;
    let text = serde_json::to_string_pretty(record).expect("a record serializes");
    fsage_sys::write_atomic(&file, format!("{text}\n").as_bytes())
        .map_err(|e| Error::operation(format!("{}: {e}", file.display())))?;
    Ok(())
}

fn run_experiment(
    r: &Reproduction,
    scale: u64,
    out: &Path,
    images: &Path,
    record: Record,
    obs: &mut dyn Observer,
) -> Result<Outcome, Error> {
    let text = r
        .experiment_toml(scale)
        .expect("an experiment reproduction has an experiment file");
    let file = out.join("experiment.toml");
    fsage_sys::write_atomic(&file, text.as_bytes())
        .map_err(|e| Error::operation(format!("{}: {e}", file.display())))?;
    obs.step(&format!(
        "experiment {} (the run's output in {})",
        file.display(),
        out.join(EXPERIMENT_DIR).display()
    ));
    let s = fsage_experiment::run_file(
        &file,
        &out.join(EXPERIMENT_DIR),
        Some(images),
        &fsage_experiment::storage::Scratch::default(),
        &fsage_experiment::runner::RunOptions::default(),
        obs.experiment(),
    )?;
    let done = s.done_before + s.ran - s.failed;
    Ok(Outcome {
        record,
        complete: !s.interrupted && done == s.total,
        interrupted: s.interrupted,
        failed: s.failed + s.failed_kept,
    })
}

/// Git aging's options for one run of a reproduction.
pub fn git_options(
    run: &GitRun,
    repo: &Path,
    out: &Path,
    images: &Path,
) -> Result<fsage_git::GitAgeOptions, Error> {
    let target = fsage_git::Target::Image {
        path: images.join(format!("{}.img", run.name)),
        kind: run.fs_kind(),
        size: run.size,
    };
    let resume = fsage_git::state_path(&target).exists();
    let cost_models = run
        .cost_models
        .iter()
        .map(|m| fsage_device::resolve(m))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(fsage_git::GitAgeOptions {
        repo: repo.to_path_buf(),
        target,
        mode: fsage_git::Mode::Git,
        every: run.every,
        range: Default::default(),
        gc: false,
        resume,
        op_log: None,
        no_measure: false,
        device: None,
        // Conway's scripts grep once per measurement; that grep's trace is the one costed.
        grep_reps: 1,
        cost_models,
        think: fsage_device::Think::default(),
        sync_each_pull: true,
        one_cpu: false,
        // Figure 5: greps on warm caches (no drop, no remount) in a memory cgroup of the limit.
        warm_cache: run.warm_mem_limit.is_some(),
        mem_limit: run.warm_mem_limit,
        json: Some(out.join(GIT_DIR).join(format!("{}.json", run.name))),
        // The report reads the JSON; `fsage report` exports a CSV from it when wanted.
        csv: None,
    })
}

fn run_git(
    out: &Path,
    images: &Path,
    record: Record,
    obs: &mut dyn Observer,
) -> Result<Outcome, Error> {
    let repo = PathBuf::from(record.repo.clone().expect("a Git reproduction has a repo"));
    for dir in [out.join(GIT_DIR), images.to_path_buf()] {
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(&dir, "cannot make the directory", e))?;
    }
    for run in &record.git_runs {
        let json = out.join(GIT_DIR).join(format!("{}.json", run.name));
        if let Some(s) = read_series(&json) {
            if s.finished {
                obs.step(&format!("{}: done ({})", run.name, json.display()));
                continue;
            }
        }
        let opts = git_options(run, &repo, out, images)?;
        obs.step(&format!(
            "{}: {} on a {} image, {}, every {} pulls, costed on {}",
            run.name,
            run.fs,
            fsage_units::format_size(run.size),
            if opts.resume {
                "going on from its checkpoint"
            } else {
                "from the first commit"
            },
            run.every,
            run.cost_models.join(", ")
        ));
        let o = fsage_git::git_age(&opts, obs.git())?;
        // Written after every run, stopped or not, as `git-age --json` writes it.
        if let Some(p) = &o.json {
            let text = serde_json::to_string_pretty(&o.series).expect("a series serializes") + "\n";
            fsage_sys::write_atomic(p, text.as_bytes())
                .map_err(|e| Error::operation(format!("{}: {e}", p.display())))?;
        }
        if o.interrupted {
            return Ok(Outcome {
                record,
                complete: false,
                interrupted: true,
                failed: 0,
            });
        }
    }
    Ok(Outcome {
        record,
        complete: true,
        interrupted: false,
        failed: 0,
    })
}

fn read_series(p: &Path) -> Option<fsage_git::GitSeries> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, scale: u64) -> Record {
        Record {
            format: RECORD_FORMAT.into(),
            name: name.into(),
            paper: "p".into(),
            figure: "f".into(),
            scale_bytes: scale,
            scale_of: "s".into(),
            paper_scale: "ps".into(),
            models: vec![],
            repo: None,
            git_runs: vec![],
            made_by: "test".into(),
        }
    }

    #[test]
    fn an_output_directory_is_new_empty_or_the_same_reproduction_at_the_same_scale() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        prepare(&out, &record("conway-fig3", 1 << 30)).unwrap();
        assert_eq!(read_record(&out).unwrap().name, "conway-fig3");
        // The same again: goes on.
        prepare(&out, &record("conway-fig3", 1 << 30)).unwrap();
        let e = prepare(&out, &record("conway-fig3", 2 << 30)).unwrap_err();
        assert!(
            e.message.contains("at 1 GiB, not conway-fig3 at 2 GiB"),
            "{e}"
        );
        // The same reproduction measured at another step is not gone on with.
        let mut coarser = record("conway-fig3", 1 << 30);
        coarser.git_runs = catalog::find("conway-fig3").unwrap().git_runs(1 << 30);
        let e = prepare(&out, &coarser).unwrap_err();
        assert!(e.message.contains("give the same --every"), "{e}");
        let e = prepare(&out, &record("conway-fig4", 1 << 30)).unwrap_err();
        assert!(e.message.contains("holds conway-fig3"), "{e}");
        // A directory of something else is refused and left as it was.
        let other = d.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("mine.txt"), "x").unwrap();
        let e = prepare(&other, &record("conway-fig3", 1 << 30)).unwrap_err();
        assert!(
            e.message.contains("not a reproduction's output directory"),
            "{e}"
        );
        assert!(!other.join(RECORD_FILE).exists());
    }

    #[test]
    fn missing_needs_are_named_and_nothing_is_written() {
        // The parser's refusal of an unknown key is how a missing setting is found.
        let base = "name = \"x\"\nduration = \"1s\"\nimage_size = \"64MiB\"\n[[fs]]\n\
                    kind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n[[workload]]\n\
                    name = \"varmail\"\n";
        assert!(parser_knows(base, "name"));
        assert!(!parser_knows(
            &format!("no_such_setting_7f = 1\n{base}"),
            "no_such_setting_7f"
        ));
        // Each setting is asked about alone, on a model every build has.
        let t = "a = 1\nb = 2\nlatencies = [\"crucial-m4-64g@1GiB\"]\nc = 3";
        assert_eq!(
            probe(t, "b", &["a", "b"]),
            "b = 2\nlatencies = [\"ssd-sata\"]\nc = 3"
        );
        // A kernel need no kernel meets is named with the version it needs.
        let e = kernel_for("nilfs2", (99, 0)).unwrap_err();
        assert!(e.contains("nilfs2") && e.contains("since 99.0"), "{e}");
        assert!(kernel_for("nosuchfs", (5, 19)).is_err());
        assert_eq!(version_of("6.1.0-56-amd64"), Some((6, 1)));
        assert_eq!(version_of("5.19"), Some((5, 19)));
        // slippery-fig8's needs: the experiment setting this build's parser has, and a
        // kernel since 5.19 with nilfs2 (this one or a guest's); where the machine lacks the
        // kernel, the reproduction is refused by name and writes nothing.
        let r = catalog::find("slippery-fig8").unwrap();
        // Where this kernel lacks nilfs2 the list says the run is in a guest (and whether
        // emulated); where it has it, nothing.
        let n = notes(r);
        if fsage_lab::FsKind::NILFS2.check_kernel().is_ok() {
            assert!(n.is_empty(), "{n:?}");
        } else {
            assert_eq!(n.len(), 1);
            assert!(n[0].contains("nilfs2 runs in a QEMU guest"), "{n:?}");
        }
        assert!(notes(catalog::find("geriatrix-fig7").unwrap()).is_empty());
        let m = missing(r, 4 << 30);
        assert!(!m.iter().any(|l| l.contains("lock_stats")), "{m:?}");
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        if !m.is_empty() {
            assert!(m.iter().all(|l| l.contains("since 5.19")), "{m:?}");
            let e = reproduce(
                "slippery-fig8",
                &Options {
                    out: out.clone(),
                    ..Default::default()
                },
                &mut Silent(fsage_experiment::runner::Quiet, fsage_git::run::Silent),
            )
            .unwrap_err();
            assert!(
                e.message
                    .contains("refuses rather than run another procedure"),
                "{e}"
            );
            assert!(!out.exists(), "a refused reproduction writes nothing");
        }
        let e = reproduce(
            "conway-fig3",
            &Options {
                out: out.clone(),
                ..Default::default()
            },
            &mut Silent(fsage_experiment::runner::Quiet, fsage_git::run::Silent),
        )
        .unwrap_err();
        assert!(e.message.contains("--repo"), "{e}");
        assert!(lookup("nosuch")
            .unwrap_err()
            .message
            .contains("geriatrix-fig7"));
    }

    struct Silent(fsage_experiment::runner::Quiet, fsage_git::run::Silent);
    impl Observer for Silent {
        fn step(&mut self, _: &str) {}
        fn experiment(&mut self) -> &mut dyn fsage_experiment::runner::RunObserver {
            &mut self.0
        }
        fn git(&mut self) -> &mut dyn fsage_git::Observer {
            &mut self.1
        }
    }

    /// Git reproductions go on where they stopped: a finished run is skipped, one whose series
    /// is missing goes on from its checkpoint (git-age's resume) and writes its series again.
    /// (With this repository's own runs, costed on a model every build has.)
    #[test]
    fn a_git_reproduction_skips_finished_runs_and_resumes_from_checkpoints() {
        if let Err(why) = fsage_testkit::need_root_and(&["git", "mkfs.ext4", "losetup", "mount"]) {
            return fsage_testkit::skip("repro_git_resume", &why);
        }
        let d = fsage_testkit::shm_tmp("fsage-repro-git-");
        let repo = d.path().join("src");
        fsage_git::synthetic::make_repo(&repo, 12).unwrap();
        let run = |name: &str| GitRun {
            name: name.into(),
            fs: "ext4".into(),
            size: 64 << 20,
            every: 5,
            cost_models: vec!["hdd-7200".into()],
            warm_mem_limit: None,
            answers: None,
        };
        let mut rec = record("conway-fig6", 64 << 20);
        rec.repo = Some(repo.display().to_string());
        rec.git_runs = vec![run("ext4-small"), run("ext4-large")];
        let out = d.path().join("out");
        prepare(&out, &rec).unwrap();
        let images = out.join("images");
        let mut obs = Steps::new();
        let o = run_git(&out, &images, rec.clone(), &mut obs).unwrap();
        assert!(o.complete && !o.interrupted);
        let series = |n: &str| read_series(&out.join(GIT_DIR).join(format!("{n}.json"))).unwrap();
        let first = series("ext4-large");
        assert!(first.finished && first.pulls_done == 12, "{first:?}");
        assert_eq!(first.model_names(), vec!["hdd-7200"]);
        // Again: both are done, nothing runs.
        let mut obs = Steps::new();
        run_git(&out, &images, rec.clone(), &mut obs).unwrap();
        assert_eq!(
            obs.0.iter().filter(|s| s.contains(": done (")).count(),
            2,
            "{:?}",
            obs.0
        );
        // A series lost: the run goes on from its checkpoint, not from the first commit.
        std::fs::remove_file(out.join(GIT_DIR).join("ext4-large.json")).unwrap();
        let mut obs = Steps::new();
        run_git(&out, &images, rec, &mut obs).unwrap();
        assert!(
            obs.0
                .iter()
                .any(|s| s.contains("ext4-large") && s.contains("checkpoint")),
            "{:?}",
            obs.0
        );
        let again = series("ext4-large");
        assert_eq!(again.rows.len(), first.rows.len());
        assert!(again.finished);
    }

    struct Steps(
        Vec<String>,
        fsage_experiment::runner::Quiet,
        fsage_git::run::Silent,
    );
    impl Steps {
        fn new() -> Steps {
            Steps(
                Vec::new(),
                fsage_experiment::runner::Quiet,
                fsage_git::run::Silent,
            )
        }
    }
    impl Observer for Steps {
        fn step(&mut self, msg: &str) {
            self.0.push(msg.to_string());
        }
        fn experiment(&mut self) -> &mut dyn fsage_experiment::runner::RunObserver {
            &mut self.1
        }
        fn git(&mut self) -> &mut dyn fsage_git::Observer {
            &mut self.2
        }
    }
}
