//! Free space of a mounted file system: picks the route its descriptor names (GETFSMAP on ext4 and
//! xfs, the extent tree on btrfs) and implements the GETFSMAP one. The histogram type lives in `hist`.

pub use crate::hist::{bin_of, FreeBin, FreeHist, FreeSpace};
use crate::sys;
use fsage_sys::fskind::FreeSpaceBy;
use std::fs::File;
use std::path::Path;

/// The free-space histogram of the file system mounted at (or holding) `mount`, by the best
/// route it supports: GETFSMAP (ext4, xfs), the extent tree (btrfs).
pub fn free_space(mount: &Path) -> Result<FreeSpace, crate::Error> {
    let info = sys::statfs(mount).map_err(|e| format!("{}: statfs: {e}", mount.display()))?;
    // The route is the kind's ([`fsage_sys::fskind::FreeSpaceBy`]); a kind fsage does not know
    // gets GETFSMAP, which says whether it has it.
    match fsage_sys::FsKind::by_magic(info.magic).map(|k| k.free_space()) {
        Some(FreeSpaceBy::BtrfsTree) => crate::btrfs::free_space(mount, &info),
        Some(FreeSpaceBy::Segments(_)) => Err(crate::Error::Failed(format!(
            "{}: {} is log-structured: it has no free extents to map; its free space is \
             measured by segment",
            mount.display(),
            sys::fs_type_name(info.magic)
        ))),
        Some(FreeSpaceBy::Getfsmap) | None => free_space_getfsmap(mount, &info),
    }
}

/// Free extents from FS_IOC_GETFSMAP: the records owned by "free space" on the data device.
/// Free records that touch (a group boundary split them) are merged into one extent, as the
/// offline tools see them.
pub fn free_space_getfsmap(mount: &Path, info: &sys::FsInfo) -> Result<FreeSpace, crate::Error> {
    let f = File::open(mount).map_err(|e| format!("{}: {e}", mount.display()))?;
    let st_dev = std::fs::metadata(mount)
        .map(|m| std::os::unix::fs::MetadataExt::dev(&m))
        .map_err(|e| format!("{}: {e}", mount.display()))?;
    let bs = info.block_size;
    // Free records per device: (device, physical start, length), merged when adjacent.
    let mut free: Vec<(u32, u64, u64)> = Vec::new();
    let mut devices: Vec<u32> = Vec::new();
    let res = sys::getfsmap(&f, |r| {
        if !devices.contains(&r.device) {
            devices.push(r.device);
        }
        if r.flags & sys::FMR_OF_SPECIAL_OWNER == 0 || r.owner != sys::FMR_OWN_FREE {
            return;
        }
        if let Some(last) = free.last_mut() {
            if last.0 == r.device && last.1 + last.2 == r.physical {
                last.2 += r.length;
                return;
            }
        }
        free.push((r.device, r.physical, r.length));
    });
    if let Err(e) = res {
        use rustix::io::Errno;
        let why = match Errno::from_io_error(&e) {
            Some(Errno::NOTTY | Errno::OPNOTSUPP | Errno::INVAL) => format!(
                "the {} file system does not support FS_IOC_GETFSMAP ({e})",
                sys::fs_type_name(info.magic)
            ),
            Some(Errno::PERM | Errno::ACCESS) => {
                format!("FS_IOC_GETFSMAP needs root (CAP_SYS_ADMIN): {e}")
            }
            _ => format!("FS_IOC_GETFSMAP: {e}"),
        };
        return Err(crate::Error::Failed(format!("{}: {why}", mount.display())));
    }
    // The data device: the one st_dev names, else the first the map reports.
    let data_dev = if devices.iter().any(|&d| u64::from(d) == st_dev) {
        st_dev as u32
    } else {
        devices.first().copied().unwrap_or(0)
    };
    let mut h = FreeHist::default();
    for (dev, _, len) in free {
        if dev == data_dev {
            h.add(len / bs);
        }
    }
    Ok(h.finish("getfsmap", bs, info.blocks))
}
