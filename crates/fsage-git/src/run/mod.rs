//! The run: replay commit after commit, measure at the first commit, every N and at the last,
//! checkpoint after every measurement (and, in tree mode, after every commit), stop cleanly
//! between commits on SIGINT or SIGTERM, and resume from the checkpoint.

mod aged;
mod checkpoint;
mod checks;

use crate::drives::AgedDrives;
use crate::git::{self, Commit, Range};
use crate::measure;
use crate::series::{GitRow, GitSeries, MemoryFigures, SERIES_FORMAT};
use crate::slow::MeasureDevice;
use crate::tree::{self, TreeReplay};
use crate::{Error, Result};
use aged::Aged;
use checkpoint::{load_state, save_state, Outputs, RunKey, State, STATE_FORMAT};
pub use checkpoint::{source_clone_path, state_path, trace_file_name, traces_path};
pub use checks::MIN_MEM_LIMIT;
use checks::{
    check_dir_of, check_fits, check_neighbours, check_target, enter_mem_limit, is_measured,
    parent_dir,
};
use fsage_lab::FsKind;
use fsage_slowdev::Latencies;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where the aged instance lives.
#[derive(Debug, Clone)]
pub enum Target {
    /// A new image file (made, mounted at `IMAGE.mnt`, unmounted at the end), holding the aged
    /// tree in a directory named after the repository.
    Image {
        path: PathBuf,
        kind: FsKind,
        size: u64,
    },
    /// A directory on a mounted file system (empty unless resuming): the aged tree itself. The
    /// clean instance is an image of `clean_kind` at `clean_image`, as large as the block device
    /// under the directory, or `clean_size` when given (needed when there is no block device).
    /// fsage's own files (checkpoint, a bundle's clone) go beside `clean_image`, off the aged
    /// file system.
    Dir {
        path: PathBuf,
        clean_kind: FsKind,
        clean_image: PathBuf,
        clean_size: Option<u64>,
    },
}

/// The clean image of a directory target when none is given: `clean.img` in a directory of
/// root's alone (mode 0700) in /dev/shm (else the temporary directory), named after the target's
/// device and inode (mount roots of one kind share inode numbers), so that a resumed run finds
/// (and removes) what a killed one left. The directory's name can be computed, so it is made by
/// fsage or refused (another user's, a link, writable by others): nobody else can put anything
/// where the clean instance, its mount point and the checkpoint go.
pub fn default_clean_image(target: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dir = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let m = std::fs::metadata(target)
        .map_err(|e| Error::input(format!("{}: {e}", target.display())))?;
    let own = dir.join(format!("fsage-git-{:x}-{}", m.dev(), m.ino()));
    fsage_sys::safe::ensure_private_dir(&own, "the directory of the clean instance")?;
    Ok(own.join("clean.img"))
}

impl Target {
    /// Where fsage's files of the run are named from: the image, or the clean image of a
    /// directory target (so that nothing of fsage's lands in the aged file system).
    fn files_base(&self) -> &Path {
        match self {
            Target::Image { path, .. } => path,
            Target::Dir { clean_image, .. } => clean_image,
        }
    }
}

/// How commits are replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The published method: `git pull` of each commit into a repository on the aged fs.
    Git,
    /// Each commit's changes as fsage-exec operations on a plain working tree.
    Tree,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Git => "git",
            Mode::Tree => "tree",
        }
    }
}

#[derive(Debug, Clone)]
pub struct GitAgeOptions {
    pub repo: PathBuf,
    pub target: Target,
    pub mode: Mode,
    /// Measure every this many commits (and at the first and the last).
    pub every: u64,
    pub range: Range,
    /// Let git collect garbage automatically (off, `gc.auto 0`, by default).
    pub gc: bool,
    /// Go on from the checkpoint.
    pub resume: bool,
    /// Tree mode: write the op log here.
    pub op_log: Option<PathBuf>,
    /// Skip the measurements (replay only; for timing the replay itself).
    pub no_measure: bool,
    /// Take every measurement with the instance on a slow device running this model (a fixed
    /// latency or one with state, such as `hdd-7200`; an image target only); none: on plain
    /// loop devices.
    pub device: Option<MeasureDevice>,
    /// Timed greps per instance and measurement (their median is the series' time).
    pub grep_reps: u32,
    /// Device models every timed grep's trace is costed on (the median grep's figures kept per
    /// model, [`measure::median_modeled`]).
    pub cost_models: Vec<fsage_device::ModelSpec>,
    /// What stands in for grep's think time when traces are costed (`fsage_device::cost`).
    pub think: fsage_device::Think,
    /// Sync the aged file system after every pull (or tree commit): what each wrote reaches
    /// the disk before the next, as on a developer's disk where pulls are hours apart, and the
    /// layout no longer depends on when the host's writeback happened to run.
    pub sync_each_pull: bool,
    /// Replay on one CPU (`fsage_sys::cpu::OneCpu`): the making of the aged instance and every
    /// pull with its sync (fsage, the gits it starts, and the kernel's unbound workqueues:
    /// writeback, btrfs's and xfs's workers) on the first CPU fsage may use, so that which CPU
    /// and worker allocates a file's blocks is the same in every run; the clean copy is written
    /// there too, the greps run on every CPU; btrfs instances are mounted as
    /// [`measure::instance_mount_options`] says. The workqueue mask is machine-wide; it comes
    /// back when the run ends.
    pub one_cpu: bool,
    /// Warm-cache measurements (Conway's Figure 5): the aged instance is neither remounted nor
    /// are caches dropped before its greps, which find what the replay left in memory; the
    /// clean copy is measured cold, as before (the figure's reference).
    pub warm_cache: bool,
    /// Run everything (replay, greps, the clean copy) in a memory cgroup of this many bytes,
    /// page cache included, as a machine with that much memory would.
    pub mem_limit: Option<u64>,
    /// Where the caller writes the series as JSON and CSV: kept in the checkpoint, so that a
    /// resume writes them there too ([`Outcome::json`], [`Outcome::csv`]).
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}

/// What the caller sees as the run goes.
pub trait Observer {
    /// After every commit: commits done, commits in all, replay seconds so far.
    fn progress(&mut self, _done: u64, _total: u64, _replay_seconds: f64) {}
    /// After every measurement.
    fn measured(&mut self, _row: &GitRow) {}
    /// Something the user should know (a resume, a skipped figure).
    fn note(&mut self, _msg: &str) {}
}

/// No output.
pub struct Silent;
impl Observer for Silent {}

#[derive(Debug)]
pub struct Outcome {
    pub series: GitSeries,
    /// Stopped by a signal before the last commit.
    pub interrupted: bool,
    pub state: PathBuf,
    /// Where the series goes as JSON and CSV: the paths given, or a resumed run's saved ones.
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}

/// Runs (or, with `resume`, continues) a Git-history aging run.
pub fn git_age(opts: &GitAgeOptions, obs: &mut dyn Observer) -> Result<Outcome> {
    let state_file = state_path(&opts.target);
    let image = match &opts.target {
        Target::Image { path, .. } => Some(path.clone()),
        Target::Dir { .. } => None,
    };
    // What was there before this run is never removed on its way out.
    let had_image = image.as_ref().is_some_and(|p| p.exists());
    let had_state = state_file.exists();
    let had_mnt = image
        .as_ref()
        .is_some_and(|p| measure::mount_dir(p).exists());
    let had_drives = image
        .as_ref()
        .is_some_and(|p| crate::drives::drives_path(p).exists());
    // Before the CPU is confined: a Ctrl-C then stops the run between commits, and the guard
    // sets the workqueues free when it returns.
    fsage_signals::install();
    let one_cpu = if opts.one_cpu {
        let c = fsage_sys::cpu::OneCpu::enter()?;
        c.hold()?;
        obs.note(&format!(
            "replaying on one CPU: making the aged instance, every pull and its sync, and the \
             kernel's unbound workqueues meanwhile, on CPU {} (measurements on every CPU)",
            c.cpu()
        ));
        Some(c)
    } else {
        None
    };
    let one_cpu = one_cpu.as_ref();
    let out = match opts.mem_limit {
        None => git_age_inner(opts, one_cpu, None, obs),
        Some(bytes) if bytes >= MIN_MEM_LIMIT => {
            let cg = enter_mem_limit(bytes)?;
            obs.note(&format!(
                "running in memory cgroup {} (cgroup {}), limited to {}",
                cg.path().display(),
                cg.version(),
                fsage_units::format_size(bytes)
            ));
            let limit = MemLimit { cg: &cg, bytes };
            let out = git_age_inner(opts, one_cpu, Some(&limit), obs);
            // Left and removed whatever the run did (the guard does it on a panic too).
            let left = cg
                .remove()
                .map_err(|e| Error::operation(format!("the memory cgroup: {e}")));
            let out = out?;
            left?;
            Ok(out)
        }
        // Refused by the checks, before anything is made.
        Some(_) => git_age_inner(opts, one_cpu, None, obs),
    };
    if let (Err(_), Some(image)) = (&out, &image) {
        // The run's mount is down (its guard went with the error): leave nothing but what a
        // resume needs, and say what that is.
        let mnt = measure::mount_dir(image);
        if !had_mnt && !fsage_sys::is_mount_point(&mnt) {
            let _ = std::fs::remove_dir(&mnt);
        }
        if !had_image && image.exists() {
            // How the image was made is for `image save` of a finished run; not needed to resume.
            let _ = std::fs::remove_file(fsage_lab::fs::sidecar_path(image));
            if state_file.exists() && !had_state {
                obs.note(&format!(
                    "kept {} and its checkpoint {} for `--resume` (remove both to start again)",
                    image.display(),
                    state_file.display()
                ));
            } else if !state_file.exists() {
                // Failed before its first checkpoint: nothing to resume from.
                let _ = std::fs::remove_file(image);
                if !had_drives {
                    let _ = std::fs::remove_dir_all(crate::drives::drives_path(image));
                }
            }
        }
    }
    out
}

/// `f` on every CPU, for a run on one ([`GitAgeOptions::one_cpu`]): a measurement's greps and
/// their traces are the host's, not the replay's, and a grep beside its loop device's worker on
/// one CPU issues its reads in another pattern.
fn unconfined<T>(
    one_cpu: Option<&fsage_sys::cpu::OneCpu>,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let Some(c) = one_cpu else {
        return f();
    };
    c.release();
    let out = f();
    c.hold()?;
    out
}

/// After a measurement: the aged image, read-only since its cold greps (the clean copy read it
/// so, writing no access times into its history), mounted writable again for the replay, on the
/// replay's CPU (a warm measurement left it as the replay had it).
fn after_measure(aged: &mut Aged, opts: &GitAgeOptions) -> Result<()> {
    if opts.warm_cache {
        return Ok(());
    }
    aged.mount_for_replay()
}

/// A run's memory limit: `bytes` for the page cache and the processes, with the tmpfs pages the
/// run has written (an image or the bundle's clone in /dev/shm: on a real machine they are on a
/// disk, not in its memory) added on top, again before every pull and measurement, since they
/// are charged to the cgroup as they are written and cannot be evicted.
struct MemLimit<'a> {
    cg: &'a fsage_workload::cgroup::MemCgroup,
    bytes: u64,
}

impl MemLimit<'_> {
    /// Sets the limit to `bytes` plus the tmpfs pages charged now; what the cgroup holds then.
    fn refresh(&self) -> Result<MemoryFigures> {
        self.with_room(0)
    }

    /// The limit with `room` bytes more, for a while.
    fn with_room(&self, room: u64) -> Result<MemoryFigures> {
        let shmem_bytes = self.cg.shmem();
        let limit_bytes = self.bytes + shmem_bytes;
        self.cg
            .set_limit(limit_bytes + room)
            .map_err(|e| Error::operation(format!("the memory cgroup's limit: {e}")))?;
        Ok(MemoryFigures {
            limit_bytes,
            shmem_bytes,
            cache_bytes: self.cg.cache(),
        })
    }
}

fn git_age_inner(
    opts: &GitAgeOptions,
    one_cpu: Option<&fsage_sys::cpu::OneCpu>,
    mem_limit: Option<&MemLimit>,
    obs: &mut dyn Observer,
) -> Result<Outcome> {
    check_neighbours(opts)?;
    if opts.warm_cache {
        for r in measure::proactive_reclaimers(Path::new(measure::DAMON_KDAMONDS)) {
            obs.note(&format!(
                "warning: {r}: warm greps will find pages of the aged tree evicted without \
                 memory pressure (pages no pull touched between two measurements), which a \
                 machine without proactive reclaim keeps"
            ));
        }
    }
    if opts.every == 0 {
        return Err(Error::input(
            "measure every N commits: N must be at least 1",
        ));
    }
    if opts.device.is_some() && matches!(opts.target, Target::Dir { .. }) {
        return Err(Error::input(
            "measuring on a slow device needs an image target (fsage mounts the image through \
             the device); a directory on a mounted file system cannot be",
        ));
    }
    if opts.grep_reps == 0 {
        return Err(Error::input("--grep-reps: at least 1 grep per measurement"));
    }
    if opts.warm_cache && opts.device.is_some() {
        return Err(Error::input(
            "--warm-cache measures the aged instance as the replay left it in memory; a slow \
             device means mounting it again on the device, which starts its cache cold: give one",
        ));
    }
    if let Some(l) = opts.mem_limit {
        if l < MIN_MEM_LIMIT {
            return Err(Error::input(format!(
                "--mem-limit {}: at least {} (git, grep and fsage itself run inside the limit, \
                 and a process over it is killed)",
                fsage_units::format_size(l),
                fsage_units::format_size(MIN_MEM_LIMIT)
            )));
        }
    }
    for (i, m) in opts.cost_models.iter().enumerate() {
        if opts.cost_models[..i].iter().any(|o| o.name == m.name) {
            return Err(Error::input(format!(
                "--cost-models: `{}` is given twice",
                m.name
            )));
        }
    }
    // Every check of the input before anything is made.
    let state_file = state_path(&opts.target);
    let traces_dir = traces_path(&opts.target);
    let facts = check_target(opts, &state_file)?;
    if let Some(d) = &opts.device {
        d.model.build(facts.size).map_err(|e| {
            Error::input(format!(
                "--device-model: {}: {} (for a device of {} bytes)",
                d.model.name, e.message, facts.size
            ))
        })?;
    }
    for m in &opts.cost_models {
        m.build(facts.size).map_err(|e| {
            Error::input(format!(
                "--cost-models: {}: {} (for a device of {} bytes)",
                m.name, e.message, facts.size
            ))
        })?;
    }
    if !opts.resume
        && !opts.no_measure
        && std::fs::read_dir(&traces_dir).is_ok_and(|mut d| d.next().is_some())
    {
        return Err(Error::input(format!(
            "{}: traces of an earlier run are there; move or remove them to start again",
            traces_dir.display()
        )));
    }
    // The cost models (and the measuring device's model) that keep a drive state get drives
    // aged by the replay's own writes: an image target's (a directory's history is not fsage's
    // to trace: its greps are costed on erased drives).
    let drive_specs = match &opts.target {
        Target::Image { .. } => crate::drives::stateful(
            &opts
                .cost_models
                .iter()
                .chain(opts.device.as_ref().map(|d| &d.model))
                .collect::<Vec<_>>(),
        ),
        Target::Dir { .. } => Vec::new(),
    };
    // Without tracefs nothing can be fed (nor a grep traced to cost): the drives stay erased.
    let no_tracefs = !drive_specs.is_empty() && !Path::new("/sys/kernel/tracing").is_dir();
    let drive_specs = if no_tracefs { Vec::new() } else { drive_specs };
    crate::drives::check_names(&drive_specs)?;
    if let (Target::Image { path, .. }, false) = (&opts.target, opts.resume) {
        let dir = crate::drives::drives_path(path);
        if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(Error::input(format!(
                "{}: drive states of an earlier run are there; move or remove them to start \
                 again",
                dir.display()
            )));
        }
    }
    // One run per target at a time: a second one (a resume given twice, say) must not reuse, and
    // on its way out remove, the bundle clone the first is pulling from.
    let _lock =
        fsage_exec::preflight::lock_run(&state_file).map_err(|e| Error::input(e.to_string()))?;
    // And the image's lock, as every command that makes, mounts or ages an image takes it: an
    // `fs mount` or `age` of the same image is refused while this run has it.
    let _image_lock = match &opts.target {
        Target::Image { path, .. } => {
            Some(fsage_sys::lock::lock_target_or_refuse(path, "the image")?)
        }
        Target::Dir { .. } => None,
    };
    if let Some(p) = &opts.op_log {
        if !opts.resume {
            check_dir_of(p)?;
        }
    }
    if let (Target::Dir { path, .. }, Some(log)) = (&opts.target, &opts.op_log) {
        let inside = match (parent_dir(log).canonicalize(), path.canonicalize()) {
            (Ok(l), Ok(t)) => l.starts_with(t),
            _ => false,
        };
        if inside {
            return Err(Error::input(format!(
                "{}: the op log would be inside the tree being aged; put it elsewhere",
                log.display()
            )));
        }
    }
    let git_version = git::version()?;
    let grep_version = measure::grep_version()?;
    let source = git::open_source(&opts.repo, &source_clone_path(&opts.target), opts.resume)?;
    let commits = git::commit_list(&source.path, &opts.range)?;
    let n = commits.len();
    let kind = facts.clean_kind;
    let size = facts.size;
    if let (Target::Image { .. }, false) = (&opts.target, opts.resume) {
        check_fits(&source.path, &commits[n - 1].id, size)?;
    }
    // A plain latency keys the run as before models (older checkpoints resume); any other
    // model is keyed by its whole spec.
    let plain_latency = opts.device.as_ref().and_then(|d| {
        let l = d.latencies()?;
        (d.model == fsage_device::ModelSpec::fixed(l.read_ns)).then_some(l.read_ns)
    });
    let key = RunKey {
        repo: source.origin.to_string_lossy().into_owned(),
        mode: opts.mode.name().into(),
        fs: facts.aged_fs.clone(),
        clean_fs: match &opts.target {
            Target::Image { .. } => None,
            Target::Dir { clean_kind, .. } => Some(clean_kind.name().into()),
        },
        size,
        every: opts.every,
        gc: opts.gc,
        first: commits[0].id.clone(),
        last: commits[n - 1].id.clone(),
        commits: n as u64,
        device: plain_latency.map(Latencies::uniform),
        device_model: opts
            .device
            .as_ref()
            .filter(|_| plain_latency.is_none())
            .map(|d| d.model.clone()),
        grep_reps: opts.grep_reps,
        cost_models: opts.cost_models.clone(),
        think: opts.think,
        sync_each_pull: opts.sync_each_pull,
        warm_cache: opts.warm_cache,
        mem_limit: opts.mem_limit,
        one_cpu: opts.one_cpu,
        settled: true,
        every_grep_costed: RunKey::every_grep_costed(
            opts.grep_reps,
            &opts.cost_models,
            opts.warm_cache,
        ),
        clean_cold_by_mount: opts.warm_cache,
    };

    // The aged instance, new or resumed.
    let prior = if opts.resume {
        let st = load_state(&state_file)?;
        if st.key != key {
            return Err(Error::input(format!(
                "{}: the checkpoint was made with other settings ({:?}); resume with the same \
                 repository, range, file systems, size, mode, every, gc, device latency or \
                 model, grep repetitions, cost models, think rule, sync and one CPU, by a build \
                 that measures as this one (read-only greps, btrfs's own sync, every grep \
                 costed)",
                state_file.display(),
                st.key
            )));
        }
        Some(st)
    } else {
        None
    };
    let outputs = match &prior {
        Some(st) => Outputs::resumed(Outputs::given(opts), &st.outputs, &state_file)?,
        None => Outputs::given(opts),
    };
    let mut drive_notes = Vec::new();
    let mut aged = match &opts.target {
        Target::Image { path, kind, size } => {
            let mnt = measure::mount_dir(path);
            if prior.is_none() {
                fsage_lab::create_image(*kind, *size, path, &measure::aged_mkfs_opts(*kind))?;
            } else if !fsage_sys::loops_backed_by(path).is_empty() {
                obs.note(&format!(
                    "unmounting {} (left mounted by a stopped run)",
                    path.display()
                ));
                fsage_lab::mount::umount(path)?;
            }
            fsage_sys::safe::make_mount_dir(&mnt)?;
            // Resolved once it is checked (made here, or an empty one of root's, no link).
            let mnt = mnt
                .canonicalize()
                .map_err(|e| crate::Error::io(&mnt, "", e))?;
            let drives = match (drive_specs.is_empty(), &prior) {
                (true, _) => None,
                (false, None) => Some(AgedDrives::new(&drive_specs, *size, path)?),
                (false, Some(_)) => Some(AgedDrives::load(
                    &drive_specs,
                    *size,
                    path,
                    &mut drive_notes,
                )?),
            };
            let mut a = Aged {
                image: Some(path.clone()),
                dir_rdev: None,
                tree: mnt.join(&source.name),
                mnt,
                mounted: None,
                drives,
                options: measure::instance_mount_options(*kind, opts.one_cpu),
            };
            a.mount()?;
            a
        }
        Target::Dir { path, .. } => {
            let p = path
                .canonicalize()
                .map_err(|e| crate::Error::io(path, "", e))?;
            Aged {
                image: None,
                dir_rdev: facts.dir_rdev,
                mnt: p.clone(),
                mounted: None,
                tree: p,
                drives: None,
                options: Default::default(),
            }
        }
    };
    let clean_image = match &opts.target {
        Target::Image { path, .. } => fsage_sys::with_suffix(path, ".clean"),
        Target::Dir { clean_image, .. } => clean_image.clone(),
    };
    measure::remove_stale_clean(&clean_image)?;

    // An image target's aged instance is remounted (read-only) for cold greps.
    let remounted = matches!(opts.target, Target::Image { .. }) && !opts.warm_cache;
    let mut series = match &prior {
        Some(st) => st.series.clone(),
        None => GitSeries {
            format: SERIES_FORMAT.into(),
            repo: key.repo.clone(),
            mode: key.mode.clone(),
            fs: key.fs.clone(),
            clean_fs: kind.name().into(),
            no_measure: opts.no_measure,
            size_bytes: size,
            every: opts.every,
            gc: opts.gc,
            tree: aged.tree.to_string_lossy().into_owned(),
            first_commit: key.first.clone(),
            last_commit: key.last.clone(),
            commits_total: n as u64,
            pulls_done: 0,
            finished: false,
            remounted,
            warm_cache: opts.warm_cache,
            mem_limit_bytes: opts.mem_limit,
            device_latencies: opts.device.as_ref().and_then(|d| d.latencies()),
            device_model: opts.device.as_ref().map(|d| d.model.clone()),
            grep_reps: opts.grep_reps,
            cost_models: opts.cost_models.clone(),
            cost_think: opts.think,
            sync_each_pull: opts.sync_each_pull,
            one_cpu: opts.one_cpu,
            greps_read_only: remounted,
            traces_dir: None,
            aged_drives: drive_specs.iter().map(|m| m.name.clone()).collect(),
            drives_dir: aged
                .drives
                .as_ref()
                .map(|d| d.dir.to_string_lossy().into_owned()),
            drive_notes: match &opts.target {
                Target::Image { .. } if no_tracefs => {
                    vec![
                        "no tracefs (/sys/kernel/tracing): the drives are not aged by the \
                          replay; a device starts erased"
                            .into(),
                    ]
                }
                Target::Dir { .. } if opts.cost_models.iter().any(|m| m.keeps_state()) => {
                    vec![
                        "a directory target: its greps are costed on erased drives (pages \
                          read as data written in logical order), not on drives aged by its \
                          history"
                            .into(),
                    ]
                }
                _ => Vec::new(),
            },
            replay_seconds: 0.0,
            measure_seconds: 0.0,
            commits_per_second: None,
            git_version,
            grep_version,
            rows: Vec::new(),
        },
    };

    // Where to go on from.
    let mut done = 0usize;
    let mut replay: Option<TreeReplay> = None;
    match opts.mode {
        Mode::Git => {
            if prior.is_none() {
                std::fs::create_dir_all(&aged.tree)
                    .map_err(|e| crate::Error::io(&aged.tree, "mkdir", e))?;
                git::init_aged(&aged.tree, opts.gc)?;
            } else {
                if !aged.tree.join(".git").is_dir() {
                    return Err(Error::input(format!(
                        "{}: no repository there to resume",
                        aged.tree.display()
                    )));
                }
                let want = series.pulls_done as usize;
                // Remove the index lock a killed pull left before asking git anything.
                let lock = aged.tree.join(".git/index.lock");
                if lock.exists() {
                    std::fs::remove_file(&lock)
                        .map_err(|e| crate::Error::io(&lock, "remove", e))?;
                }
                match git::head(&aged.tree)? {
                    None if want == 0 => {}
                    None => {
                        return Err(Error::input(format!(
                            "{}: the repository has no commit, but the checkpoint says {want} \
                             were pulled",
                            aged.tree.display()
                        )))
                    }
                    Some(h) => {
                        let k = commits.iter().position(|c| c.id == h).ok_or_else(|| {
                            Error::input(format!(
                                "{}: HEAD {h} is not one of the commits being replayed",
                                aged.tree.display()
                            ))
                        })?;
                        if k + 1 < want {
                            return Err(Error::input(format!(
                                "{}: HEAD is commit {} of the replay but the checkpoint says {want} \
                                 were pulled",
                                aged.tree.display(),
                                k + 1
                            )));
                        }
                        git::restore_worktree(&aged.tree)?;
                        done = k + 1;
                        if done > want {
                            obs.note(&format!(
                                "the repository is {} commits past the checkpoint; going on from \
                                 there",
                                done - want
                            ));
                        }
                    }
                }
            }
        }
        Mode::Tree => {
            let (files, log, tick) = match &prior {
                None => {
                    std::fs::create_dir_all(&aged.tree)
                        .map_err(|e| crate::Error::io(&aged.tree, "mkdir", e))?;
                    (
                        tree::Files::new(),
                        outputs.op_log.as_deref().map(|p| (p, None)),
                        0,
                    )
                }
                Some(st) => {
                    done = st.series.pulls_done as usize;
                    let expect = if done == 0 {
                        tree::Files::new()
                    } else {
                        tree::ls_tree(&source.path, &commits[done - 1].id)?
                    };
                    let on_disk = tree::disk_files(&aged.tree)?;
                    if on_disk != expect {
                        return Err(Error::operation(format!(
                            "{}: the working tree does not match commit {} of the checkpoint \
                             (stopped in the middle of a commit); start the run again",
                            aged.tree.display(),
                            done
                        )));
                    }
                    let log = match (&outputs.op_log, st.op_log_len) {
                        (Some(p), Some(len)) => Some((p.as_path(), Some(len))),
                        (Some(p), None) => Some((p.as_path(), None)),
                        (None, _) => None,
                    };
                    (expect, log, st.tick)
                }
            };
            replay = Some(TreeReplay::open(
                &aged.tree,
                &source.path,
                files,
                log,
                tick,
            )?);
        }
    }
    series.pulls_done = done as u64;
    series.no_measure = opts.no_measure;
    if prior.is_some() {
        obs.note(&format!(
            "resuming at commit {} of {n} ({} measurements so far)",
            done,
            series.rows.len()
        ));
        if let Some(d) = aged.drives.as_mut() {
            d.gap_notes(done as u64, &mut drive_notes);
        }
    }
    for note in drive_notes {
        obs.note(&note);
        series.drive_notes.push(format!("at pull {done}: {note}"));
    }

    let pattern = measure::random_pattern();
    // A warm-cache run drops no cache itself; a drop by anyone else (it is machine-wide) empties
    // the aged instance's warm cache, and the next warm grep is then cold: counted from the
    // replay's start to the first measurement and from each aged grep to the next. Not counted
    // for the first measurement after a resumption, whose fresh mount starts cold anyway.
    let drops_seen = std::cell::Cell::new(if prior.is_some() {
        None
    } else {
        measure::caches_dropped()
    });
    let checkpoint = |series: &GitSeries, replay: &mut Option<TreeReplay>| -> Result<()> {
        let (op_log_len, tick) = match replay.as_mut() {
            Some(r) => (r.op_log_len()?, r.tick()),
            None => (None, 0),
        };
        save_state(
            &state_file,
            &State {
                format: STATE_FORMAT.into(),
                key: key.clone(),
                series: series.clone(),
                op_log_len,
                tick,
                outputs: outputs.clone(),
            },
        )
    };
    let measure_at = |i: usize,
                      aged: &mut Aged,
                      series: &mut GitSeries,
                      replay: &mut Option<TreeReplay>,
                      obs: &mut dyn Observer|
     -> Result<()> {
        if opts.no_measure {
            return Ok(());
        }
        let t = Instant::now();
        if let Some(r) = replay.as_mut() {
            r.suspend(); // its descriptors would keep the file system busy
        }
        // Warm: measured as the replay left it (neither remounted nor synced). A slow device
        // unmounts the image and mounts it through itself (`Aged::measure_slow`): a read-only
        // remount first would be undone at once.
        let rdev = if opts.warm_cache || opts.device.is_some() {
            aged.rdev()
        } else {
            aged.remount()?
        };
        let prepare_seconds = t.elapsed().as_secs_f64();
        let du = measure::du_bytes(&aged.tree)?;
        let foreign_drops = if opts.warm_cache {
            match (drops_seen.get(), measure::caches_dropped()) {
                (Some(before), Some(now)) => Some(now.saturating_sub(before)),
                _ => None,
            }
        } else {
            None
        };
        if let Some(n) = foreign_drops.filter(|&n| n > 0) {
            obs.note(&format!(
                "warning: another process dropped the machine's page cache {n} time(s) since the \
                 last measurement: the warm grep at pull {} finds a cache emptied, not what the \
                 replay left (run warm-cache aging where nothing else drops caches)",
                i + 1
            ));
        }
        // What the limit leaves the page cache now (the image's tmpfs pages grew in the pull).
        let memory = mem_limit.map(MemLimit::refresh).transpose()?;
        let grep = measure::Grep {
            pattern: &pattern,
            reps: opts.grep_reps,
            warm: opts.warm_cache,
            cold_by_mount: false,
        };
        let mut a = match &opts.device {
            None => {
                let copies = aged.drive_copies()?;
                let mut a = measure::measure_instance(&aged.mnt, rdev, du, grep, None)?;
                a.drives = copies;
                a
            }
            Some(d) => aged.measure_slow(d, du, grep)?,
        };
        drops_seen.set(measure::caches_dropped());
        a.figures.prepare_seconds = prepare_seconds;
        a.figures.caches_dropped_before = foreign_drops;
        a.figures.memory = memory;
        // The clean image (tmpfs pages when it is in /dev/shm) is made, written and removed
        // within the measurement: room for it on top, so that its pages do not push the aged
        // instance's cache out; back to the limit after.
        if let Some(l) = mem_limit {
            l.with_room(size)?;
        }
        let c = measure::clean_instance(
            kind,
            size,
            &clean_image,
            &aged.tree,
            du,
            // The clean copy, the reference, is measured cold: in a warm-cache run by its fresh
            // mount alone, so that the aged instance's cache stays as the replay left it.
            measure::Grep {
                warm: false,
                cold_by_mount: opts.warm_cache,
                ..grep
            },
            opts.device.as_ref(),
            &drive_specs,
            measure::CleanCopy {
                mount: measure::instance_mount_options(kind, opts.one_cpu),
                one_cpu,
            },
        )?;
        if let Some(l) = mem_limit {
            l.refresh()?;
        }
        let c0: &Commit = &commits[i];
        let pulls = i as u64 + 1;
        let mut figs = Vec::new();
        let models: Vec<&str> = opts.cost_models.iter().map(|m| m.name.as_str()).collect();
        for (which, m) in [("aged", a), ("clean", c)] {
            let mut f = m.figures;
            let reps = m.traces.len();
            let mut costed = Vec::new();
            // A warm run costs its first grep only: the greps after it find in memory what the
            // first read, so their median would be a grep of a cache, not of the layout.
            let costed_greps = if opts.warm_cache { 1 } else { usize::MAX };
            for (rep, tr) in m.traces.into_iter().enumerate().take(costed_greps) {
                let Some(mut tr) = tr else { continue };
                let rep = rep as u32;
                tr.source =
                    format!(
                    "cold grep -r of the {which} instance ({} on {}) at pull {pulls}, commit {}, \
                     of {}",
                    if which == "aged" { &key.fs } else { kind.name() },
                    fsage_units::format_size(size),
                    c0.id,
                    key.repo
                );
                if reps > 1 {
                    tr.source += &format!(" (grep {} of {reps})", rep + 1);
                }
                tr.device_size = Some(size);
                if fsage_sys::safe::lstat_own_name(&traces_dir, "the traces directory")?.is_none() {
                    std::fs::create_dir(&traces_dir)
                        .map_err(|e| crate::Error::io(&traces_dir, "mkdir", e))?;
                }
                let file = traces_dir.join(trace_file_name(pulls, which, rep));
                tr.write(&file)?;
                if rep == 0 {
                    f.trace_file = Some(file.to_string_lossy().into_owned());
                }
                series.traces_dir = Some(traces_dir.to_string_lossy().into_owned());
                let t = Instant::now();
                // Each costing on fresh models (a drive's copy each): every grep's trace starts
                // from the drive as the instance was mounted.
                let on = measure::cost_on_models(
                    &tr,
                    &opts.cost_models,
                    size,
                    du,
                    opts.think,
                    &m.drives,
                )?;
                costed.push((rep, on));
                f.cost_seconds += t.elapsed().as_secs_f64();
            }
            f.modeled = measure::median_modeled(&costed, &models);
            figs.push(f);
        }
        let (c, a) = (
            figs.pop().unwrap_or_default(),
            figs.pop().unwrap_or_default(),
        );
        let modeled_ratio = opts
            .cost_models
            .iter()
            .map(|m| crate::series::ModeledRatio {
                model: m.name.clone(),
                ratio: match (a.modeled_on(&m.name), c.modeled_on(&m.name)) {
                    (Some(x), Some(y)) if y.seconds > 0.0 => Some(x.seconds / y.seconds),
                    _ => None,
                },
            })
            .collect();
        let row = GitRow {
            pulls,
            commit: c0.id.clone(),
            commit_date: c0.date.clone(),
            du_bytes: du,
            ratio: (c.grep_seconds > 0.0).then(|| a.grep_seconds / c.grep_seconds),
            modeled_ratio,
            aged: a,
            clean: c,
        };
        obs.measured(&row);
        series.rows.push(row);
        series.measure_seconds += t.elapsed().as_secs_f64();
        Ok(())
    };
    // A measurement the stopped run owed (killed between a measured commit and its checkpoint).
    if done > 0
        && is_measured(done - 1, n, opts.every)
        && series.rows.last().map(|r| r.pulls) != Some(done as u64)
        && !opts.no_measure
    {
        unconfined(one_cpu, || {
            measure_at(done - 1, &mut aged, &mut series, &mut replay, obs)
        })?;
        after_measure(&mut aged, opts)?;
        aged.save_drives(done as u64)?;
        checkpoint(&series, &mut replay)?;
    }
    if prior.is_none() {
        aged.save_drives(0)?;
        checkpoint(&series, &mut replay)?;
    }

    let mut interrupted = false;
    let replay_before = series.replay_seconds;
    let mut replay_this = 0.0;
    for i in done..n {
        if fsage_signals::interrupted() {
            interrupted = true;
            break;
        }
        if let Some(l) = mem_limit {
            l.refresh()?;
        }
        let t = Instant::now();
        match (&mut replay, opts.mode) {
            (Some(r), Mode::Tree) => r.commit(
                i.checked_sub(1).map(|p| commits[p].id.as_str()),
                &commits[i].id,
            )?,
            _ => {
                git::pull(&aged.tree, &source.path, &commits[i].id)?;
                let h = git::head(&aged.tree)?;
                if h.as_deref() != Some(commits[i].id.as_str()) {
                    return Err(Error::operation(format!(
                        "after pulling {} the aged repository's HEAD is {:?}, not that commit",
                        commits[i].id, h
                    )));
                }
            }
        }
        if opts.sync_each_pull {
            aged.sync()?;
        }
        replay_this += t.elapsed().as_secs_f64();
        series.replay_seconds = replay_before + replay_this;
        series.pulls_done = i as u64 + 1;
        obs.progress(i as u64 + 1, n as u64, series.replay_seconds);
        if is_measured(i, n, opts.every) && !opts.no_measure {
            match unconfined(one_cpu, || {
                measure_at(i, &mut aged, &mut series, &mut replay, &mut *obs)
            }) {
                Ok(()) => {}
                // Ctrl-C in the middle of a measurement (mkfs, say, stops on it): the
                // measurement is dropped and a resume takes it first.
                Err(_) if fsage_signals::interrupted() => {
                    interrupted = true;
                    break;
                }
                Err(e) => return Err(e),
            }
            after_measure(&mut aged, opts)?;
            aged.save_drives(i as u64 + 1)?;
            checkpoint(&series, &mut replay)?;
        } else if opts.mode == Mode::Tree {
            checkpoint(&series, &mut replay)?;
        }
    }
    series.finished = series.pulls_done as usize == n;
    series.commits_per_second =
        (series.replay_seconds > 0.0).then(|| series.pulls_done as f64 / series.replay_seconds);
    checkpoint(&series, &mut replay)?;
    drop(replay);
    if aged.mounted.is_some() {
        // The drives are saved again once the unmount's writes are in them.
        aged.unmount()?;
        aged.save_drives(series.pulls_done)?;
        let _ = std::fs::remove_dir(&aged.mnt);
    }
    Ok(Outcome {
        series,
        interrupted,
        state: state_file,
        json: outputs.json,
        csv: outputs.csv,
    })
}
