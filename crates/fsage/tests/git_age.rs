//! `fsage git-age`: a run killed with SIGKILL and resumed ends in the tree of the last commit and
//! the series shape of an uninterrupted run; with --device-latency both instances are measured
//! through a slow device that the series names and that is gone afterwards; bad input gets exit
//! code 2.

mod common;

use common::*;
use std::collections::BTreeMap;
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

fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, rel: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        let d = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let p = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p, std::fs::read(e.path()).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, "", &mut out);
    out
}

#[test]
fn git_age_resumes_after_kill_9_to_the_same_tree_and_series_shape() {
    if let Err(why) = need_root_and(&["git", "mkfs.ext4", "losetup"]) {
        return skip("git_age_resume", &why);
    }
    let tmp = tempfile::tempdir_in("/dev/shm").unwrap();
    let repo = tmp.path().join("synth");
    fsage_git::synthetic::make_repo(&repo, 20).unwrap();
    let img = tmp.path().join("aged.img");
    let _c = Cleanup(vec![img.clone(), tmp.path().join("aged.img.clean")]);
    let state = tmp.path().join("aged.img.fsage-git.json");
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = vec![
            "git-age".into(),
            s(&repo).into(),
            "--fs".into(),
            "ext4".into(),
            "--size".into(),
            "64MiB".into(),
            s(&img).into(),
            "--every".into(),
            "5".into(),
            "--quiet".into(),
        ];
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let mut child = Command::new(bin()).args(args(&[])).spawn().unwrap();
    // Kill it once the first measurement is checkpointed, in the middle of what follows.
    let t0 = Instant::now();
    loop {
        let done = std::fs::read_to_string(&state)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| {
                j["series"]["rows"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty())
            });
        if done {
            std::thread::sleep(Duration::from_millis(150));
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no checkpoint after 120 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), None, "killed by a signal");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert!(
        j["series"]["pulls_done"].as_u64().unwrap() < 20,
        "killed before the end"
    );

    let json = tmp.path().join("series.json");
    let csv = tmp.path().join("series.csv");
    let o = fsage_ok(args(&["--resume", "--json", s(&json), "--csv", s(&csv)]));
    let j = read_json(&json);
    let pulls: Vec<u64> = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pulls"].as_u64().unwrap())
        .collect();
    assert_eq!(pulls, vec![1, 6, 11, 16, 20], "{}", stderr(&o));
    assert_eq!(j["finished"], true);
    assert_eq!(j["pulls_done"], 20);
    let c = std::fs::read_to_string(&csv).unwrap();
    assert!(c.starts_with("pulls,du_bytes,aged_seconds,aged_layout_score,clean_seconds,"));
    assert_eq!(c.lines().count(), 6);

    // The image holds the tree of the last commit.
    let mnt = tmp.path().join("check");
    std::fs::create_dir(&mnt).unwrap();
    fsage_ok(["fs", "mount", s(&img), s(&mnt)]);
    let got = files(&mnt.join("synth"));
    fsage_ok(["fs", "umount", s(&mnt)]);
    let want_dir = tmp.path().join("want");
    std::fs::create_dir(&want_dir).unwrap();
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "git -C '{}' archive master | tar -x -C '{}'",
            s(&repo),
            s(&want_dir)
        ))
        .status()
        .unwrap();
    assert!(st.success());
    let got_keys: Vec<&String> = got.keys().collect();
    let want = files(&want_dir);
    assert_eq!(got_keys, want.keys().collect::<Vec<_>>());
    assert!(
        got == want,
        "contents differ from git archive of the last commit"
    );

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
    assert!(stderr(&o).contains("/nonexistent/repo"), "{}", stderr(&o));
    let o = fsage(["git-age", s(tmp.path()), s(tmp.path())]);
    expect_code(&o, 2, "neither --fs nor --clean-fs");
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
    if let Err(why) = need_root_and(&["git", "mkfs.ext4", "losetup"]) {
        return skip("git_age_slow_device", &why);
    }
    if !Path::new("/dev/fuse").exists() {
        return skip("git_age_slow_device", "/dev/fuse is missing");
    }
    let tmp = tempfile::tempdir_in("/dev/shm").unwrap();
    let repo = tmp.path().join("synth");
    fsage_git::synthetic::make_repo(&repo, 10).unwrap();
    let img = tmp.path().join("aged.img");
    let registry = tmp.path().join("registry");
    let _c = SlowCleanup {
        images: vec![img.clone(), tmp.path().join("aged.img.clean")],
        registry: registry.clone(),
    };
    let json = tmp.path().join("series.json");
    let run = |extra: &[&str]| {
        Command::new(bin())
            .args(["git-age", s(&repo), "--fs", "ext4", "--size", "64MiB"])
            .arg(&img)
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
    assert!(fsage_lab::sys::loops_backed_by(&img).is_empty());
    assert!(!tmp.path().join("aged.img.clean").exists());

    // The image holds the tree of the last commit.
    let mnt = tmp.path().join("check");
    std::fs::create_dir(&mnt).unwrap();
    fsage_ok(["fs", "mount", s(&img), s(&mnt)]);
    let got = files(&mnt.join("synth"));
    fsage_ok(["fs", "umount", s(&mnt)]);
    let want_dir = tmp.path().join("want");
    std::fs::create_dir(&want_dir).unwrap();
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "git -C '{}' archive master | tar -x -C '{}'",
            s(&repo),
            s(&want_dir)
        ))
        .status()
        .unwrap();
    assert!(st.success());
    assert!(
        got == files(&want_dir),
        "the aged tree differs from git archive of the last commit"
    );

    // The latency is part of the run: a resume without it, or with another, is refused.
    let o = run(&["--resume"]);
    expect_code(&o, 2, "resume without the device latency");
    let o = run(&["--resume", "--device-latency", "1ms"]);
    expect_code(&o, 2, "resume with another device latency");
    let o = run(&["--device-latency", "fast"]);
    expect_code(&o, 2, "a latency that is not one");
    assert!(stderr(&o).contains("--device-latency"), "{}", stderr(&o));
}
