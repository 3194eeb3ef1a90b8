//! The run loop against the mock backend: full file systems (at once and late), other failures,
//! checkpoints and the saved stopping conditions, and op-log replay as a source. No root needed.

use fsage_exec::mock::{Fault, Mock};
use fsage_exec::{
    oplog, run, run_source, Checkpointing, OpLog, OpLogSource, RunCtx, Silent, State,
    StopConditions, StopReason,
};
use fsage_plan::{PlanConfig, Planner};
use std::time::Duration;

fn planner() -> Planner {
    let p = fsage_profile::builtin("agrawal").unwrap();
    Planner::new(
        &p,
        PlanConfig {
            capacity: 64 << 20,
            fullness: 0.5,
            block_size: 4096,
            seed: 5,
            exact_sizes: false,
        },
    )
    .unwrap()
}

fn ctx(max_ops: u64) -> RunCtx {
    RunCtx {
        stop: StopConditions {
            max_ops: Some(max_ops),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn a_refused_create_is_dropped_logged_and_the_run_goes_on() {
    const ENOSPC: i32 = 28;
    let d = tempfile::tempdir().unwrap();
    let mut p = planner();
    let mut b = Mock::new().fail_at(100, Fault::Now(ENOSPC));
    let mut log = OpLog::create(&d.path().join("ops")).unwrap();
    let out = run(&mut p, &mut b, Some(&mut log), &ctx(3000), &mut Silent);
    assert_eq!(out.reason, StopReason::MaxOps);
    assert!(out.error.is_none());
    assert_eq!(p.counters.enospc, 1);
    assert_eq!(p.tick(), 3000);
    assert_eq!(
        b.applied.len(),
        2999,
        "every step but the refused one was carried out"
    );
    let text = std::fs::read_to_string(d.path().join("ops")).unwrap();
    assert_eq!(text.lines().filter(|l| l.contains(" enospc ")).count(), 1);
}

#[test]
fn a_late_full_file_system_is_absorbed_but_a_late_io_error_stops_the_run() {
    let mut p = planner();
    let mut b = Mock::new().fail_at(50, Fault::Late(28));
    let out = run(&mut p, &mut b, None, &ctx(2000), &mut Silent);
    assert_eq!(out.reason, StopReason::MaxOps);
    assert_eq!(p.counters.enospc, 1);

    let mut p = planner();
    let mut b = Mock::new().fail_at(50, Fault::Late(5));
    let out = run(&mut p, &mut b, None, &ctx(2000), &mut Silent);
    assert_eq!(out.reason, StopReason::IoError);
    let e = out.error.expect("the error is reported");
    assert_eq!(e.err.raw_os_error(), Some(5));
    assert!(p.tick() < 2000, "the run stopped early");
}

#[test]
fn an_io_error_stops_the_run_and_the_op_log_keeps_the_decision() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner();
    let mut b = Mock::new().fail_at(10, Fault::Now(5));
    let mut log = OpLog::create(&d.path().join("ops")).unwrap();
    let out = run(&mut p, &mut b, Some(&mut log), &ctx(2000), &mut Silent);
    assert_eq!(out.reason, StopReason::IoError);
    assert_eq!(p.tick(), 11);
    let text = std::fs::read_to_string(d.path().join("ops")).unwrap();
    let steps = text.lines().filter(|l| !l.starts_with("- ")).count();
    assert_eq!(
        steps, 11,
        "the failed decision is logged: resume carries it out"
    );
}

#[test]
fn checkpoints_are_written_at_start_and_end_with_the_stopping_conditions() {
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    let profile = fsage_profile::builtin("agrawal").unwrap();
    let mut p = planner();
    let mut c = ctx(4000);
    c.stop.max_overwrites = Some(50.0);
    c.checkpoint = Some(Checkpointing {
        path: state.clone(),
        interval: Duration::from_secs(3600),
        profile_name: profile.name.clone(),
        profile_toml: fsage_profile::to_toml(&profile),
        target: None,
        write_mode: "fallocate".into(),
        op_log: None,
        image: None,
        fs: None,
        json: None,
    });
    let mut b = Mock::new();
    let out = run(&mut p, &mut b, None, &c, &mut Silent);
    assert_eq!(
        out.checkpoints, 2,
        "one before the first step, one at the stop"
    );
    let st = State::load(&state).unwrap();
    assert_eq!(st.record.stopped, Some(StopReason::MaxOps));
    assert_eq!(st.record.stop.max_ops, Some(4000));
    assert_eq!(st.record.stop.max_overwrites, Some(50.0));
    assert_eq!(StopConditions::from(st.record.stop), c.stop);
    assert_eq!(st.plan.tick(), 4000);
    assert!(b.finishes >= 1);
}

#[test]
fn an_op_log_replays_as_a_source_step_for_step() {
    let d = tempfile::tempdir().unwrap();
    let mut p = planner();
    let mut b = Mock::new();
    let mut log = OpLog::create(&d.path().join("ops")).unwrap();
    run(&mut p, &mut b, Some(&mut log), &ctx(1500), &mut Silent);
    let text = std::fs::read_to_string(d.path().join("ops")).unwrap();
    let contents = oplog::read(&text, "ops").unwrap();
    assert!(
        contents.tree.created().eq(p.tree().created()),
        "same directories"
    );
    let mut src = OpLogSource::new(contents);
    let mut again = Mock::new();
    let out = run_source(&mut src, &mut again, None, &RunCtx::default(), &mut Silent);
    assert_eq!(out.reason, StopReason::Completed);
    assert_eq!(again.applied, b.applied);
    assert_eq!(again.dirs_made, p.tree().len() - 1);
}
