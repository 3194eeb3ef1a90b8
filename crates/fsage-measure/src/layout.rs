//! File layout from FIEMAP: extents and fragments per file, the layout score of Smith and
//! Seltzer, and the dynamic layout score of Conway et al. over a recursive read.
//!
//! Blocks are file-system blocks. A *fragment* is a run of extents that follow each other
//! physically (FIEMAP splits long runs into several extents: ext4 at 32768 blocks). A block is
//! *contiguous* when it lies physically right after the block read just before it.

use crate::sys::{self, Fiemap};
use crate::walk::{self, WalkStats};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One file's layout, in block units.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FileLayout {
    /// Extents FIEMAP reported.
    pub extents: u32,
    /// Physically discontiguous runs.
    pub fragments: u32,
    /// Blocks mapped.
    pub blocks: u64,
    /// Blocks, after the file's first, right after the previous block of the file.
    pub contiguous: u64,
    /// Physical block of the first and of the last block (valid when blocks > 0).
    pub first: u64,
    pub last: u64,
    /// Extents whose place is unknown or not block-aligned (delayed allocation, inline data,
    /// compression, tails): counted, and treated as breaking contiguity.
    pub odd_extents: u32,
}

/// Reads the layout of an open file.
pub fn file_layout(
    fm: &mut Fiemap,
    f: &File,
    block_size: u64,
    sync: bool,
) -> std::io::Result<FileLayout> {
    let mut l = FileLayout::default();
    // Physical block one past the previous extent, when it is known.
    let mut next: Option<u64> = None;
    fm.extents(f, sync, |e| {
        l.extents += 1;
        let odd = e.flags
            & (sys::FIEMAP_EXTENT_UNKNOWN
                | sys::FIEMAP_EXTENT_DELALLOC
                | sys::FIEMAP_EXTENT_DATA_INLINE
                | sys::FIEMAP_EXTENT_NOT_ALIGNED)
            != 0;
        if odd {
            l.odd_extents += 1;
            l.fragments += 1;
            next = None;
            return;
        }
        let start = e.physical / block_size;
        let len = e.length.div_ceil(block_size);
        if len == 0 {
            return;
        }
        if l.blocks == 0 {
            l.first = start;
        }
        if next == Some(start) {
            l.contiguous += 1;
        } else {
            l.fragments += 1;
        }
        l.contiguous += len - 1;
        l.blocks += len;
        l.last = start + len - 1;
        next = Some(start + len);
    })?;
    Ok(l)
}

/// One row of the extents-per-file distribution: files with `min..=max` fragments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountBin {
    pub min: u64,
    pub max: u64,
    pub files: u64,
}

/// A file among the most fragmented.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragmentedFile {
    pub path: String,
    pub fragments: u64,
    pub extents: u64,
    pub blocks: u64,
}

/// The layout of every regular file under a directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileStats {
    pub files: u64,
    /// Files with no block mapped (empty, or data held inline).
    pub files_without_blocks: u64,
    pub multi_block_files: u64,
    pub blocks: u64,
    pub extents: u64,
    pub fragments: u64,
    /// Extents of unknown or unaligned place (delalloc, inline, encoded).
    pub odd_extents: u64,
    /// Smith and Seltzer: over all multi-block files, contiguous blocks / (blocks - 1).
    pub layout_score: Option<f64>,
    /// Conway et al.: over a recursive read in readdir order, the fraction of block fetches
    /// (after the first) physically right after the previous fetch, across files.
    pub dynamic_layout_score: Option<f64>,
    /// Mean fragments per file with blocks.
    pub fragments_per_file: f64,
    /// Files by fragments, power-of-two bins (1, 2-3, 4-7, ...), non-empty bins only.
    pub fragments_distribution: Vec<CountBin>,
    pub most_fragmented: Vec<FragmentedFile>,
    pub walk: WalkStats,
    pub seconds: f64,
}

/// Options of [`scan_files`].
#[derive(Debug, Clone)]
pub struct ScanOptions {
    pub threads: usize,
    /// How many of the most fragmented files to list.
    pub top: usize,
    /// Ask FIEMAP to flush each file first (slow); by default the whole file system is synced once.
    pub sync_each: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            threads: walk::default_threads(),
            top: 10,
            sync_each: false,
        }
    }
}

struct Top {
    n: usize,
    files: Vec<FragmentedFile>,
}

impl Top {
    fn threshold(&self) -> u64 {
        if self.files.len() < self.n {
            1
        } else {
            self.files.last().map_or(1, |f| f.fragments)
        }
    }
    fn offer(&mut self, f: FragmentedFile) {
        if self.n == 0 {
            return;
        }
        let pos = self
            .files
            .partition_point(|x| (x.fragments, &x.path) > (f.fragments, &f.path));
        self.files.insert(pos, f);
        self.files.truncate(self.n);
    }
}

/// FIEMAP of every regular file under `root` (on its file system), in recursive readdir order.
pub fn scan_files(root: &Path, opts: &ScanOptions) -> Result<FileStats, crate::Error> {
    let t0 = std::time::Instant::now();
    let info = sys::statfs(root).map_err(|e| format!("{}: statfs: {e}", root.display()))?;
    let bs = info.block_size;
    {
        let d = File::open(root).map_err(|e| format!("{}: {e}", root.display()))?;
        if !opts.sync_each {
            sys::syncfs(&d).map_err(|e| format!("{}: syncfs: {e}", root.display()))?;
        }
    }
    let top = Mutex::new(Top {
        n: opts.top,
        files: Vec::new(),
    });
    // Lowest fragment count that can still enter the top list (read without the lock).
    let threshold = std::sync::atomic::AtomicU64::new(1);
    thread_local! {
        static FM: std::cell::RefCell<Fiemap> = std::cell::RefCell::new(Fiemap::default());
    }
    let (layouts, walk) = walk::walk(root, opts.threads, |ctx| {
        let f = open_noatime(ctx.path).map_err(|e| format!("{}: open: {e}", ctx.path.display()))?;
        let l = FM
            .with(|fm| file_layout(&mut fm.borrow_mut(), &f, bs, opts.sync_each))
            .map_err(|e| format!("{}: FIEMAP: {e}", ctx.path.display()))?;
        let fr = u64::from(l.fragments);
        if fr > 1 && fr >= threshold.load(std::sync::atomic::Ordering::Relaxed) {
            let mut t = top.lock().unwrap_or_else(|p| p.into_inner());
            t.offer(FragmentedFile {
                path: ctx.path.to_string_lossy().into_owned(),
                fragments: fr,
                extents: u64::from(l.extents),
                blocks: l.blocks,
            });
            threshold.store(t.threshold(), std::sync::atomic::Ordering::Relaxed);
        }
        Ok(l)
    })?;
    let mut s = summarize(&layouts);
    s.most_fragmented = top.into_inner().unwrap_or_else(|p| p.into_inner()).files;
    s.walk = walk;
    s.seconds = t0.elapsed().as_secs_f64();
    Ok(s)
}

fn open_noatime(p: &Path) -> std::io::Result<File> {
    use rustix::fs::{open, Mode, OFlags};
    match open(
        p,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOATIME,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(File::from(fd)),
        // O_NOATIME is refused on files we do not own (without CAP_FOWNER).
        Err(rustix::io::Errno::PERM) => File::open(p),
        Err(e) => Err(e.into()),
    }
}

/// The aggregate scores of layouts given in read order.
pub fn summarize(layouts: &[FileLayout]) -> FileStats {
    let mut s = FileStats {
        files: layouts.len() as u64,
        files_without_blocks: 0,
        multi_block_files: 0,
        blocks: 0,
        extents: 0,
        fragments: 0,
        odd_extents: 0,
        layout_score: None,
        dynamic_layout_score: None,
        fragments_per_file: 0.0,
        fragments_distribution: Vec::new(),
        most_fragmented: Vec::new(),
        walk: WalkStats::default(),
        seconds: 0.0,
    };
    let (mut ls_num, mut ls_den) = (0u64, 0u64);
    let (mut dls_num, mut dls_den) = (0u64, 0u64);
    let mut prev_last: Option<u64> = None;
    let mut dist: Vec<u64> = Vec::new();
    for l in layouts {
        s.extents += u64::from(l.extents);
        s.fragments += u64::from(l.fragments);
        s.odd_extents += u64::from(l.odd_extents);
        if l.blocks == 0 {
            s.files_without_blocks += 1;
            continue;
        }
        s.blocks += l.blocks;
        if l.blocks > 1 {
            s.multi_block_files += 1;
            ls_num += l.contiguous;
            ls_den += l.blocks - 1;
        }
        // Within the file: the same pairs; across files: the first block after the last read.
        dls_num += l.contiguous;
        dls_den += l.blocks - 1;
        if let Some(p) = prev_last {
            dls_den += 1;
            if l.odd_extents == 0 && p + 1 == l.first {
                dls_num += 1;
            }
        }
        prev_last = (l.odd_extents == 0)
            .then_some(l.last)
            .or(Some(u64::MAX - 1));
        let b = crate::hist::bin_of(u64::from(l.fragments.max(1)));
        if dist.len() <= b {
            dist.resize(b + 1, 0);
        }
        dist[b] += 1;
    }
    s.layout_score = (ls_den > 0).then(|| ls_num as f64 / ls_den as f64);
    s.dynamic_layout_score = (dls_den > 0).then(|| dls_num as f64 / dls_den as f64);
    let with_blocks = s.files - s.files_without_blocks;
    s.fragments_per_file = if with_blocks == 0 {
        0.0
    } else {
        layouts
            .iter()
            .filter(|l| l.blocks > 0)
            .map(|l| u64::from(l.fragments))
            .sum::<u64>() as f64
            / with_blocks as f64
    };
    s.fragments_distribution = dist
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| CountBin {
            min: 1 << i,
            max: (1 << (i + 1)) - 1,
            files: n,
        })
        .collect();
    s
}

/// Result of `--probe`: one new file written, synced, mapped and deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub bytes: u64,
    pub extents: u64,
    pub fragments: u64,
    pub blocks: u64,
    pub layout_score: Option<f64>,
    pub seconds: f64,
}

/// Writes a file of `bytes` (real data, then fsync) in `dir`, maps it, deletes it.
pub fn probe(dir: &Path, bytes: u64) -> Result<Probe, crate::Error> {
    use std::io::Write;
    let t0 = std::time::Instant::now();
    let info = sys::statfs(dir).map_err(|e| format!("{}: statfs: {e}", dir.display()))?;
    let avail = info.blocks_avail.saturating_mul(info.block_size);
    if bytes == 0 {
        return Err(crate::Error::Failed(
            "a probe of 0 bytes: the size must be at least 1 byte".into(),
        ));
    }
    if bytes > avail {
        return Err(crate::Error::Failed(format!(
            "a probe of {}: only {} available on {}",
            fsage_profile::human_bytes(bytes),
            fsage_profile::human_bytes(avail),
            dir.display()
        )));
    }
    let path: PathBuf = dir.join(format!(".fsage-probe-{}", fsage_sys::safe::random_hex()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("{}: create: {e}", path.display()))?;
    // Remove the file however we leave.
    struct Remove<'a>(&'a Path);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(self.0);
        }
    }
    let _rm = Remove(&path);
    // Incompressible-looking data (xorshift), written in 1 MiB chunks.
    let mut chunk = vec![0u8; 1 << 20];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut left = bytes;
    while left > 0 {
        for w in chunk.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_le_bytes());
        }
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .map_err(|e| format!("{}: write: {e}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(|e| format!("{}: fsync: {e}", path.display()))?;
    let l = file_layout(&mut Fiemap::default(), &f, info.block_size, false)
        .map_err(|e| format!("{}: FIEMAP: {e}", path.display()))?;
    drop(f);
    std::fs::remove_file(&path).map_err(|e| format!("{}: delete: {e}", path.display()))?;
    Ok(Probe {
        bytes,
        extents: u64::from(l.extents),
        fragments: u64::from(l.fragments),
        blocks: l.blocks,
        layout_score: (l.blocks > 1).then(|| l.contiguous as f64 / (l.blocks - 1) as f64),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(first: u64, blocks: u64, contiguous: u64, fragments: u32) -> FileLayout {
        FileLayout {
            extents: fragments,
            fragments,
            blocks,
            contiguous,
            first,
            last: 0,
            odd_extents: 0,
        }
    }

    #[test]
    fn scores_count_pairs_within_and_across_files() {
        // File a: blocks 10..14 (contiguous, 4 pairs). File b: 14..16 right after a, then 100.
        let mut a = l(10, 4, 3, 1);
        a.last = 13;
        let mut b = l(14, 3, 1, 2);
        b.last = 100;
        // File c: a single block far away.
        let mut c = l(500, 1, 0, 1);
        c.last = 500;
        let s = summarize(&[a, b, c, FileLayout::default()]);
        assert_eq!(s.files, 4);
        assert_eq!(s.files_without_blocks, 1);
        assert_eq!(s.multi_block_files, 2);
        // Layout score: (3 + 1) / (3 + 2).
        assert!((s.layout_score.unwrap() - 0.8).abs() < 1e-12);
        // Dynamic: pairs 3 + 1 inside, a->b contiguous, b->c not: 5 of 7.
        assert!((s.dynamic_layout_score.unwrap() - 5.0 / 7.0).abs() < 1e-12);
        let d: Vec<(u64, u64)> = s
            .fragments_distribution
            .iter()
            .map(|b| (b.min, b.files))
            .collect();
        assert_eq!(d, vec![(1, 2), (2, 1)]);
    }
}
