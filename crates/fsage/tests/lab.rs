//! The lab's must-show tests, through the binary: ext4, xfs and btrfs images made, aged in
//! /dev/shm, saved, restored to another file, checked and compared; rollback after a benchmark;
//! the safety checks; sparse copy; cleanup after Ctrl-C.
//!
//! Each test works in its own directory in /dev/shm; a guard unmounts whatever is mounted below it
//! and detaches loop devices backed by its files even when the test fails, and each test asserts
//! at its end that it left no mount and no loop device behind.

mod common;

use common::*;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A test's directory in /dev/shm (or the temp dir), cleaned up on drop.
struct Lab {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

fn mounts_below(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fsage_sys::mounts()
        .unwrap_or_default()
        .into_iter()
        .map(|m| m.mount_point)
        .filter(|m| m.starts_with(dir))
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    v
}

fn loops_below(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in fs::read_dir("/sys/block").into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Ok(bf) = fs::read_to_string(e.path().join("loop/backing_file")) {
            if Path::new(bf.trim()).starts_with(dir) {
                v.push(format!("/dev/{name}"));
            }
        }
    }
    v
}

impl Lab {
    fn new() -> Lab {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("fsage-lab-test-")
            .tempdir_in(&base)
            .expect("temporary directory");
        let path = dir.path().canonicalize().expect("canonical path");
        Lab {
            dir: Some(dir),
            path,
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    fn s(&self, rel: &str) -> String {
        self.p(rel).to_string_lossy().into_owned()
    }

    fn mkdir(&self, rel: &str) -> String {
        fs::create_dir_all(self.p(rel)).expect("mkdir");
        self.s(rel)
    }

    /// Asserts nothing is mounted below the directory and no loop device is backed by its files
    /// (loop devices detach a moment after their last user: wait up to 3 s).
    fn assert_clean(&self) {
        let t = Instant::now();
        loop {
            let (m, l) = (mounts_below(&self.path), loops_below(&self.path));
            if m.is_empty() && l.is_empty() {
                return;
            }
            if t.elapsed() > Duration::from_secs(3) {
                panic!("left behind: mounts {m:?}, loop devices {l:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for m in mounts_below(&self.path) {
            let ms = m.to_string_lossy().into_owned();
            if run_cmd("umount", &[&ms]).is_err() {
                let _ = run_cmd("umount", &["-l", &ms]);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
        for l in loops_below(&self.path) {
            let _ = run_cmd("losetup", &["-d", &l]);
        }
        if !mounts_below(&self.path).is_empty() {
            if let Some(d) = self.dir.take() {
                let _ = d.keep();
            }
        }
    }
}

fn checker(fs_name: &str) -> &'static str {
    match fs_name {
        "ext4" => "e2fsck",
        "xfs" => "xfs_repair",
        _ => "btrfs",
    }
}

fn fsck(fs_name: &str, img: &str) {
    let r = match fs_name {
        "ext4" => run_cmd("e2fsck", &["-f", "-n", img]),
        "xfs" => run_cmd("xfs_repair", &["-n", "-f", img]),
        _ => run_cmd("btrfs", &["check", "--readonly", img]),
    };
    if let Err(e) = r {
        panic!("{fs_name}: {img} is not clean: {e}");
    }
}

/// Byte-for-byte equality of two files.
fn same_bytes(a: &Path, b: &Path) -> bool {
    let (mut fa, mut fb) = (fs::File::open(a).unwrap(), fs::File::open(b).unwrap());
    // A block device reports length 0: compare the image's length of it.
    let lb = fb.metadata().unwrap().len();
    if lb != 0 && fa.metadata().unwrap().len() != lb {
        return false;
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = fa.read(&mut ba).unwrap();
        if n == 0 {
            return true;
        }
        fb.read_exact(&mut bb[..n]).unwrap();
        if ba[..n] != bb[..n] {
            return false;
        }
    }
}

fn sha256sum(p: &Path) -> String {
    let o = run_cmd("sha256sum", &[&p.to_string_lossy()]).expect("sha256sum");
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

fn can_run(test: &str, fs_name: &str) -> bool {
    let mkfs = format!("mkfs.{fs_name}");
    match need_root_and(&[
        "mount",
        "umount",
        "losetup",
        &mkfs,
        checker(fs_name),
        "sha256sum",
    ]) {
        Ok(()) => true,
        Err(r) => {
            skip(test, &r);
            false
        }
    }
}

/// Create, age in /dev/shm, save, restore to another file, fsck, mount, compare trees.
fn roundtrip(fs_name: &str, size: &str) {
    let test = &format!("lab_roundtrip_{fs_name}");
    if !can_run(test, fs_name) {
        return;
    }
    let lab = Lab::new();
    let (img, mnt, lib) = (lab.s("aged.img"), lab.mkdir("mnt"), lab.s("library"));
    fsage_ok([
        "fs", "create", "--fs", fs_name, "--size", size, &img, "--mount", &mnt,
    ]);
    assert!(is_mount_point(Path::new(&mnt)), "{mnt} not mounted");
    let aged = format!("{mnt}/aged");
    let report = lab.s("run.json");
    Age::new("agrawal")
        .max_ops("20000")
        .target(&aged)
        .json(&report)
        .quiet()
        .run_ok();
    let before = walk(Path::new(&aged));
    assert!(
        before.files.len() > 100,
        "aging made only {} files",
        before.files.len()
    );
    fsage_ok(["fs", "umount", &mnt]);
    lab.assert_clean();

    // Save, with the report and (from it) the whole profile.
    fsage_ok([
        "image",
        "save",
        &img,
        "--name",
        fs_name,
        "--report",
        &report,
        "--library",
        &lib,
    ]);
    let m = read_json(&lab.p("library").join(fs_name).join("manifest.json"));
    assert_eq!(j_str(&m, "format"), "fsage-image/1");
    assert_eq!(j_str(&m, "fs"), fs_name);
    assert_eq!(j_str(&m["profile"], "name"), "agrawal");
    assert!(
        j_str(&m["profile"], "toml").contains("agrawal"),
        "the whole profile is embedded"
    );
    assert_eq!(j_u64(&m, "seed"), 1);
    assert_eq!(j_str(&m["aging"], "stop_reason"), "max_ops");
    assert!(m["mkfs_command"][0]
        .as_str()
        .unwrap_or("")
        .starts_with("mkfs."));
    assert_eq!(
        j_str(&m["checksums"], "image_sha256"),
        sha256sum(Path::new(&img))
    );
    fsage_ok(["image", "verify", "--library", &lib]);
    let list = stdout(&fsage_ok(["image", "list", "--library", &lib]));
    assert!(list.contains(fs_name), "{list}");

    // Restore to another file: bit-identical, clean, same tree.
    let restored = lab.s("restored.img");
    fsage_ok(["image", "restore", fs_name, &restored, "--library", &lib]);
    assert!(
        same_bytes(Path::new(&img), Path::new(&restored)),
        "restored image differs"
    );
    fsck(fs_name, &restored);
    let mnt2 = lab.mkdir("mnt2");
    fsage_ok(["fs", "mount", &restored, &mnt2]);
    let after = walk(&Path::new(&mnt2).join("aged"));
    fsage_ok(["fs", "umount", &restored]);
    assert_eq!(before.dirs, after.dirs, "directories differ after restore");
    assert_eq!(
        before.files, after.files,
        "files (paths, sizes) differ after restore"
    );
    lab.assert_clean();
}

#[test]
fn lab_roundtrip_ext4() {
    roundtrip("ext4", "256MiB");
}

#[test]
fn lab_roundtrip_xfs() {
    roundtrip("xfs", "320MiB");
}

#[test]
fn lab_roundtrip_btrfs() {
    roundtrip("btrfs", "256MiB");
}

/// A benchmark run followed by rollback leaves the image's checksum equal to the snapshot's, by
/// tracing and by comparison; and sparse copy onto a file and onto a loop device.
#[test]
fn lab_rollback_after_benchmark() {
    let test = "lab_rollback_after_benchmark";
    if !can_run(test, "ext4") {
        return;
    }
    let lab = Lab::new();
    let (img, mnt, lib) = (lab.s("aged.img"), lab.mkdir("mnt"), lab.s("library"));
    fsage_ok([
        "fs", "create", "--fs", "ext4", "--size", "256MiB", &img, "--mount", &mnt,
    ]);
    Age::new("agrawal")
        .max_ops("20000")
        .target(format!("{mnt}/aged"))
        .quiet()
        .run_ok();
    fsage_ok(["fs", "umount", &img]);
    fsage_ok(["image", "save", &img, "--name", "snap", "--library", &lib]);
    let m = read_json(&lab.p("library/snap/manifest.json"));
    let want = j_str(&m["checksums"], "image_sha256").to_string();

    // The benchmark: write new data, delete some aged files, overwrite others.
    let bench = "dd if=/dev/urandom of=$FSAGE_MOUNT/bench bs=1M count=16 status=none && \
                 find $FSAGE_MOUNT/aged -type f | head -200 | xargs rm -f && \
                 find $FSAGE_MOUNT/aged -type f | head -50 | while read f; do \
                 dd if=/dev/urandom of=$f bs=4k count=2 conv=notrunc status=none; done; sync";
    let o = fsage_ok(["rollback", "track", &img, "--", "sh", "-c", bench]);
    let log = read_json(&lab.p("aged.img.rollback.json"));
    let method = j_str(&log, "method").to_string();
    if method != "trace" {
        skip(
            test,
            format!("tracing did not work: {}", log["fallback_reason"]),
        );
    } else {
        assert!(j_u64(&log, "written_bytes") >= 16 << 20, "{}", stdout(&o));
    }
    assert_ne!(
        sha256sum(Path::new(&img)),
        want,
        "the benchmark changed nothing"
    );
    lab.assert_clean();
    let o = fsage_ok(["rollback", "restore", &img]);
    assert!(stdout(&o).contains("identical"), "{}", stdout(&o));
    assert!(
        !stdout(&o).contains("(Trace)"),
        "Debug text: {}",
        stdout(&o)
    );
    assert_eq!(
        sha256sum(Path::new(&img)),
        want,
        "rollback did not restore the snapshot"
    );

    // Regression: a benchmark's failure was hidden. Exit 3: fsage exits 1 and names the code.
    let o = fsage(["rollback", "track", &img, "--", "sh", "-c", "exit 3"]);
    expect_code(&o, 1, "a benchmark that exits 3");
    expect_stderr(&o, "exit code 3");
    expect_stderr(&o, "`sh -c exit 3`");
    fsage_ok(["rollback", "restore", &img]);

    // The content-comparison fallback.
    fsage_ok([
        "rollback",
        "track",
        &img,
        "--compare",
        "--",
        "sh",
        "-c",
        bench,
    ]);
    assert_eq!(
        j_str(&read_json(&lab.p("aged.img.rollback.json")), "method"),
        "compare"
    );
    assert_ne!(sha256sum(Path::new(&img)), want);
    fsage_ok(["rollback", "restore", &img]);
    assert_eq!(
        sha256sum(Path::new(&img)),
        want,
        "compare rollback did not restore it"
    );
    fsck("ext4", &img);

    // Sparse copy to a file: identical, and no more allocated than the source.
    let copy = lab.s("copy.img");
    fsage_ok(["image", "copy", &img, &copy]);
    assert!(same_bytes(Path::new(&img), Path::new(&copy)));
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (
        fs::metadata(&img).unwrap().blocks(),
        fs::metadata(&copy).unwrap().blocks(),
    );
    assert!(b <= a, "the copy allocates {b} blocks, the source {a}");
    // ... and onto a (loop) device holding garbage: refused without --force, then identical.
    let dev_img = lab.p("device.img");
    fs::write(&dev_img, vec![0xA5u8; 1 << 20]).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&dev_img)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    {
        let dev = LoopGuard::attach(&dev_img).expect("losetup");
        run_cmd("mkfs.ext4", &["-q", "-F", dev.dev()]).unwrap();
        let o = fsage(["image", "copy", &img, dev.dev()]);
        expect_code(&o, 2, "copy onto a device holding a file system");
        expect_stderr(&o, "--force");
        fsage_ok(["image", "copy", &img, dev.dev(), "--force"]);
        assert!(
            same_bytes(Path::new(&img), Path::new(dev.dev())),
            "the device differs from the image"
        );
    }
    lab.assert_clean();
}

/// Refusals, atomic creation, restore checks, and cleanup after a failed mount and after Ctrl-C.
#[test]
fn lab_safety_and_cleanup() {
    let test = "lab_safety_and_cleanup";
    if !can_run(test, "ext4") {
        return;
    }
    let lab = Lab::new();
    let (img, mnt, lib) = (lab.s("a.img"), lab.mkdir("mnt"), lab.s("library"));
    fsage_ok(["fs", "create", "--fs", "ext4", "--size", "64MiB", &img]);
    // An image holding a file system: refused without --force.
    let o = fsage(["fs", "create", "--fs", "ext4", "--size", "64MiB", &img]);
    expect_code(&o, 2, "create over a file system");
    expect_stderr(&o, "holds a file system");
    // Mounted: refused even with --force, for the image and for its loop device.
    fsage_ok(["fs", "mount", &img, &mnt]);
    let o = fsage([
        "fs", "create", "--fs", "ext4", "--size", "64MiB", &img, "--force",
    ]);
    expect_code(&o, 2, "create over an attached image");
    let dev = loops_below(&lab.path).pop().expect("a loop device");
    let o = fsage(["fs", "create", "--fs", "ext4", &dev, "--force"]);
    expect_code(&o, 2, "create over a mounted device");
    expect_stderr(&o, "mounted");
    let o = fsage(["image", "save", &img, "--library", &lib]);
    expect_code(&o, 2, "save of a mounted image");
    // Regression: `fs check` said "clean" on a mounted image.
    let o = fsage(["fs", "check", &img]);
    expect_code(&o, 2, "check of a mounted image");
    expect_stderr(&o, "unmounted");
    fsage_ok(["fs", "umount", &mnt]);
    lab.assert_clean();
    // Regression: `image save /etc/passwd` stored a "file system unknown" image.
    let not_fs = lab.p("notes.txt");
    fs::write(&not_fs, "not a file system\n").unwrap();
    let o = fsage(["image", "save", s(&not_fs), "--library", &lib]);
    expect_code(&o, 2, "save of a file that holds no file system");
    expect_stderr(&o, "no ext4, xfs or btrfs");

    // A failed mkfs leaves no file; a failed mount leaves no loop device.
    let small = lab.s("small.img");
    let o = fsage(["fs", "create", "--fs", "xfs", "--size", "16MiB", &small]);
    expect_code(&o, 2, "xfs too small");
    assert!(!Path::new(&small).exists());
    let o = fsage(["fs", "mount", &img, &mnt, "--fs", "xfs"]);
    expect_code(&o, 2, "mount with the wrong type");
    lab.assert_clean();

    // Restore: verifies checksums, refuses an existing file and a device that is too small.
    fsage_ok(["image", "save", &img, "--library", &lib]);
    let out = lab.s("out.img");
    fsage_ok(["image", "restore", "a", &out, "--library", &lib]);
    let o = fsage(["image", "restore", "a", &out, "--library", &lib]);
    expect_code(&o, 2, "restore over an existing file");
    // Regression: a restore into a missing directory named a temporary file, then statvfs.
    let o = fsage([
        "image",
        "restore",
        "a",
        &lab.s("missingdir/x.img"),
        "--library",
        &lib,
    ]);
    expect_code(&o, 2, "restore into a missing directory");
    expect_stderr(&o, "missingdir: the directory does not exist");
    // Regression: `fs create` on a device of 0 bytes suggested "--size 0".
    let empty = lab.p("empty.img");
    fs::File::create(&empty).unwrap();
    {
        let dev = LoopGuard::attach(&empty).expect("losetup");
        let o = fsage(["fs", "create", "--fs", "ext4", dev.dev()]);
        expect_code(&o, 2, "fs create on a 0-byte device");
        expect_stderr(&o, "has 0 bytes");
        assert!(!stderr(&o).contains("--size 0"), "{}", stderr(&o));
    }
    let tiny = lab.p("tiny.img");
    fs::File::create(&tiny).unwrap().set_len(8 << 20).unwrap();
    {
        let dev = LoopGuard::attach(&tiny).expect("losetup");
        let o = fsage(["image", "restore", "a", dev.dev(), "--library", &lib]);
        expect_code(&o, 2, "restore to a small device");
        expect_stderr(&o, "too small");
    }
    // A corrupted snapshot fails verification.
    let data = lab.p("library/a/data.zst");
    let mut bytes = fs::read(&data).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xFF;
    fs::write(&data, bytes).unwrap();
    let o = fsage(["image", "verify", "a", "--library", &lib]);
    expect_code(&o, 1, "verify of a corrupted snapshot");
    let o = fsage([
        "image",
        "restore",
        "a",
        &lab.s("bad.img"),
        "--library",
        &lib,
    ]);
    expect_code(
        &o,
        1,
        "restore of a corrupted snapshot: a failed operation, not bad input",
    );
    assert!(
        !lab.p("bad.img").exists(),
        "a failed restore left its target"
    );

    // Ctrl-C during a tracked benchmark: everything is undone and no log is written.
    let o = fsage([
        "rollback",
        "track",
        &img,
        "--",
        "sh",
        "-c",
        "kill -INT $PPID; sleep 0.5",
    ]);
    expect_code(&o, 130, "an interrupted track");
    assert!(!lab.p("a.img.rollback.json").exists());
    // No trace instance of a dead fsage is left.
    for e in fs::read_dir("/sys/kernel/tracing/instances")
        .into_iter()
        .flatten()
        .flatten()
    {
        let n = e.file_name().to_string_lossy().into_owned();
        // Instances are named fsage-PID or fsage-PID-N.
        if let Some(pid) = n.strip_prefix("fsage-").and_then(|r| r.split('-').next()) {
            assert!(
                Path::new(&format!("/proc/{pid}")).exists(),
                "trace instance {n} left behind"
            );
        }
    }
    lab.assert_clean();
}

/// The one-command main job: `fsage age --fs KIND --size SIZE IMAGE` makes, mounts, ages and
/// unmounts the image, leaving the image (fsck clean), the report and the state; `--resume` mounts
/// it again and goes on. A failure before aging takes the image back.
fn main_job(fs_name: &str, size: &str) {
    let test = &format!("age_fs_{fs_name}_main_job");
    if !can_run(test, fs_name) {
        return;
    }
    let lab = Lab::new();
    let img = lab.s("aged.img");
    let o = Age::new("agrawal")
        .fs(fs_name)
        .size(size)
        .target(&img)
        .max_ops("15000")
        .run_ok();
    expect_stderr(&o, "unmounted");
    lab.assert_clean();
    let report = read_json(&lab.p("aged.img.report.json"));
    assert_eq!(j_str(&report, "stop_reason"), "max_ops");
    assert_eq!(j_u64(&report, "ticks"), 15000);
    // The capacity is the file system's: a little under the image size.
    let cap = j_u64(&report, "capacity");
    let bytes = parse_bytes(size);
    assert!(
        cap <= bytes && cap > bytes / 2,
        "capacity {cap} of a {bytes}-byte image"
    );
    fsck(fs_name, &img);
    // Resume mounts the image again, goes on and unmounts.
    let state = lab.s("aged.img.fsage-state");
    Age::resume(&state).quiet().max_ops("25000").run_ok();
    lab.assert_clean();
    let st = stdout(&fsage_ok(["status", &state]));
    assert!(st.contains("tick 25000 of"), "{st}");
    fsck(fs_name, &img);
    // Regression: `image save` of an image made by `age --fs` recorded no profile although its
    // report lies beside it.
    let lib = lab.s("library");
    fsage_ok(["image", "save", &img, "--library", &lib]);
    let shown = stdout(&fsage_ok(["image", "show", "aged", "--library", &lib]));
    assert!(shown.contains("profile:       agrawal"), "{shown}");
    assert!(shown.contains(" UTC by fsage"), "{shown}");
    // The image exists now: a second run refuses to overwrite it.
    let o = Age::new("agrawal")
        .fs(fs_name)
        .size(size)
        .target(&img)
        .run();
    expect_code(&o, 2, "existing image");
    // A profile that cannot be met is refused before any image is made.
    let other = lab.s("other.img");
    let o = Age::new("agrawal")
        .fs(fs_name)
        .size(size)
        .target(&other)
        .fullness("1")
        .run();
    expect_code(&o, 2, "unmeetable profile");
    assert!(
        !lab.p("other.img").exists(),
        "the image of a refused run was left behind"
    );
    lab.assert_clean();
}

fn parse_bytes(size: &str) -> u64 {
    let n: u64 = size
        .trim_end_matches("MiB")
        .parse()
        .expect("sizes here are MiB");
    n << 20
}

#[test]
fn age_fs_ext4_main_job() {
    main_job("ext4", "256MiB");
}

#[test]
fn age_fs_xfs_main_job() {
    main_job("xfs", "320MiB");
}

/// A character device is never a target: writing an image through a temporary file and a rename
/// would replace /dev/null with a regular file (this happened once, by hand).
#[test]
fn image_targets_are_only_regular_files_or_block_devices() {
    use std::os::unix::fs::FileTypeExt;
    let lab = Lab::new();
    let src = lab.p("src.img");
    fs::write(&src, vec![7u8; 8192]).unwrap();
    let src_s = lab.s("src.img");
    for force in [false, true] {
        let mut args = vec!["image", "copy", src_s.as_str(), "/dev/null"];
        if force {
            args.push("--force");
        }
        let o = fsage(&args);
        expect_code(&o, 2, "copy onto /dev/null");
        expect_stderr(&o, "neither a regular file nor a block device");
        let meta = fs::symlink_metadata("/dev/null").unwrap();
        assert!(meta.file_type().is_char_device(), "/dev/null was replaced");
    }
}

/// Regression: every failure exited 2 ("bad input"), a failed mount included. A file system the
/// kernel refuses as corrupt is a failed operation: exit 1.
#[test]
fn a_mount_that_fails_on_a_corrupt_file_system_exits_1() {
    if let Err(why) = need_root_and(&["mkfs.ext4", "losetup"]) {
        skip("a_mount_that_fails_on_a_corrupt_file_system_exits_1", &why);
        return;
    }
    let d = tmp();
    let img = d.path().join("c.img");
    fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
    run_cmd("mkfs.ext4", &["-q", "-F", "-b", "4096", s(&img)]).unwrap();
    // Zero the group descriptor table (block 1): the superblock still says ext4.
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = fs::OpenOptions::new().write(true).open(&img).unwrap();
        f.seek(SeekFrom::Start(4096)).unwrap();
        f.write_all(&[0u8; 4096]).unwrap();
    }
    let mnt = d.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let o = fsage(["fs", "mount", s(&img), s(&mnt)]);
    expect_code(&o, 1, "mount of a corrupt ext4");
    expect_stderr(&o, "mount -t ext4");
    assert!(!is_mount_point(&mnt));
}
