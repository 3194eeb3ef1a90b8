//! The human form of `fsage frag` (one report, or several side by side) and of the free-space
//! histogram alone.

use crate::human_bytes;
use fsage_measure::{FileStats, FragComparison, FragReport, FreeSpace};
use std::fmt::Write as _;

/// The histogram as a table, e2freefrag style.
pub fn free_space(fs: &FreeSpace) -> String {
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
    if let (Some(ub), Some(ue)) = (fs.unallocated_blocks, fs.unallocated_extents) {
        let _ = writeln!(
            s,
            "  of which unallocated device space (no chunk yet): {} in {ue} extent(s); in data \
             block groups: {} in {} extent(s)",
            human_bytes(ub * bs),
            human_bytes(fs.free_blocks.saturating_sub(ub) * bs),
            fs.free_extents.saturating_sub(ue)
        );
    }
    let _ = writeln!(
        s,
        "Free extents: {}; min {}, max {}, average {} ({:.1} blocks)",
        fs.free_extents,
        human_bytes(fs.min_blocks * bs),
        human_bytes(fs.max_blocks * bs),
        human_bytes((fs.avg_blocks * bs as f64) as u64),
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
            human_bytes(b.min_blocks * bs),
            human_bytes(b.max_blocks * bs),
            b.count,
            b.blocks,
            b.percent
        );
    }
    s
}

/// A log-structured file system's segments: free, dead, full and partly valid by tenths of
/// valid share.
pub fn segments(g: &fsage_measure::Segments, block_size: u64) -> String {
    let mut s = String::new();
    let pct = |n: u64| 100.0 * n as f64 / g.total.max(1) as f64;
    let _ = writeln!(
        s,
        "Segments ({}): {} of {} ({} blocks); {} free ({:.2}%), {} full ({:.2}%), {} partly valid \
         ({:.2}%){}",
        g.source,
        g.total,
        human_bytes(g.segment_blocks * block_size),
        g.segment_blocks,
        g.free,
        pct(g.free),
        g.full,
        pct(g.full),
        g.partly_valid(),
        pct(g.partly_valid()),
        if g.dead > 0 {
            format!(", {} dead (nothing live: freed without copying)", g.dead)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "Cleaning every partly valid segment copies {} valid blocks: {:.2} blocks per block freed",
        g.partial_valid_blocks,
        g.cleaning_cost()
    );
    if let (Some(c), Some(ss)) = (g.checkpoints, g.snapshots) {
        let _ = writeln!(s, "Checkpoints: {c} ({ss} snapshots)");
    }
    let _ = writeln!(
        s,
        "{:>17}  {:>10} {:>8}",
        "valid share", "segments", "percent"
    );
    for (i, n) in g.partial.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:>7}% .. {:>3}%  {:>10} {:>7.2}%",
            i * 10,
            (i + 1) * 10,
            n,
            pct(*n)
        );
    }
    s
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
    if let Some(l) = r.platform.label() {
        let _ = writeln!(
            s,
            "platform: {l}: its timings compare only with runs on the same platform"
        );
    }
    match (&r.free_space, &r.free_space_error) {
        (Some(f), _) => {
            s.push_str(&free_space(f));
            let _ = writeln!(s, "({:.3} s)", r.free_space_seconds);
        }
        (None, Some(e)) => {
            let _ = writeln!(s, "Free space: not measured: {e}");
        }
        (None, None) => {}
    }
    if let Some(g) = &r.segments {
        s.push_str(&segments(g, r.block_size));
        let _ = writeln!(s, "({:.3} s)", r.free_space_seconds);
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
pub fn compare(c: &FragComparison) -> String {
    let (names, reports) = (&c.names, &c.reports);
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
