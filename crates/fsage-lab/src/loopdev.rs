//! Loop devices that fsage attaches itself, with `LOOP_CONFIGURE` and the auto-clear flag: the
//! kernel detaches such a device when its last user closes it. While fsage holds the device open
//! (this type), nothing else goes away; once a mount holds it, unmounting detaches it; and if fsage
//! dies, the kernel still cleans up. fsage never detaches a loop device it did not attach.

use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fsage_sys::ioctl::{call_returning, IoctlOpcode, Setter};
use linux_raw_sys::loop_device::{
    loop_config, loop_info64, LOOP_CONFIGURE, LOOP_CTL_GET_FREE, LO_FLAGS_AUTOCLEAR,
    LO_FLAGS_DIRECT_IO, LO_FLAGS_READ_ONLY,
};

const GET_FREE: IoctlOpcode = LOOP_CTL_GET_FREE as IoctlOpcode;
const CONFIGURE: IoctlOpcode = LOOP_CONFIGURE as IoctlOpcode;

/// How [`LoopDevice::attach_with`] sets a device up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopOptions {
    pub read_only: bool,
    /// Direct I/O on the backing file (`LO_FLAGS_DIRECT_IO`): no second page cache, each block
    /// request reaches the backing file as one read or write.
    pub direct_io: bool,
}

/// The read-ahead every loop device fsage attaches gets: the kernel's default
/// (`VM_READAHEAD_PAGES`), set explicitly so that a machine's udev rules or an earlier user of
/// the device number cannot change which requests a traced read issues. A file system with a
/// read-ahead of its own (btrfs: at least 4 MiB) derives it from this at mount.
pub const READ_AHEAD_KB: u64 = 128;

/// The read-ahead of the block device `rdev` in KiB (`queue/read_ahead_kb`), if readable.
pub fn read_ahead_kb(rdev: u64) -> Option<u64> {
    let (ma, mi) = fsage_sys::mountinfo::dev_parts(rdev);
    std::fs::read_to_string(format!("/sys/dev/block/{ma}:{mi}/queue/read_ahead_kb"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Sets the read-ahead of the block device `rdev` (best effort: a kernel without the knob keeps
/// its own, which [`read_ahead_kb`] then reports).
fn set_read_ahead_kb(rdev: u64, kb: u64) {
    let (ma, mi) = fsage_sys::mountinfo::dev_parts(rdev);
    let _ = std::fs::write(
        format!("/sys/dev/block/{ma}:{mi}/queue/read_ahead_kb"),
        kb.to_string(),
    );
}

/// A loop device attached by fsage (auto-clearing), held open while this value lives.
#[derive(Debug)]
pub struct LoopDevice {
    path: PathBuf,
    file: Option<File>,
    rdev: u64,
}

impl LoopDevice {
    /// Attaches `image` (a regular file) to a free loop device.
    pub fn attach(image: &Path, read_only: bool) -> Result<LoopDevice> {
        LoopDevice::attach_with(
            image,
            LoopOptions {
                read_only,
                ..LoopOptions::default()
            },
        )
    }

    /// Attaches `image` with `opts`. With `direct_io`, fails (and detaches) if the kernel could
    /// not turn direct I/O on for this backing file.
    pub fn attach_with(image: &Path, opts: LoopOptions) -> Result<LoopDevice> {
        let read_only = opts.read_only;
        let backing = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .open(image)
            .map_err(|e| Error::io(image, "cannot open the image", e))?;
        if !backing
            .metadata()
            .map_err(|e| Error::io(image, "", e))?
            .is_file()
        {
            crate::bail!("{}: not a regular file", image.display());
        }
        let ctl = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/loop-control")
            .map_err(|e| {
                Error::io(
                    Path::new("/dev/loop-control"),
                    "loop devices need root and the loop module",
                    e,
                )
            })?;
        let abs = image.canonicalize().unwrap_or_else(|_| image.to_path_buf());
        let name = abs.to_string_lossy();
        let mut last_err = String::new();
        for _ in 0..50 {
            // SAFETY: LOOP_CTL_GET_FREE takes no argument on the loop control device.
            let n = unsafe { call_returning::<GET_FREE>(&ctl) }
                .map_err(|e| Error::io(Path::new("/dev/loop-control"), "LOOP_CTL_GET_FREE", e))?;
            let path = PathBuf::from(format!("/dev/loop{n}"));
            let dev = match OpenOptions::new().read(true).write(!read_only).open(&path) {
                Ok(f) => f,
                Err(e) => {
                    last_err = format!("{}: {e}", path.display());
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            };
            let flag = |on: bool, f| if on { f as u32 } else { 0 };
            let mut info = loop_info64 {
                lo_device: 0,
                lo_inode: 0,
                lo_rdevice: 0,
                lo_offset: 0,
                lo_sizelimit: 0,
                lo_number: 0,
                lo_encrypt_type: 0,
                lo_encrypt_key_size: 0,
                lo_flags: LO_FLAGS_AUTOCLEAR as u32
                    | flag(read_only, LO_FLAGS_READ_ONLY)
                    | flag(opts.direct_io, LO_FLAGS_DIRECT_IO),
                lo_file_name: [0; 64],
                lo_crypt_name: [0; 64],
                lo_encrypt_key: [0; 32],
                lo_init: [0; 2],
            };
            // The name is for people (losetup -l); the kernel keeps 63 bytes and a NUL.
            for (d, s) in info.lo_file_name.iter_mut().zip(name.bytes().take(63)) {
                *d = s;
            }
            let cfg = loop_config {
                fd: backing.as_raw_fd() as u32,
                block_size: 0,
                info,
                __reserved: [0; 8],
            };
            // SAFETY: LOOP_CONFIGURE reads one `struct loop_config` (linux-raw-sys's binding of
            // the kernel's); `backing` stays open for the call.
            let configured =
                unsafe { rustix::ioctl::ioctl(&dev, Setter::<CONFIGURE, loop_config>::new(cfg)) };
            if configured.is_ok() {
                let rdev = dev.metadata().map_err(|e| Error::io(&path, "", e))?.rdev();
                set_read_ahead_kb(rdev, READ_AHEAD_KB);
                let attached = LoopDevice {
                    path,
                    file: Some(dev),
                    rdev,
                };
                if opts.direct_io && !attached.direct_io() {
                    let p = attached.path.clone();
                    // Dropping our handle detaches the (auto-clearing) device again.
                    drop(attached);
                    crate::fail!(
                        "{}: the kernel refused direct I/O on {} (the backing file must support \
                         O_DIRECT)",
                        p.display(),
                        image.display()
                    );
                }
                return Ok(attached);
            }
            let e = configured.unwrap_err();
            if e == rustix::io::Errno::BUSY {
                // Another process took it between GET_FREE and CONFIGURE: try the next one.
                last_err = format!("{}: {e}", path.display());
                continue;
            }
            return Err(Error::io(&path, "LOOP_CONFIGURE", e.into()));
        }
        Err(Error::operation(format!(
            "{}: no free loop device could be attached (last: {last_err})",
            image.display()
        )))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Is direct I/O on (`/sys/block/loopN/loop/dio`)?
    pub fn direct_io(&self) -> bool {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
            .is_ok_and(|s| s.trim() == "1")
    }

    /// The device number (for tracepoint filters).
    pub fn rdev(&self) -> u64 {
        self.rdev
    }

    /// Closes fsage's handle: the device goes away as soon as nothing else (a mount) holds it.
    pub fn release(mut self) -> PathBuf {
        self.file.take();
        self.path.clone()
    }

    /// Closes fsage's handle and waits (up to `timeout`) until the kernel has detached the device.
    pub fn detach_and_wait(mut self, timeout: Duration) -> Result<()> {
        self.file.take();
        wait_detached(&self.path, self.rdev, timeout)
    }
}

/// Waits until `/dev/loopN` has no backing file any more.
pub fn wait_detached(dev: &Path, _rdev: u64, timeout: Duration) -> Result<()> {
    let name = dev
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bf = PathBuf::from(format!("/sys/block/{name}/loop/backing_file"));
    let start = Instant::now();
    while bf.exists() {
        if start.elapsed() > timeout {
            crate::fail!(
                "{}: still attached {:.1}s after its last user closed it (is something else \
                 holding it open?)",
                dev.display(),
                timeout.as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Does the loop device `dev` (`/dev/loopN`) have the auto-clear flag (fsage's and `mount -o
/// loop`'s devices do)?
pub fn is_autoclear(dev: &Path) -> bool {
    let name = dev
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::read_to_string(format!("/sys/block/{name}/loop/autoclear"))
        .is_ok_and(|s| s.trim() == "1")
}

/// The file behind the loop device the kernel names `name` (`loop3`), as the kernel recorded it
/// when it was attached; `None` when `name` is not an attached loop device.
pub fn backing_file(name: &str) -> Option<PathBuf> {
    let bf = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(bf.trim()))
}

/// Is `dev` (`/dev/loopN`) a slow device of fsage-slowdev: a loop device over the file its FUSE
/// daemon serves? The daemon holds such a device until `fsage dev destroy`, so it outlives the
/// mounts made on it.
pub fn is_slow_device(dev: &Path) -> bool {
    let name = dev
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(bf) = backing_file(&name) else {
        return false;
    };
    let Some(dir) = bf.parent() else {
        return false;
    };
    fsage_sys::mount_table().is_ok_and(|m| {
        m.iter().any(|e| {
            e.mount_point == dir
                && e.fstype.starts_with("fuse")
                && e.source.starts_with("fsage-slowdev:")
        })
    })
}
