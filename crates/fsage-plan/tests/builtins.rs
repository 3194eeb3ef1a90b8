//! The must-show of the aging engine: dry runs of every built-in profile at the paper's setting
//! (50 GiB, fullness 0.8; douceur at 1 GiB) reach perfect convergence: age RMSE below 0.01% and
//! size and depth fractions within 0.5 percentage points of target in every bin.

use fsage_plan::stats::{rmse, to_fractions};
use fsage_plan::Planner;

mod common;

fn check(name: &str, capacity: u64) {
    let profile = fsage_profile::builtin(name).unwrap();
    let cfg = common::cfg(capacity, 0.8, 1);
    let mut p = Planner::new(&profile, cfg).unwrap();
    while p.next_op().is_some() {}
    assert_eq!(p.tick(), p.total(), "{name}: stopped early");
    let age = to_fractions(&p.age_counts_now());
    let age_rmse = rmse(p.age_targets(), &age);
    assert!(age_rmse < 1e-4, "{name}: age RMSE {age_rmse}");
    for (kind, want, got) in [
        ("size", p.size_targets(), to_fractions(p.size_counts())),
        ("depth", p.depth_targets(), to_fractions(p.depth_counts())),
    ] {
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert!(
                (w - g).abs() < 0.005,
                "{name}: {kind} bin {i}: target {w}, got {g}"
            );
        }
    }
    // Fullness stayed near the target: within the band plus the largest single file.
    let dev = p.counters.max_deviation as f64 / capacity as f64;
    assert!(dev < 0.05, "{name}: fullness deviated by {dev}");
    eprintln!(
        "{name}: K {} T {} age RMSE {age_rmse:.2e} max fullness deviation {:.2}%",
        p.rapid_files(),
        p.total(),
        100.0 * dev
    );
}

const GIB: u64 = 1 << 30;

#[test]
fn agrawal_converges() {
    check("agrawal", 50 * GIB);
}
#[test]
fn dabre_converges() {
    check("dabre", 50 * GIB);
}
#[test]
fn douceur_converges_at_1gib() {
    check("douceur", GIB);
}
#[test]
fn grundman_converges() {
    check("grundman", 50 * GIB);
}
#[test]
fn meyer_converges() {
    check("meyer", 50 * GIB);
}
#[test]
fn pramod_converges() {
    check("pramod", 50 * GIB);
}
#[test]
fn wang_lanl_converges() {
    check("wang_lanl", 50 * GIB);
}
#[test]
fn wang_os_converges() {
    check("wang_os", 50 * GIB);
}

/// At a small capacity the theorem alone would make pramod's narrow youngest age bin span less
/// than a tick; T is widened so the bin can be filled and the fit test passes.
#[test]
fn pramod_small_capacity_fills_its_youngest_bin() {
    let profile = fsage_profile::builtin("pramod").unwrap();
    let cfg = common::cfg(256 << 20, 0.8, 1);
    let mut p = Planner::new(&profile, cfg).unwrap();
    let edges = p.age_edges().to_vec();
    assert!(p.total() as f64 >= 1.0 / edges[0]);
    while p.next_op().is_some() {}
    let counts = p.age_counts_now();
    let pval = fsage_plan::stats::chi2_p(&counts, p.age_targets());
    assert!(pval > 0.05, "chi-squared p {pval}, counts {counts:?}");
}
