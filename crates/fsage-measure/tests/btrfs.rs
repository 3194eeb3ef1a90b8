//! The btrfs free-space histogram (BTRFS_IOC_TREE_SEARCH_V2 on the mounted file system) against
//! the free extents worked out independently from `btrfs inspect-internal dump-tree` after
//! unmount: the gaps between EXTENT_ITEM/METADATA_ITEM keys inside every DATA block group, less
//! the superblock copies the chunk tree places there, and the gaps between the DEV_EXTENTs of the
//! dev tree (unallocated device space, after the reserved first MiB), binned by hand, bin for
//! bin. And on a fresh btrfs, whose free space is almost all unallocated, the total against
//! statfs.

mod fixtures;

use fixtures::*;
use fsage_measure::freesp::{free_space, FreeSpace};

/// (min_blocks, count, blocks) per bin.
type Bins = Vec<(u64, u64, u64)>;

fn bins(f: &FreeSpace) -> Bins {
    f.bins
        .iter()
        .map(|b| (b.min_blocks, b.count, b.blocks))
        .collect()
}

fn dump(args: &[&str]) -> String {
    let o = run_cmd("btrfs", args).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A `dump-super` field ("nodesize\t\t16384", "compat_ro_flags\t\t0x3").
fn super_field(text: &str, name: &str) -> u64 {
    let v = text
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name)).then(|| w.next()).flatten()
        })
        .unwrap_or_else(|| panic!("dump-super printed no {name}"));
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

/// Items of a dump-tree listing: (objectid, type name, offset, the lines after the key line).
fn items(text: &str) -> Vec<(String, String, u64, Vec<String>)> {
    let mut out: Vec<(String, String, u64, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("item ") {
            let Some(k) = rest
                .split_once("key (")
                .and_then(|(_, k)| k.split_once(')'))
            else {
                continue;
            };
            let w: Vec<&str> = k.0.split_whitespace().collect();
            assert_eq!(w.len(), 3, "key in {line:?}");
            let off = w[2].parse().unwrap_or(0);
            out.push((w[0].into(), w[1].into(), off, Vec::new()));
        } else if let Some(last) = out.last_mut() {
            last.3.push(t.to_string());
        }
    }
    out
}

/// The value after `name` in whitespace-separated "name value" text.
fn after<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.windows(2).find(|p| p[0] == name).map(|p| p[1])
    })
}

fn has_data_flag(flags: &str) -> bool {
    flags.split('|').any(|f| f == "DATA")
}

/// Expected free extents in bytes, from the unmounted device.
fn expected_free(dev: &str, sectorsize: u64) -> (Bins, u64, u64) {
    let sup = dump(&["inspect-internal", "dump-super", dev]);
    let nodesize = super_field(&sup, "nodesize");
    assert_eq!(super_field(&sup, "sectorsize"), sectorsize);
    let extent = dump(&["inspect-internal", "dump-tree", "-t", "extent", dev]);
    // compat_ro BLOCK_GROUP_TREE (1 << 3): block group items in tree 11.
    let bg_text = if super_field(&sup, "compat_ro_flags") & 8 != 0 {
        dump(&["inspect-internal", "dump-tree", "-t", "11", dev])
    } else {
        extent.clone()
    };
    let chunk = dump(&["inspect-internal", "dump-tree", "-t", "chunk", dev]);

    // Data block groups: (start, length, used).
    let mut bgs: Vec<(u64, u64, u64)> = Vec::new();
    for (obj, ty, off, lines) in items(&bg_text) {
        if ty != "BLOCK_GROUP_ITEM" {
            continue;
        }
        let flags = after(&lines, "flags").expect("block group flags");
        if has_data_flag(flags) {
            let used = after(&lines, "used").unwrap().parse().unwrap();
            bgs.push((obj.parse().unwrap(), off, used));
        }
    }
    assert!(!bgs.is_empty(), "no data block group in\n{bg_text}");
    // Allocated ranges.
    let mut used: Vec<(u64, u64)> = Vec::new();
    for (obj, ty, off, _) in items(&extent) {
        match ty.as_str() {
            "EXTENT_ITEM" => used.push((obj.parse().unwrap(), off)),
            "METADATA_ITEM" => used.push((obj.parse().unwrap(), nodesize)),
            _ => {}
        }
    }
    // Superblock copies (64 KiB, 64 MiB, 256 GiB on the device, 4 KiB each) mapped through the
    // single-profile chunks: logical = chunk start + (physical - stripe offset).
    let mut supers = 0u64;
    for (_, ty, logical, lines) in items(&chunk) {
        if ty != "CHUNK_ITEM" {
            continue;
        }
        let length: u64 = after(&lines, "length").unwrap().parse().unwrap();
        let ctype = after(&lines, "type").unwrap();
        assert!(ctype.ends_with("single"), "the test makes single chunks");
        let phys: u64 = after(&lines, "offset").unwrap().parse().unwrap();
        for sb in [64u64 << 10, 64 << 20, 256 << 30] {
            if sb >= phys && sb + 4096 <= phys + length {
                let l = logical + sb - phys;
                used.push((l, 4096));
                if has_data_flag(ctype) {
                    supers += 4096;
                }
            }
        }
    }
    used.sort_unstable();
    // Gaps inside each data block group, binned by floor(log2(blocks)).
    let mut hist: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    let mut total = 0u64;
    let mut by_used = 0u64;
    for &(start, len, bg_used) in &bgs {
        let end = start + len;
        by_used += len - bg_used;
        let inside = used
            .iter()
            .copied()
            .filter(|(s, _)| *s >= start && *s < end);
        for g in gaps_between(inside, start, end) {
            add_gap(&mut hist, g / sectorsize);
            total += 1;
        }
    }
    // Unallocated device space: gaps between the dev extents from 1 MiB to the device's size,
    // less the superblock copies.
    let dev = dump(&["inspect-internal", "dump-tree", "-t", "dev", dev]);
    let size: u64 = items(&chunk)
        .iter()
        .find(|i| i.1 == "DEV_ITEM")
        .and_then(|i| after(&i.3, "total_bytes"))
        .expect("a DEV_ITEM with total_bytes")
        .parse()
        .unwrap();
    let mut taken: Vec<(u64, u64)> = items(&dev)
        .iter()
        .filter(|i| i.1 == "DEV_EXTENT")
        .map(|i| (i.2, after(&i.3, "length").unwrap().parse().unwrap()))
        .collect();
    assert!(!taken.is_empty(), "no DEV_EXTENT in\n{dev}");
    for sb in [64u64 << 10, 64 << 20, 256 << 30] {
        taken.push((sb, 4096));
    }
    taken.sort_unstable();
    let mut unallocated = 0u64;
    let below = taken.into_iter().take_while(|(s, _)| *s < size);
    for g in gaps_between(below, 1 << 20, size) {
        let blocks = g / sectorsize;
        add_gap(&mut hist, blocks);
        total += 1;
        unallocated += blocks * sectorsize;
    }
    let bins = hist.into_iter().map(|(b, (c, n))| (b, c, n)).collect();
    // The block groups' own "used" counts (which leave out superblock copies) give the total.
    (bins, total, by_used - supers + unallocated)
}

#[test]
fn btrfs_histogram_matches_dump_tree() {
    let t = "btrfs_histogram_matches_dump_tree";
    if let Err(r) = need_root_and(&["mkfs.btrfs", "btrfs"]) {
        return skip(t, &r);
    }
    let mut fs = match ImageFs::make(
        "btrfs",
        512 << 20,
        &["-q", "-f", "-d", "single", "-m", "single"],
    ) {
        Ok(f) => f,
        Err(r) => return skip(t, &r),
    };
    let bs = fsage_measure::sys::statfs(fs.path()).unwrap().block_size;
    checkerboard(fs.path(), 600, bs, 13);
    let mine = free_space(fs.path()).expect("tree search on btrfs");
    eprintln!("{}", serde_json::to_string_pretty(&mine).unwrap());
    assert!(
        mine.route.starts_with("btrfs-tree-search"),
        "{}",
        mine.route
    );
    assert!(
        mine.route.contains("unallocated device space"),
        "{}",
        mine.route
    );
    assert_eq!(mine.block_size, bs);
    assert!(
        mine.free_extents > 100,
        "checkerboard left {} extents",
        mine.free_extents
    );
    // What is on disk after the last commit is what the mounted trees held: nothing ran since.
    fs.mount.unmount().expect("unmount btrfs");
    let (want, total, free_bytes) = expected_free(fs.loopdev.dev(), bs);
    assert_eq!(bins(&mine), want, "ours vs dump-tree");
    assert_eq!(mine.free_extents, total);
    assert_eq!(
        mine.free_blocks * bs,
        free_bytes,
        "free vs block group used"
    );
}

/// A fresh btrfs has one small data chunk and the rest of the device unallocated: counting only
/// the data block groups gave 8 MiB free of 4 GiB. Its free space is now within a few percent of
/// what statfs says is available, most of it unallocated.
#[test]
fn fresh_btrfs_free_space_counts_unallocated_space_like_statfs() {
    let t = "fresh_btrfs_free_space_counts_unallocated_space_like_statfs";
    if let Err(r) = need_root_and(&["mkfs.btrfs"]) {
        return skip(t, &r);
    }
    let fs = match ImageFs::make("btrfs", 1 << 30, &["-q", "-f"]) {
        Ok(f) => f,
        Err(r) => return skip(t, &r),
    };
    let info = fsage_measure::sys::statfs(fs.path()).unwrap();
    let avail = info.blocks_avail * info.block_size;
    let mine = free_space(fs.path()).expect("tree search on btrfs");
    let free = mine.free_blocks * mine.block_size;
    let un = mine.unallocated_blocks.expect("the unallocated part") * mine.block_size;
    eprintln!("free {free}, of which unallocated {un}; statfs available {avail}");
    assert!(
        (free as f64 - avail as f64).abs() <= 0.03 * avail as f64,
        "free {free} vs statfs available {avail}"
    );
    assert!(un > free / 2, "unallocated {un} of {free}");
    assert!(mine.unallocated_extents.unwrap() >= 1);
    // A few large extents: no fragmentation on a fresh file system.
    let gib = free as f64 / (1u64 << 30) as f64;
    assert!(
        (mine.free_extents as f64 / gib) < 16.0,
        "{} extents",
        mine.free_extents
    );
}

#[test]
fn not_mounted_btrfs_errors_name_the_path() {
    // A directory that is not btrfs: the btrfs route itself must fail cleanly, naming the path.
    let dir = tempfile::tempdir().unwrap();
    let info = fsage_measure::sys::statfs(dir.path()).unwrap();
    if info.magic == fsage_measure::sys::BTRFS_SUPER_MAGIC {
        return;
    }
    let e = fsage_measure::btrfs::free_space(dir.path(), &info)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&dir.path().display().to_string()), "{e}");
    assert!(e.contains("BTRFS_IOC"), "{e}");
}

/// The gaps (bytes) between sorted extents (start, length) within [from, to).
fn gaps_between(extents: impl Iterator<Item = (u64, u64)>, from: u64, to: u64) -> Vec<u64> {
    let mut cursor = from;
    let mut gaps = Vec::new();
    for (s, l) in extents {
        if s > cursor {
            gaps.push(s - cursor);
        }
        cursor = cursor.max(s + l);
    }
    if cursor < to {
        gaps.push(to - cursor);
    }
    gaps
}

/// Counts a free extent of `blocks` in its power-of-two bin: (extents, blocks) per bin.
fn add_gap(hist: &mut std::collections::BTreeMap<u64, (u64, u64)>, blocks: u64) {
    let mut bin = 1u64;
    while bin * 2 <= blocks {
        bin *= 2;
    }
    let e = hist.entry(bin).or_default();
    e.0 += 1;
    e.1 += blocks;
}
