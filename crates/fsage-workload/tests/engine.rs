//! The engine on a plain directory (no mount needed): flowop accounting, the seed, the op count,
//! the target rules and a fileset that does not fit.

use fsage_workload::{run, Error, NoObserver, RunConfig, Stop, Workload};
use std::time::Duration;

fn small_fileserver(threads: &str) -> Workload {
    Workload::builtin("fileserver")
        .unwrap()
        .with_vars(&[
            ("nfiles", "200"),
            ("nthreads", threads),
            ("filesize", "16k"),
            ("iosize", "64k"),
        ])
        .unwrap()
}

#[test]
fn fileserver_flowop_counts_agree_within_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let w = small_fileserver("4");
    let cfg = RunConfig {
        stop: Some(Stop::Duration(Duration::from_millis(700))),
        warmup: Duration::from_millis(200),
        ..RunConfig::default()
    };
    let r = run(&w, &cfg, &dir.path().join("t"), &mut NoObserver).unwrap();
    let rep = &r.reps[0];
    assert_eq!(rep.flowops.len(), 11);
    let counts: Vec<u64> = rep.flowops.iter().map(|f| f.stats.ops).collect();
    let (lo, hi) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
    assert!(lo > 0, "{counts:?}");
    assert!(
        hi - lo <= 4,
        "counts differ by more than the 4 threads: {counts:?}"
    );
    assert_eq!(rep.overall.ops, counts.iter().sum::<u64>());
    // The measured interval is the duration plus at most the last operation in flight.
    assert!(
        rep.measured_secs >= 0.0 && rep.measured_secs < 1.5,
        "{}",
        rep.measured_secs
    );
    let o = &rep.overall;
    assert!(
        o.p50_us.unwrap() <= o.p99_us.unwrap() && o.p99_us.unwrap() <= o.max_us.unwrap() * 1.001
    );
    assert!(rep.cpu_us_per_op.is_some());
    // createfile and deletefile balance: the fileset has as many files as it began with, give or
    // take the files the threads were creating when they stopped.
    let files = walk_files(&dir.path().join("t/bigfileset"));
    assert!(
        (160i64 - files as i64).abs() <= 4,
        "{files} files, 160 preallocated"
    );
}

#[test]
fn cpu_time_per_flowop_is_sampled_and_agrees_in_scale_with_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let w = small_fileserver("2");
    let cfg = RunConfig {
        stop: Some(Stop::Ops(20_000)),
        ..RunConfig::default()
    };
    let r = run(&w, &cfg, &dir.path().join("t"), &mut NoObserver).unwrap();
    let rep = &r.reps[0];
    let overall_cpu = rep.cpu_us_per_op.unwrap();
    // One operation in 251 of each thread is sampled.
    let samples: u64 = rep.flowops.iter().map(|f| f.cpu_samples).sum();
    let ops = rep.overall.ops;
    assert!(
        samples + 2 >= ops / 251 && samples <= ops / 251 + 2,
        "{samples} samples of {ops} operations"
    );
    // Every flowop with a sample has a figure, and weighted by operations they agree with the
    // threads' whole CPU time in scale (a unit slip would be 1000 times off; sampling keeps them
    // some percent apart).
    let mut weighted = 0.0;
    for f in &rep.flowops {
        assert_eq!(f.cpu_us_per_op.is_some(), f.cpu_samples > 0, "{}", f.name);
        weighted += f.cpu_us_per_op.unwrap_or(0.0) * f.stats.ops as f64;
    }
    let per_op = weighted / ops as f64;
    assert!(
        per_op > overall_cpu / 4.0 && per_op < overall_cpu * 4.0,
        "per flowop {per_op} us/op against {overall_cpu} overall"
    );
}

fn walk_files(p: &std::path::Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            n += walk_files(&e.path());
        } else {
            n += 1;
        }
    }
    n
}

#[test]
fn an_op_count_is_exact_and_a_seed_repeats_every_choice() {
    let w = small_fileserver("1");
    let go = |seed: u64| {
        let dir = tempfile::tempdir().unwrap();
        let cfg = RunConfig {
            stop: Some(Stop::Ops(500)),
            seed,
            ..RunConfig::default()
        };
        let r = run(&w, &cfg, &dir.path().join("t"), &mut NoObserver).unwrap();
        assert_eq!(r.reps[0].overall.ops, 500);
        r.reps[0]
            .flowops
            .iter()
            .map(|f| (f.stats.ops, f.stats.bytes_read, f.stats.bytes_written))
            .collect::<Vec<_>>()
    };
    let a = go(5);
    assert_eq!(a, go(5), "the same seed must issue the same operations");
    assert_ne!(a, go(6), "another seed should choose other files and sizes");
    // Ops mode with several threads still stops at exactly N.
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        stop: Some(Stop::Ops(777)),
        ..RunConfig::default()
    };
    let r = run(
        &small_fileserver("3"),
        &cfg,
        &dir.path().join("t"),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(r.reps[0].overall.ops, 777);
}

/// The bytes written come from a generator apart from the choices: a seed picks the same files,
/// sizes and offsets whatever `--data` says.
#[test]
fn the_data_pattern_does_not_change_a_seeds_choices() {
    use fsage_workload::DataPattern;
    let w = small_fileserver("1");
    let go = |data: DataPattern| {
        let dir = tempfile::tempdir().unwrap();
        let cfg = RunConfig {
            stop: Some(Stop::Ops(500)),
            seed: 9,
            data,
            ..RunConfig::default()
        };
        let r = run(&w, &cfg, &dir.path().join("t"), &mut NoObserver).unwrap();
        r.reps[0]
            .flowops
            .iter()
            .map(|f| (f.stats.ops, f.stats.bytes_read, f.stats.bytes_written))
            .collect::<Vec<_>>()
    };
    let a = go(DataPattern::Incompressible);
    assert_eq!(a, go(DataPattern::Zeros));
    assert_eq!(a, go(DataPattern::Compressible(50)));
}

#[test]
fn reps_give_a_confidence_interval_and_reuse_needs_asking() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let w = Workload::builtin("varmail")
        .unwrap()
        .with_vars(&[("nfiles", "100"), ("nthreads", "2")])
        .unwrap();
    let cfg = RunConfig {
        stop: Some(Stop::Ops(300)),
        reps: 3,
        ..RunConfig::default()
    };
    let r = run(&w, &cfg, &t, &mut NoObserver).unwrap();
    assert_eq!(r.reps.len(), 3);
    assert!(r.summary.ops_per_sec_ci95.is_some());
    // The target now holds a fileset: refused without reuse, accepted with it.
    let e = run(&w, &cfg, &t, &mut NoObserver).unwrap_err();
    assert!(matches!(e, Error::Target(_)), "{e}");
    assert!(e.to_string().contains("earlier fsage bench run"), "{e}");
    let cfg1 = RunConfig {
        reuse: true,
        reps: 1,
        ..cfg.clone()
    };
    run(&w, &cfg1, &t, &mut NoObserver).unwrap();
    // A directory with someone else's files is refused, and left alone.
    let other = dir.path().join("o");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("thesis.tex"), "x").unwrap();
    let e = run(&w, &cfg1, &other, &mut NoObserver).unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);
}

#[test]
fn a_fileset_that_does_not_fit_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let w = Workload::parse(
        "set $n=1000\n\ndefine fileset name=big,size=1t,entries=$n,prealloc=100\ndefine process name=p {\n thread name=t {\n  flowop statfile name=s,filesetname=big\n }\n}\nrun 1\n",
        "huge.f",
    )
    .unwrap();
    let e = run(
        &w,
        &RunConfig::default(),
        &dir.path().join("t"),
        &mut NoObserver,
    )
    .unwrap_err();
    let m = e.to_string();
    assert!(m.starts_with("huge.f:3: fileset big does not fit"), "{m}");
    // Refused from its size before anything was made.
    assert!(!dir.path().join("t").exists());
}

#[test]
fn a_fileset_that_runs_dry_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    let w = Workload::parse(
        "define fileset name=full,size=1k,entries=3,prealloc=100\ndefine process name=p {\n thread name=t {\n  flowop createfile name=c,filesetname=full,fd=1\n  flowop closefile name=cl,fd=1\n }\n}\nrun 1\n",
        "dry.f",
    )
    .unwrap();
    let e = run(
        &w,
        &RunConfig::default(),
        &dir.path().join("t"),
        &mut NoObserver,
    )
    .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("fileset full ran dry") && m.contains("raise entries"),
        "{m}"
    );
}

/// `opennext` is Filebench's descriptor rotor: each operation takes the next of 128 slots of the
/// thread, opening a file there at the slot's first use (an operation of the flowop too) and
/// keeping it open. After more than 128 passes, the reads count exactly 128 more operations than
/// the hog beside them: one open per slot, not one per pass.
#[test]
fn opennext_rotates_over_128_descriptors_and_counts_each_open() {
    let dir = tempfile::tempdir().unwrap();
    let w = Workload::parse(
        "define fileset name=data,path=/tmp,size=64k,entries=4,dirwidth=4,prealloc=100\n\
         define process name=p\n{\n  thread name=t\n  {\n    \
         flowop read name=rd,filesetname=data,iosize=4k,random,opennext\n    \
         flowop hog name=hg,value=1\n  }\n}\nrun 1\n",
        "rotor.f",
    )
    .unwrap();
    let cfg = RunConfig {
        stop: Some(Stop::Duration(Duration::from_millis(500))),
        ..RunConfig::default()
    };
    let r = run(&w, &cfg, &dir.path().join("t"), &mut NoObserver).unwrap();
    let ops = |n: &str| {
        r.reps[0]
            .flowops
            .iter()
            .find(|f| f.name == n)
            .unwrap()
            .stats
            .ops
    };
    assert!(ops("hg") > 128, "too few passes to wrap: {}", ops("hg"));
    let extra = ops("rd") - ops("hg");
    // The last pass may stop between the read and the hog.
    assert!(
        extra == 128 || extra == 129,
        "{} reads, {} hogs",
        ops("rd"),
        ops("hg")
    );
}

/// What `--data` asks is what reaches the files, preallocated and written by flowops alike:
/// zeros for `zeros` and `filebench`, 4 KiB blocks a standard compressor (zstd, each block on
/// its own, as a compressing drive sees a page) takes about N% away from for `N%`, blocks it
/// cannot shrink for `incompressible`; the result records the choice.
#[test]
fn the_data_pattern_is_what_the_files_hold() {
    use fsage_workload::DataPattern;
    for (data, lo, hi) in [
        (DataPattern::Incompressible, 0.98, 1.01),
        (DataPattern::Compressible(50), 0.45, 0.60),
        (DataPattern::Compressible(80), 0.15, 0.30),
        (DataPattern::Zeros, 0.0, 0.0),
        (DataPattern::Filebench, 0.0, 0.0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let w = small_fileserver("2");
        let cfg = RunConfig {
            stop: Some(Stop::Ops(400)),
            data,
            ..RunConfig::default()
        };
        let t = dir.path().join("t");
        let r = run(&w, &cfg, &t, &mut NoObserver).unwrap();
        assert_eq!(r.data, data);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["data"], data.name());
        let written: u64 = r.reps[0]
            .flowops
            .iter()
            .map(|f| f.stats.bytes_written)
            .sum();
        assert!(written > 0, "{data}: nothing written by the flowops");
        let (mut raw, mut packed, mut nonzero) = (0usize, 0usize, 0usize);
        for f in walk(&t.join("bigfileset")) {
            let b = std::fs::read(&f).unwrap();
            raw += b.len();
            nonzero += b.iter().filter(|&&x| x != 0).count();
            for block in b.chunks(4096) {
                packed += zstd::bulk::compress(block, 3).unwrap().len();
            }
        }
        assert!(raw > 1 << 20, "{data}: {raw} bytes");
        let ratio = packed as f64 / raw as f64;
        if hi == 0.0 {
            assert_eq!(nonzero, 0, "{data}: {nonzero} non-zero bytes");
        } else {
            assert!(lo <= ratio && ratio <= hi, "{data}: zstd ratio {ratio:.3}");
        }
    }
}

fn walk(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}
