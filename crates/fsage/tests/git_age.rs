//! `fsage git-age`: a run killed with SIGKILL and resumed ends in the tree of the last commit and
//! the series shape of an uninterrupted run; bad input gets exit code 2.

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
