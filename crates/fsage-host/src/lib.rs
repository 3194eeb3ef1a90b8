//! One execution seam. The steps of a command or an experiment cell that need a kernel's file
//! system (aging one, running a workload on one, measuring one's layout) are plain serde
//! requests ([`Step`]) with plain results ([`StepResult`]), run by a [`Host`]: [`Local`] in this
//! process, or [`InGuest`] in a QEMU guest, where fsage's own binary reads the request and
//! writes the result (`fsage step --json REQUEST --out RESULT`, [`serve`]). Where a step runs is
//! decided once, by the caller ([`Runs`]: at plan time for a cell, from the flags and this
//! kernel for a command); what the guest is given (disks, shares) follows from the request's
//! inputs and outputs ([`Step::io`]).

pub mod guest;

pub use guest::{Guest, GuestOutcome, GuestRun, InGuest, QemuGuest};

use fsage_core::age::{AgeObserver, AgeOutcome, AgeRequest};
use fsage_lab::Mounted;
use fsage_sys::{Blame, Blamed, PlatformKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use fsage_sys::Error;

/// Where a step (or a cell's steps) runs: a result type (a cell records it), fsage-results'.
pub use fsage_results::experiment::spec::Runs;

/// Where steps on `kind` run when the caller names `kernel` (or not): in a guest when a kernel
/// is named or this kernel lacks the file system (its own reason why, if so).
pub fn decide(kind: &str, kernel: Option<&str>) -> Runs {
    let lacks = fsage_lab::FsKind::parse(kind).is_ok_and(|k| k.check_kernel().is_err());
    if kernel.is_some() || lacks {
        Runs::Guest {
            kernel: kernel.map(String::from),
        }
    } else {
        Runs::Native
    }
}

/// A file system on a device (or image) that a step mounts for its work and unmounts after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mount {
    pub device: PathBuf,
    /// Its kind (a guest loads the module).
    pub fs: String,
    /// `-o` options (`ro`, xfs's `nouuid`).
    pub options: String,
    /// Where: the host's choice (a guest mounts in its own tmpfs instead).
    pub point: PathBuf,
}

/// A workload as the step carries it: a built-in by name, or a `.f` file's text (so that a
/// guest needs no file of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadText {
    Builtin { name: String },
    File { origin: String, text: String },
}

/// The workload on a mounted file system, in `POINT/bench`, caches dropped first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchStep {
    pub mount: Mount,
    pub workload: WorkloadText,
    /// Variables overridden (`set $name=value`).
    pub set: BTreeMap<String, String>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub seed: u64,
    pub cache_ratio: Option<f64>,
    pub sample_s: Option<f64>,
    pub data: Option<fsage_workload::DataPattern>,
    /// Record lock contention by lock instance over the measured phase (the result's
    /// `lock_contention`); the step fails if this kernel cannot.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lock_stats: bool,
}

/// The free-space and file layout of a mounted file system (mount it read-only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragStep {
    pub mount: Mount,
}

/// `fsage age` as a library request; with `mount`, the file system on that device is mounted
/// and aged at its root (the request's target is the mount point).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgeStep {
    pub request: AgeRequest,
    pub mount: Option<Mount>,
    /// With `request.resume` of a run on an image: what its state names, read once by the
    /// caller ([`ResumedImage::of`]), so that the guest's file system and shares follow from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<ResumedImage>,
}

/// The image a stopped run aged, from its state file: the file system its signature names (if
/// known), and the files the resumed run writes (the image, its report, its op log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumedImage {
    pub image: PathBuf,
    pub fs: Option<String>,
    pub writes: Vec<PathBuf>,
}

impl ResumedImage {
    /// `None` when the state cannot be read (the step says why) or names no image file.
    pub fn of(state: &Path) -> Option<ResumedImage> {
        let rec = fsage_exec::checkpoint::State::load(state).ok()?.record;
        let image = rec.image.filter(|i| i.is_file())?;
        let fs = fsage_lab::probe_fs(&image).ok().flatten();
        let writes = [Some(image.clone()), rec.json, rec.op_log]
            .into_iter()
            .flatten()
            .collect();
        Some(ResumedImage { image, fs, writes })
    }
}

/// One step.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    Age(Box<AgeStep>),
    Bench(Box<BenchStep>),
    Frag(Box<FragStep>),
}

/// What a step came to.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "step", content = "result", rename_all = "snake_case")]
pub enum StepResult {
    Age(Box<AgeOutcome>),
    Bench(Box<fsage_workload::BenchResult>),
    Frag(Box<fsage_measure::FragReport>),
}

/// The guest a step ran in, for the result's record.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestRecord {
    pub platform: PlatformKind,
    pub release: String,
    pub boot_s: f64,
}

/// A step's result and, when it ran in a guest, which.
#[derive(Debug)]
pub struct Ran {
    pub result: StepResult,
    pub guest: Option<GuestRecord>,
}

/// What a step reads, writes and is given as disks (and whether read-only).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepIo {
    pub reads: Vec<PathBuf>,
    pub writes: Vec<PathBuf>,
    pub disks: Vec<(PathBuf, bool)>,
}

impl Step {
    /// `aging`, `workload`, `layout`: the step in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Age(_) => "aging",
            Step::Bench(_) => "workload",
            Step::Frag(_) => "layout",
        }
    }

    fn mount_mut(&mut self) -> Option<&mut Mount> {
        match self {
            Step::Age(a) => a.mount.as_mut(),
            Step::Bench(b) => Some(&mut b.mount),
            Step::Frag(f) => Some(&mut f.mount),
        }
    }

    /// Mounts at `point` instead of where the request says (a guest's own directory).
    pub fn set_mount_point(&mut self, point: &Path) {
        if let Some(m) = self.mount_mut() {
            m.point = point.to_path_buf();
        }
    }

    /// The file systems the step mounts or makes (`fsage age --resume` of a run on an image:
    /// the one its image holds, by its signature).
    pub fn file_systems(&self) -> Vec<String> {
        match self {
            Step::Bench(b) => vec![b.mount.fs.clone()],
            Step::Frag(f) => vec![f.mount.fs.clone()],
            Step::Age(a) => match (&a.mount, &a.request.new_fs) {
                (Some(m), _) => vec![m.fs.clone()],
                (None, Some(n)) => vec![n.kind.name().to_string()],
                (None, None) => a.resumed.iter().filter_map(|r| r.fs.clone()).collect(),
            },
        }
    }

    /// Its inputs and outputs: the files it writes (an image, a report, an op log, a state),
    /// the files it reads (a profile file), and its disks.
    pub fn io(&self) -> StepIo {
        match self {
            Step::Bench(b) => StepIo {
                disks: vec![(b.mount.device.clone(), false)],
                ..Default::default()
            },
            Step::Frag(f) => StepIo {
                disks: vec![(f.mount.device.clone(), true)],
                ..Default::default()
            },
            Step::Age(a) => {
                let r = &a.request;
                let mut disks: Vec<(PathBuf, bool)> = Vec::new();
                if let Some(m) = &a.mount {
                    disks.push((m.device.clone(), false));
                }
                if let Some(d) = r.new_fs.as_ref().and_then(|n| n.device.clone()) {
                    disks.push((d, false));
                }
                let mut writes: Vec<PathBuf> = [&r.target, &r.json, &r.op_log, &r.state, &r.resume]
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect();
                // A resumed run writes what its state names (its mount point is the image's
                // neighbour, made in the guest).
                if let Some(r) = &a.resumed {
                    writes.extend(r.writes.iter().cloned());
                }
                writes.sort();
                writes.dedup();
                StepIo {
                    writes,
                    reads: r
                        .profile
                        .iter()
                        .map(PathBuf::from)
                        .filter(|p| p.is_file())
                        .collect(),
                    disks,
                }
            }
        }
    }
}

/// Sees what a step says while it runs: the aging's notices and progress, the workload's notes.
pub trait StepObserver: AgeObserver {
    fn note(&mut self, msg: &str);
}

/// Runs steps.
pub trait Host {
    fn run(&mut self, step: &Step, obs: &mut dyn StepObserver) -> Result<Ran, Error>;
}

/// The host that runs steps in this process, on this kernel.
pub struct Local;

impl Host for Local {
    fn run(&mut self, step: &Step, obs: &mut dyn StepObserver) -> Result<Ran, Error> {
        Ok(Ran {
            result: run_here(step, obs)?,
            guest: None,
        })
    }
}

/// `WHAT: ERROR`, keeping who is to blame.
fn step_err<E: Blamed + std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> Error {
    move |e| Error {
        message: format!("{what}: {e}"),
        blame: e.blame(),
        remedy: e.remedy(),
    }
}

/// Mounts `m` (its point made if missing), runs `f` on the mount point, unmounts; the work's
/// error first, then the unmount's.
fn on_mounted<T>(m: &Mount, f: impl FnOnce(&Path) -> Result<T, Error>) -> Result<T, Error> {
    std::fs::create_dir_all(&m.point).map_err(|e| Error::io(&m.point, "cannot make", e))?;
    let opts = fsage_lab::mount::MountOptions {
        options: m.options.clone(),
        ..Default::default()
    };
    let mounted =
        Mounted::attach_and_mount_with(&m.device, &m.point, &opts).map_err(step_err("mount"))?;
    let r = f(mounted.mount_point());
    let fin = mounted.finish().map_err(step_err("unmount"));
    let r = r?;
    fin?;
    Ok(r)
}

/// The workload's notes, passed on; and the lock recording, when asked for.
struct Notes<'a> {
    obs: &'a mut dyn StepObserver,
}

impl fsage_workload::Observer for Notes<'_> {
    fn note(&mut self, msg: &str) {
        self.obs.note(msg);
    }
}

/// A workload run's observer that also records lock contention over the measured phase when
/// asked (`lock_stats`, `bench run --lock-stats`), passing everything on to `inner`.
pub struct LockStats<'a, O: fsage_workload::Observer + ?Sized> {
    inner: &'a mut O,
    locks: Option<fsage_lab::locks::PhaseRecorder>,
}

impl<'a, O: fsage_workload::Observer + ?Sized> LockStats<'a, O> {
    pub fn new(inner: &'a mut O, record: bool) -> Self {
        LockStats {
            inner,
            locks: record.then(fsage_lab::locks::PhaseRecorder::default),
        }
    }

    /// What was recorded: `None` when not asked for or no measured phase began.
    pub fn finish(self) -> fsage_lab::Result<Option<fsage_lab::locks::LockReport>> {
        self.locks.map_or(Ok(None), |l| l.finish())
    }
}

impl<O: fsage_workload::Observer + ?Sized> fsage_workload::Observer for LockStats<'_, O> {
    fn progress(&mut self, p: &fsage_workload::Progress) {
        self.inner.progress(p);
    }

    fn rep_done(&mut self, r: &fsage_workload::RepResult) {
        self.inner.rep_done(r);
    }

    fn note(&mut self, msg: &str) {
        self.inner.note(msg);
    }

    fn measuring(&mut self, started: bool) {
        if let Some(l) = self.locks.as_mut() {
            l.measuring(started);
        }
        self.inner.measuring(started);
    }
}

/// A step's work in this process.
pub fn run_here(step: &Step, obs: &mut dyn StepObserver) -> Result<StepResult, Error> {
    match step {
        Step::Bench(b) => {
            let w = match &b.workload {
                WorkloadText::Builtin { name } => fsage_workload::Workload::builtin(name),
                WorkloadText::File { origin, text } => {
                    fsage_workload::Workload::parse(text, origin)
                }
            }
            .map_err(step_err("workload"))?;
            let vars: Vec<(&String, &String)> = b.set.iter().collect();
            let w = w.with_vars(&vars).map_err(step_err("workload"))?;
            let cfg = fsage_workload::RunConfig {
                stop: Some(fsage_workload::Stop::Duration(Duration::from_secs_f64(
                    b.duration_s,
                ))),
                warmup: Duration::from_secs_f64(b.warmup_s),
                seed: b.seed,
                cache_ratio: b.cache_ratio,
                drop_caches: true,
                reps: 1,
                sample: b.sample_s.map(Duration::from_secs_f64),
                data: b.data.unwrap_or_default(),
                ..Default::default()
            };
            if b.lock_stats {
                fsage_lab::locks::available()
                    .map_err(|e| Error::input(format!("lock_stats: {e}")))?;
            }
            let mut notes = Notes { obs };
            let mut rec = LockStats::new(&mut notes, b.lock_stats);
            let mut r = on_mounted(&b.mount, |mnt| {
                fsage_workload::run(&w, &cfg, &mnt.join("bench"), &mut rec)
                    .map_err(step_err("workload"))
            })?;
            r.lock_contention = rec
                .finish()
                .map_err(|e| Error::operation(format!("lock_stats: {e}")))?;
            Ok(StepResult::Bench(Box::new(r)))
        }
        Step::Frag(f) => {
            let fo = fsage_measure::FragOptions {
                files: true,
                ..Default::default()
            };
            let (rep, _) = on_mounted(&f.mount, |mnt| {
                fsage_measure::frag(mnt, &fo).map_err(step_err("layout"))
            })?;
            Ok(StepResult::Frag(Box::new(rep)))
        }
        Step::Age(a) => {
            let age = |req: &AgeRequest, obs: &mut dyn StepObserver| {
                struct Age<'a>(&'a mut dyn StepObserver);
                impl fsage_exec::Observer for Age<'_> {
                    fn update(&mut self, p: &dyn Fn() -> fsage_exec::Progress, e: Duration) {
                        self.0.update(p, e)
                    }
                    fn finish(&mut self) {
                        self.0.finish()
                    }
                }
                impl AgeObserver for Age<'_> {
                    fn notice(&mut self, level: fsage_core::age::Level, text: &str) {
                        self.0.notice(level, text)
                    }
                }
                fsage_core::age::age(req, &mut Age(obs)).map_err(step_err("aging"))
            };
            let out = match &a.mount {
                None => age(&a.request, obs)?,
                Some(m) => on_mounted(m, |mnt| {
                    let mut req = a.request.clone();
                    req.target = Some(mnt.to_path_buf());
                    age(&req, obs)
                })?,
            };
            Ok(StepResult::Age(Box::new(out)))
        }
    }
}

/// Who is to blame for a step's error, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlameName {
    Input,
    Operation,
    Interrupted,
}

impl From<Blame> for BlameName {
    fn from(b: Blame) -> Self {
        match b {
            Blame::Input => BlameName::Input,
            Blame::Operation => BlameName::Operation,
            Blame::Interrupted => BlameName::Interrupted,
        }
    }
}

impl From<BlameName> for Blame {
    fn from(b: BlameName) -> Self {
        match b {
            BlameName::Input => Blame::Input,
            BlameName::Operation => Blame::Operation,
            BlameName::Interrupted => Blame::Interrupted,
        }
    }
}

/// The result file of `fsage step`: the result, or the error with its blame.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Ok(StepResult),
    Err { message: String, blame: BlameName },
}

/// Says what a step says on stderr (in a guest: what the host copies through).
struct Stderr;

impl fsage_exec::Observer for Stderr {}

impl AgeObserver for Stderr {
    fn notice(&mut self, level: fsage_core::age::Level, text: &str) {
        match level {
            fsage_core::age::Level::Warning => eprintln!("fsage: warning: {text}"),
            fsage_core::age::Level::Info => eprintln!("fsage: {text}"),
        }
    }
}

impl StepObserver for Stderr {
    fn note(&mut self, msg: &str) {
        eprintln!("fsage: {msg}");
    }
}

/// `fsage step --json REQUEST --out RESULT`: reads a step, runs it here and writes its
/// [`Reply`]; returns its error, if any (the exit code). A SIGTERM (what the host sends when it
/// is interrupted) stops the step as Ctrl-C does.
pub fn serve(request: &Path, result: &Path) -> Result<(), Error> {
    fsage_signals::install();
    let text = std::fs::read(request).map_err(|e| Error::io(request, "cannot read", e))?;
    let step: Step = serde_json::from_slice(&text)
        .map_err(|e| Error::input(format!("{}: not a step request: {e}", request.display())))?;
    let (reply, r) = match run_here(&step, &mut Stderr) {
        Ok(res) => (Reply::Ok(res), Ok(())),
        Err(e) => (
            Reply::Err {
                message: e.message.clone(),
                blame: e.blame.into(),
            },
            Err(e),
        ),
    };
    let bytes = serde_json::to_vec(&reply)
        .map_err(|e| Error::operation(format!("the step's result: {e}")))?;
    fsage_sys::write_atomic(result, &bytes).map_err(|e| Error::operation(e.to_string()))?;
    // The exit code says it too (the host reads the result either way).
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    type Asked = Arc<Mutex<Vec<serde_json::Value>>>;

    /// A guest that is this process: records the request it is handed and serves it here.
    struct StandIn(Asked);
    impl Guest for StandIn {
        fn run(&mut self, r: &GuestRun) -> Result<GuestOutcome, Error> {
            let (req, res) = (PathBuf::from(&r.command[3]), PathBuf::from(&r.command[5]));
            let v = serde_json::from_slice(&std::fs::read(&req).unwrap()).unwrap();
            self.0.lock().unwrap().push(v);
            let code = i32::from(serve(&req, &res).is_err());
            Ok(GuestOutcome {
                exit_code: code,
                platform: PlatformKind::Tcg,
                release: "stand-in".into(),
                boot_s: 0.0,
                stderr_tail: String::new(),
            })
        }
    }

    struct Quiet;
    impl fsage_exec::Observer for Quiet {}
    impl AgeObserver for Quiet {
        fn notice(&mut self, _: fsage_core::age::Level, _: &str) {}
    }
    impl StepObserver for Quiet {
        fn note(&mut self, _: &str) {}
    }

    /// `age --fs`'s step: the same request reaches the guest as data, its image is written
    /// through the share the request's outputs name, and the result comes back as natively.
    #[test]
    fn an_age_step_runs_the_same_here_and_through_a_guest() {
        let test = "an_age_step_runs_the_same_here_and_through_a_guest";
        if let Err(e) = fsage_testkit::need_root_and(&["mkfs.ext4", "losetup"]) {
            return fsage_testkit::skip(test, e);
        }
        let dir = fsage_testkit::shm_tmp("fsage-host-age-");
        let step = |img: &str| {
            Step::Age(Box::new(AgeStep {
                request: AgeRequest {
                    profile: Some("meyer".into()),
                    target: Some(dir.path().join(img)),
                    seed: Some(3),
                    threads: 1,
                    stop: fsage_exec::StopConditions {
                        max_ops: Some(200),
                        ..Default::default()
                    },
                    checkpoint_interval: Duration::from_secs(3600),
                    new_fs: Some(fsage_core::age::NewFs {
                        kind: fsage_lab::FsKind::EXT4,
                        size: Some(64 << 20),
                        mkfs_opts: Vec::new(),
                        device: None,
                    }),
                    ..Default::default()
                },
                mount: None,
                resumed: None,
            }))
        };
        let here = Local.run(&step("a.img"), &mut Quiet).unwrap();
        assert!(here.guest.is_none());
        let asked: Asked = Default::default();
        let s = step("b.img");
        let mut g = StandIn(asked.clone());
        let mut host = InGuest {
            guest: &mut g,
            kernel: None,
            exe: PathBuf::from("/usr/local/bin/fsage"),
            cwd: "/".into(),
            channel_parent: dir.path().to_path_buf(),
        };
        let there = host.run(&s, &mut Quiet).unwrap();
        assert_eq!(there.guest.unwrap().release, "stand-in");
        assert_eq!(asked.lock().unwrap()[0], serde_json::to_value(&s).unwrap());
        let (StepResult::Age(a), StepResult::Age(b)) = (here.result, there.result) else {
            panic!("not an age result");
        };
        assert_eq!(a.report.ticks, b.report.ticks);
        assert_eq!(a.report.stop_reason, b.report.stop_reason);
        assert!(dir.path().join("b.img").exists());
        // What the guest is given follows from the request: the image's directory, staged.
        let run = host.guest_run(&s, dir.path());
        assert!(run.shares.iter().any(|sh| sh.dir == dir.path()));
        assert_eq!(run.file_systems, ["ext4"]);
    }
}
