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
    let o = expect_bad_input(&["bench", "planner", "--live", "0", "--ticks", "10"], "0");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}
