//! Real aging runs on tmpfs mounts the tests make themselves (root needed; skipped otherwise),
//! plus the target-directory refusals, which need no mount.

mod common;

use common::*;
use std::fs;
use std::path::Path;
use std::time::Instant;

#[test]
fn tmpfs_run_converges_equals_the_dry_run_and_leaves_the_logged_tree() {
    let test = "tmpfs_run_converges_equals_the_dry_run_and_leaves_the_logged_tree";
    let Some(mnt) = tmpfs_or_skip(test, "256m") else {
        return;
    };
    let d = tmp();
    let run = Age::new("agrawal")
        .target(s(mnt.path()))
        .seed("3")
        .run_logged(d.path());
    let o = &run.output;
    // Not quiet: the summary went to stdout.
    assert!(stdout(o).contains("agrawal"), "{}", stdout(o));
    let (log, j) = (run.log, run.report);
    assert_eq!(j_str(&j, "stop_reason"), "converged");
    assert_eq!(j_u64(&j, "ticks"), j_u64(&j, "t_estimate"));
    assert_eq!(j_u64(&j, "capacity"), 256 << 20, "capacity from statvfs");
    assert_eq!(j_u64(&j, "enospc_events"), 0);
    assert_eq!(j_str(&j, "backend"), "posix (fallocate)");
    assert!(j["error"].is_null(), "{}", j["error"]);

    // The same decisions as a dry run at the same capacity, block size and seed, byte for byte.
    let cap = j_u64(&j, "capacity").to_string();
    let bs = j_u64(&j, "block_size");
    let dry = d.path().join("dry.log");
    Age::plan("agrawal", &cap)
        .block_size(bs.to_string())
        .seed("3")
        .op_log(s(&dry))
        .run_ok();
    let real = fs::read(&log).unwrap();
    assert!(
        real == fs::read(&dry).unwrap(),
        "the real run's op log differs from the dry run's"
    );

    // The disk holds exactly the op log's live set, in exactly its directories.
    let text = String::from_utf8(real).unwrap();
    let r = replay_log(&text);
    assert_tree_matches_log(mnt.path(), &r);
    assert_eq!(r.live.len() as u64, j_u64(&j, "live_files"));
    assert_eq!(r.allocated(bs), j_u64(&j, "live_bytes"));
    let t = walk(mnt.path());
    for (p, &size) in &t.files {
        let a = t.allocated[p];
        assert!(
            a >= size / 4096 * 4096,
            "{p}: {size} bytes but {a} allocated"
        );
    }

    // `fsage replay` reproduces the tree on another file system.
    let Some(mnt2) = tmpfs_or_skip(test, "256m") else {
        return;
    };
    let target = mnt2.path().join("replayed");
    let o = fsage_ok(["replay", s(&log), s(&target)]);
    assert!(stdout(&o).contains("replayed"), "{}", stdout(&o));
    assert_tree_matches_log(&target, &r);
    assert_eq!(walk(&target).files, t.files);
}

#[test]
fn write_mode_writes_real_data() {
    let test = "write_mode_writes_real_data";
    let Some(mnt) = tmpfs_or_skip(test, "256m") else {
        return;
    };
    let d = tmp();
    let run = Age::on("agrawal", s(mnt.path()))
        .write_mode("write")
        .max_ops("3000")
        .seed("4")
        .run_logged(d.path());
    let (log, j) = (run.log, run.report);
    assert_eq!(j_str(&j, "stop_reason"), "max_ops");
    assert_eq!(j_u64(&j, "ticks"), 3000);
    assert_eq!(j_str(&j, "backend"), "posix (write)");
    let text = fs::read_to_string(&log).unwrap();
    let r = replay_log(&text);
    assert_tree_matches_log(mnt.path(), &r);

    // The write mode changes how files get blocks, not which files there are.
    let dry = d.path().join("dry.log");
    Age::plan("agrawal", j_u64(&j, "capacity").to_string())
        .block_size(j_u64(&j, "block_size").to_string())
        .max_ops("3000")
        .seed("4")
        .op_log(s(&dry))
        .run_ok();
    assert!(text == fs::read_to_string(&dry).unwrap(), "op logs differ");

    let t = walk(mnt.path());
    let mut checked = 0;
    for (p, &size) in &t.files {
        let a = t.allocated[p];
        assert!(
            a >= size / 4096 * 4096,
            "{p}: sparse: {size} bytes, {a} allocated"
        );
        if size >= 4096 && checked < 50 {
            let data = fs::read(mnt.path().join(p)).unwrap();
            assert_eq!(data.len() as u64, size);
            let zeros = data.iter().filter(|&&b| b == 0).count();
            assert!(
                zeros * 16 < data.len(),
                "{p}: {zeros} of {size} bytes are zero: not real data"
            );
            checked += 1;
        }
    }
    assert!(checked > 10, "only {checked} files of 4 KiB or more");
}

/// `--data zeros` with `--write-mode write`: every file holds zeros, and the report says so;
/// `--data` without data to write (fallocate) is refused before anything runs.
#[test]
fn age_data_zeros_writes_zeros_and_records_it() {
    let test = "age_data_zeros_writes_zeros_and_records_it";
    let o = Age::on("agrawal", "/nonexistent-fsage-target")
        .arg("--data")
        .arg("zeros")
        .max_ops("10")
        .run();
    expect_code(&o, 2, "--data with fallocate");
    expect_stderr(&o, "--write-mode write");
    let Some(mnt) = tmpfs_or_skip(test, "256m") else {
        return;
    };
    let d = tmp();
    let run = Age::on("agrawal", s(mnt.path()))
        .write_mode("write")
        .arg("--data")
        .arg("zeros")
        .max_ops("2000")
        .run_logged(d.path());
    assert_eq!(j_str(&run.report, "data"), "zeros");
    let t = walk(mnt.path());
    let mut bytes = 0;
    for p in t.files.keys() {
        let data = fs::read(mnt.path().join(p)).unwrap();
        assert!(data.iter().all(|&b| b == 0), "{p}: not zeros");
        bytes += data.len();
    }
    assert!(bytes > 1 << 20, "{bytes} bytes written");
}

#[test]
fn non_empty_target_is_refused_and_force_ages_it_leaving_the_file_alone() {
    // No mount needed: a small capacity on a temporary directory.
    let d = tmp();
    let target = d.path().join("target");
    fs::create_dir(&target).unwrap();
    let precious = target.join("precious.txt");
    fs::write(&precious, "do not touch\n").unwrap();
    let mtime = fs::metadata(&precious).unwrap().modified().unwrap();
    let args = |force: bool| {
        let mut a = vec![
            "age".to_string(),
            "-q".into(),
            "-p".into(),
            "agrawal".into(),
            s(&target).into(),
            "--capacity".into(),
            "64MiB".into(),
            "--max-ops".into(),
            "2000".into(),
            "--op-log".into(),
            s(&d.path().join("age.log")).into(),
        ];
        if force {
            a.push("--force".into());
        }
        a
    };
    let o = fsage(args(false));
    expect_code(&o, 2, "age into a non-empty directory");
    expect_stderr(&o, "not empty");
    let names: Vec<_> = fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["precious.txt"], "a refused run left files behind");
    assert_eq!(fs::read_to_string(&precious).unwrap(), "do not touch\n");

    fsage_ok(args(true));
    assert_eq!(fs::read_to_string(&precious).unwrap(), "do not touch\n");
    assert_eq!(fs::metadata(&precious).unwrap().modified().unwrap(), mtime);
    fs::remove_file(&precious).unwrap();
    let r = replay_log(&fs::read_to_string(d.path().join("age.log")).unwrap());
    assert_tree_matches_log(&target, &r);

    // A target that is a file, not a directory.
    let o = Age::new("agrawal")
        .quiet()
        .target(s(&d.path().join("age.log")))
        .capacity("64MiB")
        .run();
    expect_code(&o, 2, "age into a regular file");
    expect_stderr(&o, "not a directory");
}

#[test]
fn a_planted_symlink_is_not_followed() {
    // With --force, a symlink where the tree's first directory goes must not lead fsage outside.
    let d = tmp();
    let dry = d.path().join("dry.log");
    Age::plan("agrawal", "64MiB")
        .seed("9")
        .op_log(s(&dry))
        .run_ok();
    let first = replay_log(&fs::read_to_string(&dry).unwrap()).dirs[0].clone();
    assert!(!first.contains('/'), "first mkdir {first} is not top level");
    let target = d.path().join("target");
    let outside = d.path().join("outside");
    fs::create_dir(&target).unwrap();
    fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, target.join(&first)).unwrap();
    let json = d.path().join("age.json");
    let o = Age::on("agrawal", s(&target))
        .capacity("64MiB")
        .seed("9")
        .max_ops("2000")
        .force()
        .json(s(&json))
        .run();
    // An I/O error ends the run (exit 1) with a report; it is not a crash.
    expect_code(&o, 1, "age over a planted symlink");
    let j = read_json(&json);
    assert_eq!(j_str(&j, "stop_reason"), "io_error");
    assert!(j_str(&j, "error").contains(&first), "{}", j["error"]);
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "fsage wrote through the symlink"
    );
    assert!(fs::symlink_metadata(target.join(&first))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn enospc_on_a_small_tmpfs_is_survived_and_the_disk_matches_the_log() {
    let test = "enospc_on_a_small_tmpfs_is_survived_and_the_disk_matches_the_log";
    let Some(mnt) = tmpfs_or_skip(test, "64m") else {
        return;
    };
    let start = Instant::now();
    let run = Age::on("agrawal", s(mnt.path()))
        .capacity("256MiB")
        .max_ops("20000")
        .seed("3")
        .run_logged_tmp();
    let o = &run.output;
    eprintln!("took {:.1}s", start.elapsed().as_secs_f64());
    expect_code(o, 0, "capacity larger than the tmpfs");
    expect_stderr(o, "larger than the file system");
    let (log, j) = (run.log, run.report);
    assert_eq!(j_str(&j, "stop_reason"), "max_ops");
    assert_eq!(j_u64(&j, "ticks"), 20000);
    let events = j_u64(&j, "enospc_events");
    assert!(events > 0, "no ENOSPC reported");
    // fsage counts each directory as one block; tmpfs charges directories nothing, so the counted
    // bytes may exceed the tmpfs by the directories' blocks, never by more.
    let tmpfs_size = (64u64 << 20) + j_u64(&j, "directories") * j_u64(&j, "block_size");
    assert!(j_u64(&j, "live_bytes") <= tmpfs_size, "{}", j["live_bytes"]);
    assert!(
        j_u64(&j, "ceiling_bytes") <= tmpfs_size,
        "{}",
        j["ceiling_bytes"]
    );

    let text = fs::read_to_string(&log).unwrap();
    let r = replay_log(&text);
    assert_eq!(
        r.refused.len() as u64,
        events,
        "enospc lines vs enospc_events"
    );
    assert_eq!(r.live.len() as u64, j_u64(&j, "live_files"));
    assert_eq!(
        r.allocated(j_u64(&j, "block_size")),
        j_u64(&j, "live_bytes")
    );
    assert_tree_matches_log(mnt.path(), &r);

    // The log (enospc lines included) replays on a file system of the same size.
    let Some(mnt2) = tmpfs_or_skip(test, "64m") else {
        return;
    };
    fsage_ok(["replay", s(&log), s(mnt2.path())]);
    assert_tree_matches_log(mnt2.path(), &r);
}

#[test]
fn enospc_in_write_mode_leaves_no_partial_file() {
    // write(2) can fail half-way through a file; the file must go, as the plan forgets it.
    let test = "enospc_in_write_mode_leaves_no_partial_file";
    let Some(mnt) = tmpfs_or_skip(test, "64m") else {
        return;
    };
    let run = Age::on("agrawal", s(mnt.path()))
        .capacity("256MiB")
        .write_mode("write")
        .max_ops("20000")
        .seed("5")
        .run_logged_tmp();
    let (log, j) = (run.log, run.report);
    assert_eq!(j_str(&j, "stop_reason"), "max_ops");
    assert!(j_u64(&j, "enospc_events") > 0, "no ENOSPC reported");
    let r = replay_log(&fs::read_to_string(&log).unwrap());
    assert_eq!(r.refused.len() as u64, j_u64(&j, "enospc_events"));
    assert_tree_matches_log(mnt.path(), &r);
}

#[test]
fn mount_guard_falls_back_to_a_lazy_unmount_when_busy() {
    // The tests' own cleanup: a mount kept busy by a process inside it is still removed.
    let test = "mount_guard_falls_back_to_a_lazy_unmount_when_busy";
    let Some(mnt) = tmpfs_or_skip(test, "1m") else {
        return;
    };
    let point = mnt.path().to_path_buf();
    assert!(is_mount_point(&point));
    let Some(sleep) = find_cmd("sleep") else {
        skip(test, "command sleep not found");
        return;
    };
    let mut child = std::process::Command::new(sleep)
        .arg("30")
        .current_dir(&point)
        .spawn()
        .expect("spawn sleep");
    drop(mnt);
    let still = is_mount_point(&point);
    let _ = child.kill();
    let _ = child.wait();
    assert!(!still, "{} is still mounted", point.display());
}

/// Regression: a target reached through a symbolic link onto another file system took that file
/// system's capacity without a word, and a real run wrote onto it. Refused unless --force, naming
/// both file systems.
#[test]
fn a_symlink_onto_another_file_system_is_refused_unless_forced() {
    let test = "a_symlink_onto_another_file_system_is_refused_unless_forced";
    let Some(mnt) = tmpfs_or_skip(test, "64m") else {
        return;
    };
    let d = tmp();
    let real = mnt.path().join("aged");
    fs::create_dir(&real).unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    if fsage_sys_dev(d.path()) == fsage_sys_dev(mnt.path()) {
        return skip(test, "the temporary directory is on the tmpfs itself");
    }
    let args = ["age", "-q", "-p", "agrawal", "--max-ops", "200", s(&link)];
    let o = fsage(args);
    expect_code(&o, 2, "a link onto another file system");
    let e = stderr(&o);
    assert!(
        e.contains("another file system") && e.contains("tmpfs"),
        "{e}"
    );
    assert_eq!(
        fs::read_dir(&real).unwrap().count(),
        0,
        "a refused run wrote"
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    fsage_ok(forced);
}

fn fsage_sys_dev(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(p).unwrap().dev()
}
