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
    Age::plan("meyer", "64MiB")
        .max_ops("5000")
        .seed("9")
        .state(s(&state))
        .json(s(&report))
        .run_ok();
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

/// `image save` of an image aged from a profile FILE records that profile (from the report's own
/// copy of its TOML), `image show` tells the stop reason in words, `image show --json` parses;
/// an image saved with a Git-aging series says so instead of "no profile". No root: the ext4
/// image is made by mkfs.ext4 on a plain file and never mounted.
#[test]
fn image_save_and_show_record_a_profile_file_and_a_git_series() {
    let d = tmp();
    if run_cmd("mkfs.ext4", &["-V"]).is_err() {
        skip(
            "image_save_and_show_record_a_profile_file_and_a_git_series",
            "no mkfs.ext4",
        );
        return;
    }
    let toml = stdout(&fsage_ok(["profile", "show", "meyer", "--toml"]))
        .replace("name = \"meyer\"", "name = \"share\"");
    let prof = d.path().join("share.toml");
    std::fs::write(&prof, toml).unwrap();
    let img = d.path().join("a.img");
    run_cmd("mkfs.ext4", &["-q", "-F", s(&img), "16M"]).expect("mkfs.ext4");
    // The report beside the image, as `age --fs` leaves it.
    let beside = d.path().join("a.img.report.json");
    Age::plan(s(&prof), "64MiB")
        .max_ops("2000")
        .json(s(&beside))
        .run_ok();
    let lib = d.path().join("lib");
    let o = fsage_ok(["image", "save", s(&img), "--library", s(&lib)]);
    let out = stdout(&o);
    assert!(out.contains("profile share recorded"), "{out}");
    assert!(!out.contains("no profile recorded"), "{out}");
    let o = fsage_ok(["image", "show", "a", "--json", "--library", s(&lib)]);
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).expect("image show --json parses");
    assert_eq!(m["profile"]["name"], "share");
    assert_eq!(m["aging"]["stop_reason"], "max_ops");
    assert_eq!(m["note"], serde_json::Value::Null);
    let shown = stdout(&fsage_ok(["image", "show", "a", "--library", s(&lib)]));
    assert!(shown.contains("profile:       share"), "{shown}");
    assert!(shown.contains("the operation limit reached"), "{shown}");
    assert!(!shown.contains('"'), "Debug quoting in {shown}");

    // A Git-aging series given with --report.
    let series = d.path().join("series.json");
    std::fs::write(
        &series,
        serde_json::json!({
            "format": "fsage-git-series/1", "repo": "/r/zlib.bundle", "mode": "git", "fs": "ext4",
            "pulls_done": 684, "commits_total": 684, "first_commit": "abc", "last_commit": "def",
            "rows": [],
        })
        .to_string(),
    )
    .unwrap();
    let o = fsage_ok([
        "image",
        "save",
        s(&img),
        "--name",
        "z",
        "--report",
        s(&series),
        "--library",
        s(&lib),
    ]);
    let out = stdout(&o);
    assert!(!out.contains("give --profile or --report"), "{out}");
    assert!(out.contains("Git-aging series"), "{out}");
    let shown = stdout(&fsage_ok(["image", "show", "z", "--library", s(&lib)]));
    assert!(
        shown.contains("Git history of /r/zlib.bundle (git mode) on ext4: 684 of 684 commits"),
        "{shown}"
    );
    assert!(!shown.contains("stop -"), "{shown}");
}
