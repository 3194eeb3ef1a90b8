//! Every way fsage shows a result, in one place (like hyperfine's `export/`): the result types
//! belong to the crates that produce them (the run report to `fsage-exec`, the fragmentation
//! report to `fsage-measure`); this crate turns them into text for a terminal or JSON for a
//! machine, or a self-contained HTML page with plots (`html`), behind one trait, so that a new
//! format is one new type here and nothing else. `inputs` reads every JSON fsage writes for the
//! report.

pub mod html;
pub mod inputs;
pub mod plan_text;
mod run_text;
mod status_text;
mod summary_text;

use serde::Serialize;

pub use fsage_exec::report::{Bin, Conditions, Histogram, RunReport, StopReason, UnmetBin};
pub use fsage_exec::RunStatus;
pub use fsage_profile::human_bytes;
pub use html::Html;
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

impl Exporter<RunReport> for Text {
    fn export(&self, r: &RunReport) -> String {
        run_text::render(r)
    }
}

impl Exporter<fsage_experiment::Plan> for Text {
    fn export(&self, p: &fsage_experiment::Plan) -> String {
        plan_text::render(p)
    }
}

impl Exporter<inputs::ReportSet> for Text {
    fn export(&self, set: &inputs::ReportSet) -> String {
        summary_text::render(set)
    }
}

impl Exporter<fsage_measure::AgainstFresh> for Text {
    fn export(&self, a: &fsage_measure::AgainstFresh) -> String {
        summary_text::against(a)
    }
}

impl Exporter<RunStatus> for Text {
    fn export(&self, st: &RunStatus) -> String {
        status_text::render(st)
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
}
