//! Regression: `profile show` predicted 191.7 GiB written where the run wrote 245.5 GiB. The
//! prediction now runs the planner itself (exact up to 5 million ticks), and memory is estimated before allocating.

use fsage_plan::{estimate_memory, Planner};

mod common;

#[test]
fn the_bytes_written_prediction_matches_a_run_to_t() {
    for (name, cap) in [
        ("agrawal", 256u64 << 20),
        ("meyer", 256 << 20),
        ("dabre", 1 << 30),
    ] {
        let p = fsage_profile::builtin(name).unwrap();
        let mut plan = Planner::new(&p, common::cfg(cap, 0.8, 3)).unwrap();
        let predicted = plan.expected_bytes_written() as f64;
        while plan.next_op().is_some() {}
        let actual = plan.counters.bytes_written as f64;
        // Under 5 million ticks the prediction runs the whole plan: it must be exact.
        assert_eq!(
            predicted, actual,
            "{name}: predicted {predicted}, wrote {actual}"
        );
    }
}

#[test]
fn an_exabyte_plan_is_estimated_not_allocated() {
    let p = fsage_profile::builtin("agrawal").unwrap();
    let e = estimate_memory(&p, &common::cfg(8 << 60, 0.8, 1));
    assert!(e.live_files > 1_000_000_000_000, "{e:?}");
}
