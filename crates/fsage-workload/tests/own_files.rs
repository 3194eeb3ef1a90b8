//! fsage's own `.f` files (tests/f/), one per group of constructs of Filebench's language:
//! each parses and runs for at most about a second, and measures what it exists to measure.

use fsage_workload::{run, BenchResult, NoObserver, QuitMode, RunConfig, Stop, Workload};
use std::path::Path;
use std::time::{Duration, Instant};

fn load(name: &str) -> Workload {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/f")
        .join(name);
    Workload::from_file(&p).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn go(name: &str, secs: f64) -> BenchResult {
    let w = load(name);
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        stop: Some(Stop::Duration(Duration::from_secs_f64(secs))),
        ..RunConfig::default()
    };
    let t0 = Instant::now();
    let r = run(&w, &cfg, &dir.path().join("t"), &mut NoObserver)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "{name} took too long"
    );
    assert!(r.reps[0].overall.ops > 0, "{name}: no operation");
    r
}

fn ops(r: &BenchResult, flowop: &str) -> u64 {
    r.reps[0]
        .flowops
        .iter()
        .filter(|f| f.name == flowop)
        .map(|f| f.stats.ops)
        .sum()
}

#[test]
fn multiline_statements_arithmetic_and_define_file() {
    let w = load("multiline.f");
    let m = w.model();
    assert_eq!(m.filesets[0].name, "data");
    assert_eq!(m.filesets[0].entries, 40);
    assert!(m.filesets[1].single_file && m.filesets[1].prealloc == 100);
    assert_eq!(m.threads[0].instances, 2);
    assert_eq!(m.run_secs, Some(1), "psrun's second number is the time");
    assert!(m.notes.iter().any(|n| n.contains("debug")), "{:?}", m.notes);
    let r = go("multiline.f", 0.5);
    // writewholefile copies the 64 KiB define file.
    let ww = r.reps[0].flowops.iter().find(|f| f.name == "wwf").unwrap();
    assert!(ww.stats.ops > 0 && ww.stats.bytes_written == ww.stats.ops * 65536);
}

#[test]
fn random_variables_draw_sizes() {
    let r = go("randvars.f", 0.5);
    let f = |n: &str| {
        r.reps[0]
            .flowops
            .iter()
            .find(|f| f.name == n)
            .unwrap()
            .clone()
    };
    let rc = f("rc");
    let per = rc.stats.bytes_read as f64 / rc.stats.ops as f64;
    assert!((1024.0..=8192.0).contains(&per), "cvar-uniform reads {per}");
    assert!(ops(&r, "s") > 0);
}

#[test]
fn composite_flowops_expand_with_their_parameters() {
    let w = load("composite.f");
    let t = &w.model().threads;
    // churn: 3 + readone x 3 (3 each) + 1 = 13; tb: (3 + 3 + 1) x 2 = 14.
    assert_eq!(t[0].flowops.len(), 13);
    assert_eq!(t[1].flowops.len(), 14);
    assert_eq!(t[1].flowops[0].fileset_name.as_deref(), Some("b"));
    let r = go("composite.f", 0.5);
    // One row per (thread, name): readall of thread ta runs three times per create.
    let ta = |n: &str| {
        r.reps[0]
            .flowops
            .iter()
            .find(|f| f.thread == "ta" && f.name == n)
            .unwrap()
            .stats
            .ops
    };
    let (c, ra) = (ta("create"), ta("readall"));
    assert!(ra >= 3 * c.saturating_sub(1) && ra <= 3 * c + 3, "{c} {ra}");
}

#[test]
fn rate_limits_hold_the_event_rate() {
    let r = go("rates.f", 1.0);
    let secs = r.reps[0].measured_secs.max(0.5);
    // 200 events a second shared by four threads: no limited flowop runs faster than that.
    for n in ["st1", "st2", "rd"] {
        let rate = ops(&r, n) as f64 / secs;
        assert!(rate > 0.0 && rate < 260.0, "{n}: {rate}/s");
    }
    let big = r.reps[0].flowops.iter().find(|f| f.name == "big").unwrap();
    // bwlimit: one event is a MiB, so 32 KiB reads are not held at 200 a second.
    assert!(big.stats.ops > 0);
}

#[test]
fn run_until_done_ends_and_reports_its_rate() {
    let w = load("untildone.f");
    assert_eq!(w.model().mode, QuitMode::FirstDone);
    let r = go("untildone.f", 30.0);
    let rep = &r.reps[0];
    assert_eq!(ops(&r, "create"), 300, "every file created, then done");
    assert!(
        rep.done.as_deref().unwrap().contains("used up"),
        "{:?}",
        rep.done
    );
    assert!(rep.measured_secs < 10.0 && rep.overall.ops_per_sec > 0.0);

    let r = go("finish.f", 30.0);
    let rep = &r.reps[0];
    assert!(
        rep.done.as_deref().unwrap().contains("finishonbytes"),
        "{:?}",
        rep.done
    );
    let app = rep.flowops.iter().find(|f| f.name == "app").unwrap();
    assert_eq!(app.stats.bytes_written, 1 << 20);
    assert!(rep.measured_secs < 10.0);
}

#[test]
fn directory_filesets() {
    let r = go("dirs.f", 30.0);
    assert_eq!(ops(&r, "mkdir"), 200);
    assert_eq!(ops(&r, "rmdir"), 200);
    assert_eq!(ops(&r, "list"), 500);
    assert!(r.reps[0].measured_secs < 10.0);
}

#[test]
fn semaphores_aio_and_pacing() {
    let r = go("sync.f", 1.0);
    for n in [
        "aw", "awt", "blk", "rd", "hg", "post", "delfd", "wk", "bk", "st",
    ] {
        assert!(ops(&r, n) > 0, "{n} never ran");
    }
    let aw = r.reps[0].flowops.iter().find(|f| f.name == "aw").unwrap();
    // Every write is 8 KiB; the other operations of `aw` are its opennext opens, one per
    // descriptor slot of the rotor (128) at most.
    assert_eq!(aw.stats.bytes_written % 8192, 0);
    let writes = aw.stats.bytes_written / 8192;
    assert!(
        writes > 0 && aw.stats.ops - writes <= 128,
        "{} ops, {writes} writes",
        aw.stats.ops
    );
    // The shadows post once per read and the writer takes 4 per pass: posts and semblocks
    // stay within the high-water mark of each other.
    assert!(
        ops(&r, "post") <= 4 * ops(&r, "blk") + 16 + 3,
        "{}",
        ops(&r, "post")
    );
}
