//! System helpers: running tools, the mount table, loop devices' backing files, block devices.

use crate::{Error, Result};
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use fsage_sys::find_cmd;

/// Runs `name args...`; `Err` naming the command, its status and its output when it fails.
pub fn run_tool(name: &str, args: &[&str]) -> Result<String> {
    let exe = find_cmd(name).ok_or_else(|| {
        Error::input(format!(
            "{name} not found: install it (scripts/setup installs e2fsprogs, xfsprogs, btrfs-progs)"
        ))
    })?;
    let o = Command::new(&exe)
        .args(args)
        .output()
        .map_err(|e| Error::operation(format!("{name}: cannot run: {e}")))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(Error::operation(format!(
            "{name} {} failed ({}): {}{}",
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim(),
            String::from_utf8_lossy(&o.stdout).trim()
        )))
    }
}

pub use fsage_sys::mountinfo::{dev_parts, is_mount_point, MountEntry};

/// The mount table.
pub fn mounts() -> Result<Vec<MountEntry>> {
    fsage_sys::mounts().map_err(|e| Error::io(Path::new("/proc/self/mountinfo"), "", e))
}

/// Mounts whose source is the block device `dev` (by number, or by path for file systems such as
/// btrfs that report an anonymous device number).
pub fn mounts_of_device(dev: &Path) -> Result<Vec<MountEntry>> {
    let m = fs::metadata(dev).map_err(|e| Error::io(dev, "", e))?;
    let want = dev_parts(m.rdev());
    let canon = dev.canonicalize().unwrap_or_else(|_| dev.to_path_buf());
    Ok(mounts()?
        .into_iter()
        .filter(|e| {
            e.dev == want
                || Path::new(&e.source)
                    .canonicalize()
                    .is_ok_and(|s| s == canon)
        })
        .collect())
}

/// Loop devices whose backing file is `file` (compared by device and inode number, so any path
/// to the file matches).
pub fn loops_backed_by(file: &Path) -> Vec<PathBuf> {
    let Ok(m) = fs::metadata(file) else {
        return Vec::new();
    };
    let (dev, ino) = (m.dev(), m.ino());
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let base = e.path().join("loop");
        let (Ok(d), Ok(i)) = (
            fs::read_to_string(base.join("backing_dev")),
            fs::read_to_string(base.join("backing_inode")),
        ) else {
            // Older kernels: compare the backing file's path.
            if let Ok(bf) = fs::read_to_string(base.join("backing_file")) {
                let bf = PathBuf::from(bf.trim());
                if fs::metadata(&bf).is_ok_and(|b| b.dev() == dev && b.ino() == ino) {
                    out.push(PathBuf::from(format!("/dev/{name}")));
                }
            }
            continue;
        };
        let (Ok(d), Ok(i)) = (d.trim().parse::<u64>(), i.trim().parse::<u64>()) else {
            continue;
        };
        if d == dev && i == ino {
            out.push(PathBuf::from(format!("/dev/{name}")));
        }
    }
    out.sort();
    out
}

pub fn is_block_device(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

/// Size in bytes of a block device or regular file.
pub fn size_of(path: &Path) -> Result<u64> {
    let f = fs::File::open(path).map_err(|e| Error::io(path, "", e))?;
    file_size(&f, path)
}

/// Size in bytes of an open block device or regular file.
pub fn file_size(f: &fs::File, path: &Path) -> Result<u64> {
    let m = f.metadata().map_err(|e| Error::io(path, "", e))?;
    if m.file_type().is_block_device() {
        use fsage_sys::ioctl::{Getter, IoctlOpcode};
        const BLKGETSIZE64: IoctlOpcode = linux_raw_sys::ioctl::BLKGETSIZE64 as IoctlOpcode;
        // SAFETY: BLKGETSIZE64 writes one u64 (a size_t on 64-bit) through the pointer.
        unsafe { rustix::ioctl::ioctl(f, Getter::<BLKGETSIZE64, u64>::new()) }
            .map_err(|e| Error::io(path, "BLKGETSIZE64", e.into()))
    } else {
        Ok(m.len())
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

pub use fsage_sys::is_root;

/// A sibling temporary path of `path` ([`fsage_sys::temp_sibling`]), refusing a path with no
/// file name (`/`, `..`) instead of inventing one.
pub fn temp_sibling(path: &Path) -> Result<PathBuf> {
    if path.file_name().is_none() {
        return Err(Error::input(format!("{}: not a file name", path.display())));
    }
    Ok(fsage_sys::temp_sibling(path))
}

/// Removes a temporary file when dropped, unless [`TempPath::keep`] was called.
pub struct TempPath(Option<PathBuf>);

impl TempPath {
    pub fn new(p: PathBuf) -> TempPath {
        TempPath(Some(p))
    }
    pub fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }
    /// Renames it onto `dest` and disarms the guard.
    pub fn persist(mut self, dest: &Path) -> Result<()> {
        let p = self.0.take().unwrap_or_default();
        fs::rename(&p, dest).map_err(|e| {
            let _ = fs::remove_file(&p);
            Error::io(dest, &format!("rename from {}", p.display()), e)
        })
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            if p.is_dir() {
                let _ = fs::remove_dir_all(&p);
            } else {
                let _ = fs::remove_file(&p);
            }
        }
    }
}

/// Free bytes (as root counts them) on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Result<u64> {
    Ok(fsage_sys::fs_stat(dir)
        .map_err(|e| Error::io(dir, "statvfs", e))?
        .free)
}
