//! How far an image is from fresh, on the figures that tell them apart. The layout score alone
//! does not (98.7% on an aged image; a 35-fragment probe still scores 99.8%), and a fresh file
//! system has no files to score, so the comparison uses free-space and probe figures, measured on
//! the image and on a fresh file system of the same kind and size.
//!
//! [`against_fresh`] is the comparison of two reports measured already (what `fsage frag
//! --against-fresh` prints, and an experiment's verdict per base image); measuring both is
//! fsage-core's (`fsage_core::against::measure_against_fresh`).

use fsage_measure::FragReport;
use serde::{Deserialize, Serialize};

const GIB: f64 = (1u64 << 30) as f64;
const MIB: u64 = 1 << 20;

/// The figures of one file system that separate fresh from aged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgingFigures {
    /// Free extents per GiB of free space.
    pub free_extents_per_gib: Option<f64>,
    /// Share of the free space in extents under 1 MiB, in percent.
    pub free_under_1mib_percent: Option<f64>,
    /// Fragments of the probe file per 100 MiB written.
    pub probe_fragments_per_100mib: Option<f64>,
    /// The dynamic layout score of the files (None without files).
    pub dynamic_layout_score: Option<f64>,
}

impl AgingFigures {
    pub fn of(r: &FragReport) -> AgingFigures {
        let fs = r.free_space.as_ref();
        let free_extents_per_gib = fs.and_then(|f| {
            let gib = f.free_blocks as f64 * f.block_size as f64 / GIB;
            (gib > 0.0).then(|| f.free_extents as f64 / gib)
        });
        let free_under_1mib_percent = fs.and_then(|f| {
            (f.free_blocks > 0).then(|| {
                let small: u64 = f
                    .bins
                    .iter()
                    .filter(|b| (b.max_blocks + 1).saturating_mul(f.block_size) <= MIB)
                    .map(|b| b.blocks)
                    .sum();
                100.0 * small as f64 / f.free_blocks as f64
            })
        });
        let probe_fragments_per_100mib = r.probe.as_ref().and_then(|p| {
            (p.bytes > 0).then(|| p.fragments as f64 * (100 * MIB) as f64 / p.bytes as f64)
        });
        AgingFigures {
            free_extents_per_gib,
            free_under_1mib_percent,
            probe_fragments_per_100mib,
            dynamic_layout_score: r.files.as_ref().and_then(|f| f.dynamic_layout_score),
        }
    }
}

/// How far from fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every count at most twice the fresh one, and the small-extent share within 5 points.
    CloseToFresh,
    Aged,
    /// Free extents or probe fragments at least 10 times the fresh ones, or at least 25 points
    /// more of the free space in extents under 1 MiB.
    HeavilyAged,
    /// Too little was measured to say (no free-space histogram and no probe on both sides).
    Unknown,
}

impl Verdict {
    pub fn describe(self) -> &'static str {
        match self {
            Verdict::CloseToFresh => "close to fresh",
            Verdict::Aged => "aged",
            Verdict::HeavilyAged => "heavily aged",
            Verdict::Unknown => "cannot tell (too little measured)",
        }
    }
}

/// An image beside a fresh file system of the same kind and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgainstFresh {
    pub format: u32,
    pub image: String,
    pub fs_type: String,
    /// Size of the file system (bytes), the fresh one's too.
    pub size_bytes: u64,
    pub aged: AgingFigures,
    pub fresh: AgingFigures,
    /// aged / fresh free extents per GiB, and probe fragments (fresh counted as at least 1).
    pub free_extents_ratio: Option<f64>,
    pub probe_fragments_ratio: Option<f64>,
    /// aged - fresh share under 1 MiB, in percentage points.
    pub free_under_1mib_points: Option<f64>,
    pub verdict: Verdict,
    /// One line for people.
    pub summary: String,
    /// The two full reports.
    pub aged_report: FragReport,
    pub fresh_report: FragReport,
}

pub const AGAINST_FORMAT: u32 = 1;

/// Compares `aged` with `fresh` (both measured by [`fsage_measure::measure`], with the same probe
/// size).
pub fn against_fresh(image: &str, aged: &FragReport, fresh: &FragReport) -> AgainstFresh {
    let a = AgingFigures::of(aged);
    let f = AgingFigures::of(fresh);
    // A fresh file system can have a single free extent per GiB or fewer: count it as at least 1
    // so that the ratio says "times a fresh one" without dividing by almost nothing.
    let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x / y.max(1.0)),
        _ => None,
    };
    let free_extents_ratio = ratio(a.free_extents_per_gib, f.free_extents_per_gib);
    let probe_fragments_ratio = ratio(a.probe_fragments_per_100mib, f.probe_fragments_per_100mib);
    let free_under_1mib_points = match (a.free_under_1mib_percent, f.free_under_1mib_percent) {
        (Some(x), Some(y)) => Some(x - y),
        _ => None,
    };
    let verdict = if free_extents_ratio.is_none() && probe_fragments_ratio.is_none() {
        Verdict::Unknown
    } else if free_extents_ratio.is_some_and(|r| r >= 10.0)
        || probe_fragments_ratio.is_some_and(|r| r >= 10.0)
        || free_under_1mib_points.is_some_and(|p| p >= 25.0)
    {
        Verdict::HeavilyAged
    } else if free_extents_ratio.is_none_or(|r| r <= 2.0)
        && probe_fragments_ratio.is_none_or(|r| r <= 2.0)
        && free_under_1mib_points.is_none_or(|p| p < 5.0)
    {
        Verdict::CloseToFresh
    } else {
        Verdict::Aged
    };
    let mut parts = Vec::new();
    if let (Some(r), Some(x), Some(y)) = (
        free_extents_ratio,
        a.free_extents_per_gib,
        f.free_extents_per_gib,
    ) {
        parts.push(format!(
            "{r:.1}x the free extents per GiB ({x:.0} vs {y:.0})"
        ));
    }
    if let (Some(x), Some(y)) = (a.free_under_1mib_percent, f.free_under_1mib_percent) {
        parts.push(format!(
            "{x:.1}% of free space in extents under 1 MiB (fresh {y:.1}%)"
        ));
    }
    if let (Some(r), Some(x), Some(y)) = (
        probe_fragments_ratio,
        a.probe_fragments_per_100mib,
        f.probe_fragments_per_100mib,
    ) {
        parts.push(format!(
            "probe {r:.1}x as fragmented ({x:.1} vs {y:.1} fragments per 100 MiB)"
        ));
    }
    let summary = format!(
        "{image} ({}): {}: {}",
        aged.fs_type,
        verdict.describe(),
        if parts.is_empty() {
            "no comparable figure".to_string()
        } else {
            parts.join(", ")
        }
    );
    AgainstFresh {
        format: AGAINST_FORMAT,
        image: image.to_string(),
        fs_type: aged.fs_type.clone(),
        size_bytes: aged
            .free_space
            .as_ref()
            .map_or(0, |f| f.fs_blocks * f.block_size),
        aged: a,
        fresh: f,
        free_extents_ratio,
        probe_fragments_ratio,
        free_under_1mib_points,
        verdict,
        summary,
        aged_report: aged.clone(),
        fresh_report: fresh.clone(),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use fsage_measure::{FreeBin, FreeSpace, Probe};

    fn report(extents: &[(u64, u64, u64)], probe_frags: u64) -> FragReport {
        // (min_blocks, count, blocks) per bin, 4 KiB blocks.
        let free_blocks = extents.iter().map(|e| e.2).sum();
        FragReport {
            platform: Default::default(),
            format: 1,
            mount: "/m".into(),
            fs_type: "ext4".into(),
            block_size: 4096,
            free_space: Some(FreeSpace {
                route: "getfsmap".into(),
                block_size: 4096,
                fs_blocks: 262144,
                free_blocks,
                free_extents: extents.iter().map(|e| e.1).sum(),
                min_blocks: 1,
                max_blocks: 1,
                avg_blocks: 1.0,
                bins: extents
                    .iter()
                    .map(|&(m, c, b)| FreeBin {
                        min_blocks: m,
                        max_blocks: 2 * m - 1,
                        count: c,
                        blocks: b,
                        percent: 0.0,
                    })
                    .collect(),
                unallocated_blocks: None,
                unallocated_extents: None,
            }),
            free_space_error: None,
            free_space_seconds: 0.0,
            files: None,
            probe: Some(Probe {
                bytes: 16 << 20,
                extents: probe_frags,
                fragments: probe_frags,
                blocks: 4096,
                layout_score: None,
                seconds: 0.0,
            }),
            segments: None,
        }
    }

    #[test]
    fn figures_and_verdict() {
        // Fresh: one extent of 131072 blocks (512 MiB); probe 1 fragment per 16 MiB.
        let fresh = report(&[(131072, 1, 131072)], 1);
        // Aged: 1000 extents of 1-block (4 MiB) and 2 of 65536 blocks; 32 probe fragments.
        let aged = report(&[(1, 1000, 1000), (65536, 2, 131072)], 32);
        let f = AgingFigures::of(&fresh);
        assert!((f.free_extents_per_gib.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(f.free_under_1mib_percent, Some(0.0));
        assert!((f.probe_fragments_per_100mib.unwrap() - 6.25).abs() < 1e-9);
        let a = against_fresh("aged.img", &aged, &fresh);
        let gib = 132072.0 * 4096.0 / GIB;
        assert!((a.aged.free_extents_per_gib.unwrap() - 1002.0 / gib).abs() < 1e-6);
        assert!((a.aged.free_under_1mib_percent.unwrap() - 100.0 * 1000.0 / 132072.0).abs() < 1e-9);
        assert_eq!(a.probe_fragments_ratio, Some(32.0));
        assert_eq!(a.verdict, Verdict::HeavilyAged);
        assert!(a.summary.contains("heavily aged"), "{}", a.summary);
        let same = against_fresh("fresh.img", &fresh, &fresh);
        assert_eq!(same.verdict, Verdict::CloseToFresh);
    }
}
