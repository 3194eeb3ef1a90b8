//! `fsage experiment plan` on the shipped examples and on a bad file.

mod common;

use common::*;
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fsage-experiment/examples")
        .join(name)
}

#[test]
fn plan_prints_every_cell_and_the_estimate() {
    let o = fsage_ok([
        "experiment",
        "plan",
        example("latency-sweep.toml").to_str().unwrap(),
    ]);
    let out = stdout(&o);
    // 3 fs x 1 state x 2 workloads x 3 reps x 20 latencies (0..10 ms by 1 ms and 0..1 ms by
    // 100 µs share 0 and 1 ms).
    assert!(out.contains(": 360 cells"), "{out}");
    assert!(out.contains("estimate: "), "{out}");
    let j: serde_json::Value = serde_json::from_slice(
        &fsage_ok([
            "experiment",
            "plan",
            "--json",
            example("quick.toml").to_str().unwrap(),
        ])
        .stdout,
    )
    .unwrap();
    let cells = j["cells"].as_array().unwrap();
    // ext4: fresh, aged, image; xfs: fresh, aged = 5 x 2 workloads x 2 reps x 3 latencies.
    assert_eq!(cells.len(), 60);
    let ids: std::collections::BTreeSet<&str> =
        cells.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 60);
}

#[test]
fn a_bad_experiment_is_refused_with_its_line() {
    let d = tmp();
    let bad = d.path().join("bad.toml");
    let text = std::fs::read_to_string(example("aged-vs-fresh.toml"))
        .unwrap()
        .replace("\"100us\"", "\"100 parsecs\"");
    std::fs::write(&bad, text).unwrap();
    let o = fsage(["experiment", "plan", bad.to_str().unwrap()]);
    expect_code(&o, 2, "bad latency");
    let err = stderr(&o);
    assert!(err.contains("bad.toml:34:"), "{err}");
    assert!(err.contains("unknown unit"), "{err}");
}
