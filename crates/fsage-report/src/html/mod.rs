//! The HTML report: one self-contained page (inline SVG from plotters, inline CSS, one small
//! inline script that checks every section drew; no network), with a table of numbers beside each
//! plot and a "how this was made" note per section.
//!
//! - [`Section`]: the kinds of section, in page order (what `--section` names).
//! - `page`: the page around them (head, CSS, check script, navigation, inputs) and the HTML
//!   pieces they build with; `format`: how numbers print in them.
//! - `sections`: one module per kind; [`plots`]: the SVG charts.

mod format;
mod page;
pub mod plots;
mod sections;

pub(crate) use format::mib;
pub use page::esc;

use crate::inputs::ReportSet;
use crate::Exporter;
use fsage_analysis::latency_curves::FlowopCurve;
use page::Page;
use sections::{
    against, aged_vs_fresh, aging, bench, cells, frag, git, inversions, latency, published, sweep,
};
use std::fmt;
use thiserror::Error;

/// A kind of section of the page (its `data-kind`), in page order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// The papers' published numbers beside fsage's (reproductions).
    Published,
    /// Aging runs, target against actual.
    Aging,
    /// Git-history aging series.
    Git,
    /// `frag` reports side by side.
    Frag,
    /// `frag --against-fresh` comparisons and an experiment's base-image verdicts.
    AgainstFresh,
    /// `bench run --json` results side by side.
    Bench,
    /// Aged against fresh throughput, from the analyses.
    AgedVsFresh,
    /// Tail latency per flowop.
    Latency,
    /// Latency sweeps against the slippery-slope model.
    Sweep,
    /// Performance inversions between device latencies.
    Inversions,
    /// The cell results.
    Cells,
}

impl Section {
    /// Every section, in page order.
    pub const ALL: [Section; 11] = [
        Section::Published,
        Section::Aging,
        Section::Git,
        Section::Frag,
        Section::AgainstFresh,
        Section::Bench,
        Section::AgedVsFresh,
        Section::Latency,
        Section::Sweep,
        Section::Inversions,
        Section::Cells,
    ];

    /// The name `--section` takes and the page's `data-kind`.
    pub fn name(self) -> &'static str {
        match self {
            Section::Published => "published",
            Section::Aging => "aging",
            Section::Git => "git",
            Section::Frag => "frag",
            Section::AgainstFresh => "against-fresh",
            Section::Bench => "bench",
            Section::AgedVsFresh => "aged-vs-fresh",
            Section::Latency => "latency",
            Section::Sweep => "sweep",
            Section::Inversions => "inversions",
            Section::Cells => "cells",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no section's; its message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("no section is called {0:?}: one of {names}", names = section_names())]
pub struct UnknownSection(pub String);

/// Every section's name, in page order, comma-separated.
fn section_names() -> String {
    let names: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
    names.join(", ")
}

impl std::str::FromStr for Section {
    type Err = UnknownSection;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Section::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownSection(s.to_string()))
    }
}

/// The HTML exporter. `sections` empty means all.
#[derive(Debug, Clone, Default)]
pub struct Html {
    pub sections: Vec<Section>,
}

impl Exporter<ReportSet> for Html {
    fn export(&self, set: &ReportSet) -> String {
        render(set, &self.sections)
    }
}

/// The page of `set` with the sections of `only` (all when empty) that have something to show.
pub fn render(set: &ReportSet, only: &[Section]) -> String {
    let want = |k: Section| only.is_empty() || only.contains(&k);
    let mut p = Page::default();
    if want(Section::Published) && !set.reproductions.is_empty() {
        published::render(&mut p, set);
    }
    if want(Section::Aging) && !set.runs.is_empty() {
        aging::render(&mut p, &set.runs);
    }
    if want(Section::Git) && !set.git.is_empty() {
        git::render(&mut p, &set.git);
    }
    if want(Section::Frag) && !set.frags.is_empty() {
        frag::render(&mut p, &set.frags);
    }
    if want(Section::AgainstFresh) && !set.against.is_empty() {
        against::render(&mut p, &set.against);
    }
    if want(Section::AgainstFresh) && !set.verdicts.is_empty() {
        against::experiment_verdicts(&mut p, &set.verdicts);
    }
    if want(Section::Bench) && !set.bench.is_empty() {
        bench::render(&mut p, &set.bench);
    }
    let curves = fsage_analysis::latency_curves::from_cells(set.cells.iter().map(|c| &c.item));
    for a in &set.analyses {
        let suffix = if set.analyses.len() > 1 {
            format!(" ({})", a.name)
        } else {
            String::new()
        };
        if want(Section::AgedVsFresh) && !a.item.aged_vs_fresh.is_empty() {
            aged_vs_fresh::render(&mut p, &a.item, &suffix);
        }
        if want(Section::Latency) && !a.item.flowops.is_empty() {
            // The cells' percentiles belong to the analysis computed from them.
            let cv: &[FlowopCurve] = if a.path.as_os_str().is_empty() {
                &curves
            } else {
                &[]
            };
            latency::render(&mut p, &a.item, &suffix, cv);
        }
        if want(Section::Sweep) && !a.item.sweeps.is_empty() {
            sweep::render(&mut p, &a.item, &suffix);
        }
        if want(Section::Inversions) && !a.item.sweeps.is_empty() {
            inversions::render(&mut p, &a.item, &suffix);
        }
    }
    if want(Section::Cells) && !set.cells.is_empty() {
        cells::render(&mut p, set);
    }
    page::document(p, set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_names_parse_back_and_others_are_refused_with_the_list() {
        for s in Section::ALL {
            assert_eq!(s.name().parse::<Section>(), Ok(s));
        }
        let e = "nosuch".parse::<Section>().unwrap_err().to_string();
        assert_eq!(
            e,
            "no section is called \"nosuch\": one of published, aging, git, frag, against-fresh, bench, \
             aged-vs-fresh, latency, sweep, inversions, cells"
        );
        // Page order is the enum's order.
        let mut sorted = Section::ALL;
        sorted.sort();
        assert_eq!(sorted, Section::ALL);
    }
}
