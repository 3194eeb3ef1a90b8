//! Free space of a log-structured file system (f2fs, nilfs2), by segment. Such a file system
//! writes out of place, appending to segments (2 MiB in f2fs, 8 MiB by default in nilfs2), and
//! a cleaner (f2fs's garbage collection, nilfs_cleanerd) reclaims a segment by copying its still
//! valid blocks elsewhere. Free extents say little there; what ages is segment validity: the more
//! segments are partly valid, the more a write has to copy before it finds room. So the measure
//! is how many segments are free, full, and partly valid, by their share of valid blocks.
//!
//! The sources: f2fs's `/proc/fs/f2fs/DEV/segment_info` (ten `type|valid_blocks` entries a line,
//! the line's first segment number in front, after a two-line header; the kernel's
//! `segment_info_seq_show`), and for nilfs2 `lssu -a -l -p 0 DEV` (segment number, date, time,
//! flags `a` active, `d` dirty, `e` error, `p` protected, blocks written, live blocks) and
//! `lscp -a DEV` (the checkpoints, `ss` for a snapshot), from nilfs-tools.

use fsage_sys::fskind::{FreeSpaceBy, SegmentSource};
use fsage_sys::{Error, FsKind};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Blocks in an f2fs segment: the kernel refuses any `log_blocks_per_seg` other than 9.
pub const F2FS_SEGMENT_BLOCKS: u64 = 512;

/// Bins of the partly valid segments: tenths of the valid share.
pub const PARTIAL_BINS: usize = 10;

/// Segment usage of a log-structured file system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segments {
    /// Where it was read: `f2fs segment_info` or `nilfs2 lssu`.
    pub source: String,
    /// Blocks in a segment.
    pub segment_blocks: u64,
    /// Segments in the main (log) area.
    pub total: u64,
    /// Segments with no valid block: writable without cleaning.
    pub free: u64,
    /// Segments written and holding nothing live any more (nilfs2: dirty, no live block): the
    /// cleaner frees them without copying. f2fs counts such segments free.
    pub dead: u64,
    /// Segments whose every block is valid: nothing to gain by cleaning them.
    pub full: u64,
    /// Partly valid segments by their valid share: bin i holds those with i/10 <= share <
    /// (i+1)/10. Cleaning one copies its valid blocks to free the rest.
    pub partial: Vec<u64>,
    /// Valid blocks in all segments, and in the partly valid ones (what cleaning them copies).
    pub valid_blocks: u64,
    pub partial_valid_blocks: u64,
    /// nilfs2: checkpoints and snapshots kept (lscp), which keep blocks live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshots: Option<u64>,
}

impl Segments {
    fn new(source: &str, segment_blocks: u64) -> Segments {
        Segments {
            source: source.into(),
            segment_blocks,
            total: 0,
            free: 0,
            dead: 0,
            full: 0,
            partial: vec![0; PARTIAL_BINS],
            valid_blocks: 0,
            partial_valid_blocks: 0,
            checkpoints: None,
            snapshots: None,
        }
    }

    /// Counts one written segment with `valid` valid (live) blocks.
    fn add_written(&mut self, valid: u64) {
        self.total += 1;
        let valid = valid.min(self.segment_blocks);
        self.valid_blocks += valid;
        if valid == self.segment_blocks {
            self.full += 1;
        } else {
            let bin = (valid * PARTIAL_BINS as u64 / self.segment_blocks) as usize;
            self.partial[bin.min(PARTIAL_BINS - 1)] += 1;
            self.partial_valid_blocks += valid;
        }
    }

    /// Partly valid segments.
    pub fn partly_valid(&self) -> u64 {
        self.partial.iter().sum()
    }

    /// Blocks the cleaner copies per block it frees, cleaning every partly valid segment:
    /// valid / (segment - valid), summed. 0 when nothing is partly valid.
    pub fn cleaning_cost(&self) -> f64 {
        let n = self.partly_valid();
        let freed = n * self.segment_blocks - self.partial_valid_blocks;
        if freed == 0 {
            0.0
        } else {
            self.partial_valid_blocks as f64 / freed as f64
        }
    }
}

/// Why a segment listing (f2fs's `segment_info`, nilfs-tools' `lssu` or `lscp`) could not be
/// read: the kernel or the tool wrote something not in its format, so measuring failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A line not in the format: its number (from 1) and what is wrong with it.
    #[error("line {line}: {what}")]
    Line { line: usize, what: String },
    /// The listing as a whole is unusable (no segments in it).
    #[error("{0}")]
    Listing(&'static str),
}

impl fsage_sys::Blamed for ParseError {
    fn blame(&self) -> fsage_sys::Blame {
        fsage_sys::Blame::Operation
    }
}

fn at(i: usize, what: String) -> ParseError {
    ParseError::Line { line: i + 1, what }
}

/// Parses f2fs's `segment_info`. `Err` names the line that is not in its format.
pub fn parse_f2fs_segment_info(text: &str) -> Result<Segments, ParseError> {
    let mut s = Segments::new("f2fs segment_info", F2FS_SEGMENT_BLOCKS);
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l.starts_with("format: segment_type|valid_blocks") => {}
        other => {
            return Err(at(
                0,
                format!(
                    "{:?} is not segment_info's header",
                    other.map_or("", |(_, l)| l)
                ),
            ))
        }
    }
    let mut expect = 0u64;
    for (i, line) in lines {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if first.starts_with("segment_type(") {
            continue;
        }
        let start: u64 = first
            .parse()
            .map_err(|_| at(i, format!("{line:?}: no segment number")))?;
        if start != expect {
            return Err(at(
                i,
                format!("starts at segment {start}, {expect} expected"),
            ));
        }
        for w in words {
            let (t, v) = w
                .split_once('|')
                .ok_or_else(|| at(i, format!("{w:?} is not type|valid_blocks")))?;
            let _type: u8 = t
                .parse()
                .map_err(|_| at(i, format!("{w:?}: bad segment type")))?;
            let valid: u64 = v
                .parse()
                .map_err(|_| at(i, format!("{w:?}: bad valid block count")))?;
            if valid > F2FS_SEGMENT_BLOCKS {
                return Err(at(
                    i,
                    format!("{w:?}: more valid blocks than a segment has"),
                ));
            }
            if valid == 0 {
                s.total += 1;
                s.free += 1;
            } else {
                s.add_written(valid);
            }
            expect += 1;
        }
    }
    if s.total == 0 {
        return Err(ParseError::Listing("no segments listed"));
    }
    Ok(s)
}

/// Parses `lssu -a -l` (segments of `segment_blocks` blocks). `Err` names the line.
pub fn parse_lssu(text: &str, segment_blocks: u64) -> Result<Segments, ParseError> {
    if segment_blocks == 0 {
        return Err(ParseError::Listing("a segment of 0 blocks"));
    }
    let mut s = Segments::new("nilfs2 lssu", segment_blocks);
    for (i, line) in text.lines().enumerate() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0] == "SEGNUM" {
            continue;
        }
        // SEGNUM DATE TIME STAT NBLOCKS NLIVEBLOCKS (PCT%)
        let bad = |what: &str| at(i, format!("{line:?}: {what}"));
        if w.len() < 6 {
            return Err(bad(
                "not SEGNUM DATE TIME STAT NBLOCKS NLIVEBLOCKS (lssu -l)",
            ));
        }
        w[0].parse::<u64>().map_err(|_| bad("no segment number"))?;
        let stat = w[3];
        if stat.len() < 3 || !stat.chars().all(|c| "adep-".contains(c)) {
            return Err(bad("bad STAT flags"));
        }
        let written: u64 = w[4].parse().map_err(|_| bad("bad NBLOCKS"))?;
        let live: u64 = w[5].parse().map_err(|_| bad("bad NLIVEBLOCKS"))?;
        let dirty = stat.as_bytes()[1] == b'd';
        if !dirty && written == 0 {
            s.total += 1;
            s.free += 1;
        } else if live == 0 && !stat.starts_with('a') {
            s.total += 1;
            s.dead += 1;
        } else {
            s.add_written(live);
        }
    }
    if s.total == 0 {
        return Err(ParseError::Listing("no segments listed (give lssu -a)"));
    }
    Ok(s)
}

/// Checkpoints and snapshots in `lscp -a` output: `(checkpoints, snapshots)`.
pub fn parse_lscp(text: &str) -> Result<(u64, u64), ParseError> {
    let (mut cps, mut sss) = (0, 0);
    for (i, line) in text.lines().enumerate() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0] == "CNO" {
            continue;
        }
        // CNO DATE TIME MODE FLG BLKCNT ICNT
        if w.len() < 4 || w[0].parse::<u64>().is_err() {
            return Err(at(i, format!("{line:?}: not an lscp row")));
        }
        match w[3] {
            "cp" => cps += 1,
            "ss" => {
                cps += 1;
                sss += 1;
            }
            m => return Err(at(i, format!("mode {m:?}: neither cp nor ss"))),
        }
    }
    Ok((cps, sss))
}

/// `s_blocks_per_segment` of a nilfs2 superblock (`sb`: its bytes from offset 1024 of the
/// device), `None` when it is not one.
pub fn nilfs_blocks_per_segment(sb: &[u8]) -> Option<u64> {
    let le32 =
        |o: usize| -> Option<u32> { Some(u32::from_le_bytes(sb.get(o..o + 4)?.try_into().ok()?)) };
    if sb.get(6..8)? != [0x34, 0x34] {
        return None;
    }
    le32(48).filter(|&n| n > 0).map(u64::from)
}

/// The kernel's name of the block device `device` (`loop0`, `vda`): `/sys/dev/block/MAJ:MIN`'s
/// target.
fn kernel_name(device: &Path) -> Result<String, Error> {
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(device)
        .map_err(|e| failed(format!("{}: {e}", device.display())))?
        .rdev();
    let sys = format!(
        "/sys/dev/block/{}:{}",
        rustix::fs::major(rdev),
        rustix::fs::minor(rdev)
    );
    let target = std::fs::read_link(&sys).map_err(|e| failed(format!("{sys}: {e}")))?;
    target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| failed(format!("{sys}: no device name")))
}

/// A measurement that failed on a valid input.
fn failed(message: String) -> Error {
    Error::operation(message)
}

/// The segment usage of the log-structured file system of `kind` mounted from `device`, read
/// from where its descriptor says ([`SegmentSource`]); `Err` says why it cannot be read (bad
/// input for a kind measured by extent).
pub fn measure(kind: FsKind, device: &Path) -> Result<Segments, Error> {
    match kind.free_space() {
        FreeSpaceBy::Segments(SegmentSource::F2fsProc) => {
            // f2fs names its /proc directory after the kernel's device (loop0, vda), whatever
            // node the mount came from (a VM's disk appears at its host path).
            let name = kernel_name(device)?;
            let p = format!("/proc/fs/f2fs/{name}/segment_info");
            let text = std::fs::read_to_string(&p).map_err(|e| failed(format!("{p}: {e}")))?;
            parse_f2fs_segment_info(&text).map_err(|e| failed(format!("{p}: {e}")))
        }
        FreeSpaceBy::Segments(SegmentSource::NilfsTools) => {
            use std::io::{Read, Seek, SeekFrom};
            let mut sb = vec![0u8; 1024];
            let mut f = std::fs::File::open(device)
                .map_err(|e| failed(format!("{}: {e}", device.display())))?;
            f.seek(SeekFrom::Start(1024))
                .and_then(|_| f.read_exact(&mut sb))
                .map_err(|e| failed(format!("{}: superblock: {e}", device.display())))?;
            let per_seg = nilfs_blocks_per_segment(&sb)
                .ok_or_else(|| failed(format!("{}: no nilfs2 superblock", device.display())))?;
            let dev = device.to_string_lossy();
            // -p 0: blocks only the protection period keeps count as dead, as the cleaner fsage
            // starts sees them.
            let text = fsage_sys::run_tool("lssu", &["-a", "-l", "-p", "0", &dev])?;
            let mut s = parse_lssu(&text, per_seg).map_err(|e| failed(format!("lssu: {e}")))?;
            let cps = fsage_sys::run_tool("lscp", &["-a", &dev])?;
            let (c, ss) = parse_lscp(&cps).map_err(|e| failed(format!("lscp: {e}")))?;
            s.checkpoints = Some(c);
            s.snapshots = Some(ss);
            Ok(s)
        }
        FreeSpaceBy::Getfsmap | FreeSpaceBy::BtrfsTree => Err(Error::input(format!(
            "{kind}: not log-structured; its free space is measured by extent"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// segment_info as the kernel prints it (`%-10d` then `%d|%-3u` entries, ten a line), for
    /// 13 segments.
    const SEGMENT_INFO: &str = "format: segment_type|valid_blocks\n\
segment_type(0:HD, 1:WD, 2:CD, 3:HN, 4:WN, 5:CN)\n\
0         3|512 4|1   0|0   0|0   1|256 2|51  0|512 1|460 0|0   0|0  \n\
10        5|3   0|0   1|511\n";

    #[test]
    fn f2fs_segment_info_gives_free_full_and_partly_valid() {
        let s = parse_f2fs_segment_info(SEGMENT_INFO).unwrap();
        assert_eq!(s.segment_blocks, 512);
        assert_eq!(s.total, 13);
        assert_eq!(s.free, 5);
        assert_eq!(s.full, 2);
        assert_eq!(s.dead, 0);
        // 1 and 3 blocks: bin 0; 51: 51*10/512 = 0.99 -> bin 0; 256: bin 5; 460: bin 8; 511: bin 9.
        assert_eq!(s.partial, vec![3, 0, 0, 0, 0, 1, 0, 0, 1, 1]);
        assert_eq!(s.partly_valid(), 6);
        assert_eq!(s.valid_blocks, 512 * 2 + 1 + 256 + 51 + 460 + 3 + 511);
        assert_eq!(s.partial_valid_blocks, 1 + 256 + 51 + 460 + 3 + 511);
        let freed = 6 * 512 - s.partial_valid_blocks;
        assert!((s.cleaning_cost() - s.partial_valid_blocks as f64 / freed as f64).abs() < 1e-12);
    }

    #[test]
    fn f2fs_segment_info_refuses_what_is_not_it_naming_the_line() {
        assert!(parse_f2fs_segment_info("")
            .unwrap_err()
            .to_string()
            .contains("line 1"));
        let skipped = SEGMENT_INFO.replace("\n10 ", "\n20 ");
        let e = parse_f2fs_segment_info(&skipped).unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("10 expected"), "{e}");
        let bad = SEGMENT_INFO.replace("2|51 ", "2/51 ");
        assert!(parse_f2fs_segment_info(&bad)
            .unwrap_err()
            .to_string()
            .contains("line 3"));
        let over = SEGMENT_INFO.replace("1|511", "1|513");
        assert!(parse_f2fs_segment_info(&over)
            .unwrap_err()
            .to_string()
            .contains("more valid"));
        let none = "format: segment_type|valid_blocks\nsegment_type(0:HD)\n";
        assert!(parse_f2fs_segment_info(none).is_err());
    }

    /// `lssu -a -l` as nilfs-tools 2.2 prints it (`%17llu  %s %c%c%c%c  %10u %10u (%3u%%)`).
    const LSSU: &str =
        "           SEGNUM        DATE     TIME STAT     NBLOCKS       NLIVEBLOCKS\n\
                0  2026-11-27 13:00:00 -d--        2047       2047 (100%)\n\
                1  2026-11-27 13:00:01 -d--        2048       2048 (100%)\n\
                2  2026-11-27 13:00:02 -d--        2048        512 ( 25%)\n\
                3  2026-11-27 13:00:03 -d--        2048          0 (  0%)\n\
                4  2026-11-27 13:00:04 ad-p         103        103 (  5%)\n\
                5  ---------- --:--:-- ad--           0          0 (  0%)\n\
                6  ---------- --:--:-- ----           0          0 (  0%)\n\
                7  ---------- --:--:-- ----           0          0 (  0%)\n";

    #[test]
    fn lssu_gives_free_dead_full_and_partly_live() {
        let s = parse_lssu(LSSU, 2048).unwrap();
        assert_eq!(s.source, "nilfs2 lssu");
        assert_eq!(s.total, 8);
        assert_eq!(s.free, 2);
        assert_eq!(s.dead, 1);
        assert_eq!(s.full, 1);
        // Segment 0: 2047 of 2048 live (the first segment starts after the superblock): bin 9;
        // 2: 25% -> bin 2; 4 (active): 103 -> bin 0; 5 (active, empty): bin 0.
        assert_eq!(s.partial, vec![2, 0, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(s.valid_blocks, 2047 + 2048 + 512 + 103);
        assert!(parse_lssu(LSSU, 0).is_err());
    }

    #[test]
    fn lssu_without_live_counts_is_refused_naming_the_line() {
        let plain = "              SEGNUM        DATE     TIME STAT     NBLOCKS\n\
                   3  2022-11-04 23:23:49  -d-        2048\n";
        let e = parse_lssu(plain, 2048).unwrap_err();
        assert!(matches!(e, ParseError::Line { line: 2, .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("line 2") && e.contains("lssu -l"), "{e}");
        let flags = LSSU.replace("-d--        2048        512", "-x--        2048        512");
        assert!(parse_lssu(&flags, 2048)
            .unwrap_err()
            .to_string()
            .contains("STAT"));
    }

    #[test]
    fn lscp_counts_checkpoints_and_snapshots() {
        let text = "                 CNO        DATE     TIME  MODE  FLG     BLKCNT       ICNT\n\
                           1  2026-11-27 13:00:00   cp    -            4          2\n\
                           2  2026-11-27 13:00:05   ss    -          130         40\n\
                           3  2026-11-27 13:00:09   cp    i          131         40\n";
        assert_eq!(parse_lscp(text).unwrap(), (3, 1));
        assert_eq!(
            parse_lscp("   x y z w\n").unwrap_err().to_string(),
            "line 1: \"   x y z w\": not an lscp row"
        );
        assert_eq!(parse_lscp("").unwrap(), (0, 0));
    }

    #[test]
    fn the_nilfs2_superblock_gives_its_segment_size() {
        let mut sb = vec![0u8; 1024];
        sb[0] = 2;
        sb[6] = 0x34;
        sb[7] = 0x34;
        sb[48..52].copy_from_slice(&2048u32.to_le_bytes());
        assert_eq!(nilfs_blocks_per_segment(&sb), Some(2048));
        sb[7] = 0;
        assert_eq!(nilfs_blocks_per_segment(&sb), None);
        assert_eq!(nilfs_blocks_per_segment(&[0u8; 10]), None);
    }

    #[test]
    fn reports_without_segments_write_none_and_still_read() {
        let s = parse_lssu(LSSU, 2048).unwrap();
        let j = serde_json::to_value(&s).unwrap();
        assert!(j.get("checkpoints").is_none());
        let back: Segments = serde_json::from_value(j).unwrap();
        assert_eq!(back, s);
        // A frag report of ext4 written before segments existed, and one with them.
        let mut r = crate::FragReport {
            format: crate::FRAG_FORMAT,
            platform: Default::default(),
            mount: "/mnt".into(),
            fs_type: "ext4".into(),
            block_size: 4096,
            free_space: None,
            free_space_error: Some("x".into()),
            free_space_seconds: 0.0,
            files: None,
            probe: None,
            segments: None,
        };
        let old = serde_json::to_string(&r).unwrap();
        assert!(!old.contains("segments"), "{old}");
        let read: crate::FragReport = serde_json::from_str(&old).unwrap();
        assert_eq!(read, r);
        r.segments = Some(s);
        let new = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<crate::FragReport>(&new).unwrap(), r);
    }
}
