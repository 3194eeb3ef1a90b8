//! The command line without mounts: profiles, dry runs, reports, stopping conditions, flag errors
//! and the op log's consistency.

mod common;

use common::*;
use std::fs;
use std::path::Path;

const BUILTINS: [&str; 8] = [
    "agrawal",
    "dabre",
    "douceur",
    "grundman",
    "meyer",
    "pramod",
    "wang_lanl",
    "wang_os",
];

/// A quiet dry run of `profile` at `capacity` with extra flags; returns the parsed JSON report.
fn dry_run(dir: &Path, profile: &str, capacity: &str, extra: &[&str]) -> serde_json::Value {
    let json = dir.join(format!("report-{}.json", extra.join("_").replace('/', "_")));
    let mut args = vec![
        "age",
        "--dry-run",
        "-q",
        "-p",
        profile,
        "--capacity",
        capacity,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    fsage_ok(&args);
    read_json(&json)
}

#[test]
fn profile_list_names_the_eight_builtins() {
    let out = stdout(&fsage_ok(["profile", "list"]));
    let names: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, BUILTINS, "profile list:\n{out}");
    assert!(out.lines().next().unwrap().contains("name"), "{out}");
}

#[test]
fn profile_show_prints_tables_and_a_t_prediction() {
    let out = stdout(&fsage_ok(["profile", "show", "dabre"]));
    for want in [
        "Profile dabre",
        "File sizes (22 bins",
        "Directory depths (14 bins",
        "Ages (14 bins",
        "T = ",
        "ticks to converge",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // The prediction at a given capacity and seed is the T a dry run then takes.
    let d = tmp();
    let out = stdout(&fsage_ok([
        "profile",
        "show",
        "agrawal",
        "--capacity",
        "256MiB",
        "--seed",
        "7",
    ]));
    let t: u64 = out
        .split("T = ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no T = <ticks> in:\n{out}"));
    let j = dry_run(d.path(), "agrawal", "256MiB", &["--seed", "7"]);
    assert_eq!(j_u64(&j, "t_estimate"), t);
}

#[test]
fn profile_show_of_a_bad_toml_names_file_and_line() {
    let d = tmp();
    let bad = d.path().join("broken.toml");
    fs::write(&bad, "name = \"x\"\nfullness = 0.8\n[[size]\nbins = 3\n").unwrap();
    let o = fsage(["profile", "show", bad.to_str().unwrap()]);
    expect_code(&o, 2, "profile show of a bad TOML");
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}:3", bad.display())),
        "the error should name {}:3, got: {err}",
        bad.display()
    );
    assert!(stdout(&o).is_empty(), "nothing on stdout: {}", stdout(&o));

    // A well-formed TOML whose content is wrong is also refused with exit 2 and the file named.
    let wrong = d.path().join("wrong.toml");
    let text = stdout(&fsage_ok(["profile", "show", "meyer", "--toml"]))
        .replace("fullness = 0.8", "fullness = 1.8");
    fs::write(&wrong, text).unwrap();
    let o = fsage(["profile", "show", wrong.to_str().unwrap()]);
    expect_code(&o, 2, "profile show of a profile with fullness 1.8");
    expect_stderr(&o, "wrong.toml");
}

/// A small agrawal-like profile in the Geriatrix three-file format.
fn write_geriatrix(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("size_distribution.txt"),
        "5\n128 16\n2048 50\n32768 35\n524288 10\n2097152 4\n\nFormat:\n<number of observations>\n<size in bytes> <weight in integers>\n",
    )
    .unwrap();
    fs::write(
        dir.join("dir_distribution.txt"),
        "4\n1 1 1\n2 2 5\n3 14 13\n4 15 19\n\nFormat:\n<number of observations>\n<depth> <weight in integers> <subdirs>\n",
    )
    .unwrap();
    fs::write(
        dir.join("age_distribution.txt"),
        "4\n10.74 1\n240 20\n5502.98 144\n122640 1\n\nFormat:\n<number of observations>\n<age> <weight in integers>\n",
    )
    .unwrap();
}

#[test]
fn profile_import_writes_a_toml_that_show_and_age_accept() {
    let d = tmp();
    let src = d.path().join("agrawal_small");
    write_geriatrix(&src);
    let out = d.path().join("small.toml");
    let o = fsage_ok([
        "profile",
        "import",
        src.to_str().unwrap(),
        "--fullness",
        "0.7",
        "-o",
        out.to_str().unwrap(),
    ]);
    expect_stderr(&o, "agrawal_small");
    let text = fs::read_to_string(&out).unwrap();
    assert!(text.contains("name = \"agrawal_small\""), "{text}");
    assert!(text.contains("fullness = 0.7"), "{text}");

    let shown = stdout(&fsage_ok([
        "profile",
        "show",
        out.to_str().unwrap(),
        "--capacity",
        "64MiB",
    ]));
    assert!(shown.contains("Profile agrawal_small"), "{shown}");
    assert!(shown.contains("File sizes (5 bins"), "{shown}");
    assert!(shown.contains("Directory depths (4 bins"), "{shown}");
    assert!(shown.contains("Ages (4 bins"), "{shown}");
    assert!(shown.contains("T = "), "{shown}");
    // The TOML it prints back is the file it was read from.
    let again = stdout(&fsage_ok([
        "profile",
        "show",
        out.to_str().unwrap(),
        "--toml",
    ]));
    assert_eq!(again, text);

    // It ages (dry run) to convergence.
    let j = dry_run(d.path(), out.to_str().unwrap(), "64MiB", &[]);
    assert_eq!(j_str(&j, "stop_reason"), "converged");
    assert_eq!(j_str(&j, "profile"), "agrawal_small");
    assert_eq!(j_f64(&j, "fullness"), 0.7);

    // Importing over an existing file needs --force.
    let o = fsage([
        "profile",
        "import",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    expect_code(&o, 2, "import over an existing file");
    expect_stderr(&o, "--force");
    assert_eq!(fs::read_to_string(&out).unwrap(), text, "file was changed");

    // A broken Geriatrix file is refused naming its file and line.
    fs::write(
        src.join("age_distribution.txt"),
        "4\n10.74 1\n240 twenty\n5502.98 144\n122640 1\n",
    )
    .unwrap();
    let o = fsage(["profile", "import", src.to_str().unwrap()]);
    expect_code(&o, 2, "import of a broken age file");
    expect_stderr(&o, "age_distribution.txt:3");
}

#[test]
fn dry_run_op_log_is_deterministic_per_seed() {
    let d = tmp();
    let log = |name: &str, seed: &str| {
        let p = d.path().join(name);
        Age::plan("agrawal", "256MiB")
            .seed(seed)
            .op_log(p.to_str().unwrap())
            .run_ok();
        fs::read(&p).unwrap()
    };
    let a = log("a.log", "7");
    let b = log("b.log", "7");
    let c = log("c.log", "8");
    assert!(a.len() > 100_000, "op log too short: {} bytes", a.len());
    assert!(a == b, "the same seed gave different op logs");
    assert!(a != c, "seeds 7 and 8 gave the same op log");
}

#[test]
fn json_report_has_the_documented_keys_and_agrawal_converges_at_t() {
    let d = tmp();
    let j = dry_run(d.path(), "agrawal", "256MiB", &["--seed", "7"]);
    for key in [
        "stop_reason",
        "ticks",
        "elapsed_s",
        "ops_per_s",
        "bytes_written",
        "overwrites",
        "live_files",
        "live_bytes",
        "t_estimate",
        "converged",
        "chi2_p",
        "age",
        "size",
        "depth",
    ] {
        assert!(j.get(key).is_some(), "report lacks {key:?}: {j:#}");
    }
    for h in ["age", "size", "depth"] {
        let bins = j[h]["bins"]
            .as_array()
            .unwrap_or_else(|| panic!("{h}.bins is not an array"));
        assert!(!bins.is_empty(), "{h}.bins is empty");
        let mut ideal = 0.0;
        for b in bins {
            assert!(b["ideal"].is_number(), "{h} bin without ideal: {b}");
            assert!(b["actual"].is_number(), "{h} bin without actual: {b}");
            ideal += b["ideal"].as_f64().unwrap();
        }
        assert!((ideal - 1.0).abs() < 1e-6, "{h}: ideals sum to {ideal}");
        assert!(j[h]["rmse"].is_number(), "{h} without rmse");
    }
    assert_eq!(j["size"]["bins"].as_array().unwrap().len(), 11);
    assert_eq!(j["depth"]["bins"].as_array().unwrap().len(), 15);
    assert_eq!(j["age"]["bins"].as_array().unwrap().len(), 10);

    assert_eq!(j_str(&j, "stop_reason"), "converged");
    assert_eq!(j["converged"], serde_json::Value::Bool(true));
    assert_eq!(j_u64(&j, "ticks"), j_u64(&j, "t_estimate"));
    assert_eq!(j_u64(&j, "capacity"), 256 << 20);
    assert_eq!(j_u64(&j, "seed"), 7);
    // At perfect convergence the age histogram fits.
    assert!(j_f64(&j, "chi2_p") > 0.5, "chi2_p {}", j["chi2_p"]);
    assert!(j_f64(&j, "elapsed_s") >= 0.0);
    assert!(j_f64(&j, "ops_per_s") > 0.0);
    let ow = j_f64(&j, "overwrites");
    let bw = j_u64(&j, "bytes_written") as f64 / (256u64 << 20) as f64;
    assert!(
        (ow - bw).abs() < 1e-9,
        "overwrites {ow} != bytes_written / capacity {bw}"
    );
    // The fullness is near its target, within the band.
    let live = j_u64(&j, "live_bytes");
    let target = j_u64(&j, "target_bytes");
    let band = j_u64(&j, "fullness_band_bytes");
    assert!(
        live.abs_diff(target) <= band,
        "live {live}, target {target}, band {band}"
    );
    assert!(live <= 256 << 20);
}

#[test]
fn max_ops_stops_at_exactly_that_many_ticks() {
    let d = tmp();
    let j = dry_run(d.path(), "agrawal", "256MiB", &["--max-ops", "5000"]);
    assert_eq!(j_str(&j, "stop_reason"), "max_ops");
    assert_eq!(j_u64(&j, "ticks"), 5000);
    assert_eq!(j["converged"], serde_json::Value::Bool(false));
    assert_eq!(j["conditions"]["max_ops"].as_u64(), Some(5000));
}

#[test]
fn max_overwrites_stops_just_past_the_limit() {
    let d = tmp();
    let j = dry_run(d.path(), "agrawal", "256MiB", &["--max-overwrites", "0.5"]);
    assert_eq!(j_str(&j, "stop_reason"), "max_overwrites");
    let ow = j_f64(&j, "overwrites");
    // One file is at most 8 MiB: 1/32 of the capacity.
    assert!(
        (0.5..0.5 + 1.0 / 32.0 + 1e-9).contains(&ow),
        "overwrites {ow}"
    );

    // Past the rapid phase too.
    let j = dry_run(d.path(), "agrawal", "256MiB", &["--max-overwrites", "3"]);
    assert_eq!(j_str(&j, "stop_reason"), "max_overwrites");
    let ow = j_f64(&j, "overwrites");
    assert!(
        (3.0..3.0 + 1.0 / 32.0 + 1e-9).contains(&ow),
        "overwrites {ow}"
    );
    assert!(j_u64(&j, "ticks") > j_u64(&j, "rapid_files"));
}

#[test]
fn max_time_stops_a_long_dry_run() {
    let d = tmp();
    let start = std::time::Instant::now();
    let j = dry_run(d.path(), "douceur", "1GiB", &["--max-time", "1s"]);
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(j_str(&j, "stop_reason"), "max_time");
    let e = j_f64(&j, "elapsed_s");
    assert!((1.0..5.0).contains(&e), "elapsed_s {e}");
    assert!(wall < 15.0, "the run took {wall:.1}s of wall time");
    assert!(j_u64(&j, "ticks") < j_u64(&j, "t_estimate"));
    assert_eq!(j["conditions"]["max_time_s"].as_f64(), Some(1.0));
}

#[test]
fn confidence_stops_with_a_fit_at_least_that_good() {
    let d = tmp();
    // douceur at 64 MiB reaches the fit a little before T (it is checked every 1000 ticks).
    for (profile, capacity) in [
        ("agrawal", "256MiB"),
        ("meyer", "256MiB"),
        ("wang_lanl", "256MiB"),
        ("douceur", "64MiB"),
    ] {
        let j = dry_run(d.path(), profile, capacity, &["--confidence", "0.5"]);
        let reason = j_str(&j, "stop_reason");
        let p = j_f64(&j, "chi2_p");
        match reason {
            "confidence" => {
                assert!(p >= 0.5, "{profile}: stopped on confidence with chi2_p {p}");
                assert_eq!(
                    j_u64(&j, "ticks") % 1000,
                    0,
                    "{profile}: checked every 1000 ticks"
                );
                assert!(j_u64(&j, "ticks") < j_u64(&j, "t_estimate"));
            }
            "converged" => assert_eq!(j_u64(&j, "ticks"), j_u64(&j, "t_estimate")),
            r => panic!("{profile}: --confidence 0.5 stopped with {r}"),
        }
        assert_eq!(j["conditions"]["confidence"].as_f64(), Some(0.5));
    }
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let base = ["age", "--dry-run", "-q", "-p", "agrawal"];
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--capacity", "256MiB", "--fullness", "1.5"],
            &["--fullness", "1.5"],
        ),
        (
            &["--capacity", "256MiB", "--fullness", "0"],
            &["--fullness"],
        ),
        (&["--capacity", "12XB"], &["--capacity", "12XB"]),
        (
            &["--capacity", "256MiB", "--block-size", "3000"],
            &["--block-size", "power of two"],
        ),
        (&["--capacity", "256MiB", "--max-ops", "0"], &["--max-ops"]),
        // Fullness 1 leaves no room above the target: refused up front, with the reason.
        (
            &["--capacity", "256MiB", "--fullness", "1"],
            &["no room", "--fullness"],
        ),
        (
            &["--capacity", "256MiB", "--max-time", "soon"],
            &["--max-time", "soon"],
        ),
        (
            &["--capacity", "256MiB", "--max-time=-3s"],
            &["--max-time", "-3s"],
        ),
        // A bare number could be seconds or minutes: refused, with the spelling that works.
        (
            &["--capacity", "256MiB", "--max-time", "90"],
            &["--max-time", "give a unit: 90s"],
        ),
        (
            &["--capacity", "256MiB", "--confidence", "1.5"],
            &["--confidence"],
        ),
        (
            &["--capacity", "256MiB", "--max-overwrites", "0"],
            &["--max-overwrites"],
        ),
        (
            &["--capacity", "256MiB", "--block-size", "0"],
            &["--block-size"],
        ),
        (
            &["--capacity", "256MiB", "--max-ops", "many"],
            &["--max-ops"],
        ),
        (
            &["--capacity", "256MiB", "--write-mode", "mmap"],
            &["--write-mode"],
        ),
        (
            &["--capacity", "256MiB", "--no-such-flag"],
            &["--no-such-flag"],
        ),
        // No target file system to take the capacity from.
        (&[], &["--capacity"]),
    ];
    for (extra, wants) in cases {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        let o = fsage(&args);
        expect_code(&o, 2, &format!("{extra:?}"));
        let err = stderr(&o);
        for w in *wants {
            assert!(
                err.contains(w),
                "{extra:?}: stderr should name {w:?}: {err}"
            );
        }
    }

    let o = Age::new("nosuch").dry_run().capacity("256MiB").run();
    expect_code(&o, 2, "unknown profile");
    let err = stderr(&o);
    assert!(err.contains("nosuch"), "{err}");
    for b in BUILTINS {
        assert!(err.contains(b), "the error should list built-in {b}: {err}");
    }

    let o = fsage(["profile", "show", "agrawal", "--capacity", "lots"]);
    expect_code(&o, 2, "profile show --capacity lots");
    expect_stderr(&o, "--capacity");

    let o = fsage(["frobnicate"]);
    expect_code(&o, 2, "unknown subcommand");
}

/// Checks a dry run's op log against the planner's semantics and its own report.
fn check_log_against_report(profile: &str, capacity: &str, extra: &[&str]) {
    let d = tmp();
    let log = d.path().join("ops.log");
    let mut flags = vec!["--op-log", log.to_str().unwrap()];
    flags.extend_from_slice(extra);
    let j = dry_run(d.path(), profile, capacity, &flags);
    let text = fs::read_to_string(&log).unwrap();
    let r = replay_log(&text);
    let ctx = format!("{profile} {capacity} {extra:?}");
    assert!(r.refused.is_empty(), "{ctx}: a dry run refused creates");
    assert_eq!(r.dirs.len() as u64, j_u64(&j, "directories"), "{ctx}");
    assert_eq!(r.creates, j_u64(&j, "creates"), "{ctx}");
    assert_eq!(r.deletes, j_u64(&j, "deletes"), "{ctx}");
    assert_eq!(r.live.len() as u64, j_u64(&j, "live_files"), "{ctx}");
    let bs = j_u64(&j, "block_size");
    assert_eq!(r.allocated(bs), j_u64(&j, "live_bytes"), "{ctx}");
    // One op per tick, from tick 0: the ticks are exactly 0..ticks.
    assert_eq!(r.creates + r.deletes, j_u64(&j, "ticks"), "{ctx}");
    assert_eq!(r.last_tick, Some(j_u64(&j, "ticks") - 1), "{ctx}");
    let files: u64 = j["size"]["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(files, r.live.len() as u64, "{ctx}: size histogram counts");
    // Never above the capacity.
    assert!(r.allocated(bs) <= j_u64(&j, "capacity"), "{ctx}");
}

#[test]
fn op_log_is_consistent_with_the_planner_semantics_and_the_report() {
    check_log_against_report("agrawal", "256MiB", &["--seed", "7"]);
    check_log_against_report("meyer", "128MiB", &["--seed", "2"]);
    check_log_against_report(
        "wang_lanl",
        "256MiB",
        &["--seed", "5", "--max-ops", "30000"],
    );
    check_log_against_report(
        "agrawal",
        "64MiB",
        &["--exact-sizes", "--block-size", "1024"],
    );
}

#[test]
fn replay_of_a_bad_op_log_names_the_line_and_touches_nothing() {
    let d = tmp();
    let target = d.path().join("target");
    let cases = [
        (
            "- mkdir d1 -\n0 create d1/f0 10\n1 rename d1/f0 ../f0\n",
            ":3:",
        ),
        ("- mkdir d1 -\n0 create d1/f0\n", ":2:"),
        ("0 create /etc/passwd 10\n", ":1:"),
        ("- mkdir d1 -\n0 write d1/f0 10\n", ":2:"),
        ("- mkdir d1 -\n0 frobnicate d1/f0 10\n", ":2:"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let log = d.path().join(format!("bad{i}.log"));
        fs::write(&log, text).unwrap();
        let o = fsage(["replay", log.to_str().unwrap(), target.to_str().unwrap()]);
        expect_code(&o, 2, &format!("replay of {text:?}"));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("bad{i}.log{want}")),
            "{text:?}: expected bad{i}.log{want} in: {err}"
        );
        assert!(
            !target.exists(),
            "a refused replay made {}",
            target.display()
        );
    }
}

/// Regressions from a new-user test: inputs checked before anything runs or is made.
#[test]
fn inputs_are_refused_before_anything_runs() {
    let d = tmp();
    // A report path in a missing directory: refused at once, not after the run.
    let o = Age::new("agrawal")
        .dry_run()
        .capacity("64MiB")
        .json("/nonexistent/dir/r.json")
        .run();
    expect_code(&o, 2, "--json into a missing directory");
    let e = stderr(&o);
    assert!(
        e.contains("--json") && e.contains("/nonexistent/dir"),
        "{e}"
    );
    assert!(!e.contains("T = "), "the run must not start: {e}");
    // Capacities that would eat the machine: refused with the estimate, not OOM-killed.
    // 10 TiB under a 3 GiB address-space limit aborted in an allocation before; now refused.
    for (cap, limit) in [("8EiB", None), ("10TiB", Some(3u64 << 30))] {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(["age", "--dry-run", "-p", "agrawal", "--capacity", cap]);
        if let Some(limit) = limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit only, between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    let r = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let o = cmd.output().unwrap();
        expect_code(&o, 2, &format!("--capacity {cap}"));
        expect_stderr(&o, "of memory");
    }
    // Fullness 1 leaves no room: refused with the reason, up front.
    let o = Age::new("agrawal")
        .dry_run()
        .capacity("64MiB")
        .fullness("1")
        .run();
    expect_code(&o, 2, "--fullness 1");
    expect_stderr(&o, "no room");
    // An image too small for the profile: refused before mkfs, nothing made.
    let img = d.path().join("tiny.img");
    let o = Age::new("agrawal")
        .fs("ext4")
        .size("1MiB")
        .target(s(&img))
        .run();
    expect_code(&o, 2, "--size 1MiB");
    expect_stderr(&o, "nothing was made");
    assert!(!img.exists(), "the image was made before the refusal");
}

/// Regression: lock files piled up in /run/fsage-locks, one per run ever made.
#[test]
fn a_run_leaves_no_lock_file_behind() {
    let d = tmp();
    let locks = d.path().join("locks");
    let state = d.path().join("s");
    let o = std::process::Command::new(bin())
        .args([
            "age",
            "--dry-run",
            "-q",
            "-p",
            "agrawal",
            "--capacity",
            "64MiB",
            "--max-ops",
            "1000",
            "--state",
            s(&state),
        ])
        .env("FSAGE_LOCK_DIR", &locks)
        .output()
        .unwrap();
    expect_code(&o, 0, "a dry run with a state");
    assert!(state.exists());
    let left: Vec<_> = fs::read_dir(&locks).unwrap().collect();
    assert!(left.is_empty(), "lock files left: {left:?}");
}

/// A run whose T would take days says so before it starts, naming the options that bound it;
/// a run those options already bound (to less than a day) is not warned about.
#[test]
fn a_run_longer_than_a_day_is_warned_about() {
    use std::io::BufRead;
    let d = tmp();
    let p = d.path().join("slow.toml");
    fs::write(
        &p,
        "name = \"slow\"\nfullness = 0.5\n[size]\nbins = [[4096, 1], [65536, 1]]\n\
         [depth]\nbins = [[0, 1, 0]]\n[age]\nbins = [[1, 1], [1000000000, 1]]\n",
    )
    .unwrap();
    let base = ["age", "--dry-run", "-p", s(&p), "--capacity", "64MiB"];
    // Unbounded: warned before it starts (then stopped here).
    let mut child = std::process::Command::new(bin())
        .args(base)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    // The run would go on for more than a day without the warning: stopped after 60 s, so a
    // missing warning fails the test instead of hanging it.
    let child = std::sync::Arc::new(std::sync::Mutex::new(child));
    let watchdog = {
        let child = child.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(60));
            let _ = child.lock().unwrap().kill();
        })
    };
    let mut warned = String::new();
    for line in std::io::BufReader::new(err).lines() {
        let line = line.unwrap();
        if line.contains("would take about") {
            warned = line;
            break;
        }
    }
    {
        let mut c = child.lock().unwrap();
        let _ = c.kill();
        let _ = c.wait();
    }
    drop(watchdog);
    assert!(
        warned.contains("max-ops"),
        "no warning naming the bound: {warned:?}"
    );
    // Regression: bounded by --max-ops or --max-time, it warned all the same.
    for bound in [["--max-ops", "100"], ["--max-time", "1s"]] {
        let mut a = base.to_vec();
        a.extend(bound);
        let o = fsage_ok(&a);
        let e = stderr(&o);
        assert!(!e.contains("would take about"), "{bound:?}: {e}");
    }
    let show = stdout(&fsage_ok(["profile", "show", s(&p), "--capacity", "64MiB"]));
    assert!(show.contains("Estimated time to T"), "{show}");
}
