//! Test support shared by fsage's test suites (`crates/fsage/tests`, `crates/fsage-measure/tests`):
//! RAII guards for the tmpfs mounts, loop devices and image files the tests make (each unmounts,
//! detaches or deletes only what it made itself, even when the test panics), file systems of any
//! type in a sparse image in /dev/shm, temporary directories, and the skip logic.
//!
//! Tests that need root, mount, losetup or a mkfs call [`skip`] when they cannot run; set
//! `FSAGE_REQUIRE_MOUNT_TESTS=1` to turn those skips into failures (for a CI machine that must
//! run them).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::{NamedTempFile, TempDir};

pub use fsage_sys::{find_cmd, is_mount_point};

mod user;
pub use user::TestUser;

/// Why a fixture cannot be had here (not root, a command missing or failing): the reason a test
/// skips with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

impl From<String> for Unavailable {
    fn from(s: String) -> Unavailable {
        Unavailable(s)
    }
}

/// Prints the skip line; fails instead when FSAGE_REQUIRE_MOUNT_TESTS is set.
pub fn skip(test: &str, reason: impl std::fmt::Display) {
    if std::env::var_os("FSAGE_REQUIRE_MOUNT_TESTS").is_some_and(|v| v != "0") {
        panic!("{test}: cannot run ({reason}) but FSAGE_REQUIRE_MOUNT_TESTS is set");
    }
    // Straight to the stderr descriptor, past the test harness's output capture, so the skip
    // shows in a normal `cargo test` run.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP: {test}: {reason}");
}

pub use fsage_sys::is_root;

/// `Err(reason)` unless we are root and every command exists.
pub fn need_root_and(cmds: &[&str]) -> Result<(), Unavailable> {
    if !is_root() {
        return Err(Unavailable("not running as root".into()));
    }
    for c in cmds {
        if find_cmd(c).is_none() {
            return Err(format!("command {c} not found").into());
        }
    }
    Ok(())
}

fn cmd(name: &str) -> Command {
    Command::new(find_cmd(name).unwrap_or_else(|| PathBuf::from(name)))
}

/// Runs a helper command; `Err` with its stderr when it fails.
pub fn run_cmd(name: &str, args: &[&str]) -> Result<Output, Unavailable> {
    let o = cmd(name)
        .args(args)
        .output()
        .map_err(|e| format!("{name}: {e}"))?;
    if o.status.success() {
        Ok(o)
    } else {
        Err(Unavailable(format!(
            "{name} {}: {}: {}{}",
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim(),
            String::from_utf8_lossy(&o.stdout).trim()
        )))
    }
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
    pub fn mount(source: &str, args: &[&str]) -> Result<MountGuard, Unavailable> {
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
    pub fn tmpfs(size: &str) -> Result<MountGuard, Unavailable> {
        MountGuard::mount(
            "tmpfs",
            &["-t", "tmpfs", "-o", &format!("size={size},mode=0755")],
        )
    }

    pub fn path(&self) -> &Path {
        &self.mount_point
    }

    /// Unmounts now (for a check that needs the file system unmounted); `Err` if it fails.
    pub fn unmount(&mut self) -> Result<(), Unavailable> {
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
    pub fn attach(image: &Path) -> Result<LoopGuard, Unavailable> {
        let o = run_cmd("losetup", &["-f", "--show", &image.to_string_lossy()])?;
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if !dev.starts_with("/dev/") {
            return Err(format!("losetup printed {dev:?}, not a device").into());
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

/// A file system in a sparse image file in /dev/shm (the temporary directory where there is no
/// /dev/shm), on a loop device, mounted. Fields drop in declaration order: unmount, then detach,
/// then delete the image.
pub struct ImageFs {
    pub mount: MountGuard,
    pub loopdev: LoopGuard,
    pub image: NamedTempFile,
}

impl ImageFs {
    /// `mkfs.FSTYPE MKFS_ARGS... IMAGE` of `bytes`, attached and mounted; `Err(reason)` if
    /// anything is missing or fails (everything made so far is undone).
    pub fn make(fstype: &str, bytes: u64, mkfs_args: &[&str]) -> Result<ImageFs, Unavailable> {
        let mkfs = format!("mkfs.{fstype}");
        need_root_and(&["mount", "umount", "losetup", &mkfs])?;
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
        let mut args: Vec<&str> = mkfs_args.to_vec();
        args.push(&img);
        run_cmd(&mkfs, &args)?;
        let loopdev = LoopGuard::attach(image.path())?;
        let mount = MountGuard::mount(loopdev.dev(), &["-t", fstype])?;
        Ok(ImageFs {
            mount,
            loopdev,
            image,
        })
    }

    /// An ext4 file system of `bytes` (`mkfs.ext4 -q -F`).
    pub fn ext4(bytes: u64) -> Result<ImageFs, Unavailable> {
        ImageFs::make("ext4", bytes, &["-q", "-F"])
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

/// Writes `text` to `path` as an executable script, by a child shell rather than this process.
///
/// Tests run on threads; if another thread forks while this process holds the script open for
/// writing, that child inherits the descriptor until it execs, and running the script then fails
/// with "Text file busy" (ETXTBSY). A child that writes and exits leaves no such descriptor here.
pub fn write_executable(path: &Path, text: &str) {
    let status = std::process::Command::new("sh")
        .args([
            "-c",
            "printf '%s' \"$1\" > \"$2\" && chmod 755 \"$2\"",
            "sh",
            text,
        ])
        .arg(path)
        .status()
        .expect("sh to write a script");
    assert!(
        status.success(),
        "writing {} failed: {status}",
        path.display()
    );
}

/// A temporary directory in /dev/shm whose name starts with `prefix`: images made in it cost
/// memory, not disk, and go with it.
pub fn shm_tmp(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/dev/shm")
        .expect("temporary directory in /dev/shm")
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

/// One entry of a tree snapshot: a directory, a file's contents, a symbolic link's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
}

/// Every entry under `root` with its contents, by '/'-separated relative path, symbolic links not
/// followed; `.git` and `lost+found` at the top are left out (a repository's, a file system's).
pub fn snapshot(root: &Path) -> std::collections::BTreeMap<String, Entry> {
    fn walk(root: &Path, rel: &str, out: &mut std::collections::BTreeMap<String, Entry>) {
        let d = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        for e in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let e = e.expect("readdir");
            let name = e.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && (name == ".git" || name == "lost+found") {
                continue;
            }
            let p = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                out.insert(p.clone(), Entry::Dir);
                walk(root, &p, out);
            } else if ft.is_symlink() {
                out.insert(p, Entry::Link(fs::read_link(e.path()).expect("readlink")));
            } else {
                out.insert(p, Entry::File(fs::read(e.path()).expect("read")));
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(root, "", &mut out);
    out
}

/// The tree of `commit` in the repository `repo`, as `git archive` gives it, snapshotted.
pub fn git_archive(repo: &Path, commit: &str) -> std::collections::BTreeMap<String, Entry> {
    let dir = tmp();
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "git -C '{}' archive --format=tar {commit} | tar -x -C '{}'",
            repo.display(),
            dir.path().display()
        ))
        .status()
        .expect("sh");
    assert!(st.success(), "git archive {commit} of {}", repo.display());
    snapshot(dir.path())
}
