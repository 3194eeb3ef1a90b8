//! The free-space histogram against the file systems' own tools, on loop-mounted images:
//! ext4 against `e2freefrag` (bin for bin), xfs against `xfs_db -r -c 'freesp -s'` after unmount.

mod fixtures;

use fixtures::*;
use fsage_measure::freesp::{free_space, FreeSpace};
use std::process::Output;

/// (min_blocks, count, blocks) per bin.
type Bins = Vec<(u64, u64, u64)>;

fn bins(f: &FreeSpace) -> Bins {
    f.bins
        .iter()
        .map(|b| (b.min_blocks, b.count, b.blocks))
        .collect()
}

/// "4K", "512K", "1M", "64M", "2G" -> bytes.
fn parse_unit(s: &str) -> u64 {
    let s = s.trim();
    let (num, unit) = s.split_at(s.len() - 1);
    let mult = match unit {
        "K" => 1u64 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => panic!("unknown unit in {s:?}"),
    };
    num.trim()
        .parse::<u64>()
        .unwrap_or_else(|_| panic!("bad size {s:?}"))
        * mult
}

/// Parses e2freefrag's histogram ("    4K...    8K-  :   count   blocks  pct") and its
/// "Num. free extent" line.
fn parse_e2freefrag(out: &str, block_size: u64) -> (Bins, u64) {
    let mut bins = Vec::new();
    let mut total = None;
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("Num. free extent:") {
            total = Some(rest.trim().parse::<u64>().expect("Num. free extent"));
        }
        let Some((range, nums)) = line.split_once(':') else {
            continue;
        };
        let Some((lo, _)) = range.split_once("...") else {
            continue;
        };
        let n: Vec<&str> = nums.split_whitespace().collect();
        if n.len() < 2 {
            continue;
        }
        let lo_blocks = parse_unit(lo) / block_size;
        bins.push((lo_blocks, n[0].parse().unwrap(), n[1].parse().unwrap()));
    }
    (
        bins,
        total.expect("e2freefrag printed no 'Num. free extent' line"),
    )
}

/// Parses `freesp -s`: "from to extents blocks pct" rows and "total free extents N".
fn parse_freesp(out: &str) -> (Bins, u64) {
    let mut bins = Vec::new();
    let mut total = None;
    for line in out.lines() {
        if let Some(rest) = line.trim().strip_prefix("total free extents") {
            total = Some(rest.trim().parse::<u64>().unwrap());
        }
        let n: Vec<u64> = line
            .split_whitespace()
            .map_while(|w| w.parse::<u64>().ok())
            .collect();
        if n.len() >= 4 && line.split_whitespace().count() == 5 {
            bins.push((n[0], n[2], n[3]));
        }
    }
    (bins, total.expect("freesp printed no total"))
}

#[test]
fn ext4_histogram_matches_e2freefrag() {
    let t = "ext4_histogram_matches_e2freefrag";
    if let Err(r) = need_root_and(&["e2freefrag"]) {
        return skip(t, &r);
    }
    // 1 KiB blocks give many groups (group boundaries) in a small image.
    for (bytes, args) in [
        (512u64 << 20, &["-q", "-F", "-b", "4096"][..]),
        (96 << 20, &["-q", "-F", "-b", "1024"][..]),
    ] {
        let mut fs = match ImageFs::make("ext4", bytes, args) {
            Ok(f) => f,
            Err(r) => return skip(t, &r),
        };
        let bs = fsage_measure::sys::statfs(fs.path()).unwrap().block_size;
        checkerboard(fs.path(), 600, bs, 7);
        // Unmounted, e2freefrag reads the block bitmaps. Unmounting also drops ext4's in-memory
        // preallocations, which a mounted file system counts as used: mount again to compare.
        fs.mount.unmount().expect("unmount ext4");
        let out = run_cmd("e2freefrag", &[fs.loopdev.dev()]).expect("e2freefrag, unmounted");
        let offline = String::from_utf8_lossy(&out.stdout).into_owned();
        fs.mount = MountGuard::mount(fs.loopdev.dev(), &["-t", "ext4"]).expect("mount ext4 again");
        let mine = free_space(fs.path()).expect("GETFSMAP on ext4");
        assert_eq!(mine.route, "getfsmap");
        assert_eq!(mine.block_size, bs);
        assert!(
            mine.free_extents > 100,
            "checkerboard left {} extents",
            mine.free_extents
        );
        let (want, total) = parse_e2freefrag(&offline, bs);
        assert_eq!(
            bins(&mine),
            want,
            "block size {bs}: ours vs unmounted e2freefrag\n{}\n{offline}",
            serde_json::to_string_pretty(&mine).unwrap()
        );
        assert_eq!(mine.free_extents, total);
        // And mounted, where e2freefrag may use GETFSMAP itself.
        let out = run_cmd("e2freefrag", &[fs.loopdev.dev()]).expect("e2freefrag, mounted");
        let online = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            parse_e2freefrag(&online, bs),
            (bins(&mine), mine.free_extents),
            "block size {bs}: ours vs mounted e2freefrag\n{online}"
        );
    }
}

#[test]
fn xfs_histogram_matches_xfs_db_freesp() {
    let t = "xfs_histogram_matches_xfs_db_freesp";
    if let Err(r) = need_root_and(&["xfs_db", "mkfs.xfs"]) {
        return skip(t, &r);
    }
    // Four allocation groups: free extents never span one.
    let mut fs = match ImageFs::make("xfs", 512 << 20, &["-q", "-f", "-d", "agcount=4"]) {
        Ok(f) => f,
        Err(r) => return skip(t, &r),
    };
    let bs = fsage_measure::sys::statfs(fs.path()).unwrap().block_size;
    checkerboard(fs.path(), 600, bs, 11);
    // xfs frees the blocks of deleted files in the background (deferred inode inactivation): a
    // measurement right after the deletes can race it. Unmounting finishes that work; measure on
    // the remounted file system, which then holds still until xfs_db reads it.
    fs.mount.unmount().expect("unmount xfs");
    fs.mount = MountGuard::mount(fs.loopdev.dev(), &["-t", "xfs"]).expect("mount xfs again");
    let mine = free_space(fs.path()).expect("GETFSMAP on xfs");
    assert!(
        mine.free_extents > 100,
        "checkerboard left {} extents",
        mine.free_extents
    );
    fs.mount.unmount().expect("unmount xfs");
    let out = run_cmd("xfs_db", &["-r", "-c", "freesp -s", fs.loopdev.dev()]).expect("xfs_db");
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut want, mut total) = parse_freesp(&text);
    // freesp also counts every block on an AG free list (AGFL) as a one-block free extent. Those
    // blocks are reserved for the free-space btrees, GETFSMAP reports them as owned by the AG,
    // and fsage does not count them as free: take them out of freesp's first bin.
    let agfl = agfl_blocks(fs.loopdev.dev());
    if agfl > 0 {
        let first = want
            .first_mut()
            .filter(|b| b.0 == 1)
            .expect("freesp has a 1-block bin");
        first.1 -= agfl;
        first.2 -= agfl;
        total -= agfl;
        want.retain(|b| b.1 > 0);
    }
    eprintln!("{}\n{text}", serde_json::to_string_pretty(&mine).unwrap());
    assert_eq!(bins(&mine), want, "ours vs xfs_db freesp -s\n{text}");
    assert_eq!(mine.free_extents, total);
}

/// Blocks on the AG free lists of an unmounted xfs (sum of every AGF's flcount).
fn agfl_blocks(dev: &str) -> u64 {
    let field = |out: &Output, name: &str| -> u64 {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix(name)?
                    .trim()
                    .strip_prefix('=')
                    .map(str::trim)
                    .map(String::from)
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("xfs_db printed no {name}: {text}"))
    };
    let sb =
        run_cmd("xfs_db", &["-r", "-c", "sb 0", "-c", "print agcount", dev]).expect("xfs_db sb");
    let ags = field(&sb, "agcount");
    (0..ags)
        .map(|ag| {
            let c = format!("agf {ag}");
            let o = run_cmd("xfs_db", &["-r", "-c", &c, "-c", "print flcount", dev])
                .expect("xfs_db agf");
            field(&o, "flcount")
        })
        .sum()
}
