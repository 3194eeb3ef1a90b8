//! Rollback: run a benchmark on an image while recording the blocks it writes, then rewrite just
//! those blocks from a raw snapshot of the image.
//!
//! Tracking uses the kernel's `block:block_rq_issue` tracepoint through [`crate::trace`], in a
//! private trace instance, filtered on the loop device's number: every request
//! that is not a read (writes, discards, write-zeroes) with its sector range. The instance is
//! removed afterwards (and tracefs unmounted if fsage mounted it). When tracing is impossible, or
//! events were lost, the log says `method: "compare"` and restore compares the image with the
//! snapshot (reading only their data extents) instead.

use crate::loopdev::LoopDevice;
use crate::mount::{MountOptions, Mounted};
use crate::sparse::{self, BLOCK};
use crate::trace::{BlockTrace, RqFilter};
use crate::{Error, Remedy, Result};
use fsage_sys::TempPath;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const LOG_FORMAT: &str = "fsage-rollback/1";

/// How writes are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// block_rq_issue events of the loop device.
    Trace,
    /// Compare the image with the snapshot at restore time.
    Compare,
}

impl Method {
    /// How the written blocks were found, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Method::Trace => "the blocks traced while the benchmark ran",
            Method::Compare => "the blocks that differ from the snapshot",
        }
    }
}

/// The log `rollback track` writes and `rollback restore` reads (`IMAGE.rollback.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrackLog {
    /// "fsage-rollback/1".
    pub format: String,
    pub image: PathBuf,
    /// Raw image file holding the state to return to.
    pub snapshot: PathBuf,
    pub method: Method,
    /// Why the method is `compare`, when it is.
    pub fallback_reason: Option<String>,
    /// Byte ranges `[offset, length]` written (4 KiB-aligned, merged).
    pub ranges: Vec<(u64, u64)>,
    pub written_bytes: u64,
    /// Write-like block requests seen.
    pub requests: u64,
    pub command: Vec<String>,
    /// The command's exit code (None: killed by a signal).
    pub exit_code: Option<i32>,
    pub seconds: f64,
}

/// Default log path of an image: `IMAGE.rollback.json`.
pub fn default_log(image: &Path) -> PathBuf {
    fsage_sys::with_suffix(image, ".rollback.json")
}

/// Default snapshot path of an image: `IMAGE.snapshot`.
pub fn default_snapshot(image: &Path) -> PathBuf {
    fsage_sys::with_suffix(image, ".snapshot")
}

/// Parses one trace line; `Some((sector, nr_sectors))` for a write-like request.
pub fn parse_trace_line(line: &str) -> Option<(u64, u64)> {
    crate::trace::parse_rq_line(line)
        .filter(|r| !r.read)
        .map(|r| (r.sector, r.sectors))
}

/// Options of [`track`].
#[derive(Debug, Clone)]
pub struct TrackOptions {
    /// Raw snapshot file (default `IMAGE.snapshot`, made from the image if missing).
    pub snapshot: Option<PathBuf>,
    /// Log file (default `IMAGE.rollback.json`).
    pub log: Option<PathBuf>,
    /// Mount the image here (default: a fresh temporary directory) and tell the command.
    pub mount_point: Option<PathBuf>,
    /// Do not mount: the command gets the device only.
    pub no_mount: bool,
    /// Mount options.
    pub mount_options: String,
    /// Force the compare method (no tracing).
    pub compare: bool,
    /// Skip checking that the image equals an existing snapshot before the run.
    pub no_check: bool,
}

/// Runs `command` on `image` (attached and mounted; the command sees `FSAGE_MOUNT`,
/// `FSAGE_DEVICE` and `FSAGE_IMAGE`), recording the blocks written, and writes the log.
pub fn track(image: &Path, command: &[String], opts: &TrackOptions) -> Result<TrackLog> {
    let t0 = Instant::now();
    if command.is_empty() {
        crate::bail!("rollback track: give the benchmark command after `--`");
    }
    if !image.is_file() {
        crate::bail!(
            "{}: not an image file (rollback works on image files; copy a device to a file with \
             `fsage image copy` first)",
            image.display()
        );
    }
    if let Some(l) = fsage_sys::loops_backed_by(image).first() {
        crate::bail!(
            "{}: attached to {} (mounted?); `fsage fs umount {}` first",
            image.display(),
            l.display(),
            fsage_sys::shell_arg(image)
        );
    }
    // Check the input holds a file system before copying it into a snapshot.
    if crate::fs::probe_fs(image)?.is_none() {
        crate::bail!(
            "{}: no file system found in it; rollback tracks a file system image",
            image.display()
        );
    }
    let snapshot = opts
        .snapshot
        .clone()
        .unwrap_or_else(|| default_snapshot(image));
    let log_path = opts.log.clone().unwrap_or_else(|| default_log(image));
    if snapshot.exists() {
        if !opts.no_check {
            let d = sparse::compare(image, &snapshot)?;
            if !d.is_empty() {
                return Err(Error::input(format!(
                    "{}: differs from the snapshot {} in {} ranges; roll it back first (`fsage \
                     rollback restore`), or give another snapshot",
                    image.display(),
                    snapshot.display(),
                    d.len()
                ))
                .with_remedy(Remedy::Snapshot));
            }
        }
    } else {
        eprintln!(
            "fsage: making the snapshot {} (a sparse copy of {})",
            snapshot.display(),
            image.display()
        );
        sparse::copy_image(
            image,
            &snapshot,
            sparse::CopyOptions {
                force: false,
                holes: sparse::Holes::Skip,
                verify: false,
            },
        )?;
    }
    let mut tmpdir = None;
    let mount_point = match &opts.mount_point {
        Some(m) => m.clone(),
        None => {
            let d = TempPath::dir_in(&std::env::temp_dir(), "fsage-rollback-")?;
            let p = d.path().to_path_buf();
            tmpdir = Some(d);
            p
        }
    };
    // Attach first (the tracer needs the device number), trace, then mount.
    let loopdev = LoopDevice::attach(image, false)?;
    let (mut tracer, mut fallback_reason) = (None, None);
    if opts.compare {
        fallback_reason = Some("comparison asked for".to_string());
    } else if !fsage_sys::is_root() {
        fallback_reason = Some("not root: no tracefs".to_string());
    } else {
        match BlockTrace::start(loopdev.rdev(), RqFilter::Writes) {
            Ok(t) => tracer = Some(t),
            Err(e) => fallback_reason = Some(format!("tracing unavailable: {e}")),
        }
    }
    if let Some(r) = &fallback_reason {
        eprintln!("fsage: rollback will compare the image with the snapshot ({r})");
    }
    let device = loopdev.path().to_path_buf();
    let mounted = if opts.no_mount {
        None
    } else {
        Some(mount_on_loop(
            loopdev.path(),
            &mount_point,
            &opts.mount_options,
            image,
        )?)
    };
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env("FSAGE_IMAGE", image)
        .env("FSAGE_DEVICE", &device)
        .env(
            "FSAGE_MOUNT",
            if opts.no_mount {
                Path::new("")
            } else {
                &mount_point
            },
        )
        .status()
        .map_err(|e| Error::input(format!("{}: cannot run: {e}", command[0])));
    // Unmount and detach before reading the trace: unmounting writes too.
    let fin = match mounted {
        Some(m) => m.finish(),
        None => Ok(()),
    };
    let det = loopdev.detach_and_wait(Duration::from_secs(10));
    drop(tmpdir);
    let status = status?;
    fin?;
    det?;
    crate::check_interrupted("rollback track")?;
    let (method, ranges, requests) = match tracer {
        Some(t) => match t.finish() {
            Ok(rqs) => {
                let n = rqs.len() as u64;
                let r: Vec<(u64, u64)> = rqs
                    .into_iter()
                    .map(|rq| (rq.sector, rq.sectors))
                    .map(|(s, n)| {
                        let (a, b) = (s * 512, (s + n) * 512);
                        let a2 = a / BLOCK * BLOCK;
                        (a2, b.div_ceil(BLOCK) * BLOCK - a2)
                    })
                    .collect();
                (Method::Trace, sparse::merge_ranges(r), n)
            }
            Err(e) => {
                fallback_reason = Some(e.message.clone());
                eprintln!("fsage: tracing failed ({e}); rollback will compare instead");
                (Method::Compare, Vec::new(), 0)
            }
        },
        None => (Method::Compare, Vec::new(), 0),
    };
    let log = TrackLog {
        format: LOG_FORMAT.into(),
        image: image.canonicalize().unwrap_or_else(|_| image.to_path_buf()),
        snapshot: snapshot.canonicalize().unwrap_or(snapshot),
        method,
        fallback_reason,
        written_bytes: ranges.iter().map(|r| r.1).sum(),
        ranges,
        requests,
        command: command.to_vec(),
        exit_code: status.code(),
        seconds: t0.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_string_pretty(&log).map_err(|e| Error::input(e.to_string()))?;
    fsage_sys::write_atomic(&log_path, json.as_bytes())?;
    Ok(log)
}

fn mount_on_loop(dev: &Path, mp: &Path, options: &str, image: &Path) -> Result<Mounted> {
    let fstype = crate::fs::probe_fs(image)?
        .ok_or_else(|| Error::input(format!("{}: no file system found", image.display())))?;
    Mounted::attach_and_mount_with(
        dev,
        mp,
        &MountOptions {
            fstype: Some(fstype),
            options: options.to_string(),
        },
    )
}

/// What [`restore`] did.
#[derive(Debug, Clone)]
pub struct RestoreReport {
    pub method: Method,
    pub ranges: usize,
    pub bytes: u64,
    /// Time to rewrite the blocks.
    pub seconds: f64,
    /// Time to check the image equals the snapshot (0 when not checked).
    pub verify_seconds: f64,
    pub verified: bool,
}

/// Reads a track log.
pub fn read_log(path: &Path) -> Result<TrackLog> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, "the rollback log", e))?;
    let l: TrackLog = serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
    if l.format != LOG_FORMAT {
        crate::bail!(
            "{}: format {:?}, expected {LOG_FORMAT:?}",
            path.display(),
            l.format
        );
    }
    Ok(l)
}

/// Rewrites the blocks recorded in the log from the snapshot (or, with `compare` or a log made
/// without tracing, every block that differs), then, with `verify`, checks that the image equals
/// the snapshot. `image` must be the image the log was recorded for: a log of another image would
/// rewrite this one from the wrong snapshot.
pub fn restore(
    image: &Path,
    log_path: &Path,
    compare: bool,
    verify: bool,
) -> Result<RestoreReport> {
    let log = read_log(log_path)?;
    let canon = image
        .canonicalize()
        .map_err(|e| Error::input(format!("{}: {e}", image.display())))?;
    if log.image != canon {
        crate::bail!(
            "{}: the log {} is for {}",
            image.display(),
            log_path.display(),
            log.image.display()
        );
    }
    let (image, snap) = (&log.image, &log.snapshot);
    if let Some(l) = fsage_sys::loops_backed_by(image).first() {
        crate::bail!(
            "{}: attached to {} (mounted?); unmount it before rolling back",
            image.display(),
            l.display()
        );
    }
    let si = fsage_sys::size_of(image)?;
    let ss = fsage_sys::size_of(snap)?;
    if si != ss {
        crate::bail!(
            "{} is {si} bytes but its snapshot {} is {ss} bytes",
            image.display(),
            snap.display()
        );
    }
    let t0 = Instant::now();
    let method = if compare { Method::Compare } else { log.method };
    let ranges = match method {
        Method::Trace => log.ranges.clone(),
        Method::Compare => sparse::compare(image, snap)?,
    };
    let fi = OpenOptions::new()
        .write(true)
        .open(image)
        .map_err(|e| Error::io(image, "", e))?;
    let fsn = File::open(snap).map_err(|e| Error::io(snap, "", e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0;
    for &(off, len) in &ranges {
        let end = (off + len).min(si);
        let mut o = off;
        while o < end {
            let n = (end - o).min(buf.len() as u64) as usize;
            fsn.read_exact_at(&mut buf[..n], o)
                .map_err(|e| Error::io(snap, &format!("read at byte {o}"), e))?;
            // Zero blocks become holes again, so the image stays as sparse as the snapshot.
            let mut i = 0;
            while i < n {
                let k = (n - i).min(BLOCK as usize);
                let blk = &buf[i..i + k];
                if blk.iter().all(|&b| b == 0) {
                    sparse::zero_range(&fi, image, o + i as u64, k as u64)?;
                } else {
                    fi.write_all_at(blk, o + i as u64).map_err(|e| {
                        Error::io(image, &format!("write at byte {}", o + i as u64), e)
                    })?;
                }
                i += k;
            }
            bytes += n as u64;
            o += n as u64;
        }
    }
    fi.sync_all().map_err(|e| Error::io(image, "fsync", e))?;
    let seconds = t0.elapsed().as_secs_f64();
    let mut verify_seconds = 0.0;
    if verify {
        let t1 = Instant::now();
        let d = sparse::compare(image, snap)?;
        verify_seconds = t1.elapsed().as_secs_f64();
        if let Some((o, l)) = d.first() {
            return Err(Error::operation(format!(
                "{}: NOT identical to the snapshot {} after rollback: {} ranges differ (first at \
                 byte {o}, {l} bytes): something wrote to the image outside the tracked device; \
                 restore it again comparing the whole image",
                image.display(),
                snap.display(),
                d.len()
            ))
            .with_remedy(Remedy::Compare));
        }
    }
    Ok(RestoreReport {
        method,
        ranges: ranges.len(),
        bytes,
        seconds,
        verify_seconds,
        verified: verify,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_lines() {
        let w = "  kworker/u8:2-123 [001] ..... 12.5: block_rq_issue: 7,0 WS 4096 () 2048 + 8 none,0,0 [jbd2/loop0-8]";
        assert_eq!(parse_trace_line(w), Some((2048, 8)));
        let old = "fio-1 [000] d..1 5.0: block_rq_issue: 7,3 W 65536 () 100 + 128 [fio]";
        assert_eq!(parse_trace_line(old), Some((100, 128)));
        let r = "cat-9 [000] ..... 1.0: block_rq_issue: 7,0 RA 4096 () 8 + 8 [cat]";
        assert_eq!(parse_trace_line(r), None);
        let flush = "x-1 [000] ..... 1.0: block_rq_issue: 7,0 FF 0 () 0 + 0 [x]";
        assert_eq!(parse_trace_line(flush), None);
        let disc = "x-1 [000] ..... 1.0: block_rq_issue: 7,0 DS 0 () 4096 + 2048 [x]";
        assert_eq!(parse_trace_line(disc), Some((4096, 2048)));
    }
}
