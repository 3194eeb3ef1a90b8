//! Shared helpers of the integration tests: running the real binary, reading its op log and JSON
//! report, walking a directory tree, and RAII guards for the tmpfs mounts, image files and loop
//! devices the tests make (each unmounts or detaches only what it made itself, even on panic).
//!
//! Tests that need root, mount, losetup or mkfs.ext4 call [`skip`] when they cannot run; set
//! `FSAGE_REQUIRE_MOUNT_TESTS=1` to turn those skips into failures (for a CI machine that must
//! run them).

// Each test binary uses its own subset of the helpers.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};

pub use fsage_testkit::*;
/// The ext4 image fixture (`Ext4::ext4(bytes)`).
pub type Ext4 = ImageFs;

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fsage")
}

/// A scratch directory in /dev/shm with its own slow-device registry and lock directory, for
/// tests that run fsage commands making devices and mounts; dropping it unmounts what is
/// mounted under it and destroys that registry's devices (what a failed test or a killed run
/// leaves), and nothing else.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new(prefix: &str) -> Scratch {
        Scratch {
            dir: shm_tmp(prefix),
        }
    }
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
    pub fn path(&self, n: &str) -> std::path::PathBuf {
        self.dir.path().join(n)
    }
    /// `fsage ARGS` with this scratch's registry and lock directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .env("FSAGE_DEV_REGISTRY", self.path("registry"))
            .env("FSAGE_LOCK_DIR", self.path("locks"));
        c
    }
    /// Mount points under the scratch directory.
    pub fn mounts_under(&self) -> Vec<std::path::PathBuf> {
        fsage_sys::mounts()
            .unwrap_or_default()
            .into_iter()
            .map(|m| m.mount_point)
            .filter(|m| m.starts_with(self.dir.path()))
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for m in self.mounts_under().into_iter().rev() {
            let _ = fsage_lab::mount::umount_point(&m);
        }
        let _ = self.cmd(&["dev", "destroy", "--all", "--force"]).output();
    }
}

/// Runs `fsage ARGS` and returns its output, whatever the exit status.
pub fn fsage<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(bin())
        .args(args)
        .output()
        .expect("cannot run the fsage binary")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Panics with both streams unless the exit code is `code`.
pub fn expect_code(o: &Output, code: i32, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}: expected exit code {code}, got {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

/// Panics, showing the stderr, unless it contains `needle` (what a refusal must name).
#[track_caller]
pub fn expect_stderr(o: &Output, needle: &str) {
    let e = stderr(o);
    assert!(e.contains(needle), "stderr lacks {needle:?}:\n{e}");
}

/// Panics, showing the stdout, unless it contains `needle`.
#[track_caller]
pub fn expect_stdout(o: &Output, needle: &str) {
    let out = stdout(o);
    assert!(out.contains(needle), "stdout lacks {needle:?}:\n{out}");
}

/// Runs `fsage ARGS` and panics (with its output) unless it exits 0.
pub fn fsage_ok<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().into()).collect();
    let o = fsage(&args);
    expect_code(&o, 0, &format!("fsage {args:?}"));
    o
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the JSON report {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not JSON: {e}\n{text}", path.display()))
}

pub fn j_u64(j: &serde_json::Value, key: &str) -> u64 {
    j[key]
        .as_u64()
        .unwrap_or_else(|| panic!("report key {key:?} is not an unsigned integer: {}", j[key]))
}

pub fn j_f64(j: &serde_json::Value, key: &str) -> f64 {
    j[key]
        .as_f64()
        .unwrap_or_else(|| panic!("report key {key:?} is not a number: {}", j[key]))
}

pub fn j_str<'a>(j: &'a serde_json::Value, key: &str) -> &'a str {
    j[key]
        .as_str()
        .unwrap_or_else(|| panic!("report key {key:?} is not a string: {}", j[key]))
}

/// One line of an op log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogLine {
    Mkdir(String),
    Create { tick: u64, path: String, size: u64 },
    Delete { tick: u64, path: String, size: u64 },
    Enospc { tick: u64, path: String, size: u64 },
}

/// What replaying an op log with the planner's semantics leaves.
#[derive(Debug, Default)]
pub struct Replayed {
    /// Directories, in mkdir order.
    pub dirs: Vec<String>,
    /// Live files: relative path -> size.
    pub live: BTreeMap<String, u64>,
    /// Paths of creates the file system refused.
    pub refused: Vec<String>,
    pub creates: u64,
    pub deletes: u64,
    /// Ticks of the last operation (create, delete or refused create).
    pub last_tick: Option<u64>,
}

impl Replayed {
    /// Bytes the planner counts as allocated: every file rounded up to `bs`, every directory `bs`.
    pub fn allocated(&self, bs: u64) -> u64 {
        self.dirs.len() as u64 * bs + self.live.values().map(|s| s.div_ceil(bs) * bs).sum::<u64>()
    }
}

/// The op log's lines, read by fsage's own op-log reader (`fsage_exec::oplog::read_entries`):
/// one parser, beside its writer. Planner files come back with their paths.
pub fn parse_log(text: &str) -> Vec<LogLine> {
    use fsage_exec::oplog::{read_entries, Entry};
    use fsage_exec::{FileRef, Operation};
    let (tree, entries) =
        read_entries(text, "op log").unwrap_or_else(|e| panic!("op log does not read: {e}"));
    let path = |f: &FileRef| match f {
        FileRef::Planned { dir, created } => match tree.path(*dir) {
            "" => format!("f{created}"),
            d => format!("{d}/f{created}"),
        },
        FileRef::Path(p) => p.clone(),
    };
    entries
        .into_iter()
        .map(|e| {
            let (st, refused) = match e {
                Entry::Mkdir(p) => return LogLine::Mkdir(p),
                Entry::Step(st) => (st, false),
                Entry::Refused(st) => (st, true),
            };
            let tick = st.tick;
            match st.op {
                Operation::Create { file, size } if refused => LogLine::Enospc {
                    tick,
                    path: path(&file),
                    size,
                },
                Operation::Create { file, size } => LogLine::Create {
                    tick,
                    path: path(&file),
                    size,
                },
                Operation::Delete {
                    file,
                    size: Some(size),
                } => LogLine::Delete {
                    tick,
                    path: path(&file),
                    size,
                },
                op => panic!("op log tick {tick}: not a planner operation: {op:?}"),
            }
        })
        .collect()
}

/// Replays an op log with the planner's semantics and checks it is consistent on the way: all
/// mkdirs first, parents before children; ticks strictly increase; a file is named `f<tick of its
/// create>` and lives in a directory made earlier; every delete names a live file with its size; a
/// refused create names a file that is not live.
pub fn replay_log(text: &str) -> Replayed {
    let mut r = Replayed::default();
    let mut dirset: BTreeSet<String> = BTreeSet::new();
    // Paths ever created (live or deleted), to catch a name used twice.
    let mut ever: HashMap<String, u64> = HashMap::new();
    let mut seen_op = false;
    for (n, line) in parse_log(text).into_iter().enumerate() {
        let ln = n + 1;
        let check_tick = |r: &mut Replayed, tick: u64| {
            if let Some(prev) = r.last_tick {
                assert!(
                    tick > prev,
                    "op log line {ln}: tick {tick} does not follow {prev}"
                );
            }
            r.last_tick = Some(tick);
        };
        let check_name = |path: &str, tick: u64, dirset: &BTreeSet<String>| {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
            assert!(
                dir.is_empty() || dirset.contains(dir),
                "op log line {ln}: {path}: directory {dir:?} was not made"
            );
            assert_eq!(
                name,
                format!("f{tick}"),
                "op log line {ln}: a create at tick {tick} must name f{tick}"
            );
        };
        match line {
            LogLine::Mkdir(p) => {
                assert!(!seen_op, "op log line {ln}: mkdir {p} after the first op");
                if let Some((parent, _)) = p.rsplit_once('/') {
                    assert!(
                        dirset.contains(parent),
                        "op log line {ln}: mkdir {p} before its parent"
                    );
                }
                assert!(
                    dirset.insert(p.clone()),
                    "op log line {ln}: mkdir {p} twice"
                );
                r.dirs.push(p);
            }
            LogLine::Create { tick, path, size } => {
                seen_op = true;
                check_tick(&mut r, tick);
                check_name(&path, tick, &dirset);
                assert!(
                    ever.insert(path.clone(), size).is_none(),
                    "op log line {ln}: {path} created twice"
                );
                r.live.insert(path, size);
                r.creates += 1;
            }
            LogLine::Delete { tick, path, size } => {
                seen_op = true;
                check_tick(&mut r, tick);
                match r.live.remove(&path) {
                    Some(s) => assert_eq!(
                        s, size,
                        "op log line {ln}: delete of {path} with size {size}, created with {s}"
                    ),
                    None => panic!(
                        "op log line {ln}: delete of {path}, which is not live (never created, or \
                         deleted already)"
                    ),
                }
                r.deletes += 1;
            }
            LogLine::Enospc { tick, path, .. } => {
                seen_op = true;
                check_tick(&mut r, tick);
                check_name(&path, tick, &dirset);
                assert!(
                    !ever.contains_key(&path),
                    "op log line {ln}: refused create of {path}, which exists"
                );
                r.refused.push(path);
            }
        }
    }
    r
}

/// A directory tree as found on disk (paths relative to the root, '/'-separated).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tree {
    pub dirs: BTreeSet<String>,
    /// Regular files: path -> size.
    pub files: BTreeMap<String, u64>,
    /// Regular files: path -> allocated bytes (st_blocks * 512).
    pub allocated: BTreeMap<String, u64>,
    /// Anything else (symlinks, fifos...).
    pub other: BTreeSet<String>,
}

/// Walks `root` without following symlinks. `lost+found` at the top is left out (ext4 has one).
pub fn walk(root: &Path) -> Tree {
    fn rec(t: &mut Tree, root: &Path, rel: &str) {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        for e in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let e = e.expect("readdir");
            let name = e.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && name == "lost+found" {
                continue;
            }
            let p = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let m = fs::symlink_metadata(e.path()).expect("lstat");
            if m.is_dir() {
                t.dirs.insert(p.clone());
                rec(t, root, &p);
            } else if m.is_file() {
                t.files.insert(p.clone(), m.len());
                t.allocated.insert(p, m.blocks() * 512);
            } else {
                t.other.insert(p);
            }
        }
    }
    let mut t = Tree::default();
    rec(&mut t, root, "");
    t
}

/// Asserts that the tree under `root` is exactly what the op log leaves: the same directories as
/// its mkdir lines, the same regular files with the same sizes, nothing else, and no refused create.
pub fn assert_tree_matches_log(root: &Path, r: &Replayed) {
    let t = walk(root);
    assert!(
        t.other.is_empty(),
        "unexpected non-regular files: {:?}",
        t.other
    );
    let want_dirs: BTreeSet<String> = r.dirs.iter().cloned().collect();
    if t.dirs != want_dirs {
        let extra: Vec<_> = t.dirs.difference(&want_dirs).take(10).collect();
        let missing: Vec<_> = want_dirs.difference(&t.dirs).take(10).collect();
        panic!("directories differ from the op log's mkdirs: extra {extra:?}, missing {missing:?}");
    }
    if t.files != r.live {
        let extra: Vec<_> = t
            .files
            .iter()
            .filter(|(p, _)| !r.live.contains_key(*p))
            .take(10)
            .collect();
        let missing: Vec<_> = r
            .live
            .iter()
            .filter(|(p, _)| !t.files.contains_key(*p))
            .take(10)
            .collect();
        let wrong: Vec<_> = t
            .files
            .iter()
            .filter_map(|(p, s)| r.live.get(p).filter(|w| *w != s).map(|w| (p, *s, *w)))
            .take(10)
            .collect();
        panic!(
            "files on disk ({}) differ from the op log's live set ({}): extra {extra:?}, missing \
             {missing:?}, wrong size (path, disk, log) {wrong:?}",
            t.files.len(),
            r.live.len()
        );
    }
    for p in &r.refused {
        assert!(
            !root.join(p).exists(),
            "{p}: the create was refused (enospc in the op log) but the file exists"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Privileged fixtures.

/// A path as the `&str` the binary's arguments want.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

// ---------------------------------------------------------------------------------------------
// Commands, built flag by flag.

/// `fsage age ...`: each flag a method, run with [`Age::run`] or [`Age::run_ok`]. Flags keep the
/// order they are given in.
#[derive(Debug, Clone)]
pub struct Age {
    args: Vec<std::ffi::OsString>,
}

macro_rules! age_flags {
    ($($(#[$doc:meta])* $name:ident => $flag:literal),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $name(self, value: impl AsRef<std::ffi::OsStr>) -> Age {
                self.arg($flag).arg(value)
            }
        )*
    };
}

impl Age {
    /// `fsage age -p PROFILE`.
    pub fn new(profile: impl AsRef<std::ffi::OsStr>) -> Age {
        Age {
            args: vec!["age".into(), "-p".into()],
        }
        .arg(profile)
    }

    /// `fsage age --resume STATE`.
    pub fn resume(state: impl AsRef<std::ffi::OsStr>) -> Age {
        Age {
            args: vec!["age".into(), "--resume".into()],
        }
        .arg(state)
    }

    /// `fsage age --dry-run -q -p PROFILE --capacity CAPACITY`: a quiet plan without a target.
    pub fn plan(
        profile: impl AsRef<std::ffi::OsStr>,
        capacity: impl AsRef<std::ffi::OsStr>,
    ) -> Age {
        Age::new(profile).dry_run().quiet().capacity(capacity)
    }

    /// `fsage age -q -p PROFILE TARGET`: a quiet run on a directory.
    pub fn on(profile: impl AsRef<std::ffi::OsStr>, target: impl AsRef<std::ffi::OsStr>) -> Age {
        Age::new(profile).quiet().target(target)
    }

    /// Any argument, as given (the target, a flag with no method).
    pub fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Age {
        self.args.push(a.as_ref().into());
        self
    }

    /// The directory (or, with `--fs`, the image) to age.
    pub fn target(self, t: impl AsRef<std::ffi::OsStr>) -> Age {
        self.arg(t)
    }

    pub fn dry_run(self) -> Age {
        self.arg("--dry-run")
    }

    pub fn quiet(self) -> Age {
        self.arg("-q")
    }

    pub fn force(self) -> Age {
        self.arg("--force")
    }

    age_flags! {
        capacity => "--capacity",
        fullness => "--fullness",
        seed => "--seed",
        max_ops => "--max-ops",
        block_size => "--block-size",
        json => "--json",
        op_log => "--op-log",
        state => "--state",
        fs => "--fs",
        size => "--size",
        device => "--device",
        write_mode => "--write-mode",
        max_time => "--max-time",
        threads => "--threads",
    }

    pub fn args(&self) -> &[std::ffi::OsString] {
        &self.args
    }

    /// Runs it, whatever the exit status.
    pub fn run(&self) -> Output {
        fsage(&self.args)
    }

    /// Runs it and panics (with its output) unless it exits 0.
    pub fn run_ok(&self) -> Output {
        fsage_ok(&self.args)
    }
}

/// A run with an op log and a JSON report: what it printed, the report read back, the op log.
pub struct Logged {
    pub output: Output,
    pub report: serde_json::Value,
    pub log: std::path::PathBuf,
    /// The directory of the op log, when the run made its own.
    _dir: Option<tempfile::TempDir>,
}

impl Age {
    /// Runs with `--op-log DIR/age.log --json DIR/age.json`, panics unless it exits 0, and reads
    /// the report back.
    pub fn run_logged(self, dir: &Path) -> Logged {
        let (log, json) = (dir.join("age.log"), dir.join("age.json"));
        let output = self.op_log(&log).json(&json).run_ok();
        Logged {
            output,
            report: read_json(&json),
            log,
            _dir: None,
        }
    }

    /// [`Age::run_logged`] into a temporary directory kept as long as the result.
    pub fn run_logged_tmp(self) -> Logged {
        let dir = tmp();
        let run = self.run_logged(dir.path());
        Logged {
            _dir: Some(dir),
            ..run
        }
    }
}
