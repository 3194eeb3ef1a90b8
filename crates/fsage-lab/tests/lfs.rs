//! f2fs and nilfs2 without their kernel: mkfs, the minimum sizes, the superblock probe and the
//! checker run on image files in /dev/shm, which needs the tools but neither root nor a kernel
//! that has the file systems. Skipped (failed with FSAGE_REQUIRE_MOUNT_TESTS=1) without the tools.

use fsage_lab::{create_image, fsck, probe_fs, Checked, FsKind, Remedy};
use fsage_testkit::{find_cmd, shm_tmp, skip};
use std::io::{Seek, SeekFrom, Write};

fn have_tools(test: &str, kind: FsKind) -> bool {
    match kind.tools().into_iter().find(|t| find_cmd(t).is_none()) {
        None => true,
        Some(t) => {
            skip(
                test,
                format!("{t} not found (apt-get install {})", kind.package()),
            );
            false
        }
    }
}

#[test]
fn the_minimum_size_is_the_least_mkfs_takes() {
    for kind in [FsKind::F2FS, FsKind::NILFS2] {
        if !have_tools("the_minimum_size_is_the_least_mkfs_takes", kind) {
            continue;
        }
        let dir = shm_tmp("fsage-lfs-");
        let min = kind.min_size();
        let at = dir.path().join("at-min.img");
        create_image(kind, min, &at, &[]).unwrap_or_else(|e| panic!("{kind} at {min}: {e}"));
        assert_eq!(probe_fs(&at).unwrap().as_deref(), Some(kind.name()));
        // Below the minimum fsage refuses before mkfs runs, naming the size that works.
        let below = dir.path().join("below.img");
        let e = create_image(kind, min - 4096, &below, &[]).unwrap_err();
        assert_eq!(e.remedy, Some(Remedy::SizeAtLeast(min)), "{e}");
        assert!(!below.exists());
    }
}

#[test]
fn mkfs_itself_refuses_just_below_the_minimum() {
    // The minimum is mkfs's own, not a guess: run the tool on a file a little smaller.
    for (kind, below) in [
        (FsKind::F2FS, (52 << 20) - (256 << 10)),
        (FsKind::NILFS2, 128 << 20),
    ] {
        if !have_tools("mkfs_itself_refuses_just_below_the_minimum", kind) {
            continue;
        }
        let dir = shm_tmp("fsage-lfs-");
        let img = dir.path().join("small.img");
        std::fs::File::create(&img).unwrap().set_len(below).unwrap();
        let p = img.to_string_lossy().into_owned();
        let r = fsage_sys::run_tool(kind.mkfs(), &["-f", "-q", &p]);
        assert!(r.is_err(), "{kind}: mkfs took {below} bytes");
    }
}

#[test]
fn f2fs_checks_clean_then_finds_a_damaged_one() {
    let kind = FsKind::F2FS;
    if !have_tools("f2fs_checks_clean_then_finds_a_damaged_one", kind) {
        return;
    }
    let dir = shm_tmp("fsage-lfs-");
    let img = dir.path().join("f2.img");
    create_image(kind, 64 << 20, &img, &[]).unwrap();
    let before = std::fs::read(&img).unwrap();
    assert!(matches!(fsck(&img, kind).unwrap(), Checked::Clean(_)));
    // --dry-run: the check wrote nothing.
    assert!(
        std::fs::read(&img).unwrap() == before,
        "fsck.f2fs changed the image"
    );
    // Overwrite the checkpoint, SIT and NAT areas (blocks 1536.. of a 64 MiB f2fs).
    let mut f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    f.seek(SeekFrom::Start(1536 * 4096)).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let junk: Vec<u8> = (0..4 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    f.write_all(&junk).unwrap();
    drop(f);
    let e = fsck(&img, kind).unwrap_err();
    assert!(e.message.contains("the f2fs check found problems"), "{e}");
}

#[test]
fn nilfs2_says_it_has_no_checker() {
    let kind = FsKind::NILFS2;
    if !have_tools("nilfs2_says_it_has_no_checker", kind) {
        return;
    }
    let dir = shm_tmp("fsage-lfs-");
    let img = dir.path().join("ni.img");
    create_image(kind, kind.min_size(), &img, &[]).unwrap();
    match fsck(&img, kind).unwrap() {
        Checked::NoChecker(why) => assert!(why.contains("not checked"), "{why}"),
        other => panic!("{other:?}"),
    }
}
