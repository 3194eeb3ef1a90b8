//! Regression tests for defects a new-user test found in `fsage age`'s summary (issue 9).

mod common;

use common::*;

/// A size bin from 1 KiB to 8 EiB holding a third of the files: "perfect convergence" was printed
/// while the fullness was 20 points off. The bin is flagged as clipped, the JSON has `fit`, and
/// the verdict line follows it: NOT on target, naming the fullness, when the fullness is off.
const HUGE_BIN: &str = r#"name = "huge"
fullness = 0.8
[size]
bins = [[1024, 67], [9223372036854775807, 33]]
[depth]
bins = [[0, 50, 4], [1, 50, 0]]
[age]
bins = [[1, 50], [2, 50]]
"#;

#[test]
fn a_size_bin_up_to_8_eib_is_flagged_and_the_verdict_follows_the_fit() {
    let d = tmp();
    let prof = d.path().join("huge.toml");
    std::fs::write(&prof, HUGE_BIN).unwrap();
    let json = d.path().join("r.json");
    let run = |extra: &[&str]| {
        let mut a = vec![
            "age",
            "--dry-run",
            "-p",
            s(&prof),
            "--capacity",
            "64MiB",
            "--json",
            s(&json),
        ];
        a.extend(extra);
        let o = fsage_ok(&a);
        (stdout(&o), read_json(&json))
    };
    // To the end: the bin is clipped, and the verdict agrees with `fit`.
    let (out, j) = run(&[]);
    let clipped = j["clipped_size_bins"]
        .as_array()
        .expect("clipped_size_bins");
    assert_eq!(clipped.len(), 1, "{j}");
    assert_eq!(clipped[0]["label"], "1 KiB - 8.0 EiB");
    assert!(clipped[0]["max_bytes"].as_u64().unwrap() < 1 << 20);
    assert!(
        out.contains("clipped at this capacity: size bin 1 KiB - 8.0 EiB"),
        "{out}"
    );
    let fit = &j["fit"];
    for k in ["age", "size", "depth", "fullness"] {
        assert!(fit[k].is_boolean(), "fit.{k}: {fit}");
    }
    assert!(fit["fullness_off"].is_number(), "{fit}");
    assert!(
        fit["fullness"].as_bool().unwrap(),
        "fullness on target at the end: {fit}"
    );
    let all = ["age", "size", "depth", "fullness"]
        .iter()
        .all(|k| fit[k].as_bool().unwrap());
    assert_eq!(out.contains("NOT on target"), !all, "{out}");
    assert!(!out.contains("perfect convergence"), "{out}");
    // Stopped early, far below the fullness: NOT on target, naming the fullness.
    let (out, j) = run(&["--max-ops", "100"]);
    assert_eq!(j["fit"]["fullness"], false, "{}", j["fit"]);
    assert!(j["fit"]["fullness_off"].as_f64().unwrap() < -0.1);
    let verdict = out
        .lines()
        .find(|l| l.contains("on target"))
        .unwrap_or_else(|| panic!("no verdict line: {out}"));
    assert!(verdict.starts_with("NOT on target"), "{verdict}");
    assert!(verdict.contains("fullness"), "{verdict}");
}

/// A converged run's summary does not tell the user to continue it.
#[test]
fn a_converged_run_does_not_say_continue_with() {
    let d = tmp();
    let state = d.path().join("s");
    let o = Age::new("agrawal")
        .dry_run()
        .capacity("64MiB")
        .state(s(&state))
        .run_ok();
    let out = stdout(&o);
    assert!(out.contains("stopped: all T ticks"), "{out}");
    assert!(!out.contains("continue with"), "{out}");
    assert!(out.contains("the run is finished"), "{out}");
    // An unfinished one does.
    let o = Age::new("agrawal")
        .dry_run()
        .capacity("64MiB")
        .max_ops("100")
        .state(s(&d.path().join("t")))
        .run_ok();
    assert!(stdout(&o).contains("continue with"), "{}", stdout(&o));
}

/// Help texts say what the commands do, and the flags agree between commands.
#[test]
fn help_texts_name_every_subcommand_and_flags_agree() {
    let top = stdout(&fsage_ok(["--help"]));
    let line = |name: &str| {
        top.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {top}"))
            .to_string()
    };
    let exp = line("experiment");
    for sub in ["plan", "run", "status"] {
        assert!(exp.contains(sub), "{exp}");
    }
    assert!(line("bench").contains("Filebench"), "{}", line("bench"));
    let run = stdout(&fsage_ok(["bench", "run", "--help"]));
    assert!(run.contains("-q, --quiet"), "{run}");
}

/// `fs create --size 1KiB`: the hint says the least size, not only "give the size".
#[test]
fn a_size_below_the_minimum_is_told_with_the_minimum() {
    let d = tmp();
    let o = fsage([
        "fs",
        "create",
        "--fs",
        "ext4",
        "--size",
        "1KiB",
        s(&d.path().join("x.img")),
    ]);
    expect_code(&o, 2, "fs create --size 1KiB");
    let err = stderr(&o);
    assert!(err.contains("hint: give a size of at least 1 MiB"), "{err}");
    assert!(!d.path().join("x.img").exists());
}

/// A resume hint is a command the user can paste: a state path with a space is quoted.
#[test]
fn a_resume_hint_quotes_a_path_with_a_space() {
    let d = tmp();
    let dir = d.path().join("my runs");
    std::fs::create_dir(&dir).unwrap();
    let state = dir.join("x.state");
    let o = Age::new("agrawal")
        .dry_run()
        .capacity("64MiB")
        .max_ops("100")
        .state(s(&state))
        .run_ok();
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "continue with: fsage age --resume '{}'",
            state.display()
        )),
        "{out}"
    );
}

/// Bad input of issue 34, each refused with exit 2 and the message a user needs.
#[test]
fn issue_34_bad_input_is_refused_with_what_is_wrong() {
    let d = tmp();
    // `status` given a file that is not a state file (an image, say) and with no state beside
    // it: named, with where the state would be; it was read whole ("out of memory").
    let img = d.path().join("x.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let o = fsage(["status", s(&img)]);
    expect_code(&o, 2, "status of an image without a state");
    expect_stderr(&o, "not an fsage state file, and no state file");
    expect_stderr(&o, "x.img.fsage-state beside it");
    // Given the image of a run with its state beside it: that state.
    let t = d.path().join("t");
    std::fs::create_dir(&t).unwrap();
    Age::new("agrawal")
        .dry_run()
        .capacity("64MiB")
        .max_ops("50")
        .state(s(&d.path().join("t.fsage-state")))
        .run_ok();
    let o = fsage_ok(["status", s(&t)]);
    assert!(stdout(&o).contains("t.fsage-state"), "{}", stdout(&o));
    // `age` into a directory that does not exist: the image is named, not a temporary file.
    let missing = d.path().join("nope").join("x.img");
    let o = fsage([
        "age",
        "-p",
        "agrawal",
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        "--max-ops",
        "10",
        s(&missing),
    ]);
    expect_code(&o, 2, "age into a missing directory");
    expect_stderr(&o, &missing.display().to_string());
    assert!(!stderr(&o).contains("fsage-tmp"), "{}", stderr(&o));
    // `experiment plan` with a kernel the cache lacks: refused at plan time, with how to get it.
    let x = d.path().join("x.toml");
    std::fs::write(
        &x,
        "name = \"x\"\nduration = \"1s\"\nimage_size = \"64MiB\"\nkernel = \"9.9.9\"\n\
         [[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n",
    )
    .unwrap();
    let o = fsage(["experiment", "plan", s(&x)]);
    expect_code(&o, 2, "experiment plan with kernel 9.9.9");
    expect_stderr(&o, "kernel 9.9.9: not in the cache");
    expect_stderr(&o, "fsage vm kernel fetch 9.9.9");
    // xfs below its minimum size: refused at plan time (every cell failed at run time).
    std::fs::write(
        &x,
        "name = \"x\"\nduration = \"1s\"\nimage_size = \"256MiB\"\n\
         [[fs]]\nkind = \"xfs\"\n[[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n",
    )
    .unwrap();
    let o = fsage(["experiment", "plan", s(&x)]);
    expect_code(&o, 2, "experiment plan of xfs at 256 MiB");
    expect_stderr(&o, "xfs needs an `image_size` of at least 314572800 bytes");
}
