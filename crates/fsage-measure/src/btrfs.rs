//! btrfs free space, from the file system's own trees: btrfs has no FS_IOC_GETFSMAP, so the
//! histogram is read with BTRFS_IOC_TREE_SEARCH_V2 (root only) on the mount point.
//!
//! What counts as free: the gaps between allocated extents (EXTENT_ITEM, METADATA_ITEM of the
//! extent tree) inside every block group whose type has the DATA bit (data block groups and
//! mixed data+metadata block groups), and the unallocated device space: the gaps between the
//! device extents of the dev tree (DEV_EXTENT items) on each device, from the end of the 1 MiB
//! the kernel never allocates to the device's size (its DEV_ITEM in the chunk tree), each gap an
//! extent of its own size. Without the unallocated space a fresh btrfs would show only its first
//! (8 MiB) data chunk free. Metadata-only and system block groups are left out (their free space
//! holds only tree blocks). Superblock mirror copies that fall inside a data block group or an
//! unallocated gap are counted as used, as the kernel excludes them from a data block group's
//! free space (mapped through the chunk tree for single, DUP and RAID1* chunks; not for striped
//! profiles). Unallocated space is counted in device bytes: on several devices with a mirrored
//! data profile it overstates what data can use. Block size is the sector size.
//!
//! Layouts follow the kernel's `include/uapi/linux/btrfs.h` and `btrfs_tree.h`: ioctl
//! structures are in native byte order, tree items in little-endian.

use crate::hist::{FreeHist, FreeSpace};
use crate::sys::FsInfo;
use fsage_sys::ioctl::{call_in_place, opcode, Direction, IoctlOpcode};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

/// The `route` of a btrfs histogram: what it covers.
pub const ROUTE: &str = "btrfs-tree-search (data block groups and unallocated device space)";

const IOCTL_MAGIC: u8 = 0x94;

const fn ioc(dir: Direction, nr: u8, size: usize) -> IoctlOpcode {
    opcode::from_components(dir, IOCTL_MAGIC, nr, size)
}

/// `struct btrfs_ioctl_search_key`: 7 u64, 4 u32, 4 u64.
const SEARCH_KEY_SIZE: usize = 104;
/// `struct btrfs_ioctl_search_args_v2` without its flexible buffer: the key and `buf_size`.
const SEARCH_ARGS_V2_SIZE: usize = SEARCH_KEY_SIZE + 8;
/// `struct btrfs_ioctl_search_header`: transid, objectid, offset (u64), type, len (u32).
const SEARCH_HEADER_SIZE: usize = 32;
/// `struct btrfs_ioctl_fs_info_args`.
const FS_INFO_SIZE: usize = 1024;
/// `struct btrfs_ioctl_feature_flags`: compat, compat_ro, incompat.
const FEATURE_FLAGS_SIZE: usize = 24;

const IOC_TREE_SEARCH_V2: IoctlOpcode = ioc(Direction::ReadWrite, 17, SEARCH_ARGS_V2_SIZE);
const IOC_FS_INFO: IoctlOpcode = ioc(Direction::Read, 31, FS_INFO_SIZE);
const IOC_GET_FEATURES: IoctlOpcode = ioc(Direction::Read, 57, FEATURE_FLAGS_SIZE);

/// Tree ids.
const EXTENT_TREE: u64 = 2;
const CHUNK_TREE: u64 = 3;
const DEV_TREE: u64 = 4;
const BLOCK_GROUP_TREE: u64 = 11;
/// Item types.
const EXTENT_ITEM: u8 = 168;
const METADATA_ITEM: u8 = 169;
const BLOCK_GROUP_ITEM: u8 = 192;
const CHUNK_ITEM: u8 = 228;
const DEV_EXTENT: u8 = 204;
const DEV_ITEM: u8 = 216;
/// Objectid of the DEV_ITEMs in the chunk tree.
const DEV_ITEMS_OBJECTID: u64 = 1;
/// The start of every device the kernel never allocates (BTRFS_DEVICE_RANGE_RESERVED).
const DEVICE_RANGE_RESERVED: u64 = 1 << 20;
/// Objectid of every chunk item.
const FIRST_CHUNK_TREE_OBJECTID: u64 = 256;
/// Block group type bits.
pub const BLOCK_GROUP_DATA: u64 = 1;
pub const BLOCK_GROUP_SYSTEM: u64 = 2;
pub const BLOCK_GROUP_METADATA: u64 = 4;
const BLOCK_GROUP_RAID0: u64 = 1 << 3;
const BLOCK_GROUP_RAID10: u64 = 1 << 6;
const BLOCK_GROUP_RAID5: u64 = 1 << 7;
const BLOCK_GROUP_RAID6: u64 = 1 << 8;
/// compat_ro feature: block group items live in their own tree.
const FEATURE_COMPAT_RO_BLOCK_GROUP_TREE: u64 = 1 << 3;
/// Superblock copies: 64 KiB, then 16 KiB << (12 * i) for mirrors 1 and 2, 4 KiB each.
const SUPER_OFFSETS: [u64; 3] = [64 << 10, 64 << 20, 256 << 30];
const SUPER_INFO_SIZE: u64 = 4096;

/// A key of a btrfs tree: (objectid, type, offset), ordered in that order.
pub type Key = (u64, u8, u64);

/// A block group: logical start, length, type flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockGroup {
    pub start: u64,
    pub length: u64,
    pub flags: u64,
}

impl BlockGroup {
    pub fn is_data(&self) -> bool {
        self.flags & BLOCK_GROUP_DATA != 0
    }
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

fn le_u16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes(s.try_into().ok()?))
}

fn ne_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

fn ne_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    if let Some(s) = b.get_mut(at..at + 8) {
        s.copy_from_slice(&v.to_ne_bytes());
    }
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_ne_bytes());
    }
}

/// The key right after `k`, or `None` after the last possible key.
fn next_key(k: Key) -> Option<Key> {
    if k.2 < u64::MAX {
        Some((k.0, k.1, k.2 + 1))
    } else if k.1 < u8::MAX {
        Some((k.0, k.1 + 1, 0))
    } else if k.0 < u64::MAX {
        Some((k.0 + 1, 0, 0))
    } else {
        None
    }
}

fn ioctl_buf(fd: BorrowedFd<'_>, req: IoctlOpcode, buf: &mut [u8]) -> io::Result<()> {
    // SAFETY: every request used here reads or writes at most the size encoded in it (and
    // TREE_SEARCH_V2 at most the `buf_size` its header gives), and the callers pass buffers at
    // least that large. The ioctl structures are read and written byte by byte (`ne_u64`,
    // `put_u64`), so the byte buffer needs no alignment.
    unsafe { call_in_place(fd, req, buf) }
}

/// Calls `each(key, item data)` for every item of tree `tree` with `min <= key <= max`, in key
/// order, with BTRFS_IOC_TREE_SEARCH_V2.
pub fn tree_search(
    fd: BorrowedFd<'_>,
    tree: u64,
    min: Key,
    max: Key,
    mut each: impl FnMut(Key, &[u8]),
) -> io::Result<()> {
    const MAX_BUF: usize = 16 << 20;
    let mut buf_size: usize = 256 << 10;
    let mut buf = vec![0u8; SEARCH_ARGS_V2_SIZE + buf_size];
    let mut from = min;
    loop {
        if from > max {
            return Ok(());
        }
        buf[..SEARCH_ARGS_V2_SIZE].fill(0);
        put_u64(&mut buf, 0, tree);
        put_u64(&mut buf, 8, from.0); // min_objectid
        put_u64(&mut buf, 16, max.0); // max_objectid
        put_u64(&mut buf, 24, from.2); // min_offset
        put_u64(&mut buf, 32, max.2); // max_offset
        put_u64(&mut buf, 40, 0); // min_transid
        put_u64(&mut buf, 48, u64::MAX); // max_transid
        put_u32(&mut buf, 56, u32::from(from.1)); // min_type
        put_u32(&mut buf, 60, u32::from(max.1)); // max_type
        put_u32(&mut buf, 64, u32::MAX); // nr_items
        put_u64(&mut buf, SEARCH_KEY_SIZE, buf_size as u64);
        if let Err(e) = ioctl_buf(fd, IOC_TREE_SEARCH_V2, &mut buf) {
            // One item did not fit: the kernel says how much it needs.
            if rustix::io::Errno::from_io_error(&e) == Some(rustix::io::Errno::OVERFLOW) {
                let need = usize::try_from(ne_u64(&buf, SEARCH_KEY_SIZE)).unwrap_or(usize::MAX);
                if need > buf_size && need <= MAX_BUF {
                    buf_size = need;
                    buf.resize(SEARCH_ARGS_V2_SIZE + buf_size, 0);
                    continue;
                }
            }
            return Err(e);
        }
        let n = ne_u32(&buf, 64) as usize;
        if n == 0 {
            return Ok(());
        }
        let items = &buf[SEARCH_ARGS_V2_SIZE..];
        let mut at = 0usize;
        let mut last: Option<Key> = None;
        for _ in 0..n {
            let Some(h) = items.get(at..at + SEARCH_HEADER_SIZE) else {
                break;
            };
            let key: Key = (ne_u64(h, 8), ne_u32(h, 24) as u8, ne_u64(h, 16));
            let len = ne_u32(h, 28) as usize;
            let start = at + SEARCH_HEADER_SIZE;
            let Some(data) = items.get(start..start.saturating_add(len)) else {
                break;
            };
            each(key, data);
            last = Some(key);
            at = start + len;
        }
        // Continue after the last item; stop if the kernel made no progress.
        match last.and_then(next_key) {
            Some(k) if k > from => from = k,
            _ => return Ok(()),
        }
    }
}

/// (sector size, node size) from BTRFS_IOC_FS_INFO.
pub fn fs_info(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let mut buf = vec![0u8; FS_INFO_SIZE];
    ioctl_buf(fd, IOC_FS_INFO, &mut buf)?;
    // max_id, num_devices (u64), fsid[16], nodesize, sectorsize (u32).
    Ok((u64::from(ne_u32(&buf, 36)), u64::from(ne_u32(&buf, 32))))
}

/// Whether the block group items live in the block group tree (BTRFS_IOC_GET_FEATURES).
fn has_block_group_tree(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut buf = vec![0u8; FEATURE_FLAGS_SIZE];
    ioctl_buf(fd, IOC_GET_FEATURES, &mut buf)?;
    Ok(ne_u64(&buf, 8) & FEATURE_COMPAT_RO_BLOCK_GROUP_TREE != 0)
}

/// Every block group, in logical order.
pub fn block_groups(fd: BorrowedFd<'_>) -> io::Result<Vec<BlockGroup>> {
    let tree = if has_block_group_tree(fd)? {
        BLOCK_GROUP_TREE
    } else {
        EXTENT_TREE
    };
    let mut bgs = Vec::new();
    tree_search(
        fd,
        tree,
        (0, BLOCK_GROUP_ITEM, 0),
        (u64::MAX, BLOCK_GROUP_ITEM, u64::MAX),
        |k, data| {
            // struct btrfs_block_group_item: used, chunk_objectid, flags.
            if k.1 == BLOCK_GROUP_ITEM && k.2 > 0 {
                if let Some(flags) = le_u64(data, 16) {
                    bgs.push(BlockGroup {
                        start: k.0,
                        length: k.2,
                        flags,
                    });
                }
            }
        },
    )?;
    Ok(bgs)
}

/// The allocated extents (start, length) with a start in `[start, end)`, in order.
pub fn allocated_extents(
    fd: BorrowedFd<'_>,
    start: u64,
    end: u64,
    nodesize: u64,
) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    if end <= start {
        return Ok(out);
    }
    tree_search(
        fd,
        EXTENT_TREE,
        (start, EXTENT_ITEM, 0),
        (end - 1, METADATA_ITEM, u64::MAX),
        |k, _| match k.1 {
            EXTENT_ITEM => out.push((k.0, k.2)),
            METADATA_ITEM => out.push((k.0, nodesize)),
            _ => {}
        },
    )?;
    Ok(out)
}

/// Logical ranges (start, length) that hold superblock copies, from the chunk tree: for each
/// chunk of a non-striped profile (single, DUP, RAID1*), the copies inside each stripe's device
/// range. Chunks of striped profiles (RAID0/10/5/6) are not mapped: a copy there is counted free.
fn super_ranges(fd: BorrowedFd<'_>) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    tree_search(
        fd,
        CHUNK_TREE,
        (FIRST_CHUNK_TREE_OBJECTID, CHUNK_ITEM, 0),
        (FIRST_CHUNK_TREE_OBJECTID, CHUNK_ITEM, u64::MAX),
        |k, d| {
            // struct btrfs_chunk: length, owner, stripe_len, type (u64), io_align, io_width,
            // sector_size (u32), num_stripes, sub_stripes (u16), then num_stripes of
            // struct btrfs_stripe: devid, offset (u64), dev_uuid[16].
            if k.1 != CHUNK_ITEM {
                return;
            }
            let (Some(length), Some(ty), Some(num)) = (le_u64(d, 0), le_u64(d, 24), le_u16(d, 44))
            else {
                return;
            };
            let striped = ty
                & (BLOCK_GROUP_RAID0 | BLOCK_GROUP_RAID10 | BLOCK_GROUP_RAID5 | BLOCK_GROUP_RAID6)
                != 0;
            for s in 0..usize::from(num) {
                let Some(phys) = le_u64(d, 48 + s * 32 + 8) else {
                    return;
                };
                if striped {
                    return;
                }
                let span = length;
                for &sb in &SUPER_OFFSETS {
                    if sb + SUPER_INFO_SIZE > phys && sb < phys.saturating_add(span) {
                        let lo = sb.max(phys);
                        let hi = (sb + SUPER_INFO_SIZE).min(phys.saturating_add(span));
                        out.push((k.2.saturating_add(lo - phys), hi - lo));
                    }
                }
            }
        },
    )?;
    out.sort_unstable();
    Ok(out)
}

/// Every device: (devid, size in bytes), from the DEV_ITEMs of the chunk tree.
pub fn devices(fd: BorrowedFd<'_>) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    tree_search(
        fd,
        CHUNK_TREE,
        (DEV_ITEMS_OBJECTID, DEV_ITEM, 0),
        (DEV_ITEMS_OBJECTID, DEV_ITEM, u64::MAX),
        |k, d| {
            // struct btrfs_dev_item: devid, total_bytes, bytes_used, ...
            if k.1 == DEV_ITEM {
                if let Some(total) = le_u64(d, 8) {
                    out.push((k.2, total));
                }
            }
        },
    )?;
    Ok(out)
}

/// The device extents (physical start, length) of device `devid`, in order, from the dev tree.
pub fn dev_extents(fd: BorrowedFd<'_>, devid: u64) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    tree_search(
        fd,
        DEV_TREE,
        (devid, DEV_EXTENT, 0),
        (devid, DEV_EXTENT, u64::MAX),
        |k, d| {
            // struct btrfs_dev_extent: chunk_tree, chunk_objectid, chunk_offset, length.
            if k.1 == DEV_EXTENT {
                if let Some(len) = le_u64(d, 24) {
                    out.push((k.2, len));
                }
            }
        },
    )?;
    Ok(out)
}

/// The unallocated extents (physical start, length) of a device of `size` bytes whose device
/// extents are `used` (sorted): the gaps from the reserved first MiB to the end, less the
/// superblock copies.
pub fn unallocated(size: u64, used: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut used: Vec<(u64, u64)> = used.to_vec();
    used.extend(SUPER_OFFSETS.iter().map(|&s| (s, SUPER_INFO_SIZE)));
    used.sort_unstable();
    let span = BlockGroup {
        start: DEVICE_RANGE_RESERVED,
        length: size.saturating_sub(DEVICE_RANGE_RESERVED),
        flags: 0,
    };
    gaps(&span, &used)
}

/// The free extents (start, length in bytes) of one block group: the gaps between `used`
/// ranges (sorted by start; they may overlap) inside `[bg.start, bg.start + bg.length)`.
pub fn gaps(bg: &BlockGroup, used: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let end = bg.start.saturating_add(bg.length);
    let mut cursor = bg.start;
    let mut out = Vec::new();
    for &(s, l) in used {
        let e = s.saturating_add(l).min(end);
        let s = s.max(bg.start);
        if s >= end {
            break;
        }
        if s > cursor {
            out.push((cursor, s - cursor));
        }
        cursor = cursor.max(e);
    }
    if cursor < end {
        out.push((cursor, end - cursor));
    }
    out
}

fn describe(e: &io::Error, what: &str) -> String {
    use rustix::io::Errno;
    match Errno::from_io_error(e) {
        Some(Errno::PERM | Errno::ACCESS) => {
            format!("{what} needs root (CAP_SYS_ADMIN): {e}")
        }
        Some(Errno::NOTTY | Errno::INVAL) => {
            format!("{what}: not supported here (not btrfs, or a kernel without it): {e}")
        }
        _ => format!("{what}: {e}"),
    }
}

/// The free-space histogram of the btrfs mounted at (or holding) `mount`: free extents of the
/// data block groups and of the unallocated device space, in sectors. See the module documentation for what is counted.
pub fn free_space(mount: &Path, info: &FsInfo) -> Result<FreeSpace, crate::Error> {
    let err =
        |e: io::Error, what: &str| format!("{}: btrfs {}", mount.display(), describe(&e, what));
    let f = File::open(mount).map_err(|e| format!("{}: {e}", mount.display()))?;
    let fd = f.as_fd();
    let (sectorsize, nodesize) = fs_info(fd).map_err(|e| err(e, "BTRFS_IOC_FS_INFO"))?;
    if sectorsize == 0 || nodesize == 0 {
        return Err(crate::Error::Failed(format!(
            "{}: BTRFS_IOC_FS_INFO reported sector size {sectorsize}, node size {nodesize}",
            mount.display()
        )));
    }
    let bgs = block_groups(fd).map_err(|e| err(e, "BTRFS_IOC_TREE_SEARCH_V2 (block groups)"))?;
    let supers = super_ranges(fd).map_err(|e| err(e, "BTRFS_IOC_TREE_SEARCH_V2 (chunk tree)"))?;
    let mut h = FreeHist::default();
    for bg in bgs.iter().filter(|b| b.is_data()) {
        let end = bg.start.saturating_add(bg.length);
        let mut used = allocated_extents(fd, bg.start, end, nodesize)
            .map_err(|e| err(e, "BTRFS_IOC_TREE_SEARCH_V2 (extent tree)"))?;
        used.extend(supers.iter().filter(|&&(s, l)| s < end && s + l > bg.start));
        used.sort_unstable();
        for (_, len) in gaps(bg, &used) {
            h.add(len / sectorsize);
        }
    }
    // Unallocated device space, each gap an extent of its own size.
    let mut un_blocks = 0u64;
    let mut un_extents = 0u64;
    let devs = devices(fd).map_err(|e| err(e, "BTRFS_IOC_TREE_SEARCH_V2 (device items)"))?;
    for (devid, size) in devs {
        let used =
            dev_extents(fd, devid).map_err(|e| err(e, "BTRFS_IOC_TREE_SEARCH_V2 (dev tree)"))?;
        for (_, len) in unallocated(size, &used) {
            let blocks = len / sectorsize;
            if blocks > 0 {
                h.add(blocks);
                un_blocks += blocks;
                un_extents += 1;
            }
        }
    }
    let fs_blocks = if info.block_size == sectorsize {
        info.blocks
    } else {
        info.blocks.saturating_mul(info.block_size) / sectorsize
    };
    let mut f = h.finish(ROUTE, sectorsize, fs_blocks);
    f.unallocated_blocks = Some(un_blocks);
    f.unallocated_extents = Some(un_extents);
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers() {
        // Values as the kernel headers define them.
        assert_eq!(IOC_TREE_SEARCH_V2, 0xc070_9411);
        assert_eq!(IOC_FS_INFO, 0x8400_941f);
        assert_eq!(IOC_GET_FEATURES, 0x8018_9439);
    }

    #[test]
    fn keys_advance_in_order() {
        assert_eq!(next_key((1, 2, 3)), Some((1, 2, 4)));
        assert_eq!(next_key((1, 2, u64::MAX)), Some((1, 3, 0)));
        assert_eq!(next_key((1, 255, u64::MAX)), Some((2, 0, 0)));
        assert_eq!(next_key((u64::MAX, 255, u64::MAX)), None);
    }

    #[test]
    fn gaps_between_extents() {
        let bg = BlockGroup {
            start: 100,
            length: 100,
            flags: BLOCK_GROUP_DATA,
        };
        assert_eq!(gaps(&bg, &[]), vec![(100, 100)]);
        assert_eq!(
            gaps(&bg, &[(100, 10), (120, 5), (122, 10), (190, 10)]),
            vec![(110, 10), (132, 58)]
        );
        assert_eq!(gaps(&bg, &[(90, 20), (150, 80)]), vec![(110, 40)]);
        assert_eq!(gaps(&bg, &[(300, 1)]), vec![(100, 100)]);
    }

    #[test]
    fn unallocated_is_the_gaps_after_the_reserved_mib_less_super_copies() {
        const MIB: u64 = 1 << 20;
        // Chunks at 1-9 MiB and 100-200 MiB of a 1 GiB device: the gap 9-100 MiB holds the
        // super copy at 64 MiB.
        let got = unallocated(1024 * MIB, &[(MIB, 8 * MIB), (100 * MIB, 100 * MIB)]);
        assert_eq!(
            got,
            vec![
                (9 * MIB, 55 * MIB),
                (64 * MIB + 4096, 36 * MIB - 4096),
                (200 * MIB, 824 * MIB)
            ]
        );
        // Nothing allocated: everything after the first MiB, split at 64 MiB.
        assert_eq!(
            unallocated(128 * MIB, &[]),
            vec![(MIB, 63 * MIB), (64 * MIB + 4096, 64 * MIB - 4096)]
        );
    }

    #[test]
    fn not_btrfs_is_an_error_not_a_panic() {
        let dir = std::env::temp_dir();
        let info = crate::sys::statfs(&dir).unwrap();
        if info.magic == crate::sys::BTRFS_SUPER_MAGIC {
            return;
        }
        let e = free_space(&dir, &info).unwrap_err().to_string();
        assert!(e.starts_with(&dir.display().to_string()), "{e}");
    }
}
