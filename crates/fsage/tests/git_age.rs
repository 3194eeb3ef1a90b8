//! `fsage git-age`: a run killed with SIGKILL and resumed ends in the tree of the last commit and
//! the series shape of an uninterrupted run; with --device-latency (or --device-model) both
//! instances are measured through a slow device that the series names and that is gone
//! afterwards; bad input gets exit code 2.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Takes down whatever a killed run (or this test) left mounted, even when the test fails.
struct Cleanup(Vec<PathBuf>);
impl Drop for Cleanup {
    fn drop(&mut self) {
        for img in &self.0 {
            if img.exists() {
                let _ = Command::new(bin()).args(["fs", "umount"]).arg(img).output();
            }
        }
    }
}

/// Mounts the image and checks that it holds the tree of the repository's last commit in
/// `synth` (the same paths, then the same contents); unmounts it again.
fn assert_image_holds_last_commit(img: &Path, repo: &Path, scratch: &Path) {
    let mnt = scratch.join("check");
    std::fs::create_dir(&mnt).unwrap();
    fsage_ok(["fs", "mount", s(img), s(&mnt)]);
    let got = snapshot(&mnt.join("synth"));
    fsage_ok(["fs", "umount", s(&mnt)]);
    let want = git_archive(repo, "master");
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(
        got == want,
        "contents differ from git archive of the last commit"
    );
}

/// A synthetic repository in a fresh directory in /dev/shm (`DIR/synth`) and the image a run ages
/// (`DIR/aged.img`), taken down when dropped whatever a run left mounted.
struct Synth {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    img: PathBuf,
    /// The run's checkpoint, beside the image.
    state: PathBuf,
    _c: Cleanup,
}

impl Synth {
    /// A repository of `commits` commits; `None` after a skip when root or one of `tools` is
    /// missing.
    fn new(test: &str, commits: u64, tools: &[&str]) -> Option<Synth> {
        if let Err(why) = need_root_and(tools) {
            skip(test, &why);
            return None;
        }
        let tmp = fsage_testkit::shm_tmp("fsage-git-age-");
        let repo = tmp.path().join("synth");
        fsage_git::synthetic::make_repo(&repo, commits).unwrap();
        let img = tmp.path().join("aged.img");
        let _c = Cleanup(vec![img.clone(), tmp.path().join("aged.img.clean")]);
        let state = tmp.path().join("aged.img.fsage-git.json");
        Some(Synth {
            tmp,
            repo,
            img,
            state,
            _c,
        })
    }

    /// `git-age SOURCE --clean-fs CLEAN_FS --clean-image CLEAN TARGET` and `extra`: a directory
    /// target on a mounted file system.
    fn dir_args(
        source: &Path,
        clean_fs: &str,
        clean: &Path,
        target: &Path,
        extra: &[&str],
    ) -> Vec<String> {
        let mut a: Vec<String> = [
            "git-age",
            s(source),
            "--clean-fs",
            clean_fs,
            "--clean-image",
        ]
        .into_iter()
        .chain([s(clean), s(target)])
        .map(String::from)
        .collect();
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    }

    /// The checkpoint as it stands.
    fn checkpoint(&self) -> serde_json::Value {
        read_json(&self.state)
    }

    /// `git-age SOURCE --fs ext4 --size 64MiB IMAGE --every EVERY --quiet` and `extra`.
    fn args(&self, source: &Path, every: &str, extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = ["git-age", s(source), "--fs", "ext4", "--size", "64MiB"]
            .into_iter()
            .chain([s(&self.img), "--every", every, "--quiet"])
            .map(String::from)
            .collect();
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    }
}

#[test]
fn git_age_resumes_after_kill_9_to_the_same_tree_and_series_shape() {
    let Some(x) = Synth::new("git_age_resume", 20, &["git", "mkfs.ext4", "losetup"]) else {
        return;
    };
    let (tmp, repo, img) = (&x.tmp, &x.repo, &x.img);
    // Replayed from a bundle: fsage clones it beside the image, and a kill -9 leaves the clone.
    let bundle = tmp.path().join("synth.bundle");
    bundle_of(repo, &bundle);
    let clone = tmp.path().join("aged.img.source.git");
    let state = &x.state;
    let args = |extra: &[&str]| {
        let mut a = x.args(&bundle, "5", extra);
        a.extend(["--cost-models".to_string(), "ssd-sata".to_string()]);
        a
    };
    let mut child = Command::new(bin()).args(args(&[])).spawn().unwrap();
    // Kill it once the first measurement is checkpointed, in the middle of what follows.
    wait_for_first_row(&mut child, state);
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), None, "killed by a signal");
    let j = x.checkpoint();
    assert!(
        j["series"]["pulls_done"].as_u64().unwrap() < 20,
        "killed before the end"
    );
    assert!(clone.join("HEAD").is_file(), "the killed run's clone");

    let json = tmp.path().join("series.json");
    let csv = tmp.path().join("series.csv");
    let drives = read_json(&tmp.path().join("aged.img.drives/drives.json"));
    let saved = drives["pulls"].as_u64().unwrap();
    let o = fsage_ok(args(&["--resume", "--json", s(&json), "--csv", s(&csv)]));
    let j = read_json(&json);
    // The aged drive (ssd-sata) goes on from where it was saved, and the series says what it
    // missed: the pulls the killed run replayed after that.
    let resumed_at: u64 = stderr(&o)
        .split("resuming at commit ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no resume line: {}", stderr(&o)));
    assert_eq!(j["aged_drives"], serde_json::json!(["ssd-sata"]));
    let notes: Vec<&str> = j["drive_notes"]
        .as_array()
        .map(|a| a.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    if resumed_at > saved {
        let want = format!("pulls {} to {resumed_at} were replayed", saved + 1);
        assert!(
            notes.iter().any(|n| n.contains(&want)),
            "{notes:?} (saved after pull {saved}, resumed at {resumed_at})"
        );
    } else {
        assert!(notes.is_empty(), "{notes:?}");
    }
    let pulls: Vec<u64> = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pulls"].as_u64().unwrap())
        .collect();
    assert_eq!(pulls, vec![1, 6, 11, 16, 20], "{}", stderr(&o));
    assert_eq!(j["finished"], true);
    assert_eq!(j["pulls_done"], 20);
    assert!(
        !clone.exists(),
        "the resumed run removes the bundle's clone at its end"
    );
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("source"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let c = std::fs::read_to_string(&csv).unwrap();
    assert!(c.starts_with("pulls,du_bytes,aged_seconds,aged_layout_score,clean_seconds,"));
    assert_eq!(c.lines().count(), 6);

    // The image holds the tree of the last commit.
    assert_image_holds_last_commit(img, repo, tmp.path());

    // Starting again over the checkpoint is refused; so is a resume with other settings.
    let o = fsage(args(&[]));
    expect_code(&o, 2, "a new run over a checkpoint");
    let mut a = args(&["--resume"]);
    a[8] = "7".into();
    expect_code(&fsage(&a), 2, "resume with another --every");
}

#[test]
fn git_age_bad_input_is_exit_code_2() {
    let tmp = tmp();
    let o = fsage([
        "git-age",
        "/nonexistent/repo",
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        "x.img",
    ]);
    expect_code(&o, 2, "missing repository");
    expect_stderr(&o, "/nonexistent/repo");
    let o = fsage(["git-age", s(tmp.path()), s(tmp.path())]);
    expect_code(&o, 2, "neither --fs nor --clean-fs");
    let img = tmp.path().join("warm.img");
    let o = fsage([
        "git-age",
        s(tmp.path()),
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        s(&img),
        "--warm-cache",
        "--device-latency",
        "1ms",
    ]);
    expect_code(&o, 2, "--warm-cache with a slow device");
    expect_stderr(&o, "--warm-cache");
    let o = fsage([
        "git-age",
        s(tmp.path()),
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        s(&img),
        "--mem-limit",
        "1MiB",
    ]);
    expect_code(&o, 2, "--mem-limit below 128 MiB");
    expect_stderr(&o, "--mem-limit 1 MiB: at least 128 MiB");
    assert!(!img.exists());
}

/// Takes down what the slow-device test (or a failed run) left: mounts of the images, then every
/// device of the test's own registry.
struct SlowCleanup {
    images: Vec<PathBuf>,
    registry: PathBuf,
}
impl Drop for SlowCleanup {
    fn drop(&mut self) {
        for img in &self.images {
            if img.exists() {
                let _ = Command::new(bin()).args(["fs", "umount"]).arg(img).output();
            }
        }
        let _ = Command::new(bin())
            .args(["dev", "destroy", "--all", "--force"])
            .env("FSAGE_DEV_REGISTRY", &self.registry)
            .output();
    }
}

#[test]
fn git_age_measures_both_instances_on_a_slow_device() {
    if !Path::new("/dev/fuse").exists() {
        return skip("git_age_slow_device", "/dev/fuse is missing");
    }
    let Some(x) = Synth::new("git_age_slow_device", 10, &["git", "mkfs.ext4", "losetup"]) else {
        return;
    };
    let (tmp, repo, img) = (&x.tmp, &x.repo, &x.img);
    let registry = tmp.path().join("registry");
    let _c = SlowCleanup {
        images: vec![img.clone(), tmp.path().join("aged.img.clean")],
        registry: registry.clone(),
    };
    let json = tmp.path().join("series.json");
    let run = |extra: &[&str]| {
        Command::new(bin())
            .args(["git-age", s(repo), "--fs", "ext4", "--size", "64MiB"])
            .arg(img)
            .args(["--every", "4", "--quiet", "--json", s(&json)])
            .args(extra)
            .env("FSAGE_DEV_REGISTRY", &registry)
            .output()
            .unwrap()
    };
    let o = run(&["--device-latency", "200us"]);
    expect_code(&o, 0, "git-age --device-latency 200us");
    let j = read_json(&json);
    assert_eq!(
        j["device_latencies"]["read_ns"], 200_000,
        "the series names the device's latency"
    );
    let rows = j["rows"].as_array().unwrap();
    let pulls: Vec<u64> = rows.iter().map(|r| r["pulls"].as_u64().unwrap()).collect();
    assert_eq!(pulls, vec![1, 5, 9, 10]);
    for r in rows {
        for inst in ["aged", "clean"] {
            let f = &r[inst];
            // The reads went through the slow device, each answered no sooner than its latency.
            let reads = f["device_reads"].as_u64().unwrap_or(0);
            assert!(
                reads > 0,
                "{inst} at pull {}: no device reads: {f}",
                r["pulls"]
            );
            let mean = f["device_read_mean_ns"].as_f64().unwrap();
            assert!(
                mean >= 200_000.0,
                "{inst} at pull {}: mean device read {mean} ns, under the 200 us asked",
                r["pulls"]
            );
            // The block trace followed the slow device: the grep's reads are among its reads.
            let traced = f["read_requests"].as_u64().unwrap_or_else(|| {
                panic!("{inst}: no block trace: {}", f["trace_error"]);
            });
            assert!(
                traced > 0 && traced <= reads,
                "{inst}: {traced} traced, {reads} served"
            );
            assert!(f["grep_seconds"].as_f64().unwrap() >= 0.0002);
        }
    }
    // Every device is gone, the images are not attached, the clean image is removed.
    let left: Vec<_> = std::fs::read_dir(&registry)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "devices left in the registry: {left:?}");
    assert!(fsage_sys::loops_backed_by(img).is_empty());
    assert!(!tmp.path().join("aged.img.clean").exists());

    // The image holds the tree of the last commit.
    assert_image_holds_last_commit(img, repo, tmp.path());

    // The latency is part of the run: a resume without it, or with another, is refused.
    let o = run(&["--resume"]);
    expect_code(&o, 2, "resume without the device latency");
    let o = run(&["--resume", "--device-latency", "1ms"]);
    expect_code(&o, 2, "resume with another device latency");
    let o = run(&["--device-latency", "fast"]);
    expect_code(&o, 2, "a latency that is not one");
    expect_stderr(&o, "--device-latency");
}

#[test]
fn git_age_measures_on_a_device_running_a_disk_model() {
    if !Path::new("/dev/fuse").exists() {
        return skip("git_age_device_model", "/dev/fuse is missing");
    }
    let Some(x) = Synth::new("git_age_device_model", 10, &["git", "mkfs.ext4", "losetup"]) else {
        return;
    };
    let (tmp, repo, img) = (&x.tmp, &x.repo, &x.img);
    let registry = tmp.path().join("registry");
    let ssd = tmp.path().join("ssd.img");
    let _c = SlowCleanup {
        images: vec![
            img.clone(),
            tmp.path().join("aged.img.clean"),
            ssd.clone(),
            tmp.path().join("ssd.img.clean"),
        ],
        registry: registry.clone(),
    };
    let json = tmp.path().join("series.json");
    let run_on = |image: &Path, extra: &[&str]| {
        Command::new(bin())
            .args(["git-age", s(repo), "--fs", "ext4", "--size", "64MiB"])
            .arg(image)
            .args(["--every", "9", "--quiet", "--json", s(&json)])
            .args(extra)
            .env("FSAGE_DEV_REGISTRY", &registry)
            .output()
            .unwrap()
    };
    let run = |extra: &[&str]| run_on(img, extra);
    // Refusals first, before anything is made: an unknown model names the flag; a model and a
    // latency together are refused.
    let o = run(&["--device-model", "no-such-disk"]);
    expect_code(&o, 2, "an unknown device model");
    assert!(stderr(&o).contains("--device-model"), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-disk"), "{}", stderr(&o));
    assert_nothing_made(tmp.path(), "an unknown device model");
    let o = run(&["--device-model", "hdd-7200", "--device-latency", "1ms"]);
    expect_code(&o, 2, "--device-model with --device-latency");
    assert_nothing_made(tmp.path(), "--device-model with --device-latency");

    // Two greps per instance: each on a device of its own (the model starts cold), each traced
    // and costed.
    let o = run(&[
        "--device-model",
        "hdd-7200",
        "--grep-reps",
        "2",
        "--cost-models",
        "1ms",
    ]);
    expect_code(&o, 0, "git-age --device-model hdd-7200");
    let j = read_json(&json);
    assert_eq!(
        j["device_model"]["name"], "hdd-7200",
        "the series names the model"
    );
    assert_eq!(j["device_model"]["kind"]["kind"], "hdd");
    assert!(
        j["device_latencies"].is_null(),
        "a disk model is no fixed latency: {}",
        j["device_latencies"]
    );
    let rows = j["rows"].as_array().unwrap();
    let pulls: Vec<u64> = rows.iter().map(|r| r["pulls"].as_u64().unwrap()).collect();
    assert_eq!(pulls, vec![1, 10]);
    for r in rows {
        for inst in ["aged", "clean"] {
            let f = &r[inst];
            let reads = f["device_reads"].as_u64().unwrap_or(0);
            assert!(reads > 0, "{inst} at {}: no device reads: {f}", r["pulls"]);
            let traced = f["read_requests"].as_u64().unwrap_or_else(|| {
                panic!("{inst}: no block trace: {}", f["trace_error"]);
            });
            assert!(
                traced > 0 && traced <= reads,
                "{inst}: {traced} traced, {reads} served"
            );
            assert_eq!(f["grep_samples"].as_array().unwrap().len(), 2);
            assert!(f["grep_seconds"].as_f64().unwrap() > 0.0);
            // The second grep, on the device renewed for it, traced and costed too: the lower
            // middle of two is the cheaper.
            let p = r["pulls"].as_u64().unwrap();
            let second = tmp
                .path()
                .join(format!("aged.img.traces/{p:05}-{inst}-r1.json"));
            assert!(second.is_file(), "{}", second.display());
            let m = &f["modeled"][0];
            let each: Vec<f64> = m["rep_seconds"]
                .as_array()
                .unwrap_or_else(|| panic!("{inst}: no rep_seconds: {m}"))
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert_eq!(each.len(), 2, "{m}");
            let k = m["rep"].as_u64().unwrap() as usize;
            assert_eq!(m["seconds"].as_f64(), Some(each[k]), "{m}");
            assert!(each[k] <= each[1 - k], "{m}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(&registry)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "devices left in the registry: {left:?}");
    assert!(fsage_sys::loops_backed_by(img).is_empty());
    assert_image_holds_last_commit(img, repo, tmp.path());

    // The model is part of the run: a resume on a fixed latency, or with none, is refused.
    let o = run(&["--resume", "--device-latency", "100us"]);
    expect_code(&o, 2, "resume on a latency after a model");
    assert!(stderr(&o).contains("model"), "{}", stderr(&o));
    let o = run(&["--resume"]);
    expect_code(&o, 2, "resume without the model");

    // An SSD: the replay never runs through the model, so each instance's writes are traced
    // into a drive of its own (the aged one kept in IMAGE.drives/), and every device starts from
    // it; the state a device saves beside the image when it goes is not left behind.
    let o = run_on(&ssd, &["--device-model", "ssd-sata", "--grep-reps", "2"]);
    expect_code(&o, 0, "git-age --device-model ssd-sata");
    let j = read_json(&json);
    assert_eq!(j["device_model"]["name"], "ssd-sata");
    assert_eq!(j["aged_drives"], serde_json::json!(["ssd-sata"]));
    for r in j["rows"].as_array().unwrap() {
        for inst in ["aged", "clean"] {
            let said = r[inst]["device_drive"].as_str().unwrap_or_else(|| {
                panic!("{inst} at {}: no device drive: {}", r["pulls"], r[inst])
            });
            assert!(
                said.starts_with("the drive state saved in"),
                "{inst}: the device started from {said}"
            );
        }
    }
    assert!(tmp.path().join("ssd.img.drives/ssd-sata.ftl").is_file());
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".ftl"))
        .collect();
    assert!(left.is_empty(), "drive states left: {left:?}");
}

/// A bundle of the synthetic repository (a bundle is cloned by fsage for the run).
fn bundle_of(repo: &Path, out: &Path) {
    let st = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["bundle", "create", "-q"])
        .arg(out)
        .arg("--all")
        .status()
        .unwrap();
    assert!(st.success(), "git bundle create");
}

/// Waits until the checkpoint `state` holds a measurement, with `child` still running.
fn wait_for_first_row(child: &mut std::process::Child, state: &Path) {
    let t0 = Instant::now();
    loop {
        let done = std::fs::read_to_string(state)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| {
                j["series"]["rows"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty())
            });
        if done {
            return;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be stopped"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no checkpoint after 120 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn git_age_stops_on_sigint_with_130_and_resumes_to_the_last_commit() {
    let Some(x) = Synth::new("git_age_sigint", 30, &["git", "mkfs.ext4", "losetup"]) else {
        return;
    };
    let (tmp, repo, img) = (&x.tmp, &x.repo, &x.img);
    let state = &x.state;
    let args = |extra: &[&str]| x.args(repo, "100", extra);
    // The outputs are given to the first run only: the resume writes them too (issue 22).
    let json = tmp.path().join("series.json");
    let csv = tmp.path().join("series.csv");
    let mut child = Command::new(bin())
        .args(args(&["--json", s(&json), "--csv", s(&csv)]))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_first_row(&mut child, state);
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let o = child.wait_with_output().unwrap();
    expect_code(&o, 130, "git-age after SIGINT");
    let err = stderr(&o);
    let j = x.checkpoint();
    let done = j["series"]["pulls_done"].as_u64().unwrap();
    assert!(done < 30, "stopped before the end");
    assert!(
        err.contains(&format!("stopped after commit {done} of 30")),
        "{err}"
    );
    // Nothing left mounted or attached.
    assert!(fsage_sys::loops_backed_by(img).is_empty());
    assert!(!tmp.path().join("aged.img.clean").exists());

    assert_eq!(read_json(&json)["finished"], false);
    let other = tmp.path().join("other.json");
    let o = fsage(args(&["--resume", "--json", s(&other)]));
    expect_code(&o, 2, "a resume given another --json");
    assert!(
        stderr(&o).contains(s(&other)) && stderr(&o).contains(s(&json)),
        "{}",
        stderr(&o)
    );
    let o = fsage_ok(args(&["--resume"]));
    let j = read_json(&json);
    assert_eq!(j["finished"], true, "{}", stderr(&o));
    assert_eq!(j["pulls_done"], 30);
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count();
    assert_eq!(rows as u64, 1 + j["rows"].as_array().unwrap().len() as u64);
    assert_image_holds_last_commit(img, repo, tmp.path());
}

/// Every refusal below happens before anything is made: no image, no checkpoint.
fn assert_nothing_made(dir: &Path, what: &str) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".img"))
        .collect();
    assert!(left.is_empty(), "{what}: left {left:?}");
}

#[test]
fn git_age_refuses_bad_input_before_making_anything() {
    if let Err(why) = need_root_and(&["git"]).or_else(|e| {
        // Root is not needed for these refusals; git is.
        Command::new("git")
            .arg("--version")
            .output()
            .map(|_| ())
            .map_err(|_| e)
    }) {
        return skip("git_age_refusals", &why);
    }
    let tmp = tmp();
    let repo = tmp.path().join("synth");
    fsage_git::synthetic::make_repo(&repo, 4).unwrap();
    let img = tmp.path().join("x.img");
    let image_run = |repo: &str, extra: &[&str]| {
        let mut a = vec!["git-age", repo, "--fs", "ext4", "--size", "64MiB", s(&img)];
        a.extend_from_slice(extra);
        fsage(a)
    };

    let o = image_run(s(&repo), &["--first", "no-such-rev"]);
    expect_code(&o, 2, "a --first that names no commit");
    expect_stderr(&o, "no-such-rev");
    assert_nothing_made(tmp.path(), "bad --first");

    let o = image_run(s(&repo), &["--last", "master", "--branch", "master"]);
    expect_code(&o, 2, "--last with --branch");

    // Cost models are resolved before anything is made; a bad one is named with the flag.
    let o = image_run(s(&repo), &["--cost-models", "1ms,warp-drive"]);
    expect_code(&o, 2, "an unknown cost model");
    assert!(
        stderr(&o).contains("--cost-models") && stderr(&o).contains("warp-drive"),
        "{}",
        stderr(&o)
    );
    assert_nothing_made(tmp.path(), "bad --cost-models");
    let o = image_run(s(&repo), &["--cost-models", "1ms,1000us"]);
    expect_code(&o, 2, "the same model twice");
    expect_stderr(&o, "given twice");
    assert_nothing_made(tmp.path(), "a model given twice");
    let o = image_run(s(&repo), &["--grep-reps", "0"]);
    expect_code(&o, 2, "no grep at all");
    expect_stderr(&o, "--grep-reps");
    assert_nothing_made(tmp.path(), "--grep-reps 0");

    // A subdirectory of the working tree is not the repository.
    let sub = repo.join("subdir-of-the-tree");
    std::fs::create_dir(&sub).unwrap();
    let o = image_run(s(&sub), &["--commits", "2", "--no-measure"]);
    expect_code(&o, 2, "REPO a subdirectory of a working tree");
    expect_stderr(&o, "subdirectory of the working tree");
    assert_nothing_made(tmp.path(), "REPO subdirectory");
    assert!(!tmp.path().join("x.img.mnt").exists());

    // An image in a directory that does not exist.
    let missing = tmp.path().join("nodir/x.img");
    let o = fsage([
        "git-age",
        s(&repo),
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        s(&missing),
    ]);
    expect_code(&o, 2, "an image in a missing directory");
    let want = format!(
        "{}: its directory {} does not exist",
        missing.display(),
        tmp.path().join("nodir").display()
    );
    expect_stderr(&o, &want);
    assert!(!tmp.path().join("nodir").exists());

    // A target directory that is not empty.
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("mine"), b"keep").unwrap();
    let clean = tmp.path().join("c.img");
    let o = fsage([
        "git-age",
        s(&repo),
        "--clean-fs",
        "ext4",
        "--clean-image",
        s(&clean),
        s(&full),
    ]);
    expect_code(&o, 2, "a non-empty target directory");
    expect_stderr(&o, "not empty");
    assert_eq!(std::fs::read(full.join("mine")).unwrap(), b"keep");
    assert_nothing_made(tmp.path(), "non-empty target");
}

#[test]
fn git_age_target_dir_records_the_aged_fs_and_sizes_the_clean_one_by_the_device() {
    if let Err(why) = need_root_and(&["git", "mkfs.ext4", "mkfs.btrfs", "losetup"]) {
        return skip("git_age_target_dir_fs", &why);
    }
    let aged_fs = match Ext4::ext4(128 << 20) {
        Ok(f) => f,
        Err(why) => return skip("git_age_target_dir_fs", &why),
    };
    let Some(x) = Synth::new("git_age_target_dir_fs", 4, &[]) else {
        return;
    };
    let (tmp, repo) = (&x.tmp, &x.repo);
    let bundle = tmp.path().join("synth.bundle");
    bundle_of(repo, &bundle);
    let target = aged_fs.path().join("aged");
    std::fs::create_dir(&target).unwrap();
    let clean = tmp.path().join("clean.img");
    let _c = Cleanup(vec![clean.clone()]);
    let json = tmp.path().join("s.json");
    let o = fsage(Synth::dir_args(
        &bundle,
        "btrfs",
        &clean,
        &target,
        &["--every", "5", "--json", s(&json)],
    ));
    expect_code(&o, 0, "git-age into a directory on ext4, clean btrfs");
    let j = read_json(&json);
    assert_eq!(j["fs"], "ext4", "the aged file system's kind");
    assert_eq!(j["clean_fs"], "btrfs");
    assert_eq!(
        j["size_bytes"].as_u64(),
        Some(128 << 20),
        "the clean instance is as large as the device, not statfs's size"
    );
    assert!(
        stdout(&o).contains("on ext4, clean instance btrfs"),
        "{}",
        stdout(&o)
    );
    // fsage's files are beside the clean image, none in the aged file system; the bundle's clone
    // is gone at the end.
    let mut top: Vec<String> = std::fs::read_dir(aged_fs.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["aged", "lost+found"]);
    assert!(tmp.path().join("clean.img.fsage-git.json").exists());
    assert!(!tmp.path().join("clean.img.source.git").exists());
}

#[test]
fn git_age_target_dir_without_a_block_device_needs_the_clean_size() {
    if let Err(why) = need_root_and(&["git", "mkfs.ext4", "losetup", "mount"]) {
        return skip("git_age_tmpfs_target", &why);
    }
    let Some(shm) = tmpfs_or_skip("git_age_tmpfs_target", "64m") else {
        return;
    };
    let Some(x) = Synth::new("git_age_tmpfs_target", 3, &[]) else {
        return;
    };
    let (tmp, repo) = (&x.tmp, &x.repo);
    let target = shm.path().join("aged");
    std::fs::create_dir(&target).unwrap();
    let clean = tmp.path().join("clean.img");
    let _c = Cleanup(vec![clean.clone()]);
    let json = tmp.path().join("s.json");
    let run = |extra: &[&str]| {
        let mut a = vec!["--every", "5", "--json", s(&json)];
        a.extend_from_slice(extra);
        fsage(Synth::dir_args(repo, "ext4", &clean, &target, &a))
    };
    let o = run(&[]);
    expect_code(&o, 2, "a TARGET_DIR on tmpfs without --size");
    expect_stderr(&o, "no block device");
    assert!(
        stderr(&o).contains("--size"),
        "the hint names the flag: {}",
        stderr(&o)
    );
    assert!(std::fs::read_dir(&target).unwrap().next().is_none());
    assert!(!tmp.path().join("clean.img.fsage-git.json").exists());
    // The missing block device is what is reported, also with the clean image beside the target.
    let beside = shm.path().join("c.img");
    let o = fsage(Synth::dir_args(repo, "ext4", &beside, &target, &[]));
    expect_code(&o, 2, "a TARGET_DIR on tmpfs, the clean image beside it");
    expect_stderr(&o, "no block device");
    // With the clean size given, a clean image on the aged file system is refused.
    let o = fsage(Synth::dir_args(
        repo,
        "ext4",
        &beside,
        &target,
        &["--size", "64MiB"],
    ));
    expect_code(&o, 2, "the clean image on the aged file system");
    expect_stderr(&o, "on the file system being aged");

    // Opted in with the clean instance's size: measured, without an aged layout score or
    // fragments per file (no FIEMAP on tmpfs), never shown as 0.
    let o = run(&["--size", "64MiB"]);
    expect_code(&o, 0, "a TARGET_DIR on tmpfs with --size");
    let j = read_json(&json);
    assert_eq!(j["fs"], "tmpfs");
    assert_eq!(j["size_bytes"].as_u64(), Some(64 << 20));
    let rows = j["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert!(r["aged"]["layout_score"].is_null(), "{r}");
        assert!(r["aged"]["frag"]["fragments_per_file"].is_null(), "{r}");
        assert!(r["clean"]["frag"]["fragments_per_file"].is_number(), "{r}");
    }
    // The table shows '-' for the aged fragments per file.
    let out = stdout(&o);
    let head = out
        .lines()
        .find(|l| l.trim_start().starts_with("pulls"))
        .unwrap();
    let cols: Vec<&str> = head
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let at = cols.iter().position(|c| *c == "aged frag/f").unwrap();
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert_eq!(row.split_whitespace().nth(at), Some("-"), "{out}");
}

#[test]
fn git_age_replays_a_bundle_into_an_image_named_relative_to_the_working_directory() {
    if let Err(why) = need_root_and(&["git", "mkfs.ext4", "losetup"]) {
        return skip("git_age_relative_image", &why);
    }
    let tmp = fsage_testkit::shm_tmp("fsage-git-age-");
    let repo = tmp.path().join("synth");
    fsage_git::synthetic::make_repo(&repo, 3).unwrap();
    bundle_of(&repo, &tmp.path().join("synth.bundle"));
    let img = tmp.path().join("rel.img");
    let _c = Cleanup(vec![img.clone()]);
    // The bundle's clone is named after the image: the pulls, run in the aged tree, must find it.
    let o = Command::new(bin())
        .current_dir(tmp.path())
        .args([
            "git-age",
            "synth.bundle",
            "--fs",
            "ext4",
            "--size",
            "64MiB",
            "--no-measure",
            "--quiet",
            "rel.img",
        ])
        .output()
        .unwrap();
    expect_code(&o, 0, "git-age with a relative image path");
    assert!(!tmp.path().join("rel.img.source.git").exists());
    assert!(fsage_sys::loops_backed_by(&img).is_empty());
}
