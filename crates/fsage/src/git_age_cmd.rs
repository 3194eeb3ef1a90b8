//! `fsage git-age REPO (--fs KIND --size SIZE IMAGE | --clean-fs KIND TARGET_DIR)`: Git-history
//! aging (fsage-git does the work; this parses, shows progress and writes the exports).

use crate::age_cmd::fs_kind_parser;
use crate::exit::{bad_input, interrupted, CmdError, CmdResult};
use clap::{Args, ValueEnum};
use fsage_git::{GitAgeOptions, GitRow, Mode, Observer, Target};
use fsage_lab::FsKind;
use fsage_report::{export, Csv, Json, Text};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// `git pull` of each commit into a repository on the aged file system (the published method).
    Git,
    /// Each commit's changes applied to a plain working tree through fsage's backends.
    Tree,
}

#[derive(Args, Debug)]
pub struct GitAgeArgs {
    /// A local Git repository or bundle whose first-parent history is replayed.
    pub repo: PathBuf,
    /// With --fs: the image file to create; else an empty directory on a mounted file system.
    pub target: PathBuf,
    /// Make a file system of this kind on the new image TARGET.
    #[arg(long, value_parser = fs_kind_parser(), requires = "size", conflicts_with = "clean_fs")]
    pub fs: Option<FsKind>,
    /// Size of the image (e.g. 4GiB); the clean instance is made the same size. With --clean-fs:
    /// the clean instance's size (default: the size of the block device under TARGET_DIR; needed
    /// for a TARGET_DIR on a file system without one, such as tmpfs).
    #[arg(long, value_parser = fsage_units::parse_size)]
    pub size: Option<u64>,
    /// For a TARGET_DIR: the clean instance's file system (made as large as the block device
    /// under TARGET_DIR, or --size).
    #[arg(long, value_parser = fs_kind_parser())]
    pub clean_fs: Option<FsKind>,
    /// For a TARGET_DIR: where the clean instance's image goes (default /dev/shm); the checkpoint
    /// and a bundle's clone go beside it. Not on the file system being aged.
    #[arg(long, value_name = "IMAGE")]
    pub clean_image: Option<PathBuf>,
    /// Measure every N commits (and at the first and the last).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub every: u64,
    /// Replay at most N commits.
    #[arg(long, value_name = "N")]
    pub commits: Option<u64>,
    /// First commit to replay (on the first-parent line of the last).
    #[arg(long, value_name = "REV")]
    pub first: Option<String>,
    /// Last commit to replay (default: the branch, else HEAD); not with --branch.
    #[arg(long, value_name = "REV", conflicts_with = "branch")]
    pub last: Option<String>,
    /// Branch whose history is replayed.
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// Let git collect garbage automatically (off by default: gc.auto 0).
    #[arg(long)]
    pub gc: bool,
    #[arg(long, value_enum, default_value = "git")]
    pub mode: ModeArg,
    /// Tree mode: write the op log to FILE.
    #[arg(long, value_name = "FILE")]
    pub op_log: Option<PathBuf>,
    /// Go on from the checkpoint of a stopped run (IMAGE.fsage-git.json; for a TARGET_DIR,
    /// CLEAN_IMAGE.fsage-git.json).
    #[arg(long)]
    pub resume: bool,
    /// Replay only, no measurements (to time the replay).
    #[arg(long)]
    pub no_measure: bool,
    /// Take every measurement (aged and clean) with the image on a slow device of this latency
    /// per request (e.g. 100us; reads, writes and flushes); the replay stays at full speed.
    #[arg(long, value_name = "LATENCY", requires = "fs", value_parser = fsage_units::parse_latency)]
    pub device_latency: Option<u64>,
    /// Take every measurement (aged and clean) with the image on a slow device running this
    /// model in real time: a built-in model such as hdd-7200, a model file, or a latency (the
    /// same as --device-latency). A model with state gets a new device before every grep, so
    /// the drive's caches start cold each time; the replay stays at full speed.
    #[arg(
        long,
        value_name = "M",
        requires = "fs",
        conflicts_with = "device_latency"
    )]
    pub device_model: Option<String>,
    /// Cost every grep's block trace on these device models (comma-separated: a latency such as
    /// 1ms, a built-in model such as hdd-7200, or a model file); each gets modeled seconds,
    /// seconds per GiB and an aged/clean ratio in the series. The traces stay in IMAGE.traces/.
    /// An SSD model costs each instance's greps on a drive its own writes aged (the aged one
    /// kept in IMAGE.drives/).
    #[arg(long, value_name = "M[,M...]", value_delimiter = ',')]
    pub cost_models: Vec<String>,
    /// What stands in for grep's think time when the traces are costed: fixed:DURATION before
    /// every read that waited for another (default fixed:50us: the same on a quiet and on a
    /// loaded host), median (each trace's median recorded gap), none (the device alone), or
    /// recorded (this run's wall-clock gaps, the host's load included).
    #[arg(long, value_name = "RULE", default_value = "fixed:50us", value_parser = crate::util::parse_think)]
    pub think: fsage_device::Think,
    /// Do not sync the aged file system after every pull: writeback then runs when the host's
    /// timing has it, as in the published scripts, and the layout varies with the host's load.
    #[arg(long)]
    pub no_sync: bool,
    /// Replay on one CPU: the making of the aged instance and every pull with its sync (fsage,
    /// the gits it starts, and the kernel's unbound workqueues: writeback, btrfs's and xfs's
    /// workers; a machine-wide setting, restored when the run ends) on the first CPU fsage may
    /// use, so that which CPU and worker allocates a file's blocks is the same in every run
    /// (ext4's small files go to per-CPU groups); the clean copy is written there too, the
    /// greps run on every CPU. On btrfs both instances are also mounted with one worker per
    /// pool (thread_pool=1) and discard at commit (discard=sync). Needs root.
    #[arg(long)]
    pub one_cpu: bool,
    /// Time each grep N times (a cold one with caches dropped before each); the series keeps the
    /// median, the fastest and the slowest. Every grep's trace is kept and costed; per model the
    /// median grep's cost is kept (the lower middle of an even N), with every grep's. With
    /// --warm-cache only the first grep is costed (the later ones read what it cached), and the
    /// clean reference is grepped once.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub grep_reps: u32,
    /// Measure the aged instance warm, as Conway et al.'s warm-cache figure did: no caches
    /// dropped and no remount before its greps (they find what the replay left in memory); the
    /// clean copy is measured cold by its fresh mount (one grep), for a drop of the caches is
    /// machine-wide. A drop by another process empties the warm cache: it is counted and
    /// warned about. Not with a slow device.
    #[arg(long, conflicts_with_all = ["device_latency", "device_model"])]
    pub warm_cache: bool,
    /// Run the whole replay and its measurements in a new memory cgroup (cgroup v1's memory
    /// controller, else v2) limited to SIZE, page cache included, as a machine with that much
    /// memory (at least 128MiB); tmpfs pages the run writes (an image in /dev/shm) are added
    /// on top, as a disk would take no memory; the cgroup is removed at the end, also after an
    /// error.
    #[arg(long, value_name = "SIZE", value_parser = fsage_units::parse_size)]
    pub mem_limit: Option<u64>,
    /// Write the series as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the series as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The progress line: commits done and left, commits per second, the last measurement.
pub(crate) struct Progress {
    tty: bool,
    last_draw: Option<Instant>,
    last_row: String,
}

impl Progress {
    pub(crate) fn new(tty: bool) -> Progress {
        Progress {
            tty,
            last_draw: None,
            last_row: String::new(),
        }
    }
}

impl Observer for Progress {
    fn progress(&mut self, done: u64, total: u64, replay_seconds: f64) {
        if !self.tty
            || (done < total
                && self
                    .last_draw
                    .is_some_and(|t| t.elapsed() < Duration::from_millis(250)))
        {
            return;
        }
        self.last_draw = Some(Instant::now());
        let rate = if replay_seconds > 0.0 {
            done as f64 / replay_seconds
        } else {
            0.0
        };
        eprint!(
            "\r\x1b[Kcommits {done}/{total} ({} left), {rate:.1} commits/s{}",
            total - done,
            self.last_row
        );
        let _ = std::io::stderr().flush();
    }
    fn measured(&mut self, r: &GitRow) {
        self.last_row = format!(
            "; at {}: aged {:.2} s/GiB, clean {:.2} s/GiB, x{}",
            r.pulls,
            r.aged.grep_seconds_per_gib,
            r.clean.grep_seconds_per_gib,
            r.ratio.map_or("-".into(), |v| format!("{v:.2}"))
        );
    }
    fn note(&mut self, msg: &str) {
        if self.tty && self.last_draw.is_some() {
            eprintln!();
        }
        eprintln!("fsage: {msg}");
    }
}

pub fn run(a: GitAgeArgs) -> CmdResult {
    let size = a.size;
    let target = match (a.fs, a.clean_fs) {
        (Some(fs), None) => Target::Image {
            path: a.target.clone(),
            kind: fs,
            size: size.expect("clap requires --size with --fs"),
        },
        (None, Some(c)) => Target::Dir {
            clean_size: size,
            path: a.target.clone(),
            clean_kind: c,
            clean_image: match a.clean_image.clone() {
                Some(p) => p,
                None => fsage_git::default_clean_image(&a.target)?,
            },
        },
        _ => {
            return Err(bad_input(
                "give --fs KIND --size SIZE with an image path, or --clean-fs KIND with a \
                 directory on a mounted file system",
            ))
        }
    };
    if a.op_log.is_some() && a.mode != ModeArg::Tree {
        return Err(bad_input("--op-log needs --mode tree"));
    }
    let device = match (&a.device_model, a.device_latency) {
        (Some(m), _) => Some(fsage_git::MeasureDevice::model(
            fsage_device::resolve(m).map_err(|e| CmdError::from(e).context("--device-model"))?,
        )),
        (None, l) => l.map(fsage_git::MeasureDevice::uniform),
    };
    let cost_models = a
        .cost_models
        .iter()
        .map(|m| fsage_device::resolve(m).map_err(|e| CmdError::from(e).context("--cost-models")))
        .collect::<Result<Vec<_>, _>>()?;
    if a.grep_reps == 0 {
        return Err(bad_input("--grep-reps: at least 1"));
    }
    for p in [&a.json, &a.csv].into_iter().flatten() {
        fsage_sys::check_writable_file(p)?;
    }
    let opts = GitAgeOptions {
        repo: a.repo.clone(),
        target,
        mode: match a.mode {
            ModeArg::Git => Mode::Git,
            ModeArg::Tree => Mode::Tree,
        },
        every: a.every,
        range: fsage_git::git::Range {
            first: a.first.clone(),
            last: a.last.clone(),
            branch: a.branch.clone(),
            commits: a.commits,
        },
        gc: a.gc,
        resume: a.resume,
        op_log: a.op_log.clone(),
        no_measure: a.no_measure,
        device,
        grep_reps: a.grep_reps,
        cost_models,
        think: a.think,
        sync_each_pull: !a.no_sync,
        one_cpu: a.one_cpu,
        warm_cache: a.warm_cache,
        mem_limit: a.mem_limit,
        json: a.json.clone(),
        csv: a.csv.clone(),
    };
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr()) && !a.quiet;
    let mut obs = Progress::new(tty);
    let out = fsage_git::git_age(&opts, &mut obs)?;
    if tty {
        eprintln!();
    }
    if let Some(p) = &out.json {
        fsage_sys::write_atomic(p, export(&Json, &out.series).as_bytes())?;
    }
    if let Some(p) = &out.csv {
        fsage_sys::write_atomic(p, export(&Csv, &out.series).as_bytes())?;
    }
    if !a.quiet {
        print!("{}", export(&Text, &out.series));
        println!("checkpoint: {}", out.state.display());
    }
    if out.interrupted {
        eprintln!(
            "fsage: stopped after commit {} of {}; go on with --resume",
            out.series.pulls_done, out.series.commits_total
        );
        return Err(interrupted());
    }
    Ok(())
}
