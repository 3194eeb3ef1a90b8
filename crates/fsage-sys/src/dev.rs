//! Block devices and loop devices seen from outside: which loop devices a file backs, which mounts
//! a device holds, a device's or file's size. The lab, the slow device and Git aging all ask these
//! before they touch a device, so they are answered once, here.

use crate::mountinfo::{dev_parts, MountEntry};
use crate::Error;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The mount table ([`crate::mounts`]), its failure as an [`Error`] naming the file.
pub fn mount_table() -> Result<Vec<MountEntry>, Error> {
    crate::mounts().map_err(|e| Error::io(Path::new("/proc/self/mountinfo"), "", e))
}

/// Mounts whose source is the block device `dev` (by number, or by path for file systems such as
/// btrfs that report an anonymous device number).
pub fn mounts_of_device(dev: &Path) -> Result<Vec<MountEntry>, Error> {
    let m = fs::metadata(dev).map_err(|e| Error::io(dev, "", e))?;
    let want = dev_parts(m.rdev());
    let canon = dev.canonicalize().unwrap_or_else(|_| dev.to_path_buf());
    Ok(mount_table()?
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
pub fn size_of(path: &Path) -> Result<u64, Error> {
    let f = fs::File::open(path).map_err(|e| Error::io(path, "", e))?;
    file_size(&f, path)
}

/// Size in bytes of an open block device or regular file.
pub fn file_size(f: &fs::File, path: &Path) -> Result<u64, Error> {
    let m = f.metadata().map_err(|e| Error::io(path, "", e))?;
    if m.file_type().is_block_device() {
        use crate::ioctl::{Getter, IoctlOpcode};
        const BLKGETSIZE64: IoctlOpcode = linux_raw_sys::ioctl::BLKGETSIZE64 as IoctlOpcode;
        // SAFETY: BLKGETSIZE64 writes one u64 (a size_t on 64-bit) through the pointer.
        unsafe { rustix::ioctl::ioctl(f, Getter::<BLKGETSIZE64, u64>::new()) }
            .map_err(|e| Error::io(path, "BLKGETSIZE64", e.into()))
    } else {
        Ok(m.len())
    }
}
