//! Setting a run up: the profile it ages with, and a new file system to age (an image file made
//! and mounted, or a block device formatted and mounted), checked before anything is made.

use super::checks::check_plan_at;
use super::fresh::fresh;
use super::{absolute, input, AgeError, AgeObserver, AgeRequest, Level, NewFs, Prepared, Result};
use fsage_lab::{FsKind, Mounted};
use fsage_profile::human_bytes;
use fsage_sys::with_suffix;

/// Makes the image and its file system and mounts it at IMAGE.mnt; the run ages the mount point,
/// keeps its state beside the image and writes its report to IMAGE.report.json unless told
/// otherwise. The profile and the plan at this size are checked before anything is made.
pub(super) fn with_new_fs(
    fs: &NewFs,
    req: &mut AgeRequest,
    obs: &mut dyn AgeObserver,
) -> Result<Prepared> {
    let image = req.target.clone().ok_or_else(|| {
        input("a new file system needs the image file to create, e.g. /dev/shm/aged.img")
    })?;
    let size = fs
        .size
        .ok_or_else(|| input("a new image needs a size, e.g. 4GiB"))?;
    // Resolved once: the check before mkfs and the run use the same profile.
    let profile = check_plan_at(req, size, "image size")?;
    let image = absolute(&image);
    let mnt = with_suffix(&image, ".mnt");
    // Before the image is made: a link planted at IMAGE.mnt would have the image mounted over
    // its target (and aged into it).
    fsage_sys::safe::lstat_own_name(&mnt, "the mount point fsage makes")?;
    fsage_lab::create_image(fs.kind, size, &image, &fs.mkfs_opts)?;
    let undo = |mounted: Option<Mounted>| {
        if let Some(m) = mounted {
            let _ = m.finish();
        }
        let _ = std::fs::remove_dir(&mnt);
        let _ = std::fs::remove_file(&image);
        let _ = std::fs::remove_file(fsage_lab::fs::sidecar_path(&image));
    };
    if let Err(e) = fsage_sys::safe::make_mount_dir(&mnt) {
        undo(None);
        return Err(e.into());
    }
    let mounted = match Mounted::attach_and_mount(&image, &mnt) {
        Ok(m) => m,
        Err(e) => {
            undo(None);
            return Err(e.into());
        }
    };
    obs.notice(
        Level::Info,
        &format!(
            "made {} ({}, {}) and mounted it on {}",
            image.display(),
            fs.kind.name(),
            human_bytes(size),
            mnt.display()
        ),
    );
    req.target = Some(mnt.clone());
    req.state
        .get_or_insert_with(|| with_suffix(&image, ".fsage-state"));
    req.json
        .get_or_insert_with(|| with_suffix(&image, ".report.json"));
    let mut p = match fresh(req, profile, obs) {
        Ok(p) => p,
        Err(e) => {
            // Nothing was aged: take back the image this run made.
            undo(Some(mounted));
            return Err(e);
        }
    };
    p.image = Some((image, fs.kind.name().to_string()));
    p.mounted = Some(mounted);
    Ok(p)
}

/// Formats a block device (a slow device, say) and mounts it on the request's target, a
/// directory made if missing and refused if not empty; the run ages it, keeps its state and
/// report beside that directory unless told otherwise, and unmounts it at the end.
pub(super) fn with_new_fs_on_device(
    fs: &NewFs,
    req: &mut AgeRequest,
    obs: &mut dyn AgeObserver,
) -> Result<Prepared> {
    let dev = fs.device.clone().expect("called for a device");
    let mnt = req.target.clone().ok_or_else(|| {
        input(format!(
            "a file system made on {} needs the directory to mount it on",
            dev.display()
        ))
    })?;
    if !fsage_sys::is_block_device(&dev) {
        return Err(input(format!("{}: not a block device", dev.display())));
    }
    let dev_size = fsage_sys::size_of(&dev)?;
    let size = fs.size.unwrap_or(dev_size);
    if size > dev_size {
        return Err(input(format!(
            "size {}: larger than {} ({})",
            human_bytes(size),
            dev.display(),
            human_bytes(dev_size)
        )));
    }
    let mnt = absolute(&mnt);
    let made_dir = !mnt.exists();
    if !made_dir {
        let empty = std::fs::read_dir(&mnt)
            .map_err(|err| AgeError::Open {
                path: mnt.clone(),
                err,
            })?
            .next()
            .is_none();
        if !empty {
            return Err(input(format!(
                "{}: not an empty directory; a new file system is mounted on an empty one",
                mnt.display()
            )));
        }
    }
    let profile = check_plan_at(req, size, "file system size")?;
    fsage_lab::create_fs(
        &dev,
        &fsage_lab::CreateOptions {
            kind: fs.kind,
            size: fs.size,
            mkfs_opts: fs.mkfs_opts.clone(),
            force: req.force,
        },
    )?;
    let remove_dir = || {
        if made_dir {
            let _ = std::fs::remove_dir(&mnt);
        }
    };
    if let Err(err) = std::fs::create_dir_all(&mnt) {
        return Err(AgeError::Open { path: mnt, err });
    }
    let mounted = match Mounted::attach_and_mount(&dev, &mnt) {
        Ok(m) => m,
        Err(e) => {
            remove_dir();
            return Err(e.into());
        }
    };
    obs.notice(
        Level::Info,
        &format!(
            "made {} ({}) on {} and mounted it on {}",
            fs.kind.name(),
            human_bytes(size),
            dev.display(),
            mnt.display()
        ),
    );
    req.target = Some(mnt.clone());
    req.state
        .get_or_insert_with(|| with_suffix(&mnt, ".fsage-state"));
    req.json
        .get_or_insert_with(|| with_suffix(&mnt, ".report.json"));
    let mut p = match fresh(req, profile, obs) {
        Ok(p) => p,
        Err(e) => {
            let _ = mounted.finish();
            remove_dir();
            return Err(e);
        }
    };
    p.image = Some((dev, fs.kind.name().to_string()));
    p.mounted = Some(mounted);
    Ok(p)
}

/// A dry run's capacity when it is given a new file system: the space a real run would see on
/// it (statfs of a new one of that kind and size, made in memory and removed), which is less than
/// the size, so that the dry run decides as the real run would. The dry run has no target.
pub(super) fn usable_capacity(
    fs: &NewFs,
    req: &mut AgeRequest,
    obs: &mut dyn AgeObserver,
) -> Result<(FsKind, u64)> {
    if fs.device.is_some() {
        return Err(input(
            "a dry run formats no device: give the file system's size instead",
        ));
    }
    let size = fs
        .size
        .ok_or_else(|| input("a dry run with a new file system needs its size, e.g. 4GiB"))?;
    let twin = fsage_lab::FreshTwin::new(fs.kind, size, &fs.mkfs_opts)?;
    let st = fsage_sys::fs_stat(twin.mount_point());
    twin.finish()?;
    let st = st.map_err(|err| AgeError::Open {
        path: "(a new file system in memory)".into(),
        err,
    })?;
    obs.notice(
        Level::Info,
        &format!(
            "a new {} of {} offers {}: the dry run plans at that capacity",
            fs.kind.name(),
            human_bytes(size),
            human_bytes(st.size)
        ),
    );
    req.capacity = Some(st.size);
    req.block_size.get_or_insert(st.block_size);
    req.target = None;
    Ok((fs.kind, size))
}
