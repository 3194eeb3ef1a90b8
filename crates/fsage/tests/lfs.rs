//! f2fs and nilfs2 through the binary, as far as this machine's kernel allows: `fs create` and
//! `fs check` need only the tools; where the kernel lacks the file system (this development
//! machine), `fs mount` and `age --fs --no-vm` are refused up front with exit 2 and the VM hint, and leave
//! no image, mount or loop device behind. Where the kernel has it, the refusal tests have nothing
//! to check and say so.

mod common;

use common::*;
use std::path::Path;

fn tools_or_skip(test: &str, tools: &[&str]) -> bool {
    if let Some(t) = tools.iter().find(|t| fsage_sys::find_cmd(t).is_none()) {
        fsage_testkit::skip(test, format!("{t} not found"));
        return false;
    }
    true
}

fn kernel_has(fs: &str) -> bool {
    fsage_lab::FsKind::parse(fs).unwrap().check_kernel().is_ok()
}

#[test]
fn f2fs_and_nilfs2_images_are_made_and_checked_without_their_kernel() {
    if !tools_or_skip(
        "f2fs_and_nilfs2_images_are_made_and_checked",
        &["mkfs.f2fs", "fsck.f2fs", "mkfs.nilfs2"],
    ) {
        return;
    }
    let dir = fsage_testkit::shm_tmp("fsage-lfs-cli-");
    let f2 = dir.path().join("f2.img");
    let o = fsage_ok(["fs", "create", "--fs", "f2fs", "--size", "64MiB", s(&f2)]);
    expect_stdout(&o, "made f2fs (64 MiB)");
    expect_stdout(&fsage_ok(["fs", "check", s(&f2)]), "f2fs clean");
    let ni = dir.path().join("ni.img");
    fsage_ok(["fs", "create", "--fs", "nilfs2", "--size", "200MiB", s(&ni)]);
    expect_stdout(&fsage_ok(["fs", "check", s(&ni)]), "not checked");
    // Below the minimum: bad input, the hint names a size that works, nothing made.
    let small = dir.path().join("small.img");
    let o = fsage([
        "fs",
        "create",
        "--fs",
        "nilfs2",
        "--size",
        "128MiB",
        s(&small),
    ]);
    expect_code(&o, 2, "nilfs2 below its minimum");
    expect_stderr(&o, "--size 129MiB");
    assert!(!small.exists());
}

#[test]
fn a_kernel_without_them_refuses_mounting_and_aging_up_front() {
    if !tools_or_skip(
        "a_kernel_without_them_refuses",
        &["mkfs.f2fs", "mkfs.nilfs2"],
    ) {
        return;
    }
    let dir = fsage_testkit::shm_tmp("fsage-lfs-cli-");
    for fs in ["f2fs", "nilfs2"] {
        if kernel_has(fs) {
            eprintln!("NOTE: this kernel has {fs}: nothing to refuse");
            continue;
        }
        let img = dir.path().join(format!("{fs}.img"));
        fsage_ok(["fs", "create", "--fs", fs, "--size", "200MiB", s(&img)]);
        let mnt = dir.path().join(format!("{fs}.mnt"));
        std::fs::create_dir(&mnt).unwrap();
        let o = fsage(["fs", "mount", s(&img), s(&mnt)]);
        expect_code(&o, 2, "mount of a kind the kernel lacks");
        expect_stderr(&o, &format!("has no {fs}"));
        expect_stderr(&o, "hint: run it in a virtual machine");
        assert!(
            fsage_sys::loops_backed_by(&img).is_empty(),
            "a loop device left"
        );
        let aged = dir.path().join(format!("aged-{fs}.img"));
        // --no-vm: refused here rather than re-run in a VM (tests/vm.rs runs that).
        let o = fsage([
            "age",
            "--profile",
            "dabre",
            "--fs",
            fs,
            "--size",
            "200MiB",
            "--no-vm",
            s(&aged),
        ]);
        expect_code(&o, 2, "age of a kind the kernel lacks");
        expect_stderr(&o, &format!("has no {fs}"));
        assert!(!aged.exists(), "age made an image it cannot mount");
        let o = fsage([
            "fs",
            "create",
            "--fs",
            fs,
            "--size",
            "200MiB",
            "--mount",
            s(&mnt),
            s(&dir.path().join("m.img")),
        ]);
        expect_code(&o, 2, "create --mount of a kind the kernel lacks");
        assert!(
            !dir.path().join("m.img").exists(),
            "made an image it cannot mount"
        );
        assert!(!fsage_sys::is_mount_point(Path::new(&mnt)));
    }
}
