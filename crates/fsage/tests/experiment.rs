//! `fsage experiment plan` on the shipped examples and on a bad file.

mod common;

use common::*;
use std::path::{Path, PathBuf};

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
    // ext4 and xfs, fresh and aged = 4 x 2 workloads x 2 reps x 3 latencies.
    assert_eq!(cells.len(), 48);
    let ids: std::collections::BTreeSet<&str> =
        cells.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 48);
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

/// The end-to-end run the issue asks for: ext4 and xfs, fresh and aged (meyer, small image),
/// varmail and fileserver scaled down, 2 repetitions, 3 latencies on the slow device and a plain
/// image (64 cells).
const E2E: &str = r#"
name = "e2e"
duration = "1s"
repetitions = 2
seed = 7
image_size = "512MiB"

[[fs]]
kind = "ext4"

[[fs]]
kind = "xfs"

[[state]]
kind = "fresh"

[[state]]
kind = "aged"
profile = "meyer"
max_ops = 20000

[devices]
latencies = ["none", "0", "100us", "1ms"]

[[workload]]
name = "varmail"
set = { nfiles = 200, nthreads = 4 }

[[workload]]
name = "fileserver"
set = { nfiles = 200, nthreads = 4 }
"#;

/// `experiment run SPEC --out OUT` and `extra`.
fn run_args<'a>(spec: &'a Path, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["experiment", "run", s(spec), "--out", s(out)];
    a.extend(extra);
    a
}

fn cell_files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                // Results only, never the temporary name an atomic write renames into place
                // (`.NAME.fsage-tmp...`), which a run still finishing can rename away between
                // the listing and the read.
                .filter(|(n, _)| n.ends_with(".json") && !n.starts_with('.'))
                .filter_map(|(n, p)| match std::fs::read(&p) {
                    Ok(b) => Some((n, b)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => panic!("{}: {e}", p.display()),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn an_experiment_killed_in_the_middle_goes_on_without_running_finished_cells_again() {
    let test = "an_experiment_killed_in_the_middle_goes_on_without_running_finished_cells_again";
    if let Err(e) = need_root_and(&["mkfs.ext4", "mkfs.xfs"]) {
        skip(test, &e);
        return;
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        skip(test, "/dev/fuse is missing");
        return;
    }
    let lab = Scratch::new("fsage-exp-e2e-");
    let file = lab.path("e2e.toml");
    std::fs::write(&file, E2E).unwrap();
    let out = lab.path("out");
    let cells = out.join("cells");
    let args = run_args(&file, &out, &["--quiet"]);

    // First run, killed with SIGKILL (no cleanup of its own) once 12 cells are recorded.
    let mut child = lab
        .cmd(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    loop {
        if cell_files(&cells).len() >= 12 {
            break;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the run ended before it was killed: {st}");
        }
        assert!(
            t0.elapsed().as_secs() < 600,
            "12 cells took over 10 minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = cell_files(&cells);
    let n = before.len();
    assert!((12..64).contains(&n), "{n} cells recorded at the kill");

    // Status sees what is done and what is left.
    let o = lab
        .cmd(&["experiment", "status", "--json", out.to_str().unwrap()])
        .output()
        .unwrap();
    expect_code(&o, 0, "experiment status");
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(st["total"], 64);
    assert_eq!(st["done"].as_u64().unwrap() as usize, n);
    assert_eq!(st["left"].as_u64().unwrap() as usize, 64 - n);
    assert!(st["estimate_left_s"].as_f64().unwrap() > 0.0);

    // The second run cleans up what the killed one left, runs only what is left, and leaves the
    // results of the first untouched.
    let aging_before = cell_files(&out.join("aging"));
    let o = lab.cmd(&args).output().unwrap();
    expect_code(&o, 0, "experiment run, second time");
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "64 cells: {n} done already, 0 failed earlier (kept), {} to run",
            64 - n
        )),
        "{text}"
    );
    let after = cell_files(&cells);
    assert_eq!(after.len(), 64);
    for (name, bytes) in &before {
        assert_eq!(&after[name], bytes, "{name} was changed by the second run");
    }
    for (name, bytes) in &after {
        let r: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(r["status"], "done", "{name}: {r}");
        assert!(
            r["samples"][0]["ops_per_s"].as_f64().unwrap() > 0.0,
            "{name}"
        );
        let env = &r["environment"];
        assert_eq!(env["image_sha256"].as_str().unwrap().len(), 64, "{name}");
        assert!(env["workload_text"]
            .as_str()
            .unwrap()
            .contains("define fileset"));
        assert_eq!(
            env["device"].is_null(),
            r["cell"]["latency_us"].is_null(),
            "{name}: a cell on the slow device records it, a plain one does not"
        );
    }
    // Aged once per file system: one aging report each, not redone by the second run (unless
    // the kill fell inside that aging), and every cell of a file system and state ran on the
    // same image.
    let aging = cell_files(&out.join("aging"));
    assert_eq!(aging.len(), 2, "{:?}", aging.keys());
    for (k, v) in &aging_before {
        assert_eq!(&aging[k], v, "{k}: aged again");
    }
    let mut sha: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for bytes in after.values() {
        let r: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        let key = format!(
            "{}-{}",
            r["cell"]["fs"]["label"], r["cell"]["state"]["kind"]
        );
        sha.entry(key)
            .or_default()
            .insert(r["environment"]["image_sha256"].as_str().unwrap().into());
    }
    assert_eq!(sha.len(), 4);
    assert!(sha.values().all(|s| s.len() == 1), "{sha:?}");
    // A third run has nothing to do.
    let o = lab.cmd(&args).output().unwrap();
    expect_code(&o, 0, "experiment run, third time");
    assert!(stdout(&o).contains("64 done already"), "{}", stdout(&o));
    // Nothing left mounted or running.
    assert!(lab.mounts_under().is_empty(), "{:?}", lab.mounts_under());
    let o = lab.cmd(&["dev", "list", "--json"]).output().unwrap();
    let devs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(devs.as_array().map_or(0, |a| a.len()), 0, "{devs}");

    // The report draws it: aged against fresh, the sweep, the images' layouts.
    let html = out.join("report.html");
    let o = lab
        .cmd(&[
            "report",
            out.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    expect_code(&o, 0, "report");
    let page = std::fs::read_to_string(&html).unwrap();
    for want in ["aged:meyer", "varmail", "fileserver", "ext4-aged.meyer"] {
        assert!(page.contains(want), "the report lacks {want}");
    }
}

/// A library image as a state, and a cell that fails: it is recorded with its error, the others
/// run, the exit code says so, and a re-run keeps the failure without running anything.
#[test]
fn a_library_image_state_runs_and_a_failing_cell_is_recorded_while_the_rest_go_on() {
    let test = "a_library_image_state_runs_and_a_failing_cell_is_recorded_while_the_rest_go_on";
    if let Err(e) = need_root_and(&["mkfs.ext4"]) {
        skip(test, &e);
        return;
    }
    let lab = Scratch::new("fsage-exp-e2e-");
    let run = |args: &[&str]| {
        lab.cmd(args)
            .env("FSAGE_LIBRARY", lab.path("library"))
            .output()
            .unwrap()
    };
    // An aged image in the library.
    let img = lab.path("aged.img");
    let o = run(&[
        "age",
        "-p",
        "meyer",
        "--fs",
        "ext4",
        "--size",
        "256MiB",
        "--max-ops",
        "5000",
        "-q",
        img.to_str().unwrap(),
    ]);
    expect_code(&o, 0, "age");
    let o = run(&["image", "save", img.to_str().unwrap(), "--name", "lib-ext4"]);
    expect_code(&o, 0, "image save");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.path("library/lib-ext4/manifest.json")).unwrap(),
    )
    .unwrap();
    let want_sha = manifest["checksums"]["image_sha256"]
        .as_str()
        .unwrap()
        .to_string();

    // A workload whose fileset cannot fit: its cells fail.
    std::fs::write(
        lab.path("huge.f"),
        "set $dir=/tmp\n\
         define fileset name=huge,path=$dir,size=64m,entries=100000,dirwidth=20,prealloc=100\n\
         define process name=p,instances=1\n{\n  thread name=t,memsize=1m,instances=1\n  {\n    \
         flowop statfile name=stat,filesetname=huge\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        lab.path("lib.toml"),
        r#"
name = "lib"
duration = "1s"
image_size = "256MiB"
[[fs]]
kind = "ext4"
[[state]]
kind = "fresh"
[[state]]
kind = "image"
name = "lib-ext4"
fs = "ext4"
[[workload]]
name = "varmail"
set = { nfiles = 50, nthreads = 2 }
[[workload]]
file = "huge.f"
"#,
    )
    .unwrap();
    let out = lab.path("out");
    let spec = lab.path("lib.toml");
    let args = run_args(&spec, &out, &[]);
    let o = run(&args);
    expect_code(&o, 1, "experiment run with failing cells");
    let text = stdout(&o);
    assert!(text.contains("2 of 4 cells done"), "{text}");
    assert!(text.contains("2 failed"), "{text}");

    let o = run(&["experiment", "status", "--json", out.to_str().unwrap()]);
    expect_code(&o, 0, "status");
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (st["done"].as_u64(), st["failed"].as_u64()),
        (Some(2), Some(2))
    );
    for c in st["cells"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        if id.contains("-huge-") {
            assert_eq!(c["status"], "failed", "{c}");
            assert!(c["error"].as_str().unwrap().contains("does not fit"), "{c}");
        } else {
            assert_eq!(c["status"], "done", "{c}");
        }
    }
    // The library state's cell ran on the image as saved: its checksum is the manifest's.
    let cells = cell_files(&out.join("cells"));
    let lib_cell = cells
        .iter()
        .find(|(n, _)| n.starts_with("ext4-image.lib-ext4-varmail"))
        .expect("the library image's varmail cell");
    let r: serde_json::Value = serde_json::from_slice(lib_cell.1).unwrap();
    assert_eq!(r["environment"]["image_sha256"], want_sha.as_str());
    // Both base images were measured with a probe (on a scratch copy: the checksum above is the
    // library's, so the base was not written), and the scratch copies are gone.
    let frags = cell_files(&out.join("frag"));
    assert_eq!(frags.len(), 2, "{:?}", frags.keys());
    for (n, f) in &frags {
        let v: serde_json::Value = serde_json::from_slice(f).unwrap();
        // 1/32 of the 256 MiB image, the same on both.
        assert_eq!(v["probe"]["bytes"], 8u64 << 20, "{n}: {}", v["probe"]);
        assert!(v["probe"]["fragments"].as_u64().unwrap() >= 1, "{n}");
    }
    let left: Vec<_> = std::fs::read_dir(out.join("images"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".probe."))
        .collect();
    assert!(left.is_empty(), "scratch copies left: {left:?}");
    // The report says how far from fresh the library image is, probe included.
    let o = run(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        lab.path("r.html").to_str().unwrap(),
    ]);
    expect_code(&o, 0, "report");
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("against fresh: ext4 image:lib-ext4"))
        .map(String::from)
        .unwrap_or_else(|| panic!("no verdict in\n{}", stdout(&o)));
    assert!(line.contains("fragments per 100 MiB"), "{line}");

    // Again: the failures are kept, nothing runs.
    let o = run(&args);
    expect_code(&o, 1, "second run");
    assert!(
        stdout(&o).contains("4 cells: 2 done already, 2 failed earlier (kept), 0 to run"),
        "{}",
        stdout(&o)
    );
    assert!(lab.mounts_under().is_empty());
}

/// Ctrl-C in the middle of a cell on the slow device: the run stops soon with exit code 130,
/// records nothing for the cell it stopped, leaves nothing mounted, attached or running, and the
/// same command then runs only what is left.
#[test]
fn ctrl_c_stops_an_experiment_cleanly_and_the_rerun_finishes_it() {
    let test = "ctrl_c_stops_an_experiment_cleanly_and_the_rerun_finishes_it";
    if let Err(e) = need_root_and(&["mkfs.ext4"]) {
        skip(test, &e);
        return;
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        skip(test, "/dev/fuse is missing");
        return;
    }
    let lab = Scratch::new("fsage-exp-e2e-");
    let file = lab.path("c.toml");
    std::fs::write(
        &file,
        r#"
name = "ctrl-c"
duration = "3s"
repetitions = 2
image_size = "256MiB"

[[fs]]
kind = "ext4"

[[state]]
kind = "fresh"

[devices]
latencies = ["100us"]

[[workload]]
name = "varmail"
set = { nfiles = 100, nthreads = 2 }
"#,
    )
    .unwrap();
    let out = lab.path("out");
    let cells = out.join("cells");
    let args = run_args(&file, &out, &["--quiet"]);
    let child = lab
        .cmd(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first cell is recorded, the second runs on a slow device for 3 s: interrupt it
    // a second in.
    let t0 = std::time::Instant::now();
    while cell_files(&cells).is_empty() {
        assert!(
            t0.elapsed().as_secs() < 300,
            "no cell recorded in 5 minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let before = cell_files(&cells);
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let t_int = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        t_int.elapsed().as_secs() < 30,
        "took {:?} to stop",
        t_int.elapsed()
    );
    expect_code(&o, 130, "experiment run, interrupted");
    assert!(stdout(&o).contains("interrupted"), "{}", stdout(&o));
    assert_eq!(
        cell_files(&cells),
        before,
        "the interrupted cell was recorded"
    );
    assert!(lab.mounts_under().is_empty(), "{:?}", lab.mounts_under());
    let o = lab.cmd(&["dev", "list", "--json"]).output().unwrap();
    let devs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(devs.as_array().map_or(0, |a| a.len()), 0, "{devs}");

    let o = lab.cmd(&args).output().unwrap();
    expect_code(&o, 0, "experiment run, after the interrupt");
    assert!(
        stdout(&o).contains(&format!("2 cells: {} done already", before.len())),
        "{}",
        stdout(&o)
    );
    let after = cell_files(&cells);
    assert_eq!(after.len(), 2);
    for (name, bytes) in &before {
        assert_eq!(&after[name], bytes, "{name} was changed by the rerun");
    }
}

/// A cell on a device model runs for real: the working copy goes behind a slow device running
/// `hdd-7200`, the workload completes, and the result records the model (name and text) and the
/// device's settings and model counters; nothing is left mounted or running.
#[test]
fn a_cell_on_a_disk_model_runs_and_records_the_model() {
    let test = "a_cell_on_a_disk_model_runs_and_records_the_model";
    if let Err(e) = need_root_and(&["mkfs.ext4"]) {
        skip(test, &e);
        return;
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        skip(test, "/dev/fuse is missing");
        return;
    }
    let lab = Scratch::new("fsage-exp-e2e-");
    let file = lab.path("m.toml");
    std::fs::write(
        &file,
        r#"
name = "on-a-disk"
duration = "2s"
image_size = "256MiB"

[[fs]]
kind = "ext4"

[[state]]
kind = "fresh"

[devices]
latencies = ["hdd-7200"]

[[workload]]
name = "varmail"
set = { nfiles = 50, nthreads = 1 }
"#,
    )
    .unwrap();
    let out = lab.path("out");
    let o = lab
        .cmd(&run_args(&file, &out, &["--quiet"]))
        .output()
        .unwrap();
    expect_code(&o, 0, "experiment run on hdd-7200");
    let cells = cell_files(&out.join("cells"));
    assert_eq!(cells.len(), 1, "{cells:?}");
    let (name, bytes) = cells.iter().next().unwrap();
    assert!(name.contains("-hdd-7200-"), "{name}");
    let r: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(r["status"], "done", "{r}");
    assert_eq!(r["cell"]["device_model"]["name"], "hdd-7200");
    assert!(r["cell"]["latency_us"].is_null());
    let s = &r["samples"][0];
    assert_eq!(s["device_model"], "hdd-7200");
    assert!(s["ops_per_s"].as_f64().unwrap() > 0.0, "{s}");
    // The slow device ran the model: its record names it, and the model served requests.
    let dev = &r["environment"]["device"];
    assert_eq!(dev["model"]["name"], "hdd-7200", "{dev}");
    let counted = &dev["stats"]["model"]["stats"];
    let served = ["reads", "writes", "flushes"]
        .iter()
        .map(|k| counted[k].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert!(served > 0, "the model served no request: {dev}");
    assert!(lab.mounts_under().is_empty(), "{:?}", lab.mounts_under());
    let o = lab.cmd(&["dev", "list", "--json"]).output().unwrap();
    let devs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(devs.as_array().map_or(0, |a| a.len()), 0, "{devs}");
}

#[test]
fn ssd_cells_run_on_the_drive_their_base_aged_and_on_crossed_drives() {
    let test = "ssd_cells_run_on_the_drive_their_base_aged_and_on_crossed_drives";
    if let Err(e) = need_root_and(&["mkfs.ext4"]) {
        skip(test, &e);
        return;
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        skip(test, "/dev/fuse is missing");
        return;
    }
    let lab = Scratch::new("fsage-exp-e2e-");
    // A small drive with few dies, so that 128 MiB has enough blocks per die.
    let ssd = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/experiments/geriatrix-ssd/ssd-92.toml"),
    )
    .unwrap()
    .replace("1113MiB", "140MiB")
    .replace("name = \"ssd-92\"", "name = \"small-ssd\"")
    .replace(
        "pages_per_block = { value = 256",
        "pages_per_block = { value = 64",
    );
    std::fs::write(lab.path("small-ssd.toml"), ssd).unwrap();
    let file = lab.path("s.toml");
    std::fs::write(
        &file,
        r#"
name = "on-an-ssd"
duration = "1s"
warmup = "0s"
image_size = "128MiB"

[[fs]]
kind = "ext4"

[[state]]
kind = "fresh"

[[state]]
kind = "aged"
profile = "meyer"
max_ops = 1500

[devices]
latencies = ["small-ssd.toml"]
drives = ["own", "erased", "aged.meyer"]

[[workload]]
name = "varmail"
set = { nfiles = 50, nthreads = 1 }
"#,
    )
    .unwrap();
    let out = lab.path("out");
    let o = lab
        .cmd(&run_args(&file, &out, &["--quiet"]))
        .output()
        .unwrap();
    expect_code(&o, 0, "experiment run on an SSD model with crossed drives");
    let cells = cell_files(&out.join("cells"));
    // fresh on its own drive and on the aged one; aged on its own drive and on an erased one.
    assert_eq!(cells.len(), 4, "{:?}", cells.keys());
    let get = |part: &str| -> serde_json::Value {
        let (_, bytes) = cells
            .iter()
            .find(|(n, _)| n.starts_with(part))
            .unwrap_or_else(|| panic!("no cell {part}: {:?}", cells.keys()));
        let r: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(r["status"], "done", "{r}");
        r
    };
    let fresh = get("ext4-fresh-varmail-small-ssd-r0");
    let fresh_aged_drive = get("ext4-fresh-varmail-small-ssd-drive.aged.meyer-r0");
    let aged = get("ext4-aged.meyer-varmail-small-ssd-r0");
    let aged_erased = get("ext4-aged.meyer-varmail-small-ssd-drive.erased-r0");
    // The aged base aged its drive: its cell and the fresh file system's crossed cell start
    // from that drive (same base, same checksum); the others start erased.
    let drive = |r: &serde_json::Value| r["environment"]["drive_state"].clone();
    assert!(drive(&fresh).is_null(), "{}", drive(&fresh));
    assert!(drive(&aged_erased).is_null(), "{}", drive(&aged_erased));
    let own = drive(&aged);
    assert!(
        own["base"]
            .as_str()
            .unwrap()
            .starts_with("ext4-aged.meyer-small-ssd-"),
        "{own}"
    );
    assert_eq!(own, drive(&fresh_aged_drive));
    let base: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            out.join("bases")
                .join(format!("{}.json", own["base"].as_str().unwrap())),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(base["drive_sha256"], own["sha256"]);
    // The device loaded the drive it was given, and counted the model's work.
    let note = |r: &serde_json::Value| {
        r["environment"]["device"]["stats"]["drive_state"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        note(&aged).contains("started from the drive state saved"),
        "{}",
        note(&aged)
    );
    assert!(
        note(&aged_erased).contains("fresh drive"),
        "{}",
        note(&aged_erased)
    );
    let programs = &aged["environment"]["device"]["stats"]["model"]["stats"]["programs"];
    assert!(
        programs.as_u64().is_some(),
        "{}",
        aged["environment"]["device"]
    );
    // The analysis sees the crossed cells as states of their own.
    assert_eq!(
        fresh_aged_drive["samples"][0]["state"]["kind"], "on_drive",
        "{}",
        fresh_aged_drive["samples"][0]
    );
    assert_eq!(
        fresh_aged_drive["samples"][0]["state"]["drive"],
        "aged.meyer"
    );
    assert!(lab.mounts_under().is_empty(), "{:?}", lab.mounts_under());
}

/// Geriatrix's SSD procedure: aged in memory, then each cell's image copied through a device
/// onto its drive. A whole copy writes every page (as `dd`), a sparse one the data alone; a cell
/// on the previous drive continues the drive the last cell of its own procedure (copy method,
/// drive "previous") left, and says which: never an erased cell's, nor another copy's.
#[test]
fn ssd_cells_copy_an_image_aged_in_memory_onto_a_drive_in_the_state_asked_for() {
    let test = "ssd_cells_copy_an_image_aged_in_memory_onto_a_drive_in_the_state_asked_for";
    if let Err(e) = need_root_and(&["mkfs.ext4"]) {
        skip(test, &e);
        return;
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        skip(test, "/dev/fuse is missing");
        return;
    }
    let lab = Scratch::new("fsage-exp-e2e-");
    let ssd = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/experiments/geriatrix-ssd/ssd-92.toml"),
    )
    .unwrap()
    .replace("1113MiB", "140MiB")
    .replace("name = \"ssd-92\"", "name = \"small-ssd\"")
    .replace(
        "pages_per_block = { value = 256",
        "pages_per_block = { value = 64",
    );
    std::fs::write(lab.path("small-ssd.toml"), ssd).unwrap();
    let file = lab.path("s.toml");
    std::fs::write(
        &file,
        r#"
name = "copied"
duration = "1s"
warmup = "0s"
repetitions = 2
image_size = "128MiB"

[[fs]]
kind = "ext4"

[[state]]
kind = "aged"
profile = "meyer"
max_ops = 1500

[devices]
latencies = ["small-ssd.toml"]
age_on = "memory"
copy = ["sparse", "whole"]
drive = ["erased", "previous", "preconditioned"]

[[workload]]
name = "varmail"
set = { nfiles = 50, nthreads = 1 }
"#,
    )
    .unwrap();
    let plan = lab.cmd(&["experiment", "plan", s(&file)]).output().unwrap();
    expect_code(&plan, 0, "experiment plan with copies");
    let said = String::from_utf8_lossy(&plan.stdout);
    assert!(
        said.contains("model small-ssd, aged in memory, whole copy, drive previous"),
        "{said}"
    );
    let out = lab.path("out");
    let o = lab
        .cmd(&run_args(&file, &out, &["--quiet"]))
        .output()
        .unwrap();
    expect_code(&o, 0, "experiment run with copies onto drives");
    let cells = cell_files(&out.join("cells"));
    assert_eq!(cells.len(), 12, "{:?}", cells.keys());
    let get = |part: &str| -> (String, serde_json::Value) {
        let (n, bytes) = cells
            .iter()
            .find(|(n, _)| n.starts_with(part))
            .unwrap_or_else(|| panic!("no cell {part}: {:?}", cells.keys()));
        let r: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(r["status"], "done", "{r}");
        (n.trim_end_matches(".json").to_string(), r)
    };
    let pre = "ext4-aged.meyer-varmail-small-ssd-aged.memory-";
    let (_, se) = get(&format!("{pre}copy.sparse-drive.erased-r0"));
    let (sparse_previous, sp) = get(&format!("{pre}copy.sparse-drive.previous-r0"));
    let (_, sp1) = get(&format!("{pre}copy.sparse-drive.previous-r1"));
    let (_, we) = get(&format!("{pre}copy.whole-drive.erased-r0"));
    let (whole_previous, wp) = get(&format!("{pre}copy.whole-drive.previous-r0"));
    let (_, wp1) = get(&format!("{pre}copy.whole-drive.previous-r1"));
    let (_, wc) = get(&format!("{pre}copy.whole-drive.preconditioned-r0"));
    // Aged in memory: one plain base, no drive state of its own.
    let bases: Vec<String> = std::fs::read_dir(out.join("bases"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(bases.len(), 1, "{bases:?}");
    assert!(!bases[0].contains("small-ssd"), "{bases:?}");
    let pl = |r: &serde_json::Value| r["environment"]["placement"].clone();
    let pages = (128u64 << 20) / 4096;
    // A whole copy: every page written to the drive; a sparse one: the data, the rest zeroed.
    let w = pl(&we);
    assert_eq!(w["copy"], "whole", "{w}");
    assert_eq!(w["flash"]["host_pages"].as_u64(), Some(pages), "{w}");
    assert!(w["zeros_written"].as_u64().unwrap() > 0, "{w}");
    let sp0 = pl(&se);
    assert_eq!(sp0["drive_before"], "erased", "{sp0}");
    let host = sp0["flash"]["host_pages"].as_u64().unwrap();
    assert!(host > 0 && host < pages / 2, "{sp0}");
    assert!(sp0["zeroed_bytes"].as_u64().unwrap() > 0, "{sp0}");
    // The previous drive: the one the last cell of the same procedure left. The first of each
    // procedure finds none (the erased and preconditioned cells before it leave theirs to no
    // one), the second continues the first's, across the other procedures' cells between them.
    for r in [&sp, &wp] {
        assert_eq!(
            pl(r)["drive_before"],
            "erased: no cell had run on this drive yet",
            "{}",
            pl(r)
        );
    }
    assert_eq!(
        pl(&sp1)["previous_cell"],
        sparse_previous.as_str(),
        "{}",
        pl(&sp1)
    );
    assert_eq!(
        sp1["environment"]["drive_state"]["base"],
        format!("cell {sparse_previous}").as_str()
    );
    assert_eq!(
        pl(&wp1)["previous_cell"],
        whole_previous.as_str(),
        "{}",
        pl(&wp1)
    );
    // A preconditioned drive is full before the copy: writing every page over it collects.
    let c = pl(&wc);
    assert!(
        c["drive_before"]
            .as_str()
            .unwrap()
            .starts_with("preconditioned: "),
        "{c}"
    );
    assert_eq!(c["flash"]["host_pages"].as_u64(), Some(pages), "{c}");
    assert!(c["flash"]["gc_copies"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(w["flash"]["gc_copies"].as_u64(), Some(0), "{w}");
    // The analyses see each placement as a device of its own.
    assert_eq!(
        wp["samples"][0]["device_model"],
        "small-ssd (whole copy, drive previous)"
    );
    // The cell's own counters start after the copy, on a device of its own.
    let cell_host = we["samples"][0]["flash"]["host_pages"].as_u64().unwrap();
    assert!(cell_host < pages, "{}", we["samples"][0]);
    assert!(lab.mounts_under().is_empty(), "{:?}", lab.mounts_under());
    let o = lab.cmd(&["dev", "list", "--json"]).output().unwrap();
    let devs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(devs.as_array().map_or(0, |a| a.len()), 0, "{devs}");
}
