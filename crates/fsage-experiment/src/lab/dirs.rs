//! The image directory (checked, marked, locked), each run's or task's scratch directory, and
//! the clean-up of what a killed run left under them.

use crate::Error;
use fsage_slowdev::{Registry, SlowDevice};
use std::path::{Path, PathBuf};

/// The marker of an image directory the runner made; it cleans up and writes only in such a
/// directory (or a new or empty one, which it marks).
pub const IMAGES_MARKER: &str = ".fsage-experiment-images";

/// Refuses an image directory that holds anything but an earlier run's images (or is a file),
/// and one that is a symbolic link, another user's or writable by others: whoever could write
/// there could replace a base image that fsage, as root, mounts for every cell. Nothing is made.
pub fn check_images_dir(images: &Path) -> Result<(), crate::Error> {
    const WHAT: &str = "the image directory";
    let Some(m) = fsage_sys::safe::lstat_own_name(images, WHAT)? else {
        return Ok(());
    };
    if !m.is_dir() {
        return Err(crate::Error::input(format!(
            "{}: the image directory exists and is not a directory",
            images.display()
        )));
    }
    fsage_sys::safe::check_private_dir(images, WHAT)?;
    fsage_sys::safe::check_ancestors(images, WHAT)?;
    if !images.join(IMAGES_MARKER).exists() {
        let mut rd = std::fs::read_dir(images)
            .map_err(|e| crate::Error::input(format!("{}: {e}", images.display())))?;
        if rd.next().is_some() {
            return Err(crate::Error::input(format!(
                "{}: the image directory is not empty and was not made by an experiment run \
                 (no {IMAGES_MARKER}); give a new or empty directory, e.g. /dev/shm/NAME",
                images.display()
            )));
        }
    }
    Ok(())
}

/// Checks the image directory ([`check_images_dir`]), makes it (mode 0700) when missing, and
/// marks it as an experiment's ([`IMAGES_MARKER`]) at once, before any job or cell looks at it:
/// returns its path, resolved once it has passed the checks.
pub fn open_images_dir(images: &Path) -> Result<PathBuf, Error> {
    const WHAT: &str = "the image directory";
    check_images_dir(images)?;
    fsage_sys::safe::ensure_private_dir(images, WHAT)?;
    fsage_sys::safe::check_ancestors(images, WHAT)?;
    let images = images
        .canonicalize()
        .map_err(|e| Error::input(format!("{}: {e}", images.display())))?;
    let marker = images.join(IMAGES_MARKER);
    if !marker.exists() {
        fsage_sys::write_atomic(
            &marker,
            b"base images and working copies of fsage experiment runs\n",
        )
        .map_err(|e| Error::operation(e.to_string()))?;
    }
    Ok(images)
}

/// The working directory of a run or task under the `scratch` root (made if missing): a new
/// `ROOT/fsage-HASH-NAME-RANDOM` ([`task_work_dir`]; HASH from `out`, so that a run or task
/// started again finds and cleans up what a killed one left), its lock, and what it is on.
pub(super) fn scratch_work(
    out: &Path,
    images: &Path,
    scratch: &crate::storage::Scratch,
    name: &str,
) -> Result<
    (
        PathBuf,
        fsage_exec::preflight::RunLock,
        crate::storage::Storage,
    ),
    Error,
> {
    let root = scratch.root(images)?;
    let (work, lock) = task_work_dir(&scratch_prefix(&root, out, name))?;
    let storage = crate::storage::storage_of(scratch, &root);
    Ok((work, lock, storage))
}

/// `ROOT/fsage-HASH-NAME`: the same for a run or task started again, different for two tasks
/// of one experiment (NAME: the first cell's id, or the base) and for two experiments (HASH).
fn scratch_prefix(root: &Path, out: &Path, name: &str) -> PathBuf {
    use sha2::Digest;
    let h = sha2::Sha256::digest(out.display().to_string().as_bytes());
    root.join(format!("fsage-{}-{name}", crate::hex(&h[..4])))
}

/// A task's working directory: a new `PREFIXRANDOM` (mode 0700) beside `prefix` (its last
/// component the name's start, `fsage-HASH-CELL-`), locked for the task. What a killed task of
/// the same prefix left (its own directories: root's, mode 0700, no link, not locked by a live
/// task) is cleaned up and removed first; anything else of that name is left alone.
fn task_work_dir(prefix: &Path) -> Result<(PathBuf, fsage_exec::preflight::RunLock), Error> {
    let root = prefix
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let start = prefix
        .file_name()
        .map(|n| format!("{}-", n.to_string_lossy()))
        .ok_or_else(|| Error::input(format!("{}: not a directory name", prefix.display())))?;
    if !root.is_dir() {
        std::fs::create_dir_all(root).map_err(|e| {
            Error::input(format!(
                "{}: cannot make the scratch directory: {e}",
                root.display()
            ))
        })?;
    }
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(tail) = name.strip_prefix(&start) else {
                continue;
            };
            if tail.len() != 16 || !tail.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let old = e.path();
            if fsage_sys::safe::check_private_dir(&old, "a killed task's directory").is_err() {
                continue;
            }
            let Ok(lock) = fsage_exec::preflight::lock_run(&old.join(".fsage-task")) else {
                continue; // a live task's
            };
            let old = old.canonicalize().unwrap_or(old);
            let nothing_mounted = || {
                fsage_sys::mounts()
                    .is_ok_and(|m| !m.iter().any(|e| e.mount_point.starts_with(&old)))
            };
            if clean_under(&old, &Registry::new(Registry::default_root())).is_ok()
                && nothing_mounted()
            {
                let _ = std::fs::remove_dir_all(&old);
            }
            drop(lock);
        }
    }
    let work = fsage_sys::safe::create_private_dir(root, &start)?;
    let work = work
        .canonicalize()
        .map_err(|e| Error::input(format!("{}: {e}", work.display())))?;
    let lock = fsage_exec::preflight::lock_run(&work.join(".fsage-task"))
        .map_err(|e| Error::operation(format!("{}: {e}", work.display())))?;
    Ok((work, lock))
}

/// Unmounts what is mounted under `dir` and destroys the slow devices of `registry` whose backing
/// file is there: the remains of a run that was killed.
pub(super) fn clean_under(dir: &Path, registry: &Registry) -> Result<(), Error> {
    let mounts = fsage_sys::mounts()
        .map_err(|e| Error::operation(format!("reading the mount table: {e}")))?;
    for m in mounts.iter().rev() {
        if m.mount_point.starts_with(dir) {
            fsage_lab::mount::umount_point(&m.mount_point)
                .map_err(|e| Error::operation(format!("cleaning up a killed run: {e}")))?;
        }
    }
    for (_, rec) in registry.list() {
        if rec.backing_file.starts_with(dir) {
            let dev = SlowDevice::open(registry, &rec.name)
                .map_err(|e| Error::operation(format!("cleaning up a killed run: {e}")))?;
            dev.destroy(true)
                .map_err(|e| Error::operation(format!("cleaning up a killed run: {e}")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_tasks_get_two_scratch_directories_and_a_task_run_again_the_same() {
        let root = Path::new("/scratch");
        let a = scratch_prefix(root, Path::new("/o"), "c1");
        assert_eq!(a, scratch_prefix(root, Path::new("/o"), "c1"));
        assert_ne!(a, scratch_prefix(root, Path::new("/o"), "c2"));
        assert_ne!(a, scratch_prefix(root, Path::new("/p"), "c1"));
        assert!(a.starts_with(root));
    }
}
