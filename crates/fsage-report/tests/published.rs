//! The report's "Published numbers beside fsage's" section: every published point of a
//! reproduction, read from the repository's `docs/reproductions/published.csv`, is on the page
//! with its source, beside fsage's number when the run has one, with the difference and the aim.

use fsage_analysis::stats::MeanCi;
use fsage_analysis::AnalysisOptions;
use fsage_analysis::{AgedVsFresh, State};
use fsage_report::html::esc;
use fsage_report::{export, load, Html, ReportSet};
use fsage_results::repro::record::{Record, RECORD_FILE, RECORD_FORMAT};
use std::path::{Path, PathBuf};

/// A reproduction's directory holding only its record (nothing run yet).
fn record_dir(
    dir: &Path,
    name: &str,
    git_runs: Vec<fsage_results::repro::catalog::GitRun>,
) -> PathBuf {
    let r = fsage_results::repro::catalog::find(name).unwrap();
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let rec = Record {
        format: RECORD_FORMAT.into(),
        name: name.into(),
        paper: r.paper.into(),
        figure: r.figure.into(),
        scale_bytes: r.default_scale,
        scale_of: r.scale_of.into(),
        paper_scale: r.paper_scale.into(),
        models: r.models(r.default_scale),
        repo: None,
        git_runs,
        made_by: "test".into(),
    };
    std::fs::write(
        d.join(RECORD_FILE),
        serde_json::to_string_pretty(&rec).unwrap(),
    )
    .unwrap();
    d
}

fn page(set: &ReportSet) -> String {
    export(&Html::default(), set)
}

/// The section alone, from its opening tag to the next section.
fn section(html: &str) -> &str {
    let start = html
        .find("data-kind=\"published\"")
        .expect("a published section");
    let rest = &html[start..];
    &rest[..rest.find("</section>").unwrap()]
}

#[test]
fn every_published_point_of_a_reproduction_is_shown_with_its_source() {
    let tmp = tempfile::tempdir().unwrap();
    let d = record_dir(tmp.path(), "geriatrix-fig7", vec![]);
    let set = load(&[d], &AnalysisOptions::default()).unwrap();
    assert_eq!(set.reproductions.len(), 1);
    let html = page(&set);
    let s = section(&html);
    // From the repository's file, not from a copy in the test.
    let csv = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reproductions/published.csv"),
    )
    .unwrap();
    let points: Vec<_> = fsage_results::repro::published::parse(&csv, "published.csv")
        .unwrap()
        .into_iter()
        .filter(|p| p.reproduction == "geriatrix-fig7")
        .collect();
    assert_eq!(points.len(), 6);
    for p in &points {
        assert!(s.contains(&esc(&p.source)), "no source {:?}", p.source);
        assert!(
            s.contains(&format!("{} {}", p.value_text(), p.unit)),
            "no value {}",
            p.value_text()
        );
    }
    assert!(s.contains("76-78 % loss") && s.contains("61-67 % loss"));
    // Nothing run: grey bars only, and the table says so.
    assert!(s.contains("not run yet"));
    assert!(s.contains("this host's kernel has no f2fs"));
    assert!(s.contains("scaled: 1 GiB is each file system"));
    assert!(s.contains("<svg"), "the paper's bars are drawn");
    assert!(s.contains("#969696"), "in grey");
}

fn aged(fs: &str, device: &str, slowdown: f64) -> AgedVsFresh {
    AgedVsFresh {
        fs: fs.into(),
        workload: "fileserver".into(),
        latency_us: None,
        device_model: Some(device.into()),
        state: State::Aged {
            profile: "meyer".into(),
            label: "meyer".into(),
        },
        fresh: MeanCi::of(&[1000.0, 1010.0, 990.0]),
        aged: MeanCi::of(&[100.0, 110.0, 90.0]),
        slowdown_percent: slowdown,
        significant: true,
        fresh_wa: None,
        aged_wa: None,
    }
}

#[test]
fn losses_get_the_difference_in_points_and_the_ten_point_aim() {
    let tmp = tempfile::tempdir().unwrap();
    let d = record_dir(tmp.path(), "geriatrix-fig7", vec![]);
    let mut set = load(&[d], &AnalysisOptions::default()).unwrap();
    let mut a = fsage_analysis::analyze(&[], &AnalysisOptions::default());
    a.aged_vs_fresh = vec![
        // Cells by another procedure are not the paper's: the whole copy onto the previous
        // run's drive is.
        aged(
            "ext4",
            "crucial-m4-64g@1.1GiB (sparse copy, drive erased)",
            10.0,
        ),
        aged(
            "ext4",
            "crucial-m4-64g@1.1GiB (whole copy, drive previous)",
            82.0,
        ),
        aged("btrfs", "crucial-m4-64g@1111MiB", 79.0),
        aged("ext4", "adata-s510-120g@1229MiB", 3.0),
        // Another drive's result is not this point's.
        aged("btrfs", "ssd-sata", 1.0),
    ];
    set.analyses.push(fsage_report::inputs::Named {
        name: "a".into(),
        path: PathBuf::new(),
        item: a,
    });
    let html = page(&set);
    let s = section(&html);
    assert!(s.contains("<td>82</td><td>+4 pp</td>"), "{s}");
    assert!(s.contains("<td>79</td><td>+12 pp</td>"), "{s}");
    assert!(s.contains("<td>3</td><td>+3 pp</td>"), "{s}");
    assert!(s.contains("within 10 points"));
    assert_eq!(
        s.matches("<span class=\"flag\">no</span>").count(),
        1,
        "{s}"
    );
    assert!(s.contains("6 published points, 3 with an fsage number, 2 of them within the aim"));
    // fsage's bars in their file systems' colours: ext4 blue, btrfs green.
    assert!(s.contains("#0072B2") && s.contains("#009E73"), "fs colours");
}

#[test]
fn ratios_against_pulls_are_lines_with_the_papers_points_as_grey_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fsage_results::repro::catalog::find("conway-fig3")
        .unwrap()
        .git_runs(4 << 30);
    let d = record_dir(tmp.path(), "conway-fig3", run);
    // A real series (zlib on ext4, every 50 pulls) standing in for btrfs on the paper's disk: its
    // ratios costed as if on st500dm002 (pull/100 + 1), so that the points can be checked.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/git/zlib-ext4.json"),
    )
    .unwrap();
    let mut s: fsage_results::git::GitSeries = serde_json::from_str(&text).unwrap();
    s.fs = "btrfs".into();
    let mut m = fsage_device::resolve("hdd-7200").unwrap();
    m.name = "st500dm002".into();
    // Costed on an SSD too (Conway's runs are costed on every drive): Figure 3's plot draws
    // the paper's hard disk only.
    let mut ssd = fsage_device::resolve("ssd-sata").unwrap();
    ssd.name = "sandisk-extreme-pro-240g".into();
    s.cost_models = vec![m, ssd];
    for r in &mut s.rows {
        r.modeled_ratio = vec![
            fsage_results::git::ModeledRatio {
                model: "st500dm002".into(),
                ratio: Some(r.pulls as f64 / 100.0 + 1.0),
            },
            fsage_results::git::ModeledRatio {
                model: "sandisk-extreme-pro-240g".into(),
                ratio: Some(1.0),
            },
        ];
    }
    std::fs::create_dir_all(d.join("git")).unwrap();
    std::fs::write(d.join("git/btrfs.json"), serde_json::to_string(&s).unwrap()).unwrap();
    let set = load(&[d], &AnalysisOptions::default()).unwrap();
    assert_eq!(set.git.len(), 1, "the reproduction's series is read");
    let html = page(&set);
    let sec = section(&html);
    // 100 pulls (Conway's count) is fsage's pull 101: ratio 2.01 against the text's 2 and the
    // data's 1.73.
    assert!(
        sec.contains("<td>2.01 (at pull 101)</td><td>+0.5 %</td>"),
        "{sec}"
    );
    assert!(
        sec.contains("<td>2.01 (at pull 101)</td><td>+16.18 %</td>"),
        "{sec}"
    );
    assert!(sec.contains("within 25%"));
    // zlib's history ends before 1,100 pulls.
    assert!(sec.contains(&format!(
        "beyond the replayed history ({} commits)",
        s.commits_total
    )));
    // The paper's points: grey squares on fsage's line.
    assert!(
        sec.contains("paper: aged/clean (text)") && sec.contains("paper: aged/clean (derived)")
    );
    assert!(sec.contains("fill=\"#969696\""), "grey markers");
    assert!(sec.contains("fsage btrfs on st500dm002"), "{sec}");
    assert!(
        !sec.contains("on sandisk-extreme-pro-240g"),
        "only the paper's drive of the figure is drawn: {sec}"
    );
}
