//! What a new user met (issue 22), each as its reproduction: outputs a resumed run writes where
//! its first session did; a git-age image too small for the repository refused up front, and a
//! failed run leaving only what a resume needs; dry-run capacities said; messages that name
//! negative sizes, `--force` as a hint, and exit code 2 for input at fault.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

/// `age --json X`, stopped early, then `age --resume` without `--json`: the report goes to X
/// again (not to a default), and a `--json` that disagrees is refused naming both paths.
#[test]
fn a_resumed_age_run_rewrites_the_json_it_was_given() {
    let d = tmp();
    let (state, json) = (d.path().join("run.state"), d.path().join("run.json"));
    let other = d.path().join("other.json");
    fsage_ok([
        "age",
        "--profile",
        "agrawal",
        "--capacity",
        "64MiB",
        "--dry-run",
        "--quiet",
        "--max-ops",
        "2000",
        "--state",
        s(&state),
        "--json",
        s(&json),
    ]);
    assert_eq!(j_u64(&read_json(&json), "ticks"), 2000);
    let o = fsage([
        "age",
        "--resume",
        s(&state),
        "--dry-run",
        "--quiet",
        "--json",
        s(&other),
    ]);
    expect_code(&o, 2, "a --json that disagrees with the run's");
    let e = stderr(&o);
    assert!(
        e.contains(s(&other)) && e.contains(s(&json)),
        "both paths named: {e}"
    );
    assert!(!other.exists());
    fsage_ok([
        "age",
        "--resume",
        s(&state),
        "--dry-run",
        "--quiet",
        "--max-ops",
        "5000",
    ]);
    assert_eq!(
        j_u64(&read_json(&json), "ticks"),
        5000,
        "the resumed session rewrote the first session's JSON"
    );
    // The same path given again is fine.
    fsage_ok([
        "age",
        "--resume",
        s(&state),
        "--dry-run",
        "--quiet",
        "--max-ops",
        "6000",
        "--json",
        s(&json),
    ]);
    assert_eq!(j_u64(&read_json(&json), "ticks"), 6000);
}

/// A repository whose last commit holds one file of `bytes` incompressible bytes.
fn repo_with_file(dir: &Path, bytes: usize) {
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    };
    std::fs::create_dir_all(dir).unwrap();
    git(&["init", "-q", "-b", "master", "."]);
    std::fs::write(dir.join("small"), b"one\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "one"]);
    let mut x = 0x9e3779b97f4a7c15u64;
    let data: Vec<u8> = (0..bytes)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(dir.join("big"), data).unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "two"]);
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `git-age` on an image smaller than the last commit's tree: refused (exit 2, a `--size` hint)
/// before anything is made.
#[test]
fn git_age_refuses_an_image_smaller_than_the_tree_up_front() {
    if Command::new("git").arg("--version").output().is_err() {
        return skip("git_age_tiny_image", "git is missing");
    }
    let d = tmp();
    let repo = d.path().join("repo");
    repo_with_file(&repo, 3 << 20);
    let img = d.path().join("x.img");
    let o = fsage([
        "git-age",
        s(&repo),
        "--fs",
        "ext4",
        "--size",
        "1MiB",
        s(&img),
        "--no-measure",
    ]);
    expect_code(&o, 2, "an image smaller than the tree");
    let e = stderr(&o);
    assert!(e.contains("checked-out tree"), "{e}");
    assert!(e.contains("fsage: hint:") && e.contains("--size"), "{e}");
    assert_eq!(names(d.path()), ["repo"], "nothing made");
}

/// A run that fails on a full file system (the tree fits, its objects do not) leaves the image
/// and its checkpoint for `--resume`, says so, and removes its empty mount point.
#[test]
fn a_failed_git_age_run_keeps_only_what_resume_needs() {
    if let Err(why) = need_root_and(&["git", "mkfs.ext4", "losetup"]) {
        return skip("a_failed_git_age_run_keeps_only_what_resume_needs", &why);
    }
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let repo = d.path().join("repo");
    repo_with_file(&repo, 3 << 20);
    let img = d.path().join("x.img");
    let o = fsage([
        "git-age",
        s(&repo),
        "--fs",
        "ext4",
        "--size",
        "4MiB",
        s(&img),
        "--no-measure",
        "--quiet",
    ]);
    if o.status.code() == Some(0) {
        let _ = fsage(["fs", "umount", s(&img)]);
        panic!("expected the pull to fill the file system:\n{}", stderr(&o));
    }
    expect_code(&o, 1, "a pull that fills the file system");
    assert!(
        fsage_sys::loops_backed_by(&img).is_empty(),
        "not left attached"
    );
    let e = stderr(&o);
    assert!(
        e.contains("kept") && e.contains("--resume") && e.contains("x.img.fsage-git.json"),
        "{e}"
    );
    assert_eq!(
        names(d.path()),
        ["repo", "x.img", "x.img.fsage-git.json"],
        "only the image and its checkpoint"
    );
}

/// `mkfs` at 1 EiB: ext4 cannot be that large; the size is at fault (exit 2).
#[test]
fn fs_create_at_1_eib_is_bad_input() {
    if let Err(why) = need_root_and(&["mkfs.ext4"]) {
        return skip("fs_create_at_1_eib_is_bad_input", &why);
    }
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let img = d.path().join("huge.img");
    let o = fsage(["fs", "create", "--fs", "ext4", "--size", "1EiB", s(&img)]);
    expect_code(&o, 2, "ext4 of 1 EiB");
    assert!(stderr(&o).contains("too large for ext4"), "{}", stderr(&o));
    assert!(!img.exists());
}

/// Sizes below zero are said to be negative (`--size=-5GiB` once said "unknown unit").
#[test]
fn a_negative_size_is_called_negative() {
    for args in [
        &[
            "age",
            "--profile",
            "agrawal",
            "--dry-run",
            "--capacity=-5GiB",
        ][..],
        &[
            "fs",
            "create",
            "--fs",
            "ext4",
            "--size=-5GiB",
            "/nonexistent/x.img",
        ][..],
    ] {
        let o = fsage(args);
        expect_code(&o, 2, &format!("{args:?}"));
        assert!(
            stderr(&o).contains("sizes cannot be negative"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// Ageing into a directory that is not empty is refused with a hint naming `--force`.
#[test]
fn refusals_that_can_be_forced_hint_at_force() {
    let d = tmp();
    let target = d.path().join("t");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("mine"), b"x").unwrap();
    let o = fsage([
        "age",
        "--profile",
        "agrawal",
        "--capacity",
        "64MiB",
        s(&target),
    ]);
    expect_code(&o, 2, "a target that is not empty");
    assert!(
        stderr(&o).contains("fsage: hint: --force"),
        "{}",
        stderr(&o)
    );
    // An output file that exists.
    let out = d.path().join("p.toml");
    std::fs::write(&out, b"").unwrap();
    let src = d.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let o = fsage(["profile", "extract", s(&src), "-o", s(&out)]);
    expect_code(&o, 2, "profile extract over an existing file");
    assert!(
        stderr(&o).contains("fsage: hint: --force"),
        "{}",
        stderr(&o)
    );
    let o = fsage(["report", s(&src), "-o", s(&out)]);
    expect_code(&o, 2, "report over an existing file");
    assert!(
        stderr(&o).contains("fsage: hint: --force"),
        "{}",
        stderr(&o)
    );
}

/// A dry run says which capacity it assumed; with `--fs KIND --size SIZE` it plans at the usable
/// space of a new file system of that size, the capacity a real run there would see.
#[test]
fn a_dry_run_says_which_capacity_it_assumed() {
    let o = fsage_ok([
        "age",
        "--profile",
        "agrawal",
        "--capacity",
        "64MiB",
        "--dry-run",
        "--max-ops",
        "100",
    ]);
    let out = stdout(&o);
    assert!(
        out.contains("capacity: 64 MiB as given (--capacity)")
            && out.contains("less usable space")
            && out.contains("--dry-run --fs KIND --size 64MiB"),
        "{out}"
    );
    if let Err(why) = need_root_and(&["mkfs.ext4", "losetup"]) {
        return skip("a_dry_run_says_which_capacity_it_assumed (--fs)", &why);
    }
    let d = tmp();
    let json = d.path().join("dry.json");
    let o = fsage_ok([
        "age",
        "--profile",
        "agrawal",
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        "--dry-run",
        "--max-ops",
        "100",
        "--json",
        s(&json),
    ]);
    let out = stdout(&o);
    assert!(
        out.contains("the usable space of a new ext4 of 64 MiB"),
        "{out}"
    );
    let cap = j_u64(&read_json(&json), "capacity");
    assert!(cap < 64 << 20 && cap > 48 << 20, "usable {cap}");
    // The same capacity a real run on such an image takes (the file system's size).
    let img = d.path().join("real.img");
    let real = d.path().join("real.json");
    let _cleanup = scopeguard(&img);
    fsage_ok([
        "age",
        "--profile",
        "agrawal",
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        "--max-ops",
        "100",
        "--quiet",
        "--json",
        s(&real),
        s(&img),
    ]);
    assert_eq!(j_u64(&read_json(&real), "capacity"), cap);
}

/// Takes down the image if a failed test left it mounted.
struct Unmount(std::path::PathBuf);
impl Drop for Unmount {
    fn drop(&mut self) {
        if !fsage_sys::loops_backed_by(&self.0).is_empty() {
            let _ = fsage(["fs", "umount", s(&self.0)]);
        }
    }
}
fn scopeguard(img: &Path) -> Unmount {
    Unmount(img.to_path_buf())
}
