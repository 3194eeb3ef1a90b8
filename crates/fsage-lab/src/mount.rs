//! Mounting images and devices, unmounting, dropping caches, trimming.

use crate::cleaner::{self, Cleanerd};
use crate::fs::{probe_fs, FsKind};
use crate::loopdev::{is_autoclear, wait_detached, LoopDevice};
use crate::{Error, Result};
use fsage_sys::is_block_device;
use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How to mount.
#[derive(Debug, Clone, Default)]
pub struct MountOptions {
    /// File system type; probed from the superblock when `None`.
    pub fstype: Option<String>,
    /// `-o` options, comma-separated (`ro`, `noatime`, ... and file-system-specific ones).
    pub options: String,
}

fn split_flags(options: &str) -> (MountFlags, String) {
    let mut flags = MountFlags::empty();
    let mut data = Vec::new();
    for o in options.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match o {
            "ro" => flags |= MountFlags::RDONLY,
            "rw" => {}
            "noatime" => flags |= MountFlags::NOATIME,
            "nodiratime" => flags |= MountFlags::NODIRATIME,
            "relatime" => flags |= MountFlags::RELATIME,
            "sync" => flags |= MountFlags::SYNCHRONOUS,
            "nosuid" => flags |= MountFlags::NOSUID,
            "nodev" => flags |= MountFlags::NODEV,
            "noexec" => flags |= MountFlags::NOEXEC,
            other => data.push(other),
        }
    }
    (flags, data.join(","))
}

/// mount(2) `dev` on `mount_point`.
pub fn mount_device(dev: &Path, mount_point: &Path, fstype: &str, options: &str) -> Result<()> {
    mount_with(dev, mount_point, fstype, options, MountFlags::empty())
}

/// The mount options every image and device fsage mounts gets, whatever else is asked: no
/// setuid programs and no device nodes from inside the image take effect.
pub const IMAGE_MOUNT_FLAGS: &str = "nosuid,nodev";

/// mount(2) of an image or device (its file system, not a pseudo file system), always
/// [`IMAGE_MOUNT_FLAGS`].
fn mount_image(dev: &Path, mount_point: &Path, fstype: &str, options: &str) -> Result<()> {
    mount_with(
        dev,
        mount_point,
        fstype,
        options,
        MountFlags::NOSUID | MountFlags::NODEV,
    )
}

fn mount_with(
    dev: &Path,
    mount_point: &Path,
    fstype: &str,
    options: &str,
    always: MountFlags,
) -> Result<()> {
    let (flags, data) = split_flags(options);
    let flags = flags | always;
    let data_c = CString::new(data).map_err(|_| Error::input("bad mount options"))?;
    if let Err(e) = rustix::mount::mount(dev, mount_point, fstype, flags, data_c.as_c_str()) {
        let message = format!(
            "mount -t {fstype} {} {}{}: {e}",
            dev.display(),
            mount_point.display(),
            if options.is_empty() {
                String::new()
            } else {
                format!(" -o {options}")
            },
        );
        // A wrong type or option, a missing or busy mount point is the caller's to fix; a file
        // system the kernel finds corrupt (EUCLEAN), an I/O error or no memory is a failed
        // operation.
        return Err(match e {
            Errno::INVAL
            | Errno::NODEV
            | Errno::NOENT
            | Errno::NOTDIR
            | Errno::BUSY
            | Errno::ACCESS
            | Errno::PERM
            | Errno::ROFS => Error::input(message),
            _ => Error::operation(message),
        });
    }
    Ok(())
}

/// umount(2), retrying a few times while the file system is busy.
pub fn umount_point(mount_point: &Path) -> Result<()> {
    let mut last = None;
    for i in 0..10 {
        // NOFOLLOW: a link put where a mount point was unmounts nothing else.
        match rustix::mount::unmount(mount_point, UnmountFlags::NOFOLLOW) {
            Ok(()) => return Ok(()),
            Err(Errno::BUSY) => {}
            Err(e) => return Err(Error::io(mount_point, "umount", e.into())),
        }
        last = Some(std::io::Error::from(Errno::BUSY));
        std::thread::sleep(Duration::from_millis(50 * (i + 1)));
    }
    Err(Error::io(
        mount_point,
        "umount (still busy: a process has a file open or its working directory there)",
        last.unwrap_or_else(|| Errno::BUSY.into()),
    ))
}

fn lazy_umount(mount_point: &Path) -> Result<()> {
    rustix::mount::unmount(mount_point, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW)
        .map_err(|e| Error::io(mount_point, "lazy umount", e.into()))
}

/// A file system fsage mounted (on a loop device it attached, for an image file). Dropping it
/// unmounts (lazily if it must) and detaches the loop device; [`Mounted::finish`] does the same
/// and reports errors.
#[derive(Debug)]
pub struct Mounted {
    mount_point: PathBuf,
    device: PathBuf,
    fstype: String,
    loopdev: Option<LoopDevice>,
    /// nilfs2's cleaner, which fsage started after mounting and stops before unmounting.
    cleanerd: Option<Cleanerd>,
    mounted: bool,
    /// The image's (or device's) lock ([`fsage_sys::lock`]), held while fsage has it mounted:
    /// released after the unmount and the detach (fields drop after [`Drop::drop`]).
    _lock: fsage_sys::lock::Lock,
}

impl Mounted {
    /// Attaches `image` (or takes a block device as it is) and mounts it on `mount_point` (an
    /// existing directory), probing the file system type.
    pub fn attach_and_mount(image: &Path, mount_point: &Path) -> Result<Mounted> {
        Mounted::attach_and_mount_with(image, mount_point, &MountOptions::default())
    }

    pub fn attach_and_mount_with(
        image: &Path,
        mount_point: &Path,
        opts: &MountOptions,
    ) -> Result<Mounted> {
        // Nobody else attaches, mounts or ages it meanwhile (two `fs mount` at once would both
        // pass the checks below and mount it twice).
        let lock = fsage_sys::lock::lock_target_or_refuse(image, "the image or device")?;
        // The mount point is opened once, without following a link at its end, and mounted on
        // through that descriptor: the directory checked is the one mounted on, even if the
        // name is swapped meanwhile, and a link planted there (`IMAGE.mnt` -> elsewhere) is
        // refused instead of mounting over its target.
        if !mount_point.exists() {
            crate::bail!(
                "{}: the mount point is not an existing directory",
                mount_point.display()
            );
        }
        let dir_fd = fsage_sys::safe::open_dir_nofollow(mount_point)?;
        let mount_point =
            fsage_sys::safe::fd_path(&dir_fd).map_err(|e| Error::io(mount_point, "", e))?;
        if fsage_sys::is_mount_point(&mount_point) {
            crate::bail!(
                "{}: something is mounted there already",
                mount_point.display()
            );
        }
        let fstype = match &opts.fstype {
            Some(t) => t.clone(),
            None => probe_fs(image)?.ok_or_else(|| {
                Error::input(format!(
                    "{}: no file system found ({} superblock); give the type",
                    image.display(),
                    fsage_sys::fskind::names_listed("or")
                ))
            })?,
        };
        // A kind the kernel lacks would fail in mount(2) with a bare ENODEV, after the loop device
        // was attached: say so before, and what runs it.
        if let Ok(kind) = FsKind::parse(&fstype) {
            kind.check_kernel()?;
        }
        let read_only = split_flags(&opts.options).0.contains(MountFlags::RDONLY);
        let (device, loopdev) = if is_block_device(image) {
            let busy = fsage_sys::mounts_of_device(image)?;
            if let Some(m) = busy.first() {
                crate::bail!(
                    "{}: already mounted on {}",
                    image.display(),
                    m.mount_point.display()
                );
            }
            (image.to_path_buf(), None)
        } else {
            let loops = fsage_sys::loops_backed_by(image);
            if !loops.is_empty() {
                crate::bail!(
                    "{}: already attached to {} (mounted or in use elsewhere); unmount it first",
                    image.display(),
                    loops
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            let l = LoopDevice::attach(image, read_only)?;
            (l.path().to_path_buf(), Some(l))
        };
        // On error `loopdev` drops here: the auto-clearing device goes away. Always nosuid and
        // nodev: an image may hold a setuid program or a device node its maker put there, and
        // whoever can reach the mount must not gain root or raw devices through it.
        let through_fd = PathBuf::from(format!("/proc/self/fd/{}", dir_fd.as_raw_fd()));
        mount_image(&device, &through_fd, &fstype, &opts.options).map_err(|e| Error {
            message: e.message.replace(
                &*through_fd.to_string_lossy(),
                &mount_point.to_string_lossy(),
            ),
            ..e
        })?;
        drop(dir_fd);
        let mut m = Mounted {
            mount_point,
            device,
            fstype,
            loopdev,
            cleanerd: None,
            mounted: true,
            _lock: lock,
        };
        // mount.nilfs2 would start the cleaner; mount(2) does not. Read-only needs none.
        if needs_cleaner(&m.fstype) && !read_only {
            // On error `m` drops: unmounted and detached.
            m.cleanerd = Some(Cleanerd::start(
                &m.device,
                &m.mount_point,
                &cleaner::default_pid_dir(),
            )?);
        }
        Ok(m)
    }

    pub fn mount_point(&self) -> &Path {
        &self.mount_point
    }

    /// The block device mounted (`/dev/loopN` for an image).
    pub fn device(&self) -> &Path {
        &self.device
    }

    /// Device number of the loop device, when fsage attached one.
    pub fn loop_rdev(&self) -> Option<u64> {
        self.loopdev.as_ref().map(|l| l.rdev())
    }

    pub fn fstype(&self) -> &str {
        &self.fstype
    }

    pub fn kind(&self) -> Option<FsKind> {
        FsKind::parse(&self.fstype).ok()
    }

    /// PID of the nilfs2 cleaner fsage started for this mount.
    pub fn cleanerd_pid(&self) -> Option<u32> {
        self.cleanerd.as_ref().map(Cleanerd::pid)
    }

    /// Unmounts, then waits until the loop device is detached; reports what failed.
    pub fn finish(mut self) -> Result<()> {
        self.mounted = false;
        // The cleaner holds the file system open: it goes first (it is killed if it will not).
        if let Some(c) = self.cleanerd.take() {
            c.stop()?;
        }
        let r = umount_point(&self.mount_point);
        if let Err(e) = r {
            // Leave nothing behind: detach lazily, the kernel finishes when the last user goes.
            let _ = lazy_umount(&self.mount_point);
            self.loopdev.take();
            return Err(e);
        }
        if let Some(l) = self.loopdev.take() {
            l.detach_and_wait(Duration::from_secs(10))?;
        }
        Ok(())
    }

    /// Leaves the file system mounted (for `fsage fs mount`): returns the device and mount point.
    /// The loop device stays as long as the mount does and goes away when it is unmounted.
    pub fn keep(mut self) -> (PathBuf, PathBuf) {
        self.mounted = false;
        // Its PID file stays: `umount` stops it.
        if let Some(c) = self.cleanerd.take() {
            c.release();
        }
        if let Some(l) = self.loopdev.take() {
            l.release();
        }
        (self.device.clone(), self.mount_point.clone())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // Dropping the cleaner stops it, before the unmount it would keep busy.
        self.cleanerd.take();
        if self.mounted {
            self.mounted = false;
            if let Err(e) = umount_point(&self.mount_point) {
                eprintln!("fsage: cleanup: {e}; unmounting lazily");
                if let Err(e) = lazy_umount(&self.mount_point) {
                    eprintln!("fsage: cleanup: {e}");
                }
            }
        }
        if let Some(l) = self.loopdev.take() {
            let _ = l.detach_and_wait(Duration::from_secs(5));
        }
    }
}

/// What [`umount`] did.
#[derive(Debug, Default)]
pub struct Unmounted {
    pub mount_points: Vec<PathBuf>,
    /// Loop devices that went away with the mount.
    pub detached: Vec<PathBuf>,
    /// Loop devices left attached because fsage did not attach them (no auto-clear flag) or
    /// because they are slow devices (`fsage dev`), which stay until destroyed.
    pub left_attached: Vec<PathBuf>,
}

/// The locks of what a mount's `source` device stands for: the device, and for a loop device the
/// image file behind it (when it still has a name).
fn mount_point_locks(source: &str) -> Result<Vec<fsage_sys::lock::Lock>> {
    let dev = Path::new(source);
    if !fsage_sys::dev::is_block_device(dev) {
        return Ok(Vec::new());
    }
    let mut locks = vec![fsage_sys::lock::lock_target_or_refuse(dev, "the device")?];
    if let Some(file) =
        fsage_sys::dev::block_name(dev).and_then(|n| crate::loopdev::backing_file(&n))
    {
        if file.is_file() {
            locks.push(fsage_sys::lock::lock_target_or_refuse(&file, "the image")?);
        }
    }
    Ok(locks)
}

/// Unmounts `target`: a mount point, or an image file (every mount of every loop device backed by
/// it) or a block device (every mount of it). Loop devices fsage attached then go away.
pub fn umount(target: &Path) -> Result<Unmounted> {
    let mut out = Unmounted::default();
    let meta = std::fs::metadata(target).map_err(|e| Error::io(target, "", e))?;
    // An image or device being mounted or aged by another command is not unmounted under it.
    let _lock = if meta.is_dir() {
        None
    } else {
        Some(fsage_sys::lock::lock_target_or_refuse(
            target,
            "the image or device",
        )?)
    };
    let mut devices = Vec::new();
    if meta.is_dir() {
        let mp = target
            .canonicalize()
            .map_err(|e| Error::io(target, "", e))?;
        let entries = fsage_sys::mount_table()?;
        let Some(e) = entries.iter().rev().find(|e| e.mount_point == mp) else {
            crate::bail!("{}: not a mount point", target.display());
        };
        if e.source.starts_with("/dev/loop") {
            devices.push(PathBuf::from(&e.source));
        }
        // The mount point of an image another command is mounting or ageing is not unmounted
        // under it either: that command holds the lock of the image behind the loop device (or
        // of the device).
        let _locks = mount_point_locks(&e.source)?;
        let auto: Vec<bool> = devices.iter().map(|d| is_autoclear(d)).collect();
        stop_cleaner_of(e)?;
        umount_point(&mp)?;
        out.mount_points.push(mp);
        finish_umount(out, devices, auto)
    } else {
        if meta.is_file() {
            devices = fsage_sys::loops_backed_by(target);
            if devices.is_empty() {
                crate::bail!(
                    "{}: not mounted (no loop device is attached to it)",
                    target.display()
                );
            }
        } else if is_block_device(target) {
            devices.push(target.to_path_buf());
        } else {
            crate::bail!(
                "{}: not a mount point, image file or block device",
                target.display()
            );
        }
        let auto: Vec<bool> = devices.iter().map(|d| is_autoclear(d)).collect();
        for d in &devices {
            let mut ms = fsage_sys::mounts_of_device(d)?;
            // Unmount the most recent first (stacked mounts).
            ms.reverse();
            for m in ms {
                stop_cleaner_of(&m)?;
                umount_point(&m.mount_point)?;
                out.mount_points.push(m.mount_point);
            }
        }
        if out.mount_points.is_empty() {
            crate::bail!("{}: not mounted", target.display());
        }
        finish_umount(out, devices, auto)
    }
}

/// Whether a read-write mount of `fstype` needs a cleaner daemon (nilfs2's).
fn needs_cleaner(fstype: &str) -> bool {
    FsKind::by_name(fstype).is_some_and(|k| k.desc().cleaner_daemon)
}

/// Before a nilfs2 mount is unmounted: stops the cleaner fsage started for it (found from its
/// device and mount point), and refuses when a cleaner fsage did not start serves it, which
/// would keep it busy (fsage signals no process it did not start).
fn stop_cleaner_of(m: &fsage_sys::MountEntry) -> Result<()> {
    if !needs_cleaner(&m.fstype) {
        return Ok(());
    }
    let dev = Path::new(&m.source);
    cleaner::stop_for(dev, &m.mount_point, &cleaner::default_pid_dir())?;
    let others = cleaner::others_serving(dev, &m.mount_point);
    if !others.is_empty() {
        crate::bail!(
            "{}: nilfs2 whose cleaner (nilfs_cleanerd, PID {}) fsage did not start keeps it busy; \
             unmount it with umount(8), which stops that cleaner",
            m.mount_point.display(),
            others
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

fn finish_umount(mut out: Unmounted, devices: Vec<PathBuf>, auto: Vec<bool>) -> Result<Unmounted> {
    for (d, autoclear) in devices.into_iter().zip(auto) {
        if !d.to_string_lossy().starts_with("/dev/loop") {
            continue;
        }
        if autoclear && !crate::loopdev::is_slow_device(&d) {
            wait_detached(&d, 0, Duration::from_secs(10))?;
            out.detached.push(d);
        } else if fsage_sys::mounts_of_device(&d)
            .map(|m| m.is_empty())
            .unwrap_or(false)
        {
            out.left_attached.push(d);
        }
    }
    Ok(out)
}

/// Writes back dirty data (`sync`) and drops the page cache, dentries and inodes.
pub fn drop_caches() -> Result<()> {
    rustix::fs::sync();
    let p = Path::new("/proc/sys/vm/drop_caches");
    std::fs::write(p, b"3\n").map_err(|e| Error::io(p, "drop caches (needs root)", e))
}

/// FITRIM on `target`: a mount point, or an unmounted image file or device, mounted on a fresh
/// temporary directory for the trim and unmounted afterwards.
pub fn trim_target(target: &Path) -> Result<u64> {
    if target.is_dir() {
        return trim(target);
    }
    let dir = fsage_sys::safe::create_private_dir(&std::env::temp_dir(), "fsage-mnt-")?;
    /// Removes the directory when dropped, after the mount on it is gone: remove_dir removes only
    /// an empty directory, never anything through a mount.
    struct RemoveDir<'a>(&'a Path);
    impl Drop for RemoveDir<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(self.0);
        }
    }
    let _rm = RemoveDir(&dir);
    let m = Mounted::attach_and_mount(target, &dir)?;
    let r = trim(m.mount_point());
    m.finish()?;
    r
}

/// FITRIM on a mounted file system: tells the device (for an image on a loop device: punches
/// holes in the image) which blocks are free. Returns the bytes trimmed as the file system counts.
pub fn trim(mount_point: &Path) -> Result<u64> {
    use fsage_sys::ioctl::{opcode, IoctlOpcode, Updater};
    use linux_raw_sys::general::fstrim_range;
    // _IOWR('X', 121, struct fstrim_range)
    const FITRIM: IoctlOpcode = opcode::read_write::<fstrim_range>(b'X', 121);
    // FITRIM trims the whole file system holding a path: a directory inside another file system
    // (the root disk, say) would trim that one.
    if !fsage_sys::is_mount_point(mount_point) {
        crate::bail!(
            "{}: not a mount point: trimming it would trim the whole file system holding it",
            mount_point.display()
        );
    }
    let f = std::fs::File::open(mount_point).map_err(|e| Error::io(mount_point, "", e))?;
    let mut r = fstrim_range {
        start: 0,
        len: u64::MAX,
        minlen: 0,
    };
    // SAFETY: FITRIM reads and writes exactly one struct fstrim_range.
    unsafe { rustix::ioctl::ioctl(&f, Updater::<FITRIM, fstrim_range>::new(&mut r)) }
        .map_err(|e| Error::io(mount_point, "FITRIM", e.into()))?;
    Ok(r.len)
}
