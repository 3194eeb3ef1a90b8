//! Aging that survives: kill -9 at random moments and resume, with one and two threads; state files
//! that are truncated, corrupt or foreign; resume refusing decision-changing options; status; a file
//! system filled from outside during a run; an I/O error that stops a run which then resumes.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A small deterministic generator for kill delays (the test must not depend on a crate's RNG).
struct Delays(u64);
impl Delays {
    fn next(&mut self, mean: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let f = 0.3 + (self.0 % 1000) as f64 / 1000.0 * 1.4;
        mean.mul_f64(f)
    }
}

fn spawn(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fsage")
}

/// The tick a state file records, or None while there is none (or it says the run is done).
fn saved_tick(state: &Path) -> Option<u64> {
    let o = fsage(["status", "--json", s(state)]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
    (j["phase"] != "done")
        .then(|| j["ticks"].as_u64())
        .flatten()
}

/// Starts a run with `first`, then kills and resumes it with `resume` until it finishes; returns
/// how many times a still-running fsage was killed with SIGKILL. When a session saved no progress
/// the next one gets longer before its kill, so the run always gets somewhere.
fn kill_and_resume(
    first: &[&str],
    resume: &[&str],
    state: &Path,
    mean: Duration,
    seed: u64,
) -> u32 {
    let mut delays = Delays(seed);
    let mut kills = 0;
    let mut wait = mean;
    let mut last = None;
    let mut child = spawn(first);
    for _ in 0..400 {
        std::thread::sleep(delays.next(wait));
        if child.try_wait().expect("wait").is_none() {
            child.kill().expect("SIGKILL");
            kills += 1;
        }
        let status = child.wait().expect("wait");
        // A session refused (bad flags, exit 2) would otherwise be retried with ever longer waits.
        assert_ne!(status.code(), Some(2), "a session was refused as bad input");
        if !state.exists() {
            // Killed before its first checkpoint: fsage writes the state before it touches the
            // target's contents, so the run starts afresh on the still-empty target.
            wait = wait.mul_f64(1.5);
            child = spawn(first);
            continue;
        }
        let Some(tick) = saved_tick(state) else {
            return kills;
        };
        wait = if last == Some(tick) {
            wait.mul_f64(1.5)
        } else {
            mean
        };
        last = Some(tick);
        child = spawn(resume);
    }
    let _ = child.wait();
    panic!("the run did not finish after 400 resumes");
}

/// Panics with the first differing line unless the two op logs are equal byte for byte.
fn assert_same_log(want: &Path, got: &Path, what: &str) {
    let (a, b) = (
        fs::read_to_string(want).unwrap(),
        fs::read_to_string(got).unwrap(),
    );
    if a != b {
        let (la, lb): (Vec<_>, Vec<_>) = (a.lines().collect(), b.lines().collect());
        let i = la
            .iter()
            .zip(&lb)
            .position(|(x, y)| x != y)
            .unwrap_or(la.len().min(lb.len()));
        panic!(
            "{what}: op logs differ at line {} (of {} and {}): {:?} vs {:?}",
            i + 1,
            la.len(),
            lb.len(),
            la.get(i),
            lb.get(i)
        );
    }
}

fn tree_listing(root: &Path) -> (Vec<String>, Vec<(String, u64)>) {
    let t = walk(root);
    (t.dirs.into_iter().collect(), t.files.into_iter().collect())
}

fn killed_runs_equal_an_uninterrupted_one(test: &str, threads: &str) {
    let (Some(a), Some(b)) = (tmpfs_or_skip(test, "160m"), tmpfs_or_skip(test, "160m")) else {
        return;
    };
    let d = tmp();
    let (ref_log, log) = (d.path().join("ref.log"), d.path().join("run.log"));
    // The state beside the target, on the tmpfs: its fsync is cheap, so checkpoints are frequent.
    let state = b.path().join("run.state");
    let (ref_target, target) = (a.path().join("aged"), b.path().join("aged"));
    // Real data makes the run long enough to be killed many times.
    let common = [
        "-q",
        "-p",
        "agrawal",
        "--capacity",
        "128MiB",
        "--write-mode",
        "write",
        "--seed",
        "5",
    ];
    let started = Instant::now();
    let mut args = vec!["age", s(&ref_target), "--op-log", s(&ref_log)];
    args.extend(common);
    fsage_ok(&args);
    let full = started.elapsed();

    let mut first = vec!["age", s(&target), "--op-log", s(&log), "--state", s(&state)];
    first.extend(common);
    first.extend(["--threads", threads, "--checkpoint-interval", "10ms"]);
    let resume = [
        "age",
        "--resume",
        s(&state),
        "-q",
        "--threads",
        threads,
        "--checkpoint-interval",
        "50ms",
    ];
    // About 40 kills over a run (each session also pays a start-up and a reconcile).
    let kills = kill_and_resume(
        &first,
        &resume,
        &state,
        full / 40,
        0x5eed + threads.len() as u64,
    );
    assert!(
        kills >= 20,
        "{test}: only {kills} kills before the run finished"
    );
    // One last resume of the finished run changes nothing.
    fsage_ok(resume);

    assert_same_log(&ref_log, &log, &format!("{test} after {kills} kills"));
    assert_eq!(
        tree_listing(&ref_target),
        tree_listing(&target),
        "{test}: tree differs"
    );
    let r = replay_log(&fs::read_to_string(&log).unwrap());
    assert_tree_matches_log(&target, &r);
    eprintln!("{test}: {kills} kills, identical op log and tree");
}

#[test]
fn kill_9_many_times_one_thread_equals_an_uninterrupted_run() {
    killed_runs_equal_an_uninterrupted_one("kill_9_many_times_one_thread", "1");
}

#[test]
fn kill_9_many_times_two_threads_equals_an_uninterrupted_run() {
    killed_runs_equal_an_uninterrupted_one("kill_9_many_times_two_threads", "2");
}

#[test]
fn killed_dry_runs_resume_to_the_same_op_log() {
    let d = tmp();
    let (ref_log, log, state) = (
        d.path().join("ref.log"),
        d.path().join("run.log"),
        d.path().join("run.state"),
    );
    let common = ["--dry-run", "-q", "-p", "douceur", "--capacity", "16MiB"];
    let mut args = vec!["age", "--op-log", s(&ref_log)];
    args.extend(common);
    let started = Instant::now();
    fsage_ok(&args);
    let full = started.elapsed();
    let mut first = vec![
        "age",
        "--op-log",
        s(&log),
        "--state",
        s(&state),
        "--checkpoint-interval",
        "20ms",
    ];
    first.extend(common);
    let resume = [
        "age",
        "--resume",
        s(&state),
        "--dry-run",
        "-q",
        "--checkpoint-interval",
        "20ms",
    ];
    let kills = kill_and_resume(&first, &resume, &state, full / 30, 77);
    assert!(kills >= 10, "only {kills} kills");
    assert_eq!(
        fs::read(&ref_log).unwrap(),
        fs::read(&log).unwrap(),
        "op log differs"
    );
}

fn saved_state(d: &Path) -> PathBuf {
    let state = d.join("s.state");
    Age::plan("agrawal", "64MiB")
        .max_ops("20000")
        .state(s(&state))
        .run_ok();
    state
}

#[test]
fn broken_state_files_are_refused_clearly() {
    let d = tmp();
    let state = saved_state(d.path());
    let good = fs::read(&state).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() / 2].to_vec(), "truncated"),
        ("header cut", good[..20].to_vec(), "truncated"),
        (
            "flipped",
            {
                let mut b = good.clone();
                let i = b.len() - 100;
                b[i] ^= 0x40;
                b
            },
            "corrupt",
        ),
        (
            "other format",
            {
                let mut b = good.clone();
                b[12] = 99;
                b
            },
            "format 99",
        ),
        (
            "not a state",
            b"hello, world".to_vec(),
            "not an fsage state file",
        ),
        ("empty", Vec::new(), "not an fsage state file"),
        (
            "trailing",
            [good.clone(), vec![0u8; 3]].concat(),
            "trailing",
        ),
    ];
    for (what, bytes, needle) in cases {
        let p = d.path().join(format!("{}.state", what.replace(' ', "_")));
        fs::write(&p, &bytes).unwrap();
        for args in [
            vec!["status", s(&p)],
            vec!["age", "--resume", s(&p), "--dry-run"],
        ] {
            let o = fsage(&args);
            expect_code(&o, 2, what);
            let e = stderr(&o);
            assert!(e.contains(needle) && e.contains(s(&p)), "{what}: {e}");
            assert!(!e.contains("panicked"), "{what}: {e}");
        }
    }
}

#[test]
fn resume_refuses_decision_changes_and_accepts_new_stopping_conditions() {
    let d = tmp();
    let state = saved_state(d.path());
    for (flag, value) in [
        ("--seed", "9"),
        ("--capacity", "1GiB"),
        ("--fullness", "0.5"),
        ("--block-size", "1024"),
    ] {
        let o = Age::resume(s(&state)).dry_run().arg(flag).arg(value).run();
        expect_code(&o, 2, flag);
        // The library names what it refuses in words: "--block-size" is "block size".
        let what = flag.trim_start_matches("--").replace('-', " ");
        assert!(stderr(&o).contains(&what), "{flag}: {}", stderr(&o));
    }
    let o = fsage(["age", "--resume", s(&state), "--dry-run", "--exact-sizes"]);
    expect_code(&o, 2, "--exact-sizes");
    // Same values as the run are fine, and so are new stopping conditions.
    let json = d.path().join("r.json");
    Age::resume(s(&state))
        .dry_run()
        .quiet()
        .seed("1")
        .capacity("64MiB")
        .max_ops("30000")
        .json(s(&json))
        .run_ok();
    let j = read_json(&json);
    assert_eq!(j_u64(&j, "ticks"), 30000);
    assert_eq!(j_str(&j, "stop_reason"), "max_ops");
    // status reads the state alone.
    let o = fsage_ok(["status", s(&state)]);
    let out = stdout(&o);
    assert!(
        out.contains("tick 30000 of") && out.contains("agrawal"),
        "{out}"
    );
}

#[test]
fn a_file_system_filled_from_outside_is_survived() {
    let test = "a_file_system_filled_from_outside_is_survived";
    let Some(mnt) = tmpfs_or_skip(test, "96m") else {
        return;
    };
    let d = tmp();
    let (log, json) = (d.path().join("ops.log"), d.path().join("r.json"));
    let target = mnt.path().join("aged");
    let mut child = Command::new(bin())
        .args([
            "age",
            "-q",
            "-p",
            "agrawal",
            s(&target),
            "--write-mode",
            "write",
            "--op-log",
            s(&log),
            "--json",
            s(&json),
            "--max-ops",
            "60000",
        ])
        .spawn()
        .expect("spawn");
    // Once aging has filled most of its target, take the rest of the space from outside.
    let hog = mnt.path().join("hog");
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={}", s(&hog)),
            "bs=1M",
            "count=80",
        ])
        .stderr(Stdio::null())
        .status();
    let started = Instant::now();
    let status = child.wait().expect("wait");
    assert!(started.elapsed() < Duration::from_secs(120), "the run hung");
    assert_eq!(status.code(), Some(0), "the run failed");
    let j = read_json(&json);
    assert!(j_u64(&j, "enospc_events") > 0, "no ENOSPC was met: {j}");
    let r = replay_log(&fs::read_to_string(&log).unwrap());
    fs::remove_file(&hog).unwrap();
    assert_tree_matches_log(&target, &r);
}

#[test]
fn an_io_error_stops_the_run_with_a_state_to_resume_from() {
    let test = "an_io_error_stops_the_run_with_a_state_to_resume_from";
    let (Some(a), Some(b)) = (tmpfs_or_skip(test, "96m"), tmpfs_or_skip(test, "96m")) else {
        return;
    };
    let d = tmp();
    let (ref_log, log, state) = (
        d.path().join("ref.log"),
        d.path().join("run.log"),
        d.path().join("run.state"),
    );
    let (ref_target, target) = (a.path().join("aged"), b.path().join("aged"));
    let common = ["-q", "-p", "agrawal", "--capacity", "64MiB"];
    let mut args = vec!["age", s(&ref_target), "--op-log", s(&ref_log)];
    args.extend(common);
    fsage_ok(&args);
    // A create some way into the run: plant a directory where its file will go.
    let text = fs::read_to_string(&ref_log).unwrap();
    let victim = text
        .lines()
        .filter(|l| l.contains(" create "))
        .nth(3000)
        .and_then(|l| l.split(' ').nth(2))
        .unwrap()
        .to_string();
    let mut first = vec![
        "age",
        s(&target),
        "--op-log",
        s(&log),
        "--state",
        s(&state),
        "--max-ops",
        "100",
    ];
    first.extend(common);
    fsage_ok(&first);
    fs::create_dir(target.join(&victim)).unwrap();
    let o = fsage(["age", "--resume", s(&state), "-q", "--clear-limits"]);
    expect_code(&o, 1, "resume into the planted directory");
    let e = stderr(&o);
    assert!(e.contains(&victim) && e.contains("os error"), "{e}");
    let st = stdout(&fsage_ok(["status", s(&state)]));
    assert!(st.contains("I/O error") && st.contains(&victim), "{st}");
    // Take the obstacle away: the run resumes and ends as an uninterrupted run does.
    fs::remove_dir(target.join(&victim)).unwrap();
    fsage_ok(["age", "--resume", s(&state), "-q", "--clear-limits"]);
    assert_eq!(
        fs::read(&ref_log).unwrap(),
        fs::read(&log).unwrap(),
        "op log differs"
    );
    assert_eq!(tree_listing(&ref_target), tree_listing(&target));
}

#[test]
fn a_run_is_resumed_by_one_session_at_a_time_and_a_finished_one_is_left_alone() {
    let d = tmp();
    let (state, log) = (d.path().join("long.state"), d.path().join("long.log"));
    // A long dry run holds the run's lock while it works.
    let mut first = spawn(&[
        "age",
        "--dry-run",
        "-q",
        "-p",
        "douceur",
        "--capacity",
        "1GiB",
        "--state",
        s(&state),
        "--op-log",
        s(&log),
    ]);
    let t = Instant::now();
    while !state.exists() && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = Age::resume(s(&state)).dry_run().quiet().run();
    let _ = first.kill();
    let _ = first.wait();
    expect_code(&o, 2, "a second session of a running run");
    expect_stderr(&o, "another fsage is running");

    // A finished run: resume says so, exits 0 and changes nothing.
    let done = d.path().join("done.state");
    let done_log = d.path().join("done.log");
    Age::plan("agrawal", "64MiB")
        .state(s(&done))
        .op_log(s(&done_log))
        .run_ok();
    let (before_state, before_log) = (fs::read(&done).unwrap(), fs::read(&done_log).unwrap());
    let o = Age::resume(s(&done)).dry_run().run_ok();
    expect_stderr(&o, "finished run");
    assert_eq!(fs::read(&done).unwrap(), before_state);
    assert_eq!(fs::read(&done_log).unwrap(), before_log);
    // Regression: a finished run's report, lost to a bad path the first time, can be had again:
    // resume with --json writes it, from the state alone.
    let again = d.path().join("again.json");
    let o = Age::resume(s(&done)).dry_run().json(s(&again)).run_ok();
    expect_stderr(&o, "finished run");
    let j = read_json(&again);
    assert_eq!(j["stop_reason"], "converged");
    assert_eq!(j["profile"], "agrawal");
    assert_eq!(j["capacity"], 64u64 << 20);
    assert_eq!(j["ticks"], j["t_estimate"]);
    assert!(
        !j["backend"].as_str().unwrap().contains('('),
        "backend in words: {}",
        j["backend"]
    );
    assert_eq!(fs::read(&done).unwrap(), before_state);
}

/// Regression: a resumed run forgot the stopping conditions it was started with (started with
/// --max-ops and resumed with only --resume, it ran on to full convergence). It keeps each one
/// unless given again, says which, and ends exactly where the uninterrupted run ends.
#[test]
fn a_resumed_run_keeps_its_stopping_conditions_unless_given_again() {
    let d = tmp();
    let (ref_log, log, state, json) = (
        d.path().join("ref.log"),
        d.path().join("run.log"),
        d.path().join("run.state"),
        d.path().join("r.json"),
    );
    let common = ["--dry-run", "-q", "-p", "agrawal", "--capacity", "64MiB"];
    let mut args = vec!["age", "--max-ops", "20000", "--op-log", s(&ref_log)];
    args.extend(common);
    fsage_ok(&args);
    // A first session that stops at once on a tiny --max-time, with --max-ops saved beside it.
    let mut args = vec![
        "age",
        "--max-ops",
        "20000",
        "--max-time",
        "1us",
        "--op-log",
        s(&log),
        "--state",
        s(&state),
    ];
    args.extend(common);
    fsage_ok(&args);
    let ticks = |st: &Path| {
        let o = fsage_ok(["status", "--json", s(st)]);
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        j["ticks"].as_u64().unwrap()
    };
    let first = ticks(&state);
    assert!(first < 20000, "the first session stopped early ({first})");
    // Resumed with nothing: both conditions kept, so it stops at once again.
    let o = Age::resume(s(&state)).dry_run().run_ok();
    let err = stderr(&o);
    assert!(err.contains("keeps max-time"), "{err}");
    assert!(err.contains("keeps max-ops 20000"), "{err}");
    assert!(ticks(&state) < 20000);
    // Given --max-time again: it replaces the saved one; --max-ops still holds.
    let o = Age::resume(s(&state))
        .dry_run()
        .max_time("1h")
        .json(s(&json))
        .run_ok();
    let err = stderr(&o);
    assert!(err.contains("max-time 3600s replaces"), "{err}");
    assert_eq!(ticks(&state), 20000);
    let r: serde_json::Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["stop_reason"], "max_ops");
    assert_same_log(&ref_log, &log, "resumed with its saved --max-ops");
}
