//! The free-space histogram: free extents binned by size in power-of-two block counts (bin i
//! holds extents of 2^i to 2^(i+1)-1 blocks), as e2freefrag and `xfs_db freesp -s` bin them.

use crate::sys;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// One power-of-two bin of free extents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreeBin {
    /// Smallest extent size of the bin, in blocks (a power of two).
    pub min_blocks: u64,
    /// Largest extent size of the bin, in blocks (2 * min_blocks - 1).
    pub max_blocks: u64,
    /// Free extents in the bin.
    pub count: u64,
    /// Free blocks in those extents.
    pub blocks: u64,
    /// Share of all free blocks, in percent.
    pub percent: f64,
}

/// Free space of a mounted file system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreeSpace {
    /// How it was measured: "getfsmap", or "btrfs-tree-search (...)" saying what it covers.
    pub route: String,
    pub block_size: u64,
    /// Blocks of the file system (statfs f_blocks).
    pub fs_blocks: u64,
    pub free_blocks: u64,
    pub free_extents: u64,
    /// Smallest, largest and mean free extent, in blocks (0 when there is no free extent).
    pub min_blocks: u64,
    pub max_blocks: u64,
    pub avg_blocks: f64,
    /// Non-empty bins only, smallest first.
    pub bins: Vec<FreeBin>,
}

/// Accumulates free extents into the histogram.
#[derive(Debug, Clone, Default)]
pub struct FreeHist {
    count: Vec<u64>,
    blocks: Vec<u64>,
    min: u64,
    max: u64,
}

/// Bin index of an extent of `blocks` (>= 1) blocks: floor(log2(blocks)).
pub fn bin_of(blocks: u64) -> usize {
    63 - blocks.leading_zeros() as usize
}

impl FreeHist {
    pub fn add(&mut self, blocks: u64) {
        if blocks == 0 {
            return;
        }
        let i = bin_of(blocks);
        if self.count.len() <= i {
            self.count.resize(i + 1, 0);
            self.blocks.resize(i + 1, 0);
        }
        self.count[i] += 1;
        self.blocks[i] += blocks;
        self.min = if self.min == 0 {
            blocks
        } else {
            self.min.min(blocks)
        };
        self.max = self.max.max(blocks);
    }

    pub fn finish(self, route: &str, block_size: u64, fs_blocks: u64) -> FreeSpace {
        let free_blocks: u64 = self.blocks.iter().sum();
        let free_extents: u64 = self.count.iter().sum();
        let bins = (0..self.count.len())
            .filter(|&i| self.count[i] > 0)
            .map(|i| FreeBin {
                min_blocks: 1 << i,
                max_blocks: (1 << (i + 1)) - 1,
                count: self.count[i],
                blocks: self.blocks[i],
                percent: 100.0 * self.blocks[i] as f64 / free_blocks as f64,
            })
            .collect();
        FreeSpace {
            route: route.into(),
            block_size,
            fs_blocks,
            free_blocks,
            free_extents,
            min_blocks: self.min,
            max_blocks: self.max,
            avg_blocks: if free_extents == 0 {
                0.0
            } else {
                free_blocks as f64 / free_extents as f64
            },
            bins,
        }
    }
}

/// The free-space histogram of the file system mounted at (or holding) `mount`, by the best
/// route it supports: GETFSMAP (ext4, xfs), the extent tree (btrfs).
pub fn free_space(mount: &Path) -> Result<FreeSpace, String> {
    let info = sys::statfs(mount).map_err(|e| format!("{}: statfs: {e}", mount.display()))?;
    if info.magic == sys::BTRFS_SUPER_MAGIC {
        return crate::btrfs::free_space(mount, &info);
    }
    free_space_getfsmap(mount, &info)
}

/// Free extents from FS_IOC_GETFSMAP: the records owned by "free space" on the data device.
/// Free records that touch (a group boundary split them) are merged into one extent, as the
/// offline tools see them.
pub fn free_space_getfsmap(mount: &Path, info: &sys::FsInfo) -> Result<FreeSpace, String> {
    let f = File::open(mount).map_err(|e| format!("{}: {e}", mount.display()))?;
    let st_dev = std::fs::metadata(mount)
        .map(|m| std::os::unix::fs::MetadataExt::dev(&m))
        .map_err(|e| format!("{}: {e}", mount.display()))?;
    let bs = info.block_size;
    // Free records per device: (device, physical start, length), merged when adjacent.
    let mut free: Vec<(u32, u64, u64)> = Vec::new();
    let mut devices: Vec<u32> = Vec::new();
    let res = sys::getfsmap(f.as_raw_fd(), |r| {
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
        let why = match e.raw_os_error() {
            Some(libc::ENOTTY) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => format!(
                "the {} file system does not support FS_IOC_GETFSMAP ({e})",
                sys::fs_type_name(info.magic)
            ),
            Some(libc::EPERM) | Some(libc::EACCES) => {
                format!("FS_IOC_GETFSMAP needs root (CAP_SYS_ADMIN): {e}")
            }
            _ => format!("FS_IOC_GETFSMAP: {e}"),
        };
        return Err(format!("{}: {why}", mount.display()));
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

/// The histogram as a table, e2freefrag style.
pub fn render(fs: &FreeSpace) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let bs = fs.block_size;
    let _ = writeln!(
        s,
        "Free space ({}): {} free blocks of {} ({:.2}%), block size {bs}",
        fs.route,
        fs.free_blocks,
        fs.fs_blocks,
        100.0 * fs.free_blocks as f64 / fs.fs_blocks.max(1) as f64
    );
    let _ = writeln!(
        s,
        "Free extents: {}; min {}, max {}, average {} ({:.1} blocks)",
        fs.free_extents,
        fsage_profile::human_bytes(fs.min_blocks * bs),
        fsage_profile::human_bytes(fs.max_blocks * bs),
        fsage_profile::human_bytes((fs.avg_blocks * bs as f64) as u64),
        fs.avg_blocks
    );
    let _ = writeln!(
        s,
        "{:>21}  {:>10} {:>12} {:>8}",
        "extent size", "extents", "blocks", "percent"
    );
    for b in &fs.bins {
        let _ = writeln!(
            s,
            "{:>9} .. {:>9}  {:>10} {:>12} {:>7.2}%",
            fsage_profile::human_bytes(b.min_blocks * bs),
            fsage_profile::human_bytes(b.max_blocks * bs),
            b.count,
            b.blocks,
            b.percent
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_powers_of_two() {
        assert_eq!(bin_of(1), 0);
        assert_eq!(bin_of(2), 1);
        assert_eq!(bin_of(3), 1);
        assert_eq!(bin_of(4), 2);
        assert_eq!(bin_of(32767), 14);
        assert_eq!(bin_of(32768), 15);
        let mut h = FreeHist::default();
        for b in [1, 3, 3, 8, 15, 16] {
            h.add(b);
        }
        let f = h.finish("t", 4096, 100);
        assert_eq!(f.free_blocks, 46);
        assert_eq!(f.free_extents, 6);
        assert_eq!((f.min_blocks, f.max_blocks), (1, 16));
        let got: Vec<(u64, u64, u64)> = f
            .bins
            .iter()
            .map(|b| (b.min_blocks, b.count, b.blocks))
            .collect();
        assert_eq!(got, vec![(1, 1, 1), (2, 2, 6), (8, 2, 23), (16, 1, 16)]);
    }
}
