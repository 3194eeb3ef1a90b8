//! `fsage age` and `fsage status`: parse the flags into an [`AgeRequest`], call
//! [`fsage_core::age::age`], print what it says and the report.

use crate::exit::{bad_input, interrupted, CmdError, CmdResult};
use crate::progress::Bar;
use clap::{Args, ValueEnum};
use fsage_core::age::{AgeObserver, AgeRequest, Level, NewFs};
use fsage_exec::{Observer, Progress, State, StopConditions, StopReason, WriteMode};
use fsage_lab::FsKind;
use fsage_report::{export, Json, Text};
use fsage_sys::Blame;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum WriteModeArg {
    Fallocate,
    Write,
}

/// `--shard-by`'s values (fsage_exec::Sharding, for clap).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShardArg {
    Auto,
    File,
    Directory,
}

#[derive(Args, Debug)]
pub struct AgeArgs {
    /// Built-in profile name or profile file (.toml). Required unless --resume.
    #[arg(long, short = 'p', required_unless_present = "resume")]
    pub profile: Option<String>,
    /// Capacity C (e.g. 4GiB, 512M; 4GB is 4×10⁹ bytes). Default: the size of the file system
    /// holding TARGET_DIR.
    #[arg(long, value_parser = fsage_units::parse_size)]
    pub capacity: Option<u64>,
    /// Fullness u in (0, 1): at 1 no room is left for the stable phase's creates. Default: the
    /// profile's.
    #[arg(long)]
    pub fullness: Option<f64>,
    /// Seed of every random choice: the same seed gives the same op log. Default: 1.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Plan only: no I/O, the same decisions.
    #[arg(long)]
    pub dry_run: bool,
    /// How files get their blocks. Default: fallocate, or write on nilfs2 (which has no
    /// fallocate) and with --device-model (a drive ages by what is written).
    #[arg(long, value_enum)]
    pub write_mode: Option<WriteModeArg>,
    /// With --write-mode write: what the written data holds: incompressible (pseudo-random, the
    /// default), zeros, filebench (zeros, as Filebench writes) or N% (each 4 KiB block random
    /// bytes then N% zeros). A drive that compresses ages differently for each. Recorded in the
    /// report (`data`); a resumed run keeps its own unless given one.
    #[arg(long, value_name = "PATTERN", value_parser = fsage_plan::DataPattern::parse)]
    pub data: Option<fsage_plan::DataPattern>,
    /// Every file exactly its bin's size (the original tool's behaviour).
    #[arg(long)]
    pub exact_sizes: bool,
    /// Allocation unit for counting space. Default: the target file system's block size (4096 in
    /// a dry run without a target).
    #[arg(long, value_parser = fsage_units::parse_size)]
    pub block_size: Option<u64>,
    /// File operations run on N threads; the decisions (and the op log) stay the same for every N.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// With --threads, what picks an operation's thread: `directory` keeps each directory on
    /// one thread (its lock is never shared, but a thread idles while the planner works in the
    /// others' directories), `file` spreads every directory's files over the threads, `auto`
    /// keeps directories together while that splits the work evenly (checked at every checkpoint).
    /// `directory` and `auto` go by file in a tree with fewer than 8 directories per thread.
    #[arg(long, value_enum, default_value_t = ShardArg::Auto, value_name = "RULE")]
    pub shard_by: ShardArg,
    /// Stop after this long (e.g. 90s, 30m, 2h: a unit is required). Counts every session of a
    /// resumed run.
    #[arg(long, value_name = "DUR", value_parser = crate::util::positive_duration)]
    pub max_time: Option<Duration>,
    /// Stop after writing this many times the capacity.
    #[arg(long)]
    pub max_overwrites: Option<f64>,
    /// Stop once the age histogram's chi-squared fit reaches this p-value (checked every 1000 ticks).
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Stop after this many operations (ticks, the rapid phase included).
    #[arg(long)]
    pub max_ops: Option<u64>,
    /// With --resume: drop the stopping conditions saved with the run (a resumed run keeps them
    /// otherwise); give new ones beside it, or none to run to T.
    #[arg(long, requires = "resume")]
    pub clear_limits: bool,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one line per operation to FILE.
    #[arg(long, value_name = "FILE")]
    pub op_log: Option<PathBuf>,
    /// State file for checkpoints and --resume. Default for a real run: TARGET_DIR.fsage-state
    /// beside the target; a dry run keeps one only when asked.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Time between checkpoints (at least; a large state is saved less often).
    #[arg(long, default_value = "5s", value_name = "DUR", value_parser = crate::util::positive_duration)]
    pub checkpoint_interval: Duration,
    /// Continue the run saved in STATE; stopping conditions and --threads may change, options
    /// that change decisions may not.
    #[arg(long, value_name = "STATE", conflicts_with_all = ["profile", "state"])]
    pub resume: Option<PathBuf>,
    /// No progress display and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Age TARGET_DIR even though it is not empty; with --device, format a device that holds a
    /// file system.
    #[arg(long)]
    pub force: bool,
    /// Make a file system of this kind on a new image file (TARGET is then the image path), mount
    /// it, age it, unmount it: the one-command main job. The capacity is the file system's. With
    /// --dry-run and --size: plan at the usable space of a new file system of that size (made in
    /// memory to read it, then removed); no TARGET.
    #[arg(long, value_parser = fs_kind_parser(), conflicts_with_all = ["capacity", "resume"])]
    pub fs: Option<FsKind>,
    /// Size of the image made by --fs (e.g. 4GiB); with --device, of the file system (default:
    /// the whole device).
    #[arg(long, requires = "fs", value_parser = fsage_units::parse_size)]
    pub size: Option<u64>,
    /// With --fs: format this block device (e.g. a slow device from `fsage dev create`) instead
    /// of an image; TARGET is then the directory to mount it on.
    #[arg(long, requires = "fs")]
    pub device: Option<PathBuf>,
    /// Age the drive too: an SSD model (ssd-sata, ssd-nvme or a model file) is fed the run's
    /// block requests to the image at memory speed, and its state (the FTL) is saved beside the
    /// image as IMAGE.ftl, where `fsage dev create --image IMAGE --model M` starts from it. With
    /// --fs (or --resume of such a run; give it again to go on aging the drive). Use
    /// --write-mode write: fallocate writes no data, so the drive sees only metadata.
    #[arg(long, value_name = "NAME|FILE")]
    pub device_model: Option<String>,
    /// Extra mkfs options for --fs, as one string.
    #[arg(long, requires = "fs", allow_hyphen_values = true)]
    pub mkfs_opts: Option<String>,
    /// With --fs: run in a virtual machine (`fsage vm`) even if this kernel has the file
    /// system. Without --vm or --no-vm, a kind this kernel lacks (f2fs, nilfs2) runs in one.
    #[arg(long, requires = "fs", conflicts_with = "no_vm")]
    pub vm: bool,
    /// With --fs: never run in a virtual machine (a kind this kernel lacks is refused).
    #[arg(long, requires = "fs")]
    pub no_vm: bool,
    /// Directory to age (created if missing); with --fs, the image file to create (with --device,
    /// the directory to mount the device on). Optional with --dry-run when --capacity is given.
    pub target: Option<PathBuf>,
}

/// clap's parser of a file system kind: the names of fsage-sys's descriptor table, which help and
/// clap's errors list as the possible values.
pub fn fs_kind_parser() -> impl clap::builder::TypedValueParser<Value = FsKind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(FsKind::NAMES).try_map(|s| FsKind::parse(&s))
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// A state file written by `fsage age`, or the image or target of the run (its state
    /// beside it: `IMAGE.fsage-state`).
    pub state: PathBuf,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}

fn stop_conditions(args: &AgeArgs) -> Result<StopConditions, CmdError> {
    if let Some(c) = args.confidence {
        if !(c > 0.0 && c < 1.0) {
            return Err(bad_input(format!(
                "--confidence {c}: must lie in (0, 1), e.g. 0.95"
            )));
        }
    }
    if let Some(m) = args.max_overwrites {
        if !(m > 0.0 && m.is_finite()) {
            return Err(bad_input(format!(
                "--max-overwrites {m}: must be a positive number"
            )));
        }
    }
    if args.max_ops == Some(0) {
        return Err(bad_input("--max-ops 0: must be at least 1"));
    }
    Ok(StopConditions {
        max_time: args.max_time,
        max_overwrites: args.max_overwrites,
        confidence: args.confidence,
        max_ops: args.max_ops,
    })
}

/// The flags as a library request; every value is parsed and range-checked here, so errors name
/// the flag.
fn request(args: &AgeArgs) -> Result<AgeRequest, CmdError> {
    if args.threads == 0 || args.threads > 256 {
        return Err(bad_input(format!(
            "--threads {}: must be between 1 and 256",
            args.threads
        )));
    }
    if let Some(f) = args.fullness {
        fsage_core::age::check_fullness(f).map_err(|e| bad_input(format!("--{e}")))?;
    }
    let new_fs = match args.fs {
        None => None,
        Some(fs) => Some(NewFs {
            kind: fs,
            size: match args.size {
                None if args.device.is_none() => {
                    return Err(bad_input("--fs needs --size (or --device)"))
                }
                s => s,
            },
            mkfs_opts: args
                .mkfs_opts
                .as_deref()
                .map(|o| o.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            device: args.device.clone(),
        }),
    };
    if new_fs.is_some() && args.dry_run {
        if args.device.is_some() {
            return Err(bad_input(
                "--dry-run formats no device: give --fs KIND --size SIZE to plan at the usable \
                 space of a new file system of that size",
            ));
        }
        if args.target.is_some() {
            return Err(bad_input(
                "--dry-run with --fs makes no image: drop TARGET (the file system is made in \
                 memory to read its usable space, and removed)",
            ));
        }
    } else if new_fs.is_some() && args.target.is_none() {
        return Err(bad_input(if args.device.is_some() {
            "with --device, TARGET is the directory to mount the new file system on"
        } else {
            "with --fs, TARGET is the image file to create, e.g. /dev/shm/aged.img"
        }));
    }
    if args.resume.is_none() && !args.dry_run && args.target.is_none() {
        return Err(bad_input(
            "TARGET_DIR is required (or use --dry-run with --capacity)",
        ));
    }
    if args.resume.is_none() && args.target.is_none() && args.capacity.is_none() && new_fs.is_none()
    {
        return Err(bad_input(
            "--capacity is needed: there is no target file system to take it from",
        ));
    }
    // Output paths are checked here too, so that the error names the flag.
    let state_out = args.state.as_ref().filter(|_| args.resume.is_none());
    for (flag, path) in [
        ("--json", args.json.as_ref()),
        ("--op-log", args.op_log.as_ref()),
        ("--state", state_out),
    ] {
        if let Some(p) = path {
            fsage_sys::check_writable_file(p).map_err(|e| bad_input(format!("{flag} {e}")))?;
        }
    }
    let block_size = args.block_size;
    // Refused before anything is made (an image with --fs), by the library's rule.
    if let Some(b) = block_size {
        fsage_core::age::check_block_size(b)
            .map_err(|e| CmdError::from(e).context("--block-size"))?;
    }
    Ok(AgeRequest {
        profile: args.profile.clone(),
        target: args.target.clone(),
        capacity: args.capacity,
        fullness: args.fullness,
        seed: args.seed,
        dry_run: args.dry_run,
        write_mode: args.write_mode.map(|m| match m {
            WriteModeArg::Fallocate => WriteMode::Fallocate,
            WriteModeArg::Write => WriteMode::Write,
        }),
        data: args.data,
        exact_sizes: args.exact_sizes,
        block_size,
        threads: args.threads,
        shard_by: match args.shard_by {
            ShardArg::Auto => fsage_exec::Sharding::Auto,
            ShardArg::File => fsage_exec::Sharding::File,
            ShardArg::Directory => fsage_exec::Sharding::Directory,
        },
        stop: stop_conditions(args)?,
        clear_limits: args.clear_limits,
        json: args.json.clone(),
        op_log: args.op_log.clone(),
        state: args.state.clone(),
        checkpoint_interval: args.checkpoint_interval,
        resume: args.resume.clone(),
        force: args.force,
        new_fs,
        device_model: args
            .device_model
            .as_deref()
            .map(fsage_device::resolve)
            .transpose()
            .map_err(|e| CmdError::from(e).context("--device-model"))?,
    })
}

/// Prints notices as `fsage: ...` on stderr and draws the progress bar.
struct Console {
    bar: Bar,
    quiet: bool,
}

impl Observer for Console {
    fn update(&mut self, progress: &dyn Fn() -> Progress, elapsed: Duration) {
        self.bar.update(progress, elapsed);
    }
    fn finish(&mut self) {
        self.bar.finish();
    }
}

impl fsage_host::StepObserver for Console {
    fn note(&mut self, msg: &str) {
        if !self.quiet {
            eprintln!("fsage: {msg}");
        }
    }
}

impl AgeObserver for Console {
    fn notice(&mut self, level: Level, text: &str) {
        match level {
            Level::Warning => eprintln!("fsage: warning: {text}"),
            Level::Info if !self.quiet => eprintln!("fsage: {text}"),
            Level::Info => {}
        }
    }
}

pub fn run(args: AgeArgs) -> CmdResult {
    // Before anything is made (an image, a mount), so Ctrl-C always cleans up.
    fsage_signals::install();
    // The new file system's image (or device) is locked here, before a guest may be started to
    // make it: the guest's locks are its own (its /run), so only the host's keeps a second
    // command off the image. `age` takes the same lock again on this thread when it runs here.
    let _lock = match (&args.fs, args.device.as_ref().or(args.target.as_ref())) {
        (Some(_), Some(t)) if args.resume.is_none() && !args.dry_run => Some(
            fsage_sys::lock::lock_target_or_refuse(t, "the image or device")?,
        ),
        _ => None,
    };
    // A run resumed on the image it made goes back where that file system can be mounted (a
    // guest when this kernel lacks it), its image locked here as a new one is. Its state is read
    // once, here: the step's shares and the guest's file system follow from what it names.
    let resumed = args
        .resume
        .as_deref()
        .and_then(fsage_host::ResumedImage::of);
    let _resume_lock = resumed
        .as_ref()
        .map(|r| fsage_sys::lock::lock_target_or_refuse(&r.image, "the image or device"))
        .transpose()?;
    let resumed_kind = resumed
        .as_ref()
        .and_then(|r| r.fs.as_deref())
        .and_then(fsage_lab::FsKind::by_name);
    // Where it runs is decided once, here; the request is the same either way.
    let runs = match args.fs.or(resumed_kind) {
        Some(fs) => crate::vm_cmd::where_to_run(fs, args.vm, args.no_vm),
        None => fsage_host::Runs::Native,
    };
    let req = request(&args)?;
    let mut console = Console {
        bar: Bar::new(args.quiet),
        quiet: args.quiet,
    };
    let step = fsage_host::Step::Age(Box::new(fsage_host::AgeStep {
        request: req,
        mount: None,
        resumed,
    }));
    let fsage_host::StepResult::Age(out) =
        crate::vm_cmd::run_step(&runs, &step, &mut console)?.result
    else {
        return Err(CmdError::from(fsage_sys::Error::operation(
            "aging: the host answered another step",
        )));
    };

    if out.finished_earlier {
        eprintln!(
            "fsage: {} is a finished run: nothing left to do, the target is not touched",
            out.state
                .as_ref()
                .map_or(String::new(), |s| s.display().to_string())
        );
        if let Some(j) = &out.json {
            eprintln!("fsage: wrote the finished run's report to {}", j.display());
        }
        return Ok(());
    }
    let rep = &out.report;
    if let (false, Some((image, fs))) = (args.quiet, &out.image) {
        let how = if rep.converged {
            "aged".to_string()
        } else {
            format!(
                "partly aged (tick {} of {}; --resume {} goes on)",
                rep.ticks,
                rep.t_estimate,
                out.state
                    .as_ref()
                    .map_or(String::new(), |s| fsage_sys::shell_arg(s))
            )
        };
        let on = if fsage_sys::is_block_device(image) {
            "file system is on"
        } else {
            "image is"
        };
        eprintln!(
            "fsage: unmounted; the {how} {fs} {on} {}, its report {}",
            image.display(),
            out.json
                .as_ref()
                .map_or("(none)".into(), |j| j.display().to_string())
        );
    }
    if !args.quiet {
        print!("{}", export(&Text, rep));
        if args.dry_run {
            println!(
                "{}",
                dry_run_capacity(rep.capacity, args.capacity, out.usable_of)
            );
        }
        if let (Some(s), false) = (&out.state, out.state_failed) {
            if rep.converged {
                println!("state: {} (the run is finished)", s.display());
            } else {
                println!(
                    "state: {} ({} checkpoints this session); continue with: fsage age --resume {}",
                    s.display(),
                    out.checkpoints,
                    fsage_sys::shell_arg(s)
                );
            }
        }
    }
    match rep.stop_reason {
        StopReason::IoError => {
            let err = rep.error.as_deref().unwrap_or("unknown");
            if out.target_refused {
                eprintln!("fsage: the run stopped: {err}. The target cannot be aged as it is.");
            } else {
                eprintln!(
                    "fsage: the run stopped on an I/O error: {err}. If the file system failed \
                     under the aging workload, that is a stress-test finding worth reporting; the \
                     state file lets the run resume."
                );
            }
            Err(CmdError::said(Blame::Operation))
        }
        StopReason::Interrupted => Err(interrupted()),
        _ => Ok(()),
    }
}

/// What capacity a dry run assumed: a real file system of a size offers less than that size, so
/// a dry run at `--capacity 4GiB` writes more than a real 4 GiB image would.
fn dry_run_capacity(
    capacity: u64,
    given: Option<u64>,
    usable_of: Option<(fsage_lab::FsKind, u64)>,
) -> String {
    let cap = fsage_units::format_size(capacity);
    match (usable_of, given) {
        (Some((kind, size)), _) => format!(
            "capacity: {cap}, the usable space of a new {} of {} (what a real run on one sees)",
            kind.name(),
            fsage_units::format_size(size)
        ),
        (None, Some(_)) => {
            // The size as a flag takes it back exactly: `4GiB`, else bytes.
            let flag = if cap.contains('.') {
                capacity.to_string()
            } else {
                cap.replace(' ', "")
            };
            format!(
                "capacity: {cap} as given (--capacity); a real file system of that size has less \
                 usable space (metadata, journal) and a real run on it decides differently: \
                 --dry-run --fs KIND --size {flag} plans at what a new one offers"
            )
        }
        (None, None) => format!("capacity: {cap}, the target file system's"),
    }
}

/// `fsage status STATE`: where a run stands, read from its state file alone.
pub fn status(a: StatusArgs) -> CmdResult {
    let (path, st) = State::locate(&a.state)?;
    let status = st.status(&path);
    if a.json {
        print!("{}", export(&Json, &status));
    } else {
        print!("{}", export(&Text, &status));
    }
    Ok(())
}
