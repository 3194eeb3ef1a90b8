//! The report on real aging and frag reports and on synthetic cell results.

use fsage_experiment::analysis::SweepClass;
use fsage_experiment::AnalysisOptions;
use fsage_report::{export, load, Html, Text};
use std::path::PathBuf;

fn fx(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

fn all_inputs() -> Vec<PathBuf> {
    vec![
        fx("aged-ext4.run.json"),
        fx("fresh-ext4.frag.json"),
        fx("aged-ext4.frag.json"),
        fx("aged2-ext4.frag.json"),
        fx("cells/aged"),
        fx("cells/sweep"),
        fx("against/aged-ext4.against.json"),
        fx("git/zlib-ext4.json"),
    ]
}

#[test]
fn every_kind_is_detected_and_analysed() {
    let set = load(&all_inputs(), &AnalysisOptions::default()).unwrap();
    assert_eq!(set.runs.len(), 1);
    assert_eq!(set.frags.len(), 3);
    assert_eq!(set.frags[0].name, "fresh-ext4");
    assert_eq!(set.against.len(), 1);
    assert_eq!(
        set.against[0].item.verdict,
        fsage_core::against::Verdict::HeavilyAged
    );
    assert_eq!(set.cells.len(), 36 + 90);
    // A real Git-aging series (zlib, 684 commits, ext4).
    assert_eq!(set.git.len(), 1);
    assert_eq!(set.git[0].item.pulls_done, 684);
    assert_eq!(set.git[0].item.rows.len(), 15);
    assert_eq!(set.analyses.len(), 1);
    let a = &set.analyses[0].item;
    // One btrfs cell failed: left out.
    assert_eq!(a.samples, 125);
    // Synthetic: aging costs ext4 a third under varmail, so ext4 and xfs swap places.
    let flip = a.ranks.iter().find(|r| r.changed).expect("a rank change");
    assert_eq!(flip.workload, "varmail");
    assert_eq!(flip.order[..2], ["xfs".to_string(), "ext4".to_string()]);
    let class = |fs: &str| {
        a.sweeps
            .iter()
            .find(|s| s.fs == fs)
            .map(|s| s.class.clone())
            .unwrap()
    };
    assert!(matches!(class("ext4"), SweepClass::I { .. }));
    assert_eq!(class("xfs"), SweepClass::II);
    assert!(matches!(
        class("btrfs"),
        SweepClass::III {
            departs_us: 2000.0,
            ..
        }
    ));
    assert!(a.inversions.iter().any(|i| i.faster_slow_device == "btrfs"
        && i.faster_fast_device == "ext4"
        && (i.from_us, i.to_us) == (3000.0, 2000.0)));
    let summary = export(&Text, &set);
    assert!(summary.contains("rank order changed: varmail"), "{summary}");
}

#[test]
fn the_page_has_every_section_and_needs_no_network() {
    let set = load(&all_inputs(), &AnalysisOptions::default()).unwrap();
    let html = export(&Html::default(), &set);
    for kind in [
        "aging",
        "git",
        "frag",
        "against-fresh",
        "aged-vs-fresh",
        "latency",
        "sweep",
        "inversions",
        "cells",
    ] {
        assert!(
            html.contains(&format!("data-kind=\"{kind}\"")),
            "section {kind} missing"
        );
    }
    assert!(html.matches("<svg").count() >= 10);
    // Self-contained: nothing fetched.
    for bad in ["http://", "https://", "src=\"", "<link"] {
        let hits: Vec<&str> = html
            .match_indices(bad)
            .map(|(i, _)| &html[i.saturating_sub(40)..(i + 60).min(html.len())])
            .filter(|ctx| !ctx.contains("http://www.w3.org/"))
            .collect();
        assert!(hits.is_empty(), "{bad}: {hits:?}");
    }
    // Axes say their units.
    assert!(html.contains("throughput (ops/s)"));
    assert!(html.contains("device latency (ms)"));
    assert!(html.contains("grep time (s/GiB)"));
    // Only the sections asked for.
    let only = export(
        &Html {
            sections: vec![fsage_report::html::Section::Sweep],
        },
        &set,
    );
    assert!(only.contains("data-kind=\"sweep\""));
    assert!(!only.contains("data-kind=\"aging\""));
}

#[test]
fn a_file_that_is_not_a_result_is_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("other.json");
    std::fs::write(&p, "{\"hello\": 1}").unwrap();
    let e = load(&[p], &AnalysisOptions::default()).unwrap_err();
    assert!(
        e.message.contains("other.json: not a result fsage knows"),
        "{}",
        e.message
    );
}

#[test]
fn analyses_written_by_report_json_are_read_back() {
    let set = load(&all_inputs(), &AnalysisOptions::default()).unwrap();
    let list: Vec<&fsage_experiment::Analysis> = set.analyses.iter().map(|a| &a.item).collect();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("analysis.json");
    std::fs::write(&p, export(&fsage_report::Json, &list)).unwrap();
    let back = load(&[p], &AnalysisOptions::default()).unwrap();
    assert_eq!(back.analyses.len(), 1);
    // (serde_json reads floats back to within an ulp, so compare what the numbers decide.)
    let (a, b) = (&back.analyses[0].item, &set.analyses[0].item);
    assert_eq!(a.samples, b.samples);
    assert_eq!(a.ranks, b.ranks);
    assert_eq!(a.inversions, b.inversions);
    let classes = |x: &fsage_experiment::Analysis| {
        x.sweeps.iter().map(|s| s.class.clone()).collect::<Vec<_>>()
    };
    assert_eq!(classes(a), classes(b));
    let html = export(&Html::default(), &back);
    assert!(html.contains("data-kind=\"sweep\""));
}

/// An experiment output directory made from `toml`, its base images' frag measurements copied
/// from the fixtures: `(name in frag/, fixture)`.
fn experiment_dir(
    root: &std::path::Path,
    name: &str,
    toml: &str,
    frags: &[(&str, &str)],
) -> PathBuf {
    let out = root.join(name);
    let spec = fsage_experiment::spec::parse(toml, "test.toml", root).unwrap();
    fsage_experiment::runner::prepare_out(&out, &spec.plan(), toml).unwrap();
    std::fs::create_dir_all(out.join("frag")).unwrap();
    for (to, from) in frags {
        std::fs::copy(fx(from), out.join("frag").join(to)).unwrap();
    }
    out
}

#[test]
fn an_experiment_dir_gets_the_against_fresh_verdict_of_each_aged_base() {
    let d = tempfile::tempdir().unwrap();
    let both = experiment_dir(
        d.path(),
        "both",
        "name = \"x\"\nduration = \"1s\"\nimage_size = \"256MiB\"\n[[fs]]\nkind = \"ext4\"\n\
         [[state]]\nkind = \"fresh\"\n[[state]]\nkind = \"aged\"\nprofile = \"meyer\"\n\
         [[workload]]\nname = \"varmail\"\n",
        &[
            ("ext4-fresh-0123abcd.json", "fresh-ext4.frag.json"),
            ("ext4-aged.meyer-4567cdef.json", "aged-ext4.frag.json"),
        ],
    );
    let aged_only = experiment_dir(
        d.path(),
        "aged-only",
        "name = \"y\"\nduration = \"1s\"\nimage_size = \"300MiB\"\n[[fs]]\nkind = \"xfs\"\n\
         [[state]]\nkind = \"aged\"\nprofile = \"dabre\"\n[[workload]]\nname = \"varmail\"\n",
        &[("xfs-aged.dabre-89abcdef.json", "aged2-ext4.frag.json")],
    );
    let set = load(&[both, aged_only], &AnalysisOptions::default()).unwrap();
    assert_eq!(set.verdicts.len(), 2, "{:?}", set.verdicts);
    let ext4 = &set.verdicts[0];
    assert_eq!(
        (ext4.fs.as_str(), ext4.state.as_str()),
        ("ext4", "aged:meyer")
    );
    assert_eq!(ext4.fresh_frag.as_deref(), Some("ext4-fresh-0123abcd"));
    let a = ext4.against.as_ref().expect("a verdict");
    // The same comparison `frag --against-fresh` makes of these two reports.
    let frag = |n: &str| &set.frags.iter().find(|f| f.name == n).unwrap().item;
    let want = fsage_core::against::against_fresh(
        "ext4 aged:meyer",
        frag("ext4-aged.meyer-4567cdef"),
        frag("ext4-fresh-0123abcd"),
    );
    assert_eq!(a.verdict, want.verdict);
    assert_eq!(a.summary, want.summary);
    assert_eq!(a.verdict, fsage_core::against::Verdict::HeavilyAged);
    let xfs = &set.verdicts[1];
    assert!(xfs.against.is_none());
    assert!(
        xfs.missing
            .as_deref()
            .unwrap()
            .contains("no fresh state of xfs"),
        "{:?}",
        xfs.missing
    );
    let summary = export(&Text, &set);
    assert!(
        summary.contains(&format!("against fresh: {}", want.summary)),
        "{summary}"
    );
    assert!(summary.contains("xfs aged:dabre: no verdict: the experiment has no fresh state"));
    let html = export(&Html::default(), &set);
    assert!(
        html.contains("How far from fresh: the experiment&#39;s base images")
            || html.contains("How far from fresh: the experiment's base images")
    );
    assert!(html.contains(&format!(
        "<p class=\"verdict\">{}</p>",
        fsage_report::html::esc(&want.summary)
    )));
    assert!(html.contains("no verdict: the experiment has no fresh state of xfs"));
}

/// The latency section draws each flowop's percentiles (p50 to max) from the cells' full
/// workload reports: the mean of the repetitions' percentiles, the largest max; without them
/// (the synthetic fixtures) only p99 and max.
#[test]
fn latency_percentile_curves_come_from_the_cells_workload_reports() {
    let d = tempfile::tempdir().unwrap();
    let stats = |p50: f64, max: f64| {
        serde_json::json!({"name": "readfile", "kind": "readwholefile", "thread": "t",
            "stats": {"ops": 10, "ops_per_sec": 1.0, "mb_per_sec": 0.0, "bytes_read": 0,
                "bytes_written": 0, "mean_us": p50, "p50_us": p50, "p90_us": 2.0 * p50,
                "p99_us": 4.0 * p50, "p999_us": 8.0 * p50, "max_us": max, "enospc": 0}})
    };
    for (name, reps) in [
        (
            "ext4-fresh-varmail-plain-r0-fccf9e66d4a5.json",
            vec![stats(10.0, 100.0)],
        ),
        (
            "ext4-aged.meyer-varmail-plain-r0-fb410daee4cc.json",
            vec![stats(20.0, 300.0), stats(40.0, 200.0)],
        ),
    ] {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fx("cells/aged").join(name)).unwrap())
                .unwrap();
        v["workload_report"] = serde_json::json!({"reps": reps.iter().map(|f| serde_json::json!({"flowops": [f]})).collect::<Vec<_>>()});
        std::fs::write(d.path().join(name), v.to_string()).unwrap();
    }
    let set = load(&[d.path().to_path_buf()], &AnalysisOptions::default()).unwrap();
    let curves =
        fsage_experiment::analysis::latency_curves::from_cells(set.cells.iter().map(|c| &c.item));
    assert_eq!(curves.len(), 2);
    let aged = curves.iter().find(|c| !c.state.is_fresh()).unwrap();
    assert_eq!(aged.reps, 2);
    let labels: Vec<&str> = aged.points.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(labels, ["p50", "p90", "p99", "p99.9", "max"]);
    assert_eq!(aged.points[0].1, 30.0, "mean of the p50s");
    assert_eq!(aged.points[3].1, 240.0, "mean of the p99.9s");
    assert_eq!(aged.points[4].1, 300.0, "the largest max");
    let html = export(&Html::default(), &set);
    assert!(html.contains("latency percentiles per flowop (log axis)"));
    assert!(html.contains(">\np99.9\n<"), "the p99.9 tick");
    assert!(html.contains(">\n100 µs\n<"), "ticks with units");
    // The synthetic fixtures have no workload reports: p99 and max only.
    let set = load(&all_inputs(), &AnalysisOptions::default()).unwrap();
    let html = export(
        &Html {
            sections: vec![fsage_report::html::Section::Latency],
        },
        &set,
    );
    assert!(html.contains(">\np99\n<") && html.contains(">\nmax\n<"));
    assert!(!html.contains(">\np99.9\n<"));
}

/// Age, bench, report by hand: an aging run and two `bench run --json` results (the aged image
/// and a fresh one) load as what they are, each gets its summary line, and the page its bench
/// section with both runs.
#[test]
fn bench_results_are_read_and_shown_side_by_side() {
    let inputs = [
        fx("bench/aged-ext4.run.json"),
        fx("bench/varmail-fresh-ext4.json"),
        fx("bench/varmail-aged-ext4.json"),
    ];
    let set = load(&inputs, &AnalysisOptions::default()).unwrap();
    assert_eq!(set.runs.len(), 1);
    assert_eq!(set.bench.len(), 2);
    assert!(set.cells.is_empty() && set.analyses.is_empty());
    assert_eq!(set.bench[0].name, "varmail-fresh-ext4");
    let text = export(&Text, &set);
    let line = text
        .lines()
        .find(|l| l.starts_with("bench varmail-aged-ext4: varmail on "))
        .unwrap_or_else(|| panic!("{text}"));
    let s = &set.bench[1].item.summary;
    assert!(
        line.contains(&format!(
            "(ext4), 3 repetitions of duration 2s: {:.1} ± {:.1} ops/s, {:.1} MB/s ({:.1} MiB/s)",
            s.ops_per_sec_mean,
            s.ops_per_sec_ci95.unwrap(),
            s.mb_per_sec_mean,
            s.mb_per_sec_mean * 1e6 / 1048576.0
        )),
        "{line}"
    );
    let page = export(&Html::default(), &set);
    assert_eq!(page.matches("data-kind=\"bench\"").count(), 1);
    assert_eq!(page.matches("data-kind=\"aging\"").count(), 1);
    assert!(page.contains("<td class=\"l\">bench run</td>"));

    // A bench result that does not parse says what it looked like.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("broken.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&inputs[1]).unwrap()).unwrap();
    v["reps"] = serde_json::json!("three");
    std::fs::write(&p, v.to_string()).unwrap();
    let e = load(&[p], &AnalysisOptions::default()).unwrap_err();
    assert!(
        e.message
            .contains("broken.json: looks like a bench run but does not parse"),
        "{}",
        e.message
    );
}

/// A frag report of f2fs (no free extents; segments from segment_info) shows its segment chart
/// and table in the frag section and its segment table in the text; ext4 reports alone show
/// neither.
#[test]
fn a_log_structured_report_shows_its_segments() {
    let ext4 = load(&[fx("fresh-ext4.frag.json")], &AnalysisOptions::default()).unwrap();
    let html = export(&Html::default(), &ext4);
    assert!(!html.contains("segments by valid share"));
    let info = "format: segment_type|valid_blocks\n\
                segment_type(0:HD, 1:WD, 2:CD, 3:HN, 4:WN, 5:CN)\n\
                0         3|512 4|1   0|0   0|0   1|256 2|51  0|512 1|460 0|0   0|0  \n";
    let segments = fsage_measure::segments::parse_f2fs_segment_info(info).unwrap();
    let mut r: fsage_measure::FragReport =
        serde_json::from_str(&std::fs::read_to_string(fx("fresh-ext4.frag.json")).unwrap())
            .unwrap();
    r.fs_type = "f2fs".into();
    r.block_size = 4096;
    r.free_space = None;
    r.segments = Some(segments);
    let t = export(&Text, &r);
    assert!(
        t.contains("Segments (f2fs segment_info): 10 of 2 MiB (512 blocks); 4 free (40.00%), 2 full (20.00%), 4 partly valid (40.00%)"),
        "{t}"
    );
    assert!(t.contains("50% ..  60%           1   10.00%"), "{t}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("aged-f2fs.frag.json");
    std::fs::write(&p, serde_json::to_string(&r).unwrap()).unwrap();
    let set = load(
        &[fx("fresh-ext4.frag.json"), p],
        &AnalysisOptions::default(),
    )
    .unwrap();
    assert_eq!(set.frags.len(), 2);
    let html = export(&Html::default(), &set);
    assert!(html.contains("segments by valid share"), "no segment chart");
    assert!(html.contains("cleaning cost"));
    assert!(html.contains("f2fs segment_info"));
}

/// A Git series written before each model kind had its own counters (docs/experiments/conway-ssd:
/// nginx on xfs costed on aged SSD drives) still reads, its SSD read counters among the SSD's
/// own, and the text names them.
#[test]
fn a_series_with_the_older_ssd_counters_reads_with_them() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/experiments/conway-ssd/nginx-xfs.json");
    let s: fsage_results::git::GitSeries =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let last = s.rows.last().unwrap();
    let m = last.aged.modeled_on("ssd-sata").unwrap();
    let st = m.stats.as_ref().unwrap();
    let c = st.ssd().expect("an SSD's counters");
    assert_eq!(st.requests.reads, c.read_sizes.total());
    assert!(
        c.read_bytes > 0 && c.host_flash_reads > 0 && c.read_dies > 0,
        "{c:?}"
    );
    let text = export(&Text, &s);
    let line = format!("ssd-sata at pull {}, aged: ", last.pulls);
    let l = text
        .lines()
        .find(|l| l.starts_with(&line))
        .unwrap_or_else(|| panic!("{line} in {text}"));
    assert!(
        l.contains("flash reads per read") && l.contains("dies per read"),
        "{l}"
    );
}

/// Cells of one comparison whose working copies were on tmpfs and on a disk: the report flags
/// the comparison (issue 34: xfs ran 1.7-2.6× faster in memory), on the page and in the notes.
#[test]
fn a_comparison_mixing_tmpfs_and_disk_working_copies_is_flagged() {
    let d = tempfile::tempdir().unwrap();
    let storage = |disk: bool| {
        serde_json::json!({
            "setting": if disk { "images" } else { "tmpfs" },
            "kind": if disk { "disk" } else { "tmpfs" },
            "fs_type": if disk { "ext4" } else { "tmpfs" },
            "device": if disk { "/dev/vda" } else { "tmpfs" },
            "root": if disk { "/var/tmp/i" } else { "/dev/shm" },
        })
    };
    let write_all = |disk_r1: bool| {
        for e in std::fs::read_dir(fx("cells/aged")).unwrap().flatten() {
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
            let r1 = v["cell"]["rep"] == 1;
            v["environment"]["storage"] = storage(disk_r1 && r1);
            std::fs::write(d.path().join(e.file_name()), v.to_string()).unwrap();
        }
    };
    write_all(false);
    let set = load(&[d.path().to_path_buf()], &AnalysisOptions::default()).unwrap();
    let html = export(&Html::default(), &set);
    assert!(!html.contains("different storage"));
    write_all(true);
    let set = load(&[d.path().to_path_buf()], &AnalysisOptions::default()).unwrap();
    let html = export(&Html::default(), &set);
    assert!(
        html.contains("working copies on different storage"),
        "no flag"
    );
    assert!(html.contains("disk (ext4 on /dev/vda)"));
    let notes = &set.analyses[0].item.notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("different storage") && n.contains("tmpfs")),
        "{notes:?}"
    );
}
