//! The lab's primitives: file systems on loop-mounted image files (aging in memory, in /dev/shm),
//! loop devices, the mount table's view of them, sparse-aware image copy, rollback of an image
//! after a benchmark, and block-request tracing. Nothing here plans, ages or measures: that is
//! `fsage-core`, above this crate, so that the slow device needs only these.
//!
//! # API
//!
//! File systems ([`fs`], [`mount`]):
//! - [`FsKind`]: `ext4`, `xfs`, `btrfs`, `f2fs`, `nilfs2` (`FsKind::parse("xfs")`, `kind.name()`);
//!   [`FsKind::check_kernel`] says whether the running kernel can mount it (f2fs and nilfs2 are
//!   often missing: a VM runs them).
//! - [`create_image(kind, size, path, mkfs_opts)`](create_image): makes a sparse image file of
//!   `size` bytes (through a temporary file and a rename) and formats it; refuses a path that exists.
//!   [`create_fs`] is the general form (block devices, forcing, the safety checks).
//! - [`Mounted::attach_and_mount(image, mountpoint)`](Mounted::attach_and_mount): attaches the image
//!   to a fresh loop device and mounts it. A guard: dropping it unmounts and detaches;
//!   [`Mounted::finish`] does the same and reports errors; [`Mounted::keep`] leaves it mounted.
//!   [`mount::umount`] and [`mount::umount_point`] take down what an earlier process left.
//! - nilfs2's cleaner ([`cleaner`]): a nilfs2 file system mounted read-write gets a
//!   `nilfs_cleanerd` fsage starts (as `mount.nilfs2` would) and stops by its PID before the
//!   unmount, whether by the guard or by [`mount::umount`] in a later process.
//! - [`drop_caches()`](drop_caches): `sync`, then `3 > /proc/sys/vm/drop_caches`; [`trim`]: FITRIM.
//! - [`check_target_safe`]: refuses a device or image that is mounted, attached to a loop device or
//!   holds a file system (unless forced). [`fsck`] runs the file system's checker, read-only;
//!   [`probe_fs`] says which file system a device or image holds.
//!
//! Loop devices ([`loopdev`]): [`LoopDevice::attach_with(file, options)`](LoopDevice::attach_with)
//! attaches a file, auto-clearing (the device goes away when its last user does, even if fsage
//! is killed), read-only or with direct I/O as asked; [`loopdev::wait_detached`] waits until a
//! device has gone.
//!
//! A fresh twin ([`twin`]): [`FreshTwin::of(mount)`](FreshTwin::of) makes and mounts, under
//! /dev/shm, a fresh file system of the same kind and size as the one mounted at `mount`, for a
//! comparison; dropping it (or [`FreshTwin::finish`]) unmounts and removes it.
//!
//! Copy ([`sparse`]): [`sparse::copy_image`] writes only the data of a sparse image (holes and zero
//! blocks are skipped on a file target and zeroed with `BLKZEROOUT` on a device);
//! [`sparse::compare`] finds the blocks in which two images differ.
//!
//! Rollback ([`rollback`]): [`rollback::track`] runs a command on an image while recording, through
//! the tracefs `block:block_rq_issue` tracepoint, the sectors written on its loop device;
//! [`rollback::restore`] rewrites those sectors from a raw snapshot and checks the image equals it.
//! Without tracing, the log says `method: compare` and restore compares the whole image instead.
//!
//! Tracing ([`trace`]): [`trace::BlockTrace::start(rdev, filter)`](trace::BlockTrace::start) records
//! one device's block requests (reads or writes) in a private tracefs instance, so several users
//! at once do not collide; [`trace::read_layout`] scores a read stream as Conway et al. do, and
//! [`trace::device_trace`] hands a trace to `fsage-device` to cost on a model.
//!
//! Lock contention ([`locks`]): [`locks::LockTrace::start()`](locks::LockTrace::start) records
//! every task's waits on contended kernel locks (`lock:contention_begin`/`end`, kernels since
//! 5.19) in a private tracefs instance; [`locks::LockTrace::finish`] sums them per lock instance
//! with their callers, naming a directory's `i_rwsem` from its callers.
//!
//! Drives ([`drive`]): models that keep a drive state (an SSD's FTL) fed a device's writes as
//! they come ([`drive::Feed`], [`drive::DriveMount`]), and `fsage age --device-model`'s
//! [`drive::DriveAging`].
//!
//! The system helpers these use (the mount table, loop devices' backing files, device sizes,
//! running mkfs and fsck, temporary files) are `fsage-sys`'s ([`fsage_sys::dev`],
//! [`fsage_sys::tool`], [`fsage_sys::TempPath`]).
//!
//! Every function returns [`Result`] with an [`Error`] that names the path, flag or device at fault.
//! Nothing here panics on bad input. Long loops stop early, cleaning up, when
//! [`fsage_signals::interrupted`] (after [`fsage_signals::install`]) says SIGINT or SIGTERM arrived.

pub mod cleaner;
pub mod drive;
pub mod fs;
pub mod locks;
pub mod loopdev;
pub mod mount;
pub mod rollback;
pub mod sparse;
pub mod trace;
pub mod twin;

pub use fs::{
    check_target_safe, create_fs, create_image, fsck, probe_fs, Checked, CreateOptions, FsKind,
};
pub use loopdev::{LoopDevice, LoopOptions};
pub use mount::{drop_caches, trim, trim_target, Mounted};
pub use twin::FreshTwin;

/// An error of the lab: the message names what went wrong and where, and who has to act on it.
/// The type is shared with the other libraries ([`fsage_sys::Error`]).
pub use fsage_sys::{Error, Remedy};

pub type Result<T> = std::result::Result<T, Error>;

/// `Err` naming `what` when SIGINT or SIGTERM arrived ([`fsage_signals`]): the long loops of the
/// lab and of the image library call it, so that they stop, unmount, detach and remove their
/// temporary files. A third signal kills at once.
pub fn check_interrupted(what: &str) -> Result<()> {
    if fsage_signals::interrupted() {
        return Err(Error::interrupted(format!(
            "{what}: interrupted by a signal; cleaned up"
        )));
    }
    Ok(())
}

/// `Err(Error(format!(...)))`.
#[macro_export]
macro_rules! bail {
    ($($t:tt)*) => { return Err($crate::Error::input(format!($($t)*))) };
}

/// `Err(Error::operation(format!(...)))`: a failed operation, not bad input.
#[macro_export]
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::Error::operation(format!($($t)*))) };
}
