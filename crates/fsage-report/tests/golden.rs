//! The report's output on the fixtures, byte for byte: the HTML page (whole, and each section
//! alone), the terminal summary and the JSON analyses against the files in `tests/golden/`,
//! written by the code as it was when they were blessed. A change to any of them fails here with
//! the first line that differs; when the change is meant, `FSAGE_BLESS=1 cargo test -p
//! fsage-report --test golden` rewrites them (and the diff of `tests/golden/` is the review).
//!
//! Normalised before comparing, and only this: the fixtures' absolute directory (it differs per
//! checkout) becomes `$FIXTURES`, and the fsage version in the page's "Made by fsage VERSION"
//! line becomes `$VERSION` (a version bump is not a change of the report).

use fsage_experiment::AnalysisOptions;
use fsage_report::html::Section;
use fsage_report::{export, load, Html, Json, ReportSet, Text};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every kind of input the report reads: aging run reports, frag reports, an against-fresh
/// comparison, cell results (the aged and the sweep experiments), a Git-aging series, an
/// experiment output directory (its base images' verdicts), an analysis written by
/// `fsage report --json` (a second analysis, so section titles carry the analysis' name) and two
/// `fsage bench run --json` results, and a reproduction's directory before anything ran (the
/// published numbers alone).
const ALL: [&str; 14] = [
    "aged-ext4.run.json",
    "aged2-ext4.run.json",
    "fresh-ext4.frag.json",
    "aged-ext4.frag.json",
    "aged2-ext4.frag.json",
    "against/aged-ext4.against.json",
    "cells/aged",
    "cells/sweep",
    "git/zlib-ext4.json",
    "experiment",
    "analysis/sweep.json",
    "bench/varmail-fresh-ext4.json",
    "bench/varmail-aged-ext4.json",
    "reproduction/geriatrix-fig7",
];

/// Real cell results whose workload reports carry p50 to max per flowop (the latency section's
/// percentile curves).
const LATENCY: [&str; 1] = ["latency"];

fn load_set(inputs: &[&str]) -> ReportSet {
    let paths: Vec<PathBuf> = inputs.iter().map(|p| fixtures().join(p)).collect();
    load(&paths, &AnalysisOptions::default()).expect("the fixtures load")
}

fn normalise(text: &str) -> String {
    let dir = fixtures().display().to_string();
    text.replace(&dir, "$FIXTURES").replace(
        &format!("Made by fsage {} from", env!("CARGO_PKG_VERSION")),
        "Made by fsage $VERSION from",
    )
}

/// Compares `actual` with `tests/golden/NAME`, or writes it there under `FSAGE_BLESS=1`.
fn check(name: &str, actual: &str) {
    let actual = normalise(actual);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("FSAGE_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (FSAGE_BLESS=1 cargo test -p fsage-report --test golden writes it)",
            path.display()
        )
    });
    if want == actual {
        return;
    }
    let (mut w, mut a) = (want.split('\n'), actual.split('\n'));
    for line in 1.. {
        match (w.next(), a.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (x, y) => panic!(
                "{}: differs first at line {line}\n  golden: {}\n  now:    {}\n(if the change is \
                 meant: FSAGE_BLESS=1 cargo test -p fsage-report --test golden)",
                path.display(),
                x.map_or("(end of file)".into(), |s| format!("{s:?}")),
                y.map_or("(end of file)".into(), |s| format!("{s:?}")),
            ),
        }
    }
}

fn golden_set(name: &str, inputs: &[&str]) {
    let set = load_set(inputs);
    check(&format!("{name}.html"), &export(&Html::default(), &set));
    check(&format!("{name}.summary.txt"), &export(&Text, &set));
    let analyses: Vec<&fsage_experiment::Analysis> = set.analyses.iter().map(|a| &a.item).collect();
    check(&format!("{name}.analyses.json"), &export(&Json, &analyses));
}

#[test]
fn every_kind_of_input() {
    golden_set("all", &ALL);
}

#[test]
fn cells_with_full_workload_reports() {
    golden_set("latency", &LATENCY);
}

/// One repetition of one file system, fresh and aged (the first repetition of each of the
/// `latency/` cells): no interval, so no verdict about noise, and no rank order to show.
const ONE_REP: [&str; 2] = [
    "latency/btrfs-fresh-fileserver-plain-r0-44a87a6a379c.json",
    "latency/btrfs-aged.agrawal-fileserver-plain-r0-8cdab4194d8c.json",
];

#[test]
fn one_repetition_says_there_is_no_interval() {
    golden_set("one-rep", &ONE_REP);
    let set = load_set(&ONE_REP);
    let html = export(&Html::default(), &set);
    assert!(html.contains("one repetition: no interval"), "{html}");
    assert!(!html.contains(">yes<"), "no verdict without an interval");
    assert!(
        html.contains("No rank order: one file system here"),
        "{html}"
    );
    let text = export(&Text, &set);
    assert!(text.contains("(one repetition: no interval)"), "{text}");
}

/// `--section NAME` alone: the page holds that section only (nav ids numbered from 1), so each
/// one is compared too.
#[test]
fn each_section_alone() {
    let set = load_set(&ALL);
    for s in Section::ALL {
        let html = export(&Html { sections: vec![s] }, &set);
        check(&format!("section-{}.html", s.name()), &html);
    }
}
