//! Exit codes mean one thing each (README table): 0 done, 1 an operation failed, 2 bad input,
//! 130 interrupted. Each case here is one a new user met; the message says what is wrong once.

mod common;

use common::*;

/// Exit code 2, the message in stderr, and no error text repeated within one line.
fn expect_bad_input(args: &[&str], needle: &str) -> std::process::Output {
    let o = fsage(args);
    expect_code(&o, 2, &format!("fsage {args:?}"));
    let err = stderr(&o);
    assert!(
        err.contains(needle),
        "fsage {args:?}: {needle:?} not in {err}"
    );
    assert_said_once(&err);
    o
}

/// No part of an error line (between ": ") comes twice: `{:#}` prints a cause after its context,
/// so a context that already holds its cause's text doubles it.
fn assert_said_once(err: &str) {
    for line in err.lines() {
        let parts: Vec<&str> = line.split(": ").filter(|p| p.len() > 8).collect();
        for (i, p) in parts.iter().enumerate() {
            assert!(
                !parts[i + 1..].contains(p),
                "{p:?} said twice in one line: {line}"
            );
        }
        assert!(line.matches("os error").count() <= 1, "errno twice: {line}");
    }
}

#[test]
fn bench_planner_refuses_a_count_beyond_memory_before_building_it() {
    let o = expect_bad_input(
        &[
            "bench",
            "planner",
            "--live",
            "1000000000000",
            "--ticks",
            "10",
        ],
        "memory",
    );
    assert!(
        stdout(&o).is_empty(),
        "refused before the header: {}",
        stdout(&o)
    );
}

#[test]
fn bench_planner_refuses_zero_live_files() {
    let o = expect_bad_input(
        &["bench", "planner", "--live", "0", "--ticks", "10"],
        "a live-file count of 0",
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

#[test]
fn profile_show_refuses_a_capacity_beyond_memory_before_printing() {
    let o = expect_bad_input(
        &["profile", "show", "agrawal", "--capacity", "8EiB"],
        "memory",
    );
    assert!(
        stdout(&o).is_empty(),
        "printed before refusing: {}",
        stdout(&o)
    );
}

/// `profile show` checks its options as `age` does.
#[test]
fn profile_show_checks_its_options_as_age_does() {
    for (args, needle) in [
        (["--block-size", "3"], "3: must be a power of two"),
        (["--fullness", "1"], "fullness 1"),
        (["--capacity", "1KiB"], "capacity too small"),
    ] {
        let mut a = vec!["profile", "show", "agrawal"];
        a.extend(args);
        let o = expect_bad_input(&a, needle);
        assert!(stdout(&o).is_empty(), "{a:?}: {}", stdout(&o));
        // `age --dry-run` says the same.
        let mut a = vec!["age", "--dry-run", "-p", "agrawal"];
        if args[0] != "--capacity" {
            a.extend(["--capacity", "1GiB"]);
        }
        a.extend(args);
        expect_bad_input(&a, needle);
    }
}

#[test]
fn a_missing_state_file_is_bad_input_said_once() {
    expect_bad_input(
        &["age", "--resume", "/nonexistent.state"],
        "/nonexistent.state: cannot read the state file: No such file or directory",
    );
    expect_bad_input(
        &["status", "--json", "/nonexistent"],
        "No such file or directory",
    );
}

#[test]
fn bench_run_into_a_missing_parent_is_bad_input_said_once() {
    expect_bad_input(
        &["bench", "run", "varmail", "--ops", "10", "/nonexistent/x"],
        "/nonexistent/x",
    );
}

#[test]
fn frag_of_a_file_is_bad_input_as_a_missing_path_is() {
    expect_bad_input(&["frag", "/etc/passwd"], "not a directory");
    expect_bad_input(&["frag", "/nonexistent"], "no such file");
}

/// FITRIM trims the whole file system holding a path: a directory that is not a mount point is
/// refused (it trimmed the root disk).
#[test]
fn fs_trim_refuses_a_directory_that_is_not_a_mount_point() {
    let d = tmp();
    expect_bad_input(&["fs", "trim", s(d.path())], "not a mount point");
}
