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
/// to the file matches; a block device also by its device number, so a loop device stacked on
/// another is found whatever node it was attached through).
pub fn loops_backed_by(file: &Path) -> Vec<PathBuf> {
    let Ok(m) = fs::metadata(file) else {
        return Vec::new();
    };
    let (dev, ino) = (m.dev(), m.ino());
    let rdev = m.file_type().is_block_device().then_some(m.rdev());
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
        if let Some(r) = rdev {
            let same_device = fs::read_to_string(base.join("backing_file")).is_ok_and(|bf| {
                fs::metadata(bf.trim())
                    .is_ok_and(|b| b.file_type().is_block_device() && b.rdev() == r)
            });
            if same_device {
                out.push(PathBuf::from(format!("/dev/{name}")));
                continue;
            }
        }
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

/// The kernel's name of the block device `dev` (`loop3`, `sda1`), from its device number
/// (`/sys/dev/block/MAJ:MIN`): whatever path or link the device was given by.
pub fn block_name(dev: &Path) -> Option<String> {
    let m = fs::metadata(dev).ok()?;
    if !m.file_type().is_block_device() {
        return None;
    }
    let (ma, mi) = dev_parts(m.rdev());
    let link = fs::read_link(format!("/sys/dev/block/{ma}:{mi}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// The mounted btrfs file systems (by UUID) that the block device `dev` is a member of
/// (`/sys/fs/btrfs/UUID/devices/NAME`): a multi-device btrfs is mounted from one member only, so
/// the mount table does not name the others.
pub fn btrfs_member_of(dev: &Path) -> Vec<String> {
    let Some(name) = block_name(dev) else {
        return Vec::new();
    };
    let Ok(rd) = fs::read_dir("/sys/fs/btrfs") else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.path().join("devices").join(&name).exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Opens the block device `dev` for writing with `O_EXCL`, which the kernel refuses (EBUSY) while
/// anything holds it exclusively: a mounted file system (every member of a multi-device btrfs),
/// a RAID or device-mapper device built on it, a swap area, another exclusive opener. fsage
/// writes a device only through such a descriptor, and refuses, even when forced, a device that
/// backs a loop device or is a member of a mounted btrfs ([`check_device_unused`]).
pub fn open_device_exclusive(dev: &Path) -> Result<fs::File, Error> {
    use rustix::fs::{Mode, OFlags};
    check_device_unused(dev)?;
    rustix::fs::open(
        dev,
        OFlags::RDWR | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(fs::File::from)
    .map_err(|e| match e {
        rustix::io::Errno::BUSY => Error::input(format!(
            "{}: in use (mounted, a member of a mounted multi-device file system, RAID or device              mapper, or swap): the kernel refuses exclusive access; fsage never formats or writes              a device in use, even when forced",
            dev.display()
        )),
        e => Error::io(dev, "", e.into()),
    })
}

/// Refuses a block device that another block device reads through without the kernel's
/// exclusive claim: a loop device whose backing file it is (`/sys/block/loop*/loop/
/// backing_file`, as in `losetup LB LA` with a file system on LB), or a member of a mounted
/// btrfs. Writing it would corrupt what is mounted above.
pub fn check_device_unused(dev: &Path) -> Result<(), Error> {
    let loops = loops_backed_by(dev);
    if !loops.is_empty() {
        return Err(Error::input(format!(
            "{}: the backing device of {}; fsage never formats or writes a device another              device is built on, even when forced: detach it first",
            dev.display(),
            loops
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(uuid) = btrfs_member_of(dev).first() {
        return Err(Error::input(format!(
            "{}: a member of the mounted btrfs {uuid}; fsage never formats or writes a device in              use, even when forced: unmount it first",
            dev.display()
        )));
    }
    Ok(())
}

/// Checks that `dev` may be formatted by a tool (mkfs) that opens it itself: unused as
/// [`check_device_unused`] says, and not held exclusively by anyone (an `O_EXCL` open, closed
/// again before the tool runs, since mkfs opens the device exclusively itself).
pub fn check_device_exclusive(dev: &Path) -> Result<(), Error> {
    open_device_exclusive(dev).map(drop)
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
