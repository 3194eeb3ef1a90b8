//! The `fsage frag` report: free space, file layout and probe of one file system, as text or JSON,
//! and two or more reports side by side.

use crate::freesp::{self, FreeSpace};
use crate::layout::{FileStats, Probe};
use fsage_profile::human_bytes;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Version of the JSON layout below.
pub const FRAG_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragReport {
    pub format: u32,
    pub mount: String,
    pub fs_type: String,
    pub block_size: u64,
    /// The free-space histogram, or why it could not be measured.
    pub free_space: Option<FreeSpace>,
    pub free_space_error: Option<String>,
    pub free_space_seconds: f64,
    /// File layout (absent with --no-files).
    pub files: Option<FileStats>,
    pub probe: Option<Probe>,
}

fn opt_pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.2}%", 100.0 * v))
}

pub fn render(r: &FragReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({}, block size {})",
        r.mount, r.fs_type, r.block_size
    );
    match (&r.free_space, &r.free_space_error) {
        (Some(f), _) => {
            s.push_str(&freesp::render(f));
            let _ = writeln!(s, "({:.3} s)", r.free_space_seconds);
        }
        (None, Some(e)) => {
            let _ = writeln!(s, "Free space: not measured: {e}");
        }
        (None, None) => {}
    }
    if let Some(f) = &r.files {
        let _ = writeln!(
            s,
            "\nFiles: {} ({} without blocks, {} multi-block), {} blocks, {} extents, {} fragments \
             ({:.3} per file with blocks)",
            f.files,
            f.files_without_blocks,
            f.multi_block_files,
            f.blocks,
            f.extents,
            f.fragments,
            f.fragments_per_file
        );
        let _ = writeln!(
            s,
            "Layout score {} (Smith and Seltzer); dynamic layout score {} (recursive read in \
             readdir order)",
            opt_pct(f.layout_score),
            opt_pct(f.dynamic_layout_score)
        );
        if f.odd_extents > 0 {
            let _ = writeln!(
                s,
                "{} extents had no known block-aligned place (delalloc, inline, encoded)",
                f.odd_extents
            );
        }
        let w = &f.walk;
        let _ = writeln!(
            s,
            "Walk: {} directories; skipped {} symlinks, {} specials, {} extra hard links, {} \
             other file systems, {} unreadable ({:.2} s, {:.0} files/s)",
            w.dirs,
            w.symlinks,
            w.specials,
            w.hardlink_dups,
            w.other_fs,
            w.unreadable,
            f.seconds,
            f.files as f64 / f.seconds.max(1e-9)
        );
        for e in &w.errors {
            let _ = writeln!(s, "  {e}");
        }
        if !f.fragments_distribution.is_empty() {
            let _ = writeln!(s, "{:>21}  {:>10}", "fragments per file", "files");
            for b in &f.fragments_distribution {
                let _ = writeln!(s, "{:>9} .. {:>9}  {:>10}", b.min, b.max, b.files);
            }
        }
        if !f.most_fragmented.is_empty() {
            let _ = writeln!(s, "Most fragmented files:");
            for m in &f.most_fragmented {
                let _ = writeln!(
                    s,
                    "{:>8} fragments {:>8} extents {:>10}  {}",
                    m.fragments,
                    m.extents,
                    human_bytes(m.blocks * r.block_size),
                    m.path
                );
            }
        }
    }
    if let Some(p) = &r.probe {
        let _ = writeln!(
            s,
            "\nProbe: a new {} file got {} extents, {} fragments, layout score {} ({:.2} s)",
            human_bytes(p.bytes),
            p.extents,
            p.fragments,
            opt_pct(p.layout_score),
            p.seconds
        );
    }
    s
}

/// Reports side by side: one column per report, one row per measure.
pub fn compare(names: &[String], reports: &[FragReport]) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |label: &str, f: &dyn Fn(&FragReport) -> String| {
        rows.push((label.to_string(), reports.iter().map(f).collect()));
    };
    row("file system", &|r| r.fs_type.clone());
    row("block size", &|r| r.block_size.to_string());
    let fsv = |r: &FragReport, g: &dyn Fn(&FreeSpace) -> String| {
        r.free_space.as_ref().map_or("-".into(), g)
    };
    row("free blocks", &|r| fsv(r, &|f| f.free_blocks.to_string()));
    row("free extents", &|r| fsv(r, &|f| f.free_extents.to_string()));
    row("min free extent", &|r| {
        fsv(r, &|f| human_bytes(f.min_blocks * f.block_size))
    });
    row("max free extent", &|r| {
        fsv(r, &|f| human_bytes(f.max_blocks * f.block_size))
    });
    row("avg free extent", &|r| {
        fsv(r, &|f| format!("{:.1} blocks", f.avg_blocks))
    });
    // Every bin any report has, as share of free blocks.
    let mut bins: Vec<u64> = reports
        .iter()
        .filter_map(|r| r.free_space.as_ref())
        .flat_map(|f| f.bins.iter().map(|b| b.min_blocks))
        .collect();
    bins.sort_unstable();
    bins.dedup();
    for b in bins {
        let label = format!("free {}+ blocks", b);
        row(&label, &|r| {
            fsv(r, &|f| {
                f.bins
                    .iter()
                    .find(|x| x.min_blocks == b)
                    .map_or("0".into(), |x| format!("{} ({:.1}%)", x.count, x.percent))
            })
        });
    }
    let fv =
        |r: &FragReport, g: &dyn Fn(&FileStats) -> String| r.files.as_ref().map_or("-".into(), g);
    row("files", &|r| fv(r, &|f| f.files.to_string()));
    row("fragments per file", &|r| {
        fv(r, &|f| format!("{:.3}", f.fragments_per_file))
    });
    row("layout score", &|r| fv(r, &|f| opt_pct(f.layout_score)));
    row("dynamic layout score", &|r| {
        fv(r, &|f| opt_pct(f.dynamic_layout_score))
    });
    row("probe size", &|r| {
        r.probe
            .as_ref()
            .map_or("-".into(), |p| human_bytes(p.bytes))
    });
    row("probe fragments", &|r| {
        r.probe
            .as_ref()
            .map_or("-".into(), |p| p.fragments.to_string())
    });
    row("probe extents", &|r| {
        r.probe
            .as_ref()
            .map_or("-".into(), |p| p.extents.to_string())
    });
    let lw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let cw: Vec<usize> = (0..reports.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.1[i].len())
                .chain([names[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    let _ = write!(s, "{:lw$}", "");
    for (i, n) in names.iter().enumerate() {
        let _ = write!(s, "  {:>w$}", n, w = cw[i]);
    }
    s.push('\n');
    for (label, vals) in rows {
        let _ = write!(s, "{label:lw$}");
        for (i, v) in vals.iter().enumerate() {
            let _ = write!(s, "  {:>w$}", v, w = cw[i]);
        }
        s.push('\n');
    }
    s
}

/// What `fsage frag` measures.
#[derive(Debug, Clone, Default)]
pub struct FragOptions {
    /// Scan every file with FIEMAP.
    pub files: bool,
    pub scan: crate::layout::ScanOptions,
    /// Write, map and delete a file of this many bytes.
    pub probe: Option<u64>,
}

/// Measures the file system mounted at `mount`: free space (an unsupported route is reported,
/// not fatal), then files, then the probe (last, so that it disturbs nothing measured).
pub fn measure(mount: &std::path::Path, opts: &FragOptions) -> Result<FragReport, String> {
    let info =
        crate::sys::statfs(mount).map_err(|e| format!("{}: statfs: {e}", mount.display()))?;
    if !std::fs::metadata(mount)
        .map_err(|e| format!("{}: {e}", mount.display()))?
        .is_dir()
    {
        return Err(format!("{}: not a directory", mount.display()));
    }
    // Commit pending frees first: ext4 and xfs return the blocks of a deleted file to the free
    // space only when the journal commits.
    {
        let d = std::fs::File::open(mount).map_err(|e| format!("{}: {e}", mount.display()))?;
        crate::sys::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d))
            .map_err(|e| format!("{}: syncfs: {e}", mount.display()))?;
    }
    let t0 = std::time::Instant::now();
    let (free_space, free_space_error) = match freesp::free_space(mount) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e)),
    };
    let free_space_seconds = t0.elapsed().as_secs_f64();
    let files = if opts.files {
        Some(crate::layout::scan_files(mount, &opts.scan)?)
    } else {
        None
    };
    let probe = match opts.probe {
        Some(b) => Some(crate::layout::probe(mount, b)?),
        None => None,
    };
    Ok(FragReport {
        format: FRAG_FORMAT,
        mount: mount.to_string_lossy().into_owned(),
        fs_type: crate::sys::fs_type_name(info.magic),
        block_size: info.block_size,
        free_space,
        free_space_error,
        free_space_seconds,
        files,
        probe,
    })
}

impl FragReport {
    /// Whether any figure was measured: tmpfs, for one, has neither GETFSMAP nor FIEMAP.
    pub fn measured_anything(&self) -> bool {
        self.free_space.is_some()
            || self.files.as_ref().is_some_and(|f| f.files > 0)
            || self.probe.is_some()
    }

    /// Why nothing could be measured, for a message (the first reason of each kind).
    pub fn why_nothing(&self) -> String {
        let mut why = Vec::new();
        if let Some(e) = &self.free_space_error {
            why.push(e.clone());
        }
        if let Some(e) = self.files.as_ref().and_then(|f| f.walk.errors.first()) {
            why.push(e.clone());
        }
        why.join("; ")
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
            + "\n"
    }
    pub fn from_json(text: &str) -> Result<FragReport, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}
