//! Sparse-aware reading, comparing and copying of images. Only data extents are read
//! (SEEK_DATA/SEEK_HOLE; a block device is all data), and within them all-zero 4 KiB blocks count
//! as holes, so a restored or copied image file is as sparse as it can be. To make the free space
//! of an image's file system into holes too, trim it first (`fsage fs trim IMAGE`).
//!
//! A copy onto a device does one of three things with those holes ([`Holes`]): zeroes them with
//! `BLKZEROOUT` (the default: a drive may unmap them, which is a TRIM of the image's free space),
//! writes them as zeros (every block written as data, as `dd` does), or leaves them.

use crate::{Error, Result};
use fsage_sys::{is_block_device, TempPath};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

/// Granularity of zero detection and of rollback ranges.
pub const BLOCK: u64 = 4096;
/// The size of the buffers images are read in.
pub const CHUNK: usize = 1 << 20;
/// A chunk of zeros, for writing (or hashing) holes.
pub static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// Data extents `(offset, len)` of a regular file (ascending); a block device is one extent.
pub fn data_extents(f: &File, path: &Path) -> Result<Vec<(u64, u64)>> {
    let size = fsage_sys::file_size(f, path)?;
    if is_block_device(path) {
        return Ok(if size > 0 { vec![(0, size)] } else { vec![] });
    }
    use rustix::fs::{seek, SeekFrom};
    use rustix::io::Errno;
    let mut out = Vec::new();
    let mut pos: u64 = 0;
    while pos < size {
        let data = match seek(f, SeekFrom::Data(pos)) {
            Ok(d) => d,
            Err(Errno::NXIO) => break,
            // File systems without SEEK_DATA: everything is data.
            Err(Errno::INVAL | Errno::OPNOTSUPP) => return Ok(vec![(0, size)]),
            Err(e) => return Err(Error::io(path, "SEEK_DATA", e.into())),
        };
        let hole =
            seek(f, SeekFrom::Hole(data)).map_err(|e| Error::io(path, "SEEK_HOLE", e.into()))?;
        let end = hole.min(size);
        if end > data {
            out.push((data, end - data));
        }
        pos = hole;
    }
    Ok(out)
}

/// Calls `cb(offset, bytes)` for every run of non-zero 4 KiB blocks in the data extents, in
/// ascending order. Returns the image size.
pub fn scan_nonzero(
    f: &File,
    path: &Path,
    mut cb: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    let size = fsage_sys::file_size(f, path)?;
    let mut buf = vec![0u8; CHUNK];
    for (start, len) in data_extents(f, path)? {
        // Align to blocks so that runs never split a block.
        let mut off = start / BLOCK * BLOCK;
        let end = (start + len).min(size);
        while off < end {
            crate::check_interrupted("reading the image")?;
            let n = (end - off).min(CHUNK as u64) as usize;
            let b = &mut buf[..n];
            f.read_exact_at(b, off)
                .map_err(|e| Error::io(path, &format!("read at byte {off}"), e))?;
            let mut i = 0;
            while i < n {
                let bl = (n - i).min(BLOCK as usize);
                if b[i..i + bl].iter().all(|&x| x == 0) {
                    i += bl;
                    continue;
                }
                let s = i;
                while i < n {
                    let bl = (n - i).min(BLOCK as usize);
                    if b[i..i + bl].iter().all(|&x| x == 0) {
                        break;
                    }
                    i += bl;
                }
                cb(off + s as u64, &b[s..i])?;
            }
            off += n as u64;
        }
    }
    Ok(size)
}

/// Zeroes `[off, off+len)` of a device (BLKZEROOUT, falling back to writing zeros) or punches a
/// hole in a file.
pub fn zero_range(f: &File, path: &Path, off: u64, len: u64) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    if is_block_device(path) {
        use fsage_sys::ioctl::{IoctlOpcode, Setter};
        // BLKZEROOUT = _IO(0x12, 127), though it reads a range of two u64: rustix's opcode
        // helpers would encode a size, so the kernel's number is taken as it is.
        const BLKZEROOUT: IoctlOpcode = linux_raw_sys::ioctl::BLKZEROOUT as IoctlOpcode;
        let range: [u64; 2] = [off, len];
        // SAFETY: BLKZEROOUT reads exactly a `uint64_t[2]` (start, length) through the pointer.
        if off % 512 == 0
            && len % 512 == 0
            && unsafe { rustix::ioctl::ioctl(f, Setter::<BLKZEROOUT, [u64; 2]>::new(range)) }
                .is_ok()
        {
            return Ok(());
        }
    } else {
        use rustix::fs::{fallocate, FallocateFlags};
        let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
        if fallocate(f, flags, off, len).is_ok() {
            return Ok(());
        }
    }
    let mut o = off;
    while o < off + len {
        let k = (off + len - o).min(CHUNK as u64) as usize;
        f.write_all_at(&ZEROS[..k], o)
            .map_err(|e| Error::io(path, &format!("write zeros at byte {o}"), e))?;
        o += k as u64;
    }
    Ok(())
}

/// Writes `len` zero bytes at `off` as data (no hole punched, no `BLKZEROOUT`).
fn write_zeros(f: &File, path: &Path, off: u64, len: u64) -> Result<()> {
    let mut o = off;
    while o < off + len {
        crate::check_interrupted("writing zeros")?;
        let k = (off + len - o).min(CHUNK as u64) as usize;
        f.write_all_at(&ZEROS[..k], o)
            .map_err(|e| Error::io(path, &format!("write zeros at byte {o}"), e))?;
        o += k as u64;
    }
    Ok(())
}

fn merge(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, l) in v {
        match out.last_mut() {
            Some((ps, pl)) if s <= *ps + *pl => *pl = (*pl).max(s + l - *ps),
            _ => out.push((s, l)),
        }
    }
    out
}

/// Merges ranges `(offset, len)`: sorted, overlapping and touching ones joined.
pub fn merge_ranges(v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    merge(v)
}

/// The 4 KiB-aligned ranges where `a` and `b` differ (both read with holes as zeros; only their
/// data extents are read). `Err` if the sizes differ.
pub fn compare(a: &Path, b: &Path) -> Result<Vec<(u64, u64)>> {
    let fa = File::open(a).map_err(|e| Error::io(a, "", e))?;
    let fb = File::open(b).map_err(|e| Error::io(b, "", e))?;
    let (sa, sb) = (fsage_sys::file_size(&fa, a)?, fsage_sys::file_size(&fb, b)?);
    // A device may be larger than the image copied onto it: compare the image's length.
    if sa != sb && !(is_block_device(b) && sb > sa) {
        crate::bail!(
            "{} is {sa} bytes but {} is {sb} bytes",
            a.display(),
            b.display()
        );
    }
    let mut ext = data_extents(&fa, a)?;
    ext.extend(data_extents(&fb, b)?);
    let ext: Vec<(u64, u64)> = merge(
        ext.into_iter()
            .filter(|&(s, _)| s < sa)
            .map(|(s, l)| {
                let s2 = s / BLOCK * BLOCK;
                (s2, ((s + l).div_ceil(BLOCK) * BLOCK).min(sa) - s2)
            })
            .collect(),
    );
    let mut ba = vec![0u8; CHUNK];
    let mut bb = vec![0u8; CHUNK];
    let mut diff = Vec::new();
    for (s, l) in ext {
        let mut off = s;
        while off < s + l {
            crate::check_interrupted("comparing images")?;
            let n = (s + l - off).min(CHUNK as u64) as usize;
            fa.read_exact_at(&mut ba[..n], off)
                .map_err(|e| Error::io(a, &format!("read at byte {off}"), e))?;
            fb.read_exact_at(&mut bb[..n], off)
                .map_err(|e| Error::io(b, &format!("read at byte {off}"), e))?;
            if ba[..n] != bb[..n] {
                let mut i = 0;
                while i < n {
                    let k = (n - i).min(BLOCK as usize);
                    if ba[i..i + k] != bb[i..i + k] {
                        diff.push((off + i as u64, k as u64));
                    }
                    i += k;
                }
            }
            off += n as u64;
        }
    }
    Ok(merge(diff))
}

/// What a copy does with the ranges that are holes (or all-zero 4 KiB blocks) in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holes {
    /// On a device, zeroed with `BLKZEROOUT` (a file target keeps them as holes): the target
    /// reads back as the source, but no data is written there. The kernel sends a write-zeroes
    /// request, which a drive may (and fsage's SSD model does) serve by unmapping the range:
    /// to the drive, the copy writes the data and TRIMs the rest.
    #[default]
    ZeroOut,
    /// Written as zeros, like any other block (a file target gets every block allocated): every
    /// block of the image reaches the target as data, as `dd` writes it. A drive maps every page.
    Write,
    /// Left as they are on a device (its old content stays: safe only where the source's holes
    /// are free space); holes in a file target.
    Skip,
}

impl Holes {
    /// As `image copy --holes` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Holes::ZeroOut => "zeroout",
            Holes::Write => "write",
            Holes::Skip => "skip",
        }
    }
}

/// Options of [`copy_image`].
#[derive(Debug, Clone, Copy)]
pub struct CopyOptions {
    /// Overwrite a target that exists or holds a file system (never one mounted or attached).
    pub force: bool,
    /// What becomes of the source's holes (and all-zero blocks) on the target.
    pub holes: Holes,
    /// Compare the target with the source afterwards.
    pub verify: bool,
}

/// What [`copy_image`] did.
#[derive(Debug, Clone, Default)]
pub struct CopyStats {
    pub size: u64,
    /// Bytes written (non-zero data).
    pub data_bytes: u64,
    /// Bytes zeroed on a device with `BLKZEROOUT` (holes of the source, [`Holes::ZeroOut`]).
    pub zeroed_bytes: u64,
    /// Zero bytes written as data (holes of the source, [`Holes::Write`]).
    pub zeros_written: u64,
    pub verified: bool,
    pub seconds: f64,
}

/// Copies the image `src` onto `dest`, a block device or an image file (through a temporary file
/// and a rename), writing the source's non-zero blocks and doing with its holes what
/// `opts.holes` says: zeroed without data on a device (a file stays sparse), written as zeros
/// (every block written, as `dd` does), or skipped.
pub fn copy_image(src: &Path, dest: &Path, opts: CopyOptions) -> Result<CopyStats> {
    let t0 = Instant::now();
    // Neither is mounted, aged or written by another command while the copy runs; the source
    // is only read, so other readers (Slurm tasks copying one base) may copy it at once.
    let _locks = (
        fsage_sys::lock::lock_target_shared_or_refuse(src, "the image or device")?,
        fsage_sys::lock::lock_target_or_refuse(dest, "the copy's target")?,
    );
    if fsage_sys::is_block_device(src) && !fsage_sys::mounts_of_device(src)?.is_empty() {
        crate::bail!("{}: mounted; unmount it before copying", src.display());
    }
    if src.is_file() && !fsage_sys::loops_backed_by(src).is_empty() {
        crate::bail!(
            "{}: attached to a loop device (mounted?); `fsage fs umount {}` first",
            src.display(),
            fsage_sys::shell_arg(src)
        );
    }
    let fs_ = File::open(src).map_err(|e| Error::io(src, "", e))?;
    let size = fsage_sys::file_size(&fs_, src)?;
    crate::fs::check_target_safe(dest, opts.force)?;
    let mut st = CopyStats {
        size,
        ..Default::default()
    };
    let device = is_block_device(dest);
    let (f, tmp) = if device {
        // Exclusively: the kernel refuses while a mount, RAID or btrfs holds the device, and
        // nobody can take it while the copy runs.
        let f = fsage_sys::open_device_exclusive(dest)?;
        let dsize = fsage_sys::file_size(&f, dest)?;
        if dsize < size {
            crate::bail!(
                "{}: too small ({dsize} bytes) for {} ({size} bytes)",
                dest.display(),
                src.display()
            );
        }
        (f, None)
    } else {
        let (tmp, f) = TempPath::create_beside(dest, "the copy", 0o666)?;
        f.set_len(size).map_err(|e| Error::io(dest, "", e))?;
        (f, Some(tmp))
    };
    let wpath = tmp.as_ref().map_or(dest, |t| t.path());
    let mut pos = 0u64;
    // The range [from, to) is a hole of the source: zeroed, written as zeros, or left.
    let hole = |from: u64, to: u64, st: &mut CopyStats| -> Result<()> {
        match opts.holes {
            Holes::ZeroOut if device => {
                zero_range(&f, wpath, from, to - from)?;
                st.zeroed_bytes += to - from;
            }
            Holes::Write => {
                write_zeros(&f, wpath, from, to - from)?;
                st.zeros_written += to - from;
            }
            _ => {}
        }
        Ok(())
    };
    scan_nonzero(&fs_, src, |off, data| {
        hole(pos, off, &mut st)?;
        f.write_all_at(data, off)
            .map_err(|e| Error::io(wpath, &format!("write at byte {off}"), e))?;
        st.data_bytes += data.len() as u64;
        pos = off + data.len() as u64;
        Ok(())
    })?;
    hole(pos, size, &mut st)?;
    f.sync_all().map_err(|e| Error::io(wpath, "fsync", e))?;
    drop(f);
    // Holes left as they were on a device cannot be compared: only the data written can.
    let comparable = !(device && opts.holes == Holes::Skip);
    if opts.verify {
        let d = if comparable {
            compare(src, wpath)?
        } else {
            Vec::new()
        };
        if let Some((o, l)) = d.first() {
            return Err(Error::operation(format!(
                "{}: verification failed: {} ranges differ from {} (first at byte {o}, {l} bytes)",
                dest.display(),
                d.len(),
                src.display()
            )));
        }
        st.verified = comparable;
    }
    if let Some(t) = tmp {
        t.persist(dest)?;
    }
    st.seconds = t0.elapsed().as_secs_f64();
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// A file copy keeps the source's holes unless told to write them: `Holes::Write` (what
    /// `image copy --whole` does) allocates every block, as `dd` would, and both read back as
    /// the source.
    #[test]
    fn a_whole_copy_writes_every_block_and_a_sparse_one_only_the_data() {
        let d = fsage_testkit::shm_tmp("fsage-sparse-");
        let src = d.path().join("src.img");
        let f = File::create(&src).unwrap();
        f.set_len(4 << 20).unwrap();
        f.write_all_at(&[7u8; 8192], 1 << 20).unwrap();
        // An all-zero block inside a data extent counts as a hole too.
        f.write_all_at(&[0u8; 4096], 2 << 20).unwrap();
        drop(f);
        let mut seen = Vec::new();
        for holes in [Holes::ZeroOut, Holes::Write, Holes::Skip] {
            let dst = d.path().join(format!("{}.img", holes.name()));
            let st = copy_image(
                &src,
                &dst,
                CopyOptions {
                    force: false,
                    holes,
                    verify: true,
                },
            )
            .unwrap();
            assert!(st.verified, "{holes:?}");
            assert_eq!(st.data_bytes, 8192, "{holes:?}");
            let allocated = std::fs::metadata(&dst).unwrap().blocks() * 512;
            seen.push((holes, st.zeros_written, st.zeroed_bytes, allocated));
        }
        let all = 4u64 << 20;
        assert_eq!(seen[1].1, all - 8192, "{seen:?}");
        assert!(seen[1].3 >= all, "{seen:?}");
        for s in [seen[0], seen[2]] {
            // A file target: nothing zeroed or written for the holes, which stay holes.
            assert_eq!((s.1, s.2), (0, 0), "{seen:?}");
            assert!(s.3 < 1 << 20, "{seen:?}");
        }
    }
}
