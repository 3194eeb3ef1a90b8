//! The exporters of fsage's results, in one place (like hyperfine's `export/`): each result type
//! (owned by the crate that produces it: the run report by `fsage-exec`, the fragmentation report
//! by `fsage-measure`, cell results and analyses by `fsage-experiment`, the Git-aging series by
//! `fsage-git`, ...) as text for a terminal, JSON for a machine, CSV (the Git-aging series), or
//! the self-contained HTML page with plots ([`html`]), behind one [`Exporter`] trait, so that a
//! new format is one new type here and nothing else. [`inputs`] reads every JSON result back for
//! `fsage report`.
//!
//! Not here: what a command prints while it works (progress, the experiment runner's line per
//! cell, warnings), the one-line confirmations of commands that make or change things (`fs`,
//! `dev`, `image`), lists of built-ins, and the planner benchmark's table, which the command line
//! prints row by row as it measures; nor the analyses the report shows, which are pure functions
//! of `fsage-experiment::analysis`.

mod bench_text;
mod dev_text;
mod device_text;
mod extract_text;
mod frag_text;
mod git_series;
pub mod html;
mod image_text;
pub mod inputs;
mod lock_text;
pub mod plan_text;
mod run_text;
mod status_text;
pub use status_text::time_left_text;
mod summary_text;

use serde::Serialize;

pub use fsage_exec::report::{Bin, Conditions, Histogram, RunReport, StopReason, UnmetBin};
pub use fsage_exec::RunStatus;
pub use fsage_measure::{ExtractStats, FragComparison, FragReport, FreeSpace};
pub use fsage_profile::human_bytes;
pub use html::Html;
pub use image_text::{ImageList, StoredImage};
pub use inputs::{load, ReportSet};

/// One export format for results of type `T`.
pub trait Exporter<T: ?Sized> {
    fn export(&self, item: &T) -> String;
}

/// Pretty-printed JSON of any serde result: one spelling per value, `null` for what is missing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl<T: Serialize + ?Sized> Exporter<T> for Json {
    fn export(&self, item: &T) -> String {
        // The result types are plain data (strings, numbers, options, vectors, maps with string
        // keys): serialising them cannot fail.
        let mut s = serde_json::to_string_pretty(item).expect("result types serialise to JSON");
        s.push('\n');
        s
    }
}

/// The human summary a terminal shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Text;

impl Exporter<fsage_device::CostReport> for Text {
    fn export(&self, r: &fsage_device::CostReport) -> String {
        device_text::cost(r)
    }
}

impl Exporter<fsage_device::sim::WaReport> for Text {
    fn export(&self, r: &fsage_device::sim::WaReport) -> String {
        device_text::write_amplification(r)
    }
}

impl Exporter<[fsage_device::sim::ReadPoint]> for Text {
    fn export(&self, r: &[fsage_device::sim::ReadPoint]) -> String {
        device_text::read_curve(r)
    }
}

impl Exporter<[fsage_device::ModelSpec]> for Text {
    fn export(&self, m: &[fsage_device::ModelSpec]) -> String {
        device_text::models(m)
    }
}

impl Exporter<RunReport> for Text {
    fn export(&self, r: &RunReport) -> String {
        run_text::render(r)
    }
}

impl Exporter<fsage_results::bench::BenchResult> for Text {
    fn export(&self, b: &fsage_results::bench::BenchResult) -> String {
        bench_text::render(b)
    }
}

impl Exporter<fsage_results::experiment::spec::Plan> for Text {
    fn export(&self, p: &fsage_results::experiment::spec::Plan) -> String {
        plan_text::render(p)
    }
}

impl Exporter<fsage_results::experiment::status::Status> for Text {
    fn export(&self, s: &fsage_results::experiment::status::Status) -> String {
        plan_text::status(s)
    }
}

impl Exporter<inputs::ReportSet> for Text {
    fn export(&self, set: &inputs::ReportSet) -> String {
        summary_text::render(set)
    }
}

impl Exporter<fsage_results::against::AgainstFresh> for Text {
    fn export(&self, a: &fsage_results::against::AgainstFresh) -> String {
        summary_text::against(a)
    }
}

impl Exporter<RunStatus> for Text {
    fn export(&self, st: &RunStatus) -> String {
        status_text::render(st)
    }
}

impl Exporter<fsage_results::git::GitSeries> for Text {
    fn export(&self, s: &fsage_results::git::GitSeries) -> String {
        git_series::render(s)
    }
}

/// Comma-separated values, one row per measurement, with a header line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Csv;

impl Exporter<fsage_results::git::GitSeries> for Csv {
    fn export(&self, s: &fsage_results::git::GitSeries) -> String {
        git_series::csv(s)
    }
}

pub use git_series::CSV_HEADER as GIT_CSV_HEADER;

impl Exporter<FragReport> for Text {
    fn export(&self, r: &FragReport) -> String {
        frag_text::render(r)
    }
}

impl Exporter<FragComparison> for Text {
    fn export(&self, c: &FragComparison) -> String {
        frag_text::compare(c)
    }
}

/// The free-space histogram alone, e2freefrag style.
impl Exporter<FreeSpace> for Text {
    fn export(&self, f: &FreeSpace) -> String {
        frag_text::free_space(f)
    }
}

/// One line per fact, for standard error (the profile goes to standard output or a file).
impl Exporter<ExtractStats> for Text {
    fn export(&self, st: &ExtractStats) -> String {
        extract_text::render(st)
    }
}

impl Exporter<[fsage_results::slowdev::DeviceInfo]> for Text {
    fn export(&self, devs: &[fsage_results::slowdev::DeviceInfo]) -> String {
        dev_text::list(devs)
    }
}

impl Exporter<fsage_results::slowdev::DeviceStats> for Text {
    fn export(&self, s: &fsage_results::slowdev::DeviceStats) -> String {
        dev_text::stats(s)
    }
}

impl Exporter<fsage_results::slowdev::BenchReport> for Text {
    fn export(&self, r: &fsage_results::slowdev::BenchReport) -> String {
        dev_text::bench(r)
    }
}

impl Exporter<ImageList<'_>> for Text {
    fn export(&self, l: &ImageList) -> String {
        image_text::list(l)
    }
}

impl Exporter<StoredImage<'_>> for Text {
    fn export(&self, i: &StoredImage) -> String {
        image_text::show(i)
    }
}

/// Exports `item` with `exporter` (`export(&Json, &report)`).
pub fn export<T: ?Sized, E: Exporter<T>>(exporter: &E, item: &T) -> String {
    exporter.export(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_a_stop_reason_with_one_spelling() {
        let j = export(&Json, &StopReason::MaxOps);
        assert_eq!(j.trim(), "\"max_ops\"");
        let back: StopReason = serde_json::from_str(&j).unwrap();
        assert_eq!(back, StopReason::MaxOps);
    }

    fn frag(fs: &str, extents: &[(u64, u64)]) -> FragReport {
        let mut h = fsage_measure::hist::FreeHist::default();
        for &(blocks, n) in extents {
            for _ in 0..n {
                h.add(blocks);
            }
        }
        FragReport {
            platform: Default::default(),
            format: fsage_measure::FRAG_FORMAT,
            mount: "/mnt/x".into(),
            fs_type: fs.into(),
            block_size: 4096,
            free_space: Some(h.finish("getfsmap", 4096, 1000)),
            free_space_error: None,
            free_space_seconds: 0.5,
            files: None,
            probe: None,
            segments: None,
        }
    }

    #[test]
    fn frag_text_and_comparison_show_every_bin() {
        let fresh = frag("ext4", &[(512, 1)]);
        let aged = frag("ext4", &[(1, 10), (3, 4)]);
        let t = export(&Text, &aged);
        assert!(t.starts_with("/mnt/x (ext4, block size 4096)"), "{t}");
        assert!(t.contains("Free extents: 14;"), "{t}");
        // 1 block: 10 extents, 10 blocks of 22.
        assert!(t.contains("10           10   45.45%"), "{t}");
        let c = FragComparison {
            names: vec!["fresh".into(), "aged".into()],
            reports: vec![fresh, aged],
        };
        let t = export(&Text, &c);
        let row = |label: &str| {
            t.lines()
                .find(|l| l.starts_with(label))
                .unwrap_or_else(|| panic!("no {label} row in {t}"))
                .split_whitespace()
                .skip(label.split_whitespace().count())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(row("free extents"), "1 14");
        assert_eq!(row("free 1+ blocks"), "0 10 (45.5%)");
        assert_eq!(row("free 512+ blocks"), "1 (100.0%) 0");
        let j: serde_json::Value = serde_json::from_str(&export(&Json, &c)).unwrap();
        assert_eq!(j["reports"][1]["free_space"]["free_extents"], 14);
    }
}
