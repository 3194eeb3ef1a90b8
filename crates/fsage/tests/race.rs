//! Two commands at once on one image (issue 34): `fsage age --fs`, `fs mount` and `dev create`,
//! each raced against itself 20 times on the same path. Exactly one may win; the other is refused
//! naming the holder (its pid and command line, exit code 2), and the image is never made twice,
//! mounted twice or served by two slow devices. Needs root, losetup, mkfs.ext4 and (for `dev
//! create`) FUSE; skipped otherwise, unless FSAGE_REQUIRE_MOUNT_TESTS=1. Everything lives in one
//! scratch directory in /dev/shm with its own lock directory and device registry; dropping it
//! unmounts and destroys what a failed round left.
//!
//! `FSAGE_RACE_BIN=PATH` races another build's binary instead (to show what a build without the
//! locks does: `FSAGE_RACE_BIN=/path/to/old/fsage cargo test -p fsage --test race`).

mod common;

use common::{need_root_and, read_json, skip, stderr, Scratch};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const ROUNDS: usize = 20;

fn can_run(test: &str, cmds: &[&str]) -> bool {
    match need_root_and(cmds) {
        Ok(()) => true,
        Err(e) => {
            skip(test, &e);
            false
        }
    }
}

/// `fsage ARGS` with the scratch's registry and lock directory, from $FSAGE_RACE_BIN if set.
fn cmd(s: &Scratch, args: &[&str]) -> Command {
    let mut c = s.cmd(args);
    if let Some(b) = std::env::var_os("FSAGE_RACE_BIN") {
        let mut other = Command::new(b);
        other
            .args(args)
            .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))));
        c = other;
    }
    c
}

/// Starts `fsage ARGS` (the scratch's registry and lock directory), its output captured, behind
/// a shell that waits for a line on its standard input before it becomes fsage: two of them
/// started one after the other are then let go at the same moment.
fn start(s: &Scratch, args: &[&str]) -> Child {
    let c = cmd(s, args);
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg("read go && exec \"$0\" \"$@\"")
        .arg(c.get_program())
        .args(c.get_args())
        .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start fsage")
}

/// Runs two copies of `fsage ARGS` at once and returns both outputs.
fn race(s: &Scratch, a: &[&str], b: &[&str]) -> (Output, Output) {
    use std::io::Write;
    let (mut x, mut y) = (start(s, a), start(s, b));
    for c in [&mut x, &mut y] {
        let mut go = c.stdin.take().unwrap();
        go.write_all(b"go\n").unwrap();
    }
    (x.wait_with_output().unwrap(), y.wait_with_output().unwrap())
}

/// What went wrong in one round, if anything: exactly one of the two must succeed and the other
/// must be refused with exit code 2, naming the holder when the lock refused it.
fn one_won(round: usize, x: &Output, y: &Output, refusals: &[&str]) -> Result<(), String> {
    let said = |o: &Output| format!("exit {:?}: {}", o.status.code(), stderr(o).trim());
    let (won, lost) = match (x.status.code(), y.status.code()) {
        (Some(0), Some(2)) => (x, y),
        (Some(2), Some(0)) => (y, x),
        _ => {
            return Err(format!(
                "round {round}: not one success and one refusal:\n  first: {}\n  second: {}",
                said(x),
                said(y)
            ))
        }
    };
    let _ = won;
    let e = stderr(lost);
    if !refusals.iter().any(|r| e.contains(r)) {
        return Err(format!(
            "round {round}: the refusal says neither of {refusals:?}: {e}"
        ));
    }
    if e.contains("in use by another fsage") && !(e.contains("pid ") && e.contains("fsage")) {
        return Err(format!(
            "round {round}: the refusal does not name the holder: {e}"
        ));
    }
    Ok(())
}

/// Fails, saying how many rounds went wrong and how, unless none did.
fn verdict(wrong: &[String]) {
    let rounds: std::collections::BTreeSet<&str> =
        wrong.iter().filter_map(|w| w.split(':').next()).collect();
    assert!(
        wrong.is_empty(),
        "{} of {ROUNDS} rounds went wrong:\n{}",
        rounds.len(),
        wrong.join("\n")
    );
}

fn files_under(dir: &Path) -> u64 {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                if e.file_name() != "lost+found" {
                    stack.push(e.path());
                }
            } else {
                n += 1;
            }
        }
    }
    n
}

/// Two `fsage age --fs ext4 --size 256MiB IMG` at once: one ages the image, the other is refused
/// naming it, and the image holds what the winner's report says (once both made it, and the
/// loser's rename left the winner aging a file system nobody could see).
#[test]
fn two_ages_of_one_new_image() {
    if !can_run("two_ages_of_one_new_image", &["losetup", "mkfs.ext4"]) {
        return;
    }
    let s = Scratch::new("fsage-race-age-");
    let mut wrong = Vec::new();
    for round in 0..ROUNDS {
        let img = s.path(&format!("r{round}.img"));
        let img_s = img.to_string_lossy().into_owned();
        let args = [
            "age",
            "--profile",
            "agrawal",
            "--fs",
            "ext4",
            "--size",
            "256MiB",
            "--max-ops",
            "300",
            "--quiet",
            &img_s,
        ];
        let (x, y) = race(&s, &args, &args);
        // The loser is refused by the lock, or (had it started only after the winner finished)
        // by the image the winner made.
        let refusals = ["in use by another fsage", "exists; refusing to overwrite"];
        if let Err(e) = one_won(round, &x, &y, &refusals) {
            wrong.push(e);
        }
        // Consistent: the image is there, unmounted, and holds the files its report counts.
        let report = s.path(&format!("r{round}.img.report.json"));
        if !img.is_file() || !report.is_file() {
            wrong.push(format!("round {round}: no image or no report"));
            continue;
        }
        if fsage_sys::is_mount_point(&s.path(&format!("r{round}.img.mnt"))) {
            wrong.push(format!("round {round}: still mounted"));
            continue;
        }
        let live = read_json(&report)["live_files"]
            .as_u64()
            .unwrap_or(u64::MAX);
        match common::MountGuard::mount(&img_s, &["-t", "ext4", "-o", "ro,loop,noload"]) {
            Ok(m) => {
                let held = files_under(m.path());
                if held != live {
                    wrong.push(format!(
                        "round {round}: the report counts {live} files, the image holds {held}"
                    ));
                }
            }
            Err(e) => wrong.push(format!("round {round}: cannot mount the image: {e}")),
        }
        for p in [&img, &report] {
            let _ = std::fs::remove_file(p);
        }
        for ext in ["fsage-state", "fsage.json"] {
            let _ = std::fs::remove_file(s.path(&format!("r{round}.img.{ext}")));
        }
    }
    verdict(&wrong);
}

/// Loop devices backed by `img` and how many of them are mounted.
fn mounted_loops(img: &Path) -> usize {
    fsage_sys::loops_backed_by(img)
        .iter()
        .filter(|d| fsage_sys::mounts_of_device(d).is_ok_and(|m| !m.is_empty()))
        .count()
}

/// Two `fsage fs mount IMG DIR` at once (to two directories): the image is never mounted twice.
#[test]
fn two_mounts_of_one_image() {
    if !can_run("two_mounts_of_one_image", &["losetup", "mkfs.ext4"]) {
        return;
    }
    let s = Scratch::new("fsage-race-mount-");
    let img = s.path("m.img");
    let img_s = img.to_string_lossy().into_owned();
    let o = cmd(
        &s,
        &["fs", "create", "--fs", "ext4", "--size", "32MiB", &img_s],
    )
    .output()
    .unwrap();
    common::expect_code(&o, 0, "fs create");
    let (a, b) = (s.path("a"), s.path("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let (a_s, b_s) = (
        a.to_string_lossy().into_owned(),
        b.to_string_lossy().into_owned(),
    );
    let mut wrong = Vec::new();
    for round in 0..ROUNDS {
        let (x, y) = race(
            &s,
            &["fs", "mount", &img_s, &a_s],
            &["fs", "mount", &img_s, &b_s],
        );
        let n = mounted_loops(&img);
        if n != 1 {
            wrong.push(format!("round {round}: mounted on {n} loop devices"));
        }
        if let Err(e) = one_won(
            round,
            &x,
            &y,
            &["in use by another fsage", "already attached"],
        ) {
            wrong.push(e);
        }
        // Take down whatever this round left (both, if both mounted), then check it is gone.
        for d in [&a, &b] {
            if fsage_sys::is_mount_point(d) {
                let _ = cmd(&s, &["fs", "umount", &d.to_string_lossy()]).output();
            }
        }
        if mounted_loops(&img) != 0 {
            panic!("round {round}: cannot unmount the image; stopping");
        }
    }
    verdict(&wrong);
}

/// The devices of the scratch's registry (its own: only this test's image is behind any).
fn devices(s: &Scratch) -> usize {
    let o = cmd(s, &["dev", "list", "--json"]).output().unwrap();
    common::expect_code(&o, 0, "dev list --json");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array().map_or(0, Vec::len)
}

/// Two `fsage dev create --image IMG` at once: never two slow devices over one image.
#[test]
fn two_slow_devices_on_one_image() {
    if !can_run("two_slow_devices_on_one_image", &["losetup"]) {
        return;
    }
    if !Path::new("/dev/fuse").exists() {
        skip("two_slow_devices_on_one_image", "/dev/fuse is missing");
        return;
    }
    let s = Scratch::new("fsage-race-dev-");
    let img = s.path("d.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let img_s = img.to_string_lossy().into_owned();
    // An SSD model: building its FTL takes a while between the check of the registry and the
    // registration, the window in which a second `dev create` got past the check (without the
    // lock, two devices in 10 of 10 rounds here; with a fixed latency in about 1 of 20).
    let args = [
        "dev",
        "create",
        "--model",
        "ssd-sata",
        "--fresh-ftl",
        "--image",
        &img_s,
    ];
    let mut wrong = Vec::new();
    for round in 0..ROUNDS {
        let (x, y) = race(&s, &args, &args);
        let n = devices(&s);
        if n != 1 {
            wrong.push(format!("round {round}: {n} slow devices over the image"));
        }
        if let Err(e) = one_won(
            round,
            &x,
            &y,
            &["in use by another fsage", "already the backing file"],
        ) {
            wrong.push(e);
        }
        let o = cmd(&s, &["dev", "destroy", "--all"]).output().unwrap();
        common::expect_code(&o, 0, "dev destroy --all");
        assert_eq!(devices(&s), 0, "round {round}: a device is left");
    }
    verdict(&wrong);
}

/// `fs umount IMG.mnt` while `fsage age` ages IMG there: refused naming the ageing command (the
/// lock of the image behind the mount point's loop device), and the run goes on; before, the
/// mount point was unmounted under it.
#[test]
fn umount_of_a_mount_point_being_aged() {
    if !can_run(
        "umount_of_a_mount_point_being_aged",
        &["losetup", "mkfs.ext4"],
    ) {
        return;
    }
    let s = Scratch::new("fsage-race-umount-");
    let img = s.path("u.img");
    let img_s = img.to_string_lossy().into_owned();
    let mnt = s.path("u.img.mnt");
    let mut age = cmd(
        &s,
        &[
            "age",
            "--profile",
            "agrawal",
            "--fs",
            "ext4",
            "--size",
            "256MiB",
            "--max-ops",
            "100000000",
            "--quiet",
            &img_s,
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Stops the run however the test ends (SIGINT: it unmounts and saves its state).
    struct Stop(Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_child(&self.0),
                rustix::process::Signal::INT,
            );
            let _ = self.0.wait();
        }
    }
    let t = std::time::Instant::now();
    while !fsage_sys::is_mount_point(&mnt) {
        if let Ok(Some(st)) = age.try_wait() {
            panic!("age ended before it mounted: {st}");
        }
        assert!(t.elapsed().as_secs() < 60, "age did not mount in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let stop = Stop(age);
    let o = cmd(&s, &["fs", "umount", &mnt.to_string_lossy()])
        .output()
        .unwrap();
    common::expect_code(&o, 2, "fs umount of a mount point being aged");
    let e = stderr(&o);
    assert!(
        e.contains("in use by another fsage") && e.contains("pid "),
        "{e}"
    );
    assert!(fsage_sys::is_mount_point(&mnt), "unmounted under the run");
    drop(stop);
    assert!(
        !fsage_sys::is_mount_point(&mnt),
        "the stopped run left its mount"
    );
}
