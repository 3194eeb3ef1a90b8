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
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::{NamedTempFile, TempDir};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fsage")
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

pub fn parse_log(text: &str) -> Vec<LogLine> {
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 4, "op log line {}: not 4 fields: {line:?}", i + 1);
            if f[1] == "mkdir" {
                assert_eq!((f[0], f[3]), ("-", "-"), "op log line {}: {line:?}", i + 1);
                return LogLine::Mkdir(f[2].to_string());
            }
            let tick: u64 = f[0]
                .parse()
                .unwrap_or_else(|_| panic!("op log line {}: bad tick: {line:?}", i + 1));
            let size: u64 = f[3]
                .parse()
                .unwrap_or_else(|_| panic!("op log line {}: bad size: {line:?}", i + 1));
            let path = f[2].to_string();
            match f[1] {
                "create" => LogLine::Create { tick, path, size },
                "delete" => LogLine::Delete { tick, path, size },
                "enospc" => LogLine::Enospc { tick, path, size },
                v => panic!("op log line {}: unknown verb {v:?}: {line:?}", i + 1),
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

/// Prints the skip line; fails instead when FSAGE_REQUIRE_MOUNT_TESTS is set.
pub fn skip(test: &str, reason: &str) {
    if std::env::var_os("FSAGE_REQUIRE_MOUNT_TESTS").is_some_and(|v| v != "0") {
        panic!("{test}: cannot run ({reason}) but FSAGE_REQUIRE_MOUNT_TESTS is set");
    }
    // Straight to the stderr descriptor, past the test harness's output capture, so the skip
    // shows in a normal `cargo test` run.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP: {test}: {reason}");
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Finds a command on PATH or in the usual sbin directories.
pub fn find_cmd(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `Err(reason)` unless we are root and every command exists.
pub fn need_root_and(cmds: &[&str]) -> Result<(), String> {
    if !is_root() {
        return Err("not running as root".into());
    }
    for c in cmds {
        if find_cmd(c).is_none() {
            return Err(format!("command {c} not found"));
        }
    }
    Ok(())
}

fn cmd(name: &str) -> Command {
    Command::new(find_cmd(name).unwrap_or_else(|| PathBuf::from(name)))
}

/// Runs a helper command; `Err` with its stderr when it fails.
pub fn run_cmd(name: &str, args: &[&str]) -> Result<Output, String> {
    let o = cmd(name)
        .args(args)
        .output()
        .map_err(|e| format!("{name}: {e}"))?;
    if o.status.success() {
        Ok(o)
    } else {
        Err(format!(
            "{name} {}: {}: {}{}",
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim(),
            String::from_utf8_lossy(&o.stdout).trim()
        ))
    }
}

/// Is `path` a mount point right now (per /proc/self/mountinfo)?
pub fn is_mount_point(path: &Path) -> bool {
    let Ok(info) = fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = path.to_string_lossy();
    info.lines().any(|l| {
        l.split(' ')
            .nth(4)
            .is_some_and(|m| unescape_mountinfo(m) == want)
    })
}

fn unescape_mountinfo(s: &str) -> String {
    // Spaces, tabs, newlines and backslashes appear as \040 and so on.
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4]).ok();
            if let Some(v) = oct.and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A file system this test mounted on a fresh mount point inside its own temporary directory.
/// Dropping it unmounts (falling back to a lazy unmount) and only then removes the directory; if
/// even the lazy unmount fails the directory is left in place rather than removed through a mount.
pub struct MountGuard {
    mount_point: PathBuf,
    mounted: bool,
    dir: Option<TempDir>,
}

impl MountGuard {
    /// `mount ARGS... SOURCE <fresh dir>`.
    pub fn mount(source: &str, args: &[&str]) -> Result<MountGuard, String> {
        let dir = tempfile::Builder::new()
            .prefix("fsage-test-mnt-")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?;
        let base = dir
            .path()
            .canonicalize()
            .map_err(|e| format!("{}: {e}", dir.path().display()))?;
        let mount_point = base.join("mnt");
        fs::create_dir(&mount_point).map_err(|e| format!("{}: {e}", mount_point.display()))?;
        let mp = mount_point.to_string_lossy().into_owned();
        let mut a: Vec<&str> = args.to_vec();
        a.push(source);
        a.push(&mp);
        run_cmd("mount", &a)?;
        Ok(MountGuard {
            mount_point,
            mounted: true,
            dir: Some(dir),
        })
    }

    /// A tmpfs of `size` (e.g. "256m").
    pub fn tmpfs(size: &str) -> Result<MountGuard, String> {
        MountGuard::mount(
            "tmpfs",
            &["-t", "tmpfs", "-o", &format!("size={size},mode=0755")],
        )
    }

    pub fn path(&self) -> &Path {
        &self.mount_point
    }

    /// Unmounts now (for a check that needs the file system unmounted); `Err` if it fails.
    pub fn unmount(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        let mp = self.mount_point.to_string_lossy().into_owned();
        run_cmd("umount", &[&mp])?;
        self.mounted = false;
        Ok(())
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        if self.mounted {
            let mp = self.mount_point.to_string_lossy().into_owned();
            if let Err(e) = run_cmd("umount", &[&mp]) {
                eprintln!("cleanup: {e}; trying a lazy unmount");
                if let Err(e) = run_cmd("umount", &["-l", &mp]) {
                    eprintln!("cleanup: {e}; leaving {mp} in place");
                }
            }
            self.mounted = is_mount_point(&self.mount_point);
        }
        if self.mounted {
            // Never let TempDir remove files through a mount that is still there.
            if let Some(d) = self.dir.take() {
                let _ = d.keep();
            }
        }
    }
}

/// A loop device this test attached (`losetup -f --show`); detached on drop.
pub struct LoopGuard {
    dev: String,
}

impl LoopGuard {
    pub fn attach(image: &Path) -> Result<LoopGuard, String> {
        let o = run_cmd("losetup", &["-f", "--show", &image.to_string_lossy()])?;
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if !dev.starts_with("/dev/") {
            return Err(format!("losetup printed {dev:?}, not a device"));
        }
        Ok(LoopGuard { dev })
    }

    pub fn dev(&self) -> &str {
        &self.dev
    }
}

impl Drop for LoopGuard {
    fn drop(&mut self) {
        // A device just unmounted can be briefly busy: retry a few times.
        for i in 0..5 {
            match run_cmd("losetup", &["-d", &self.dev]) {
                Ok(_) => return,
                Err(e) if i == 4 => eprintln!("cleanup: {e}"),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(100 * (i + 1))),
            }
        }
    }
}

/// An ext4 file system in a sparse image file in /dev/shm, on a loop device, mounted.
/// Fields drop in declaration order: unmount, then detach, then delete the image.
pub struct Ext4 {
    pub mount: MountGuard,
    pub loopdev: LoopGuard,
    pub image: NamedTempFile,
}

impl Ext4 {
    /// Makes, attaches and mounts an ext4 file system of `bytes`; `Err(reason)` if anything is
    /// missing or fails (everything made so far is undone).
    pub fn new(bytes: u64) -> Result<Ext4, String> {
        need_root_and(&["mount", "umount", "losetup", "mkfs.ext4"])?;
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let image = tempfile::Builder::new()
            .prefix("fsage-test-")
            .suffix(".img")
            .tempfile_in(&dir)
            .map_err(|e| format!("image file in {}: {e}", dir.display()))?;
        image
            .as_file()
            .set_len(bytes)
            .map_err(|e| format!("image size: {e}"))?;
        let img = image.path().to_string_lossy().into_owned();
        run_cmd("mkfs.ext4", &["-q", "-F", &img])?;
        let loopdev = LoopGuard::attach(image.path())?;
        let mount = MountGuard::mount(loopdev.dev(), &["-t", "ext4"])?;
        Ok(Ext4 {
            mount,
            loopdev,
            image,
        })
    }

    pub fn path(&self) -> &Path {
        self.mount.path()
    }
}

/// A temporary directory for one test's files.
pub fn tmp() -> TempDir {
    tempfile::Builder::new()
        .prefix("fsage-test-")
        .tempdir()
        .expect("temporary directory")
}

/// A path as the `&str` the binary's arguments want.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// A fresh tmpfs of `size`, or `None` after saying why the test cannot run.
pub fn tmpfs_or_skip(test: &str, size: &str) -> Option<MountGuard> {
    match need_root_and(&["mount", "umount"]).and_then(|()| MountGuard::tmpfs(size)) {
        Ok(m) => Some(m),
        Err(reason) => {
            skip(test, &reason);
            None
        }
    }
}
