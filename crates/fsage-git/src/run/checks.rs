//! The checks before anything is made: the target, its directory and file system, the names
//! beside it, and the memory limit the run enters.

use super::{source_clone_path, traces_path, GitAgeOptions, Target};
use crate::measure;
use crate::{Error, Result};
use fsage_lab::FsKind;
use std::path::{Path, PathBuf};

/// Refuses an image too small for the checked-out tree at the last commit (each file rounded up
/// to a 4 KiB block) before anything is made: without the refusal git fills the file system
/// commits later and the run fails late.
pub(super) fn check_fits(source: &Path, last: &str, size: u64) -> Result<()> {
    let files = crate::tree::ls_tree(source, last)?;
    let tree: u64 = files.values().map(|s| s.div_ceil(4096).max(1) * 4096).sum();
    if size <= tree {
        // The tree, again as much for the repository's objects, and the file system's own.
        let want = (2 * tree + (64 << 20)).next_multiple_of(1 << 20);
        return Err(Error::input(format!(
            "an image of {}: the checked-out tree at the last commit ({}) alone needs {} ({} \
             files), before the repository's objects and the file system's own metadata",
            fsage_units::format_size(size),
            &last[..last.len().min(12)],
            fsage_units::format_size(tree),
            files.len()
        ))
        .with_remedy(fsage_sys::Remedy::SizeAtLeast(want)));
    }
    Ok(())
}

pub(super) fn is_measured(i: usize, n: usize, every: u64) -> bool {
    i as u64 % every == 0 || i + 1 == n
}

/// What the checks found about the target, before anything is made.
pub(super) struct TargetFacts {
    /// The aged file system's kind (`ext4`, or what the mount table says of a directory's).
    pub(super) aged_fs: String,
    pub(super) clean_kind: FsKind,
    /// The clean instance's size.
    pub(super) size: u64,
    /// A directory target's block device (its rdev), to trace the grep's reads.
    pub(super) dir_rdev: Option<u64>,
}

/// The directory `path`'s parent, `.` for a bare name.
pub(super) fn parent_dir(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Refuses a file to be made at `path` whose directory is missing.
pub(super) fn check_dir_of(path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::input(format!(
            "{}: {} is not a directory",
            path.display(),
            dir.display()
        ))),
        Err(_) => Err(Error::input(format!(
            "{}: its directory {} does not exist",
            path.display(),
            dir.display()
        ))),
    }
}

/// The mount-table entry of the file system holding `path`.
pub(super) fn mount_of(path: &Path) -> Result<fsage_sys::mountinfo::MountEntry> {
    let dev = fsage_sys::device_of(path).map_err(|e| crate::Error::io(path, "stat", e))?;
    let parts = fsage_sys::mountinfo::dev_parts(dev);
    let mounts = fsage_sys::mountinfo::mounts()
        .map_err(|e| Error::operation(format!("/proc/self/mountinfo: {e}")))?;
    mounts
        .into_iter()
        .rev()
        .find(|m| m.dev == parts)
        .ok_or_else(|| {
            Error::operation(format!(
                "{}: its file system ({}:{}) is not in the mount table",
                path.display(),
                parts.0,
                parts.1
            ))
        })
}

/// The size of the block device `rdev` from sysfs (no need to open the device).
pub(super) fn block_device_size(rdev: u64) -> Option<u64> {
    let (ma, mi) = fsage_sys::mountinfo::dev_parts(rdev);
    let text = std::fs::read_to_string(format!("/sys/dev/block/{ma}:{mi}/size")).ok()?;
    text.trim().parse::<u64>().ok().map(|sectors| sectors * 512)
}

/// Every check of the target before anything is made: the image's directory, a directory
/// target's emptiness, file system, block device and the clean instance's size.
pub(super) fn check_target(opts: &GitAgeOptions, state_file: &Path) -> Result<TargetFacts> {
    if !opts.resume && state_file.exists() {
        return Err(Error::input(format!(
            "{}: a run's checkpoint is there; resume it, or remove it to start again",
            state_file.display()
        )));
    }
    // The image (or the clean instance) is mounted: a kind the kernel lacks fails here, first.
    match &opts.target {
        Target::Image { kind, .. } => kind.check_kernel()?,
        Target::Dir { clean_kind, .. } => clean_kind.check_kernel()?,
    }
    match &opts.target {
        Target::Image { path, kind, size } => {
            check_dir_of(path)?;
            if !opts.resume && path.exists() {
                return Err(Error::input(format!(
                    "{}: exists; refusing to overwrite it",
                    path.display()
                )));
            }
            Ok(TargetFacts {
                aged_fs: kind.name().into(),
                clean_kind: *kind,
                size: *size,
                dir_rdev: None,
            })
        }
        Target::Dir {
            path,
            clean_kind,
            clean_image,
            clean_size,
        } => {
            if !path.is_dir() {
                return Err(Error::input(format!(
                    "{}: not a directory (give an existing, empty directory)",
                    path.display()
                )));
            }
            if !opts.resume {
                let mut rd =
                    std::fs::read_dir(path).map_err(|e| crate::Error::io(path, "readdir", e))?;
                if rd.next().is_some() {
                    return Err(Error::input(format!(
                        "{}: not empty; Git aging needs an empty directory",
                        path.display()
                    )));
                }
            }
            check_dir_of(clean_image)?;
            let m = mount_of(path)?;
            // The block device: the mount's source (btrfs's st_dev is not one), else st_dev
            // when sysfs knows it as a block device (a source such as `/dev/root`).
            let source = Path::new(&m.source);
            let device = fsage_sys::is_block_device(source).then_some(source);
            let dir_rdev = device
                .and_then(|d| {
                    use std::os::unix::fs::MetadataExt;
                    std::fs::metadata(d).ok().map(|md| md.rdev())
                })
                .or_else(|| {
                    let dev = fsage_sys::device_of(path).ok()?;
                    block_device_size(dev).map(|_| dev)
                });
            let size = match (clean_size, dir_rdev) {
                (Some(s), _) => *s,
                // The same with and without measurements, so that either may resume the other.
                (None, Some(r)) => match (block_device_size(r), device) {
                    (Some(s), _) => s,
                    (None, _) if opts.no_measure => 0,
                    (None, Some(d)) => fsage_sys::size_of(d)?,
                    (None, None) => {
                        return Err(Error::operation(format!(
                            "{}: the size of its block device is not in sysfs",
                            path.display()
                        )))
                    }
                },
                (None, None) if opts.no_measure => 0,
                (None, None) => {
                    return Err(Error::input(format!(
                        "{}: on {} ({}), which has no block device: fsage can neither trace its \
                         reads for a layout score nor make the clean instance as large as its \
                         device; age a directory on a block-device file system or an image, or \
                         give the clean instance's size to measure without the aged layout score",
                        path.display(),
                        m.fstype,
                        m.mount_point.display()
                    ))
                    .with_remedy(fsage_sys::Remedy::Size));
                }
            };
            let aged_dev =
                fsage_sys::device_of(path).map_err(|e| crate::Error::io(path, "stat", e))?;
            // Measuring, the clean image must not be on the aged file system; without
            // measurements it must still not be inside the tree: the checkpoint and the bundle's
            // clone go beside it, and a resume's `git clean` there would remove them.
            let inside_tree = match (parent_dir(clean_image).canonicalize(), path.canonicalize()) {
                (Ok(c), Ok(t)) => c.starts_with(t),
                _ => false,
            };
            if inside_tree
                || (!opts.no_measure
                    && fsage_sys::device_of(&parent_dir(clean_image)).ok() == Some(aged_dev))
            {
                return Err(Error::input(format!(
                    "{}: the clean instance's image (and the checkpoint beside it) would be on the \
                     file system being aged ({}); put it elsewhere",
                    clean_image.display(),
                    m.mount_point.display()
                )));
            }
            Ok(TargetFacts {
                aged_fs: m.fstype,
                clean_kind: *clean_kind,
                size,
                dir_rdev,
            })
        }
    }
}

/// The smallest `--mem-limit`: below it git and grep themselves would be killed.
pub const MIN_MEM_LIMIT: u64 = 128 << 20;

/// A new memory cgroup (`fsage-git-age-PID-N-RANDOM`), limited to `bytes` and entered by the
/// whole process: what the run reads and writes is charged to it, page cache included.
pub(super) fn enter_mem_limit(bytes: u64) -> Result<fsage_workload::cgroup::MemCgroup> {
    let mut cg = fsage_workload::cgroup::MemCgroup::create_named("fsage-git-age")
        .map_err(|e| Error::operation(format!("--mem-limit: {e}")))?;
    cg.set_limit(bytes)
        .and_then(|()| cg.enter())
        .map_err(|e| Error::operation(format!("--mem-limit: {e}")))?;
    Ok(cg)
}

/// The names fsage makes beside the image (or the clean image) for itself: each must be absent
/// or not a symbolic link, checked with lstat before anything is made, mounted or removed. A link
/// at `IMAGE.mnt` would have the aged image mounted over its target and replayed into; one at
/// `IMAGE.clean` would have another file system unmounted; one at the traces or the bundle's
/// clone would have fsage write elsewhere.
pub(super) fn check_neighbours(opts: &GitAgeOptions) -> Result<()> {
    use fsage_sys::safe::lstat_own_name;
    let clean = match &opts.target {
        Target::Image { path, .. } => {
            lstat_own_name(&measure::mount_dir(path), "the mount point fsage makes")?;
            fsage_sys::with_suffix(path, ".clean")
        }
        Target::Dir { clean_image, .. } => clean_image.clone(),
    };
    lstat_own_name(&clean, "the clean instance's image")?;
    lstat_own_name(
        &measure::mount_dir(&clean),
        "the clean instance's mount point",
    )?;
    lstat_own_name(&source_clone_path(&opts.target), "the bundle's clone")?;
    lstat_own_name(&traces_path(&opts.target), "the traces directory")?;
    if let Target::Image { path, .. } = &opts.target {
        lstat_own_name(
            &crate::drives::drives_path(path),
            "the directory of the aged drives",
        )?;
    }
    Ok(())
}
