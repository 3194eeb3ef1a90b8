//! Every JSON fsage writes comes from serde types: it parses, spells each value one way (the stop
//! reason as the run report spells it), and says `null` for what is missing, never "".
//! (`frag --json` is parsed by tests/frag.rs, the `age --fs` report and sidecar by tests/lab.rs.)

mod common;

use common::*;

fn keys(j: &serde_json::Value) -> Vec<&str> {
    j.as_object().unwrap().keys().map(|k| k.as_str()).collect()
}

#[test]
fn age_and_status_json_parse_with_the_documented_fields() {
    let d = tmp();
    let (state, report) = (d.path().join("s"), d.path().join("r.json"));
    fsage_ok([
        "age",
        "--dry-run",
        "-q",
        "-p",
        "meyer",
        "--capacity",
        "64MiB",
        "--max-ops",
        "5000",
        "--seed",
        "9",
        "--state",
        s(&state),
        "--json",
        s(&report),
    ]);
    let r = read_json(&report);
    for k in [
        "profile",
        "seed",
        "capacity",
        "fullness",
        "stop_reason",
        "ticks",
        "t_estimate",
        "age",
        "size",
        "depth",
        "conditions",
    ] {
        assert!(r.get(k).is_some(), "report lacks {k}: {:?}", keys(&r));
    }
    assert_eq!(r["stop_reason"], "max_ops");
    assert_eq!(r["error"], serde_json::Value::Null);

    let o = fsage_ok(["status", "--json", s(&state)]);
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status --json parses");
    for k in [
        "state",
        "profile",
        "seed",
        "capacity",
        "fullness",
        "block_size",
        "target",
        "phase",
        "ticks",
        "t_estimate",
        "elapsed_s",
        "overwrites",
        "age_rmse",
        "live_files",
        "live_bytes",
        "stop",
        "stopped",
        "error",
    ] {
        assert!(st.get(k).is_some(), "status lacks {k}: {:?}", keys(&st));
    }
    assert_eq!(st["stopped"], r["stop_reason"], "one spelling per value");
    assert_eq!(st["seed"], 9);
    assert_eq!(st["capacity"], 64u64 << 20);
    assert_eq!(st["ticks"], 5000);
    assert_eq!(
        st["target"],
        serde_json::Value::Null,
        "a dry run has no target"
    );
    assert_eq!(st["error"], serde_json::Value::Null);
    assert_eq!(st["stop"]["max_ops"], 5000);
    assert_eq!(st["phase"], "stable");
}
