//! Fragmentation side by side: free space by extent size and files by fragments, one series per
//! `frag` report, and the figures that separate fresh from aged in one table.

use crate::html::format::opt;
use crate::html::page::{fig, plot_or_note, table, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries};
use crate::html::Section;
use crate::inputs::Named;
use fsage_measure::FragReport;
use fsage_profile::human_bytes;
use fsage_results::against::AgingFigures;
use std::collections::BTreeSet;

fn frag_figures_rows(frags: &[(&str, &FragReport)]) -> Vec<Vec<String>> {
    frags
        .iter()
        .map(|(name, r)| {
            let f = AgingFigures::of(r);
            let fs = r.free_space.as_ref();
            let files = r.files.as_ref();
            vec![
                name.to_string(),
                r.fs_type.clone(),
                fs.map_or("–".into(), |f| human_bytes(f.fs_blocks * f.block_size)),
                fs.map_or("–".into(), |f| match f.unallocated_blocks {
                    Some(u) => format!(
                        "{} ({} unallocated)",
                        human_bytes(f.free_blocks * f.block_size),
                        human_bytes(u * f.block_size)
                    ),
                    None => human_bytes(f.free_blocks * f.block_size),
                }),
                fs.map_or("–".into(), |f| f.free_extents.to_string()),
                opt(f.free_extents_per_gib, |v| format!("{v:.1}")),
                opt(f.free_under_1mib_percent, |v| format!("{v:.1}")),
                fs.map_or("–".into(), |f| {
                    human_bytes((f.avg_blocks * f.block_size as f64) as u64)
                }),
                files.map_or("–".into(), |f| f.files.to_string()),
                files.map_or("–".into(), |f| format!("{:.2}", f.fragments_per_file)),
                opt(files.and_then(|f| f.layout_score), |v| {
                    format!("{:.2}%", 100.0 * v)
                }),
                opt(f.dynamic_layout_score, |v| format!("{:.2}%", 100.0 * v)),
                r.probe.as_ref().map_or("–".into(), |p| {
                    format!("{} in {}", p.fragments, human_bytes(p.bytes))
                }),
                opt(f.probe_fragments_per_100mib, |v| format!("{v:.1}")),
            ]
        })
        .collect()
}

const FIG_HEAD: [&str; 14] = [
    "image",
    "fs",
    "size",
    "free",
    "free extents",
    "free extents / GiB free",
    "% free in extents < 1 MiB",
    "mean free extent",
    "files",
    "fragments / file",
    "layout score",
    "dynamic layout score",
    "probe fragments",
    "probe fragments / 100 MiB",
];

/// Free-space and file-fragment histograms of several reports side by side.
pub(super) fn frag_plots(frags: &[(&str, &FragReport)]) -> Vec<String> {
    let mut out = Vec::new();
    // Free extents binned by size in bytes (blocks x block size), share of free space.
    let mut bins: BTreeSet<u64> = BTreeSet::new();
    for (_, r) in frags {
        if let Some(f) = &r.free_space {
            for b in &f.bins {
                bins.insert(b.min_blocks * f.block_size);
            }
        }
    }
    let bins: Vec<u64> = bins.into_iter().collect();
    if !bins.is_empty() {
        let series = frags
            .iter()
            .map(|(name, r)| BarSeries {
                name: name.to_string(),
                bars: bins
                    .iter()
                    .map(|&lo| {
                        let f = r.free_space.as_ref()?;
                        let pct = f
                            .bins
                            .iter()
                            .find(|b| b.min_blocks * f.block_size == lo)
                            .map_or(0.0, |b| b.percent);
                        Some(Bar {
                            value: pct,
                            interval: None,
                            flag: false,
                            color: None,
                        })
                    })
                    .collect(),
                color: None,
            })
            .collect();
        let chart = BarChart {
            title: "free space by extent size".into(),
            x_desc: "free extent size (at least)".into(),
            y_desc: "share of free space (%)".into(),
            groups: bins.iter().map(|b| human_bytes(*b)).collect(),
            series,
            log_y: false,
            size: (760, 380),
        };
        out.push(plot_or_note(plots::bars(&chart)));
    }
    let mut fbins: BTreeSet<(u64, u64)> = BTreeSet::new();
    for (_, r) in frags {
        if let Some(f) = &r.files {
            for b in &f.fragments_distribution {
                fbins.insert((b.min, b.max));
            }
        }
    }
    let fbins: Vec<(u64, u64)> = fbins.into_iter().collect();
    if !fbins.is_empty() {
        let series = frags
            .iter()
            .map(|(name, r)| BarSeries {
                name: name.to_string(),
                bars: fbins
                    .iter()
                    .map(|&(lo, hi)| {
                        let f = r.files.as_ref()?;
                        let total: u64 = f.fragments_distribution.iter().map(|b| b.files).sum();
                        let n = f
                            .fragments_distribution
                            .iter()
                            .find(|b| b.min == lo && b.max == hi)
                            .map_or(0, |b| b.files);
                        (total > 0).then(|| Bar {
                            value: 100.0 * n as f64 / total as f64,
                            interval: None,
                            flag: false,
                            color: None,
                        })
                    })
                    .collect(),
                color: None,
            })
            .collect();
        let chart = BarChart {
            title: "files by number of fragments".into(),
            x_desc: "fragments per file".into(),
            y_desc: "share of files with blocks (%), log".into(),
            groups: fbins
                .iter()
                .map(|(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}–{b}")
                    }
                })
                .collect(),
            series,
            log_y: true,
            size: (640, 380),
        };
        out.push(plot_or_note(plots::bars(&chart)));
    }
    out
}

/// Groups of the segment chart: free, dead, the ten tenths of valid share, full.
fn segment_groups() -> Vec<String> {
    let mut g = vec!["free".to_string(), "dead".to_string()];
    for i in 0..fsage_measure::segments::PARTIAL_BINS {
        g.push(format!("{}–{}%", i * 10, (i + 1) * 10));
    }
    g.push("full".into());
    g
}

/// Segment counts in the order of [`segment_groups`].
fn segment_counts(s: &fsage_measure::Segments) -> Vec<u64> {
    let mut v = vec![s.free, s.dead];
    v.extend(&s.partial);
    v.push(s.full);
    v
}

const SEG_HEAD: [&str; 10] = [
    "image",
    "fs",
    "source",
    "segment",
    "segments",
    "free",
    "partly valid",
    "full",
    "cleaning cost (blocks copied per block freed)",
    "checkpoints (snapshots)",
];

/// The log-structured reports' segment usage: a chart of segments by valid share and a table;
/// empty when no report has segments.
fn segment_part(frags: &[(&str, &FragReport)]) -> String {
    let with: Vec<(&str, &fsage_measure::Segments)> = frags
        .iter()
        .filter_map(|(n, r)| Some((*n, r.segments.as_ref()?)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let series = with
        .iter()
        .map(|(name, s)| BarSeries {
            name: name.to_string(),
            bars: segment_counts(s)
                .into_iter()
                .map(|n| {
                    Some(Bar {
                        value: 100.0 * n as f64 / s.total.max(1) as f64,
                        interval: None,
                        flag: false,
                        color: None,
                    })
                })
                .collect(),
            color: None,
        })
        .collect();
    let chart = BarChart {
        title: "segments by valid share".into(),
        x_desc: "segment state (share of its blocks still valid)".into(),
        y_desc: "share of segments (%)".into(),
        groups: segment_groups(),
        series,
        log_y: false,
        size: (760, 380),
    };
    let rows: Vec<Vec<String>> = frags
        .iter()
        .filter_map(|(name, r)| {
            let s = r.segments.as_ref()?;
            Some(vec![
                name.to_string(),
                r.fs_type.clone(),
                s.source.clone(),
                human_bytes(s.segment_blocks * r.block_size),
                s.total.to_string(),
                if s.dead > 0 {
                    format!("{} (+{} dead)", s.free, s.dead)
                } else {
                    s.free.to_string()
                },
                s.partly_valid().to_string(),
                s.full.to_string(),
                format!("{:.2}", s.cleaning_cost()),
                match (s.checkpoints, s.snapshots) {
                    (Some(c), Some(ss)) => format!("{c} ({ss})"),
                    _ => "–".into(),
                },
            ])
        })
        .collect();
    let mut c = fig(&[plot_or_note(plots::bars(&chart))]);
    c.push_str(&table(&SEG_HEAD, &rows));
    c
}

pub(in crate::html) fn render(p: &mut Page, frags: &[Named<FragReport>]) {
    let list: Vec<(&str, &FragReport)> = frags.iter().map(|f| (f.name.as_str(), &f.item)).collect();
    let mut c = fig(&frag_plots(&list));
    c.push_str(&table(&FIG_HEAD, &frag_figures_rows(&list)));
    let seg = segment_part(&list);
    if !seg.is_empty() {
        c.push_str(
            "<p>Log-structured file systems (f2fs, nilfs2) have no free extents to map: they \
             write out of place into segments, and their free-space fragmentation is how many \
             segments are partly valid. A cleaner frees such a segment by copying its valid \
             blocks; the cleaning cost is the blocks it copies per block it frees, over every \
             partly valid segment. <i>Dead</i> segments (nilfs2) hold nothing live and are freed \
             without copying.</p>",
        );
        c.push_str(&seg);
    }
    p.section(
        Section::Frag,
        "Fragmentation, side by side",
        "From <code>fsage frag --json</code> reports. Free space: free extents from GETFSMAP \
         (ext4, xfs) or the btrfs trees (the gaps in data block groups, and each gap of \
         unallocated device space as an extent of its own; the <i>free</i> column says how much \
         is unallocated), binned by size in powers of two; each bar is the \
         share of the free space in extents of that size. Files: FIEMAP of every regular file, \
         binned by fragments (a fragment is a run of physically contiguous extents); the share is \
         of files with blocks, on a log axis. Probe: one new file of the given size written, \
         synced, mapped and deleted. The four figures that separate fresh from aged are free \
         extents per GiB of free space, the share of free space in extents under 1 MiB, probe \
         fragments per 100 MiB, and the dynamic layout score.",
        &c,
    );
}
