//! `fsage frag` on loop-mounted ext4: a fresh file system (the aged tree's files written in one
//! pass, a clean copy), the same tree after `fsage age -p agrawal`, and the clean copy after a
//! run that deletes every other small file. Free space, layout scores and probes must move the
//! expected way. Needs root, losetup and mkfs.ext4 (skipped otherwise).

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};

const IMAGE_BYTES: u64 = 512 << 20;

/// An ext4 image without reserved blocks (so that all free space is available to the probe).
fn ext4(test: &str) -> Option<Ext4> {
    let made = need_root_and(&["mount", "umount", "losetup", "mkfs.ext4"]).and_then(|()| {
        let image = tempfile::Builder::new()
            .prefix("fsage-frag-")
            .suffix(".img")
            .tempfile_in("/dev/shm")
            .map_err(|e| format!("image in /dev/shm: {e}"))?;
        image
            .as_file()
            .set_len(IMAGE_BYTES)
            .map_err(|e| format!("image size: {e}"))?;
        run_cmd(
            "mkfs.ext4",
            &["-q", "-F", "-m", "0", &image.path().to_string_lossy()],
        )?;
        let loopdev = LoopGuard::attach(image.path())?;
        let mount = MountGuard::mount(loopdev.dev(), &["-t", "ext4"])?;
        Ok(Ext4 {
            mount,
            loopdev,
            image,
        })
    });
    match made {
        Ok(e) => Some(e),
        Err(r) => {
            skip(test, &r);
            None
        }
    }
}

/// `fsage frag MOUNT --json FILE [--probe SIZE]`, parsed.
fn frag(mount: &Path, out: &Path, probe: Option<u64>) -> serde_json::Value {
    let mut args: Vec<String> = vec![
        "frag".into(),
        mount.to_string_lossy().into(),
        "--json".into(),
        out.to_string_lossy().into(),
    ];
    if let Some(p) = probe {
        args.push("--probe".into());
        args.push(p.to_string());
    }
    fsage_ok(&args);
    read_json(out)
}

fn f(j: &serde_json::Value, path: &[&str]) -> f64 {
    let mut v = j;
    for k in path {
        v = &v[*k];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number in {j}"))
}

/// Recreates the tree under `src` in `dst`, files in readdir order, each given its blocks with
/// fallocate in one call: a clean copy.
fn clean_copy(src: &Path, dst: &Path) {
    fs::create_dir(dst).unwrap();
    for e in fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        let to = dst.join(e.file_name());
        if t.is_dir() {
            clean_copy(&e.path(), &to);
        } else if t.is_file() {
            let len = e.metadata().unwrap().len();
            let file = fs::File::create(&to).unwrap();
            if len > 0 {
                rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, len)
                    .unwrap_or_else(|e| panic!("fallocate {}: {e}", to.display()));
            }
        }
    }
}

/// Files under `root` in readdir order.
fn files(root: &Path, out: &mut Vec<(PathBuf, u64)>) {
    for e in fs::read_dir(root).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            files(&e.path(), out);
        } else if t.is_file() {
            out.push((e.path(), e.metadata().unwrap().len()));
        }
    }
}

#[test]
fn fresh_aged_and_holed_ext4_differ_the_expected_way() {
    let t = "fresh_aged_and_holed_ext4_differ_the_expected_way";
    let Some(aged) = ext4(t) else { return };
    let Some(fresh) = ext4(t) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = |n: &str| dir.path().join(n);

    // The empty file system: one free region, a probe in one piece.
    let empty = frag(fresh.path(), &out("empty.json"), Some(16 << 20));
    assert!(f(&empty, &["free_space", "free_extents"]) <= 4.0, "{empty}");
    assert_eq!(f(&empty, &["probe", "fragments"]), 1.0, "{empty}");

    let target = aged.path().join("t");
    Age::on("agrawal", &target).run_ok();
    let a = frag(aged.path(), &out("aged.json"), Some(16 << 20));
    clean_copy(&target, &fresh.path().join("t"));
    let c = frag(fresh.path(), &out("fresh.json"), Some(16 << 20));
    assert_eq!(
        f(&a, &["files", "files"]) - 1.0,
        f(&c, &["files", "files"]),
        "the copy holds the aged tree's files (the aged one also has fsage's state file)"
    );

    // Aged against fresh: free space in many small pieces, files and reads less contiguous, the
    // probe split.
    let fe = |j: &serde_json::Value| f(j, &["free_space", "free_extents"]);
    let avg = |j: &serde_json::Value| f(j, &["free_space", "avg_blocks"]);
    let ls = |j: &serde_json::Value| f(j, &["files", "layout_score"]);
    let dls = |j: &serde_json::Value| f(j, &["files", "dynamic_layout_score"]);
    let pf = |j: &serde_json::Value| f(j, &["probe", "fragments"]);
    assert!(
        fe(&a) > 10.0 * fe(&c),
        "free extents: aged {} fresh {}",
        fe(&a),
        fe(&c)
    );
    assert!(
        avg(&a) * 10.0 < avg(&c),
        "avg free: aged {} fresh {}",
        avg(&a),
        avg(&c)
    );
    assert!(
        ls(&a) < ls(&c),
        "layout score: aged {} fresh {}",
        ls(&a),
        ls(&c)
    );
    assert!(ls(&c) > 0.99, "fresh layout score {}", ls(&c));
    assert!(
        dls(&a) < dls(&c),
        "dynamic layout: aged {} fresh {}",
        dls(&a),
        dls(&c)
    );
    assert!(pf(&c) <= 2.0, "fresh probe fragments {}", pf(&c));
    assert!(
        pf(&a) > 10.0 * pf(&c),
        "probe: aged {} fresh {}",
        pf(&a),
        pf(&c)
    );

    // Every other small file (64 KiB or less) of the clean copy deleted: holes in the free space,
    // the remaining files untouched.
    let mut all = Vec::new();
    files(&fresh.path().join("t"), &mut all);
    let small: Vec<&PathBuf> = all
        .iter()
        .filter(|(_, s)| *s <= 65536)
        .map(|(p, _)| p)
        .collect();
    assert!(small.len() > 1000, "{} small files", small.len());
    for p in small.iter().step_by(2) {
        fs::remove_file(p).unwrap();
    }
    let h0 = frag(fresh.path(), &out("holes.json"), None);
    // A probe of 90% of the free space cannot avoid the holes.
    let bs = f(&h0, &["block_size"]);
    let big = (0.9 * f(&h0, &["free_space", "free_blocks"]) * bs) as u64;
    assert!(
        big as f64 > f(&h0, &["free_space", "max_blocks"]) * bs + (4 << 20) as f64,
        "the holes hold too little: {h0}"
    );
    let h = frag(fresh.path(), &out("holes-probe.json"), Some(big));
    assert!(
        fe(&h) > 10.0 * fe(&c),
        "free extents: holed {} fresh {}",
        fe(&h),
        fe(&c)
    );
    assert!(
        avg(&h) < avg(&c),
        "avg free: holed {} fresh {}",
        avg(&h),
        avg(&c)
    );
    // (The dynamic layout score need not drop here: it counts blocks, and deleting small files
    // removes mostly the fetches between files.)
    assert!(
        (ls(&h) - ls(&c)).abs() < 0.01,
        "deleting files does not move the others: layout {} vs {}",
        ls(&h),
        ls(&c)
    );
    assert!(
        pf(&h) > 10.0,
        "a {big}-byte probe on the holed copy: {} fragments",
        pf(&h)
    );

    // compare shows them side by side.
    let o = fsage_ok([
        "frag".into(),
        "compare".into(),
        out("fresh.json").into_os_string(),
        out("aged.json").into_os_string(),
        out("holes-probe.json").into_os_string(),
    ]);
    let text = stdout(&o);
    eprintln!("{text}");
    assert!(
        text.contains("fresh") && text.contains("aged") && text.contains("holes-probe"),
        "{text}"
    );
    assert!(text.contains("dynamic layout score"), "{text}");
}

#[test]
fn frag_refuses_bad_input_clearly() {
    let o = fsage(["frag", "/nonexistent/fsage-frag"]);
    expect_code(&o, 2, "frag of a missing path");
    expect_stderr(&o, "/nonexistent/fsage-frag");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    fs::write(&bad, "{}").unwrap();
    let o = fsage([
        "frag".as_ref(),
        "compare".as_ref(),
        bad.as_os_str(),
        bad.as_os_str(),
    ]);
    expect_code(&o, 2, "compare of a non-report");
    expect_stderr(&o, "bad.json");
    let o = fsage(["frag", "/", "--probe", "lots"]);
    expect_code(&o, 2, "bad --probe");
    expect_stderr(&o, "--probe");
}

#[test]
fn profile_extract_writes_a_profile_that_ages() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    fs::create_dir_all(root.join("a/b")).unwrap();
    for (i, p) in ["x", "a/y", "a/b/z", "a/b/w"].iter().enumerate() {
        let f = fs::File::create(root.join(p)).unwrap();
        f.set_len(1000 * (i as u64 + 1)).unwrap();
        let age = std::time::Duration::from_secs(3600 << (2 * i));
        f.set_modified(std::time::SystemTime::now() - age).unwrap();
    }
    std::os::unix::fs::symlink("x", root.join("s")).unwrap();
    let out = dir.path().join("p.toml");
    let o = fsage_ok([
        "profile".as_ref(),
        "extract".as_ref(),
        root.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--capacity".as_ref(),
        "1MiB".as_ref(),
        "--age-from".as_ref(),
        "mtime".as_ref(),
    ]);
    let err = stderr(&o);
    assert!(
        err.contains("4 files, 2 directories") && err.contains("1 symlinks"),
        "{err}"
    );
    let text = fs::read_to_string(&out).unwrap();
    assert!(text.contains("name = \"tree\""), "{text}");
    // Refuses to overwrite, then ages in a dry run.
    let o = fsage([
        "profile".as_ref(),
        "extract".as_ref(),
        root.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    expect_code(&o, 2, "extract over an existing file");
    fsage_ok([
        "age".as_ref(),
        "-p".as_ref(),
        out.as_os_str(),
        "--capacity".as_ref(),
        "64MiB".as_ref(),
        "--dry-run".as_ref(),
        "-q".as_ref(),
    ]);
}

/// Regression: `frag` on tmpfs exited 0 having measured nothing (no GETFSMAP, no FIEMAP there).
#[test]
fn frag_on_a_file_system_it_cannot_measure_says_so_and_fails() {
    let Some(t) = tmpfs_or_skip(
        "frag_on_a_file_system_it_cannot_measure_says_so_and_fails",
        "16m",
    ) else {
        return;
    };
    fs::write(t.path().join("f"), vec![7u8; 100_000]).unwrap();
    let o = fsage(["frag", s(t.path())]);
    expect_code(&o, 2, "frag on tmpfs");
    let e = stderr(&o);
    assert!(
        e.contains("nothing can be measured") && e.contains("tmpfs"),
        "{e}"
    );
}

/// Regression: a profile extracted from a real tree could not be aged (mtimes near the epoch next
/// to files made minutes ago gave T = 1.4e11 ticks). Timestamps before 1980 and in the future are
/// left out and reported, the youngest age bins merge until T <= 1000 K, and a dry run of the
/// profile converges onto the extracted histograms.
#[test]
fn an_extracted_profile_with_epoch_and_fresh_files_ages_and_matches() {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let now = SystemTime::now();
    let mut n = 0u64;
    for d in 0..20 {
        let sub = root.join(format!("d{d}/e{}", d % 3));
        fs::create_dir_all(&sub).unwrap();
        for i in 0..60u64 {
            n += 1;
            let f = fs::File::create(sub.join(format!("f{i}"))).unwrap();
            f.set_len((1 + (n * 7919) % 300) * 1000).unwrap();
            let when = match n % 20 {
                0 => UNIX_EPOCH + Duration::from_secs(n), // a placeholder, not an age
                1 => now + Duration::from_secs(86_400 * 30), // the future
                2..=4 => now - Duration::from_secs(60 + n), // made minutes ago
                k => now - Duration::from_secs(86_400 * (30 * k + n % 90)), // months to years
            };
            f.set_modified(when).unwrap();
        }
    }
    let out = dir.path().join("p.toml");
    let o = fsage_ok([
        "profile",
        "extract",
        s(&root),
        "-o",
        s(&out),
        "--capacity",
        "1GiB",
        "--age-from",
        "mtime",
    ]);
    let err = stderr(&o);
    assert!(
        err.contains("60 files with a timestamp before 1980"),
        "{err}"
    );
    assert!(err.contains("60 with one in the future"), "{err}");
    assert!(err.contains("youngest age bins"), "{err}");
    // At the tree's own tiny fullness no file fits: `profile show` refuses that as `age` does.
    let show = stdout(&fsage_ok([
        "profile",
        "show",
        s(&out),
        "--capacity",
        "4GiB",
        "--fullness",
        "0.5",
    ]));
    let factor: f64 = show
        .split(" ticks to converge (")
        .nth(1)
        .and_then(|t| t.split(" ×").next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no T factor in: {show}"));
    assert!(factor <= 1000.0, "T = {factor} K");
    let json = dir.path().join("r.json");
    Age::plan(s(&out), "4GiB")
        .fullness("0.5")
        .json(s(&json))
        .run_ok();
    let r = read_json(&json);
    assert_eq!(r["stop_reason"], "converged");
    assert!(r["age"]["rmse"].as_f64().unwrap() < 1e-3, "{}", r["age"]);
    for h in ["size", "depth"] {
        let worst = r[h]["max_abs_error"].as_f64().unwrap();
        assert!(worst < 0.005, "{h} off by {worst}");
    }
}
