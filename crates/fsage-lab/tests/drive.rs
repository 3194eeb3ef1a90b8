//! Drives aged by a file system's writes (`fsage_lab::drive`): what a mount writes only when it
//! goes (dirty data written back at the unmount) still reaches the drive, because the loop
//! device is traced until it is gone; and the drive holds the pages where the writes put them.
//! Needs root (loop devices, mounts, tracefs); skipped without (failed with
//! FSAGE_REQUIRE_MOUNT_TESTS=1).

use fsage_device::RqKind;
use fsage_lab::drive::{DriveMount, Drives};
use fsage_lab::{create_image, FsKind};
use fsage_testkit::{shm_tmp, skip};

#[test]
fn the_unmount_s_writes_reach_the_drive() {
    if !fsage_testkit::is_root() || !std::path::Path::new("/sys/kernel/tracing").is_dir() {
        return skip("drive_unmount", "needs root and tracefs");
    }
    let tmp = shm_tmp("fsage-lab-drive-");
    let img = tmp.path().join("a.img");
    create_image(FsKind::EXT4, 256 << 20, &img, &[]).unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let spec = fsage_device::resolve("ssd-sata").unwrap();
    let drives = Drives::erased(&[spec], 256 << 20).unwrap();
    let m = DriveMount::attach_and_mount(&img, &mnt, &drives).unwrap();
    // 8 MiB written and not synced: the page cache holds it until the unmount writes it back.
    std::fs::write(mnt.join("f"), vec![7u8; 8 << 20]).unwrap();
    m.sync_drives().unwrap();
    let before = drives.lock()[0].fed().bytes;
    let r = m.finish().unwrap();
    let after = drives.lock()[0].fed().bytes;
    eprintln!("fed before the unmount {before} bytes, in all {after} ({r:?})");
    assert!(
        after - before >= 8 << 20,
        "the unmount's write-back reached the drive: {before} then {after}"
    );
    assert_eq!(r.fed.bytes, after);
    assert_eq!(r.lost_events, 0);
    let d = &drives.lock()[0];
    assert!(
        d.stats().ssd().unwrap().host_pages >= 2048,
        "{:?}",
        d.stats()
    );
    assert!(fsage_sys::loops_backed_by(&img).is_empty(), "detached");
    // Reads, flushes and empty requests change nothing.
    let mut e = fsage_device::AgedDrive::erased(d.spec(), 256 << 20).unwrap();
    e.feed(RqKind::Read, 0, 4096);
    e.feed(RqKind::Flush, 0, 0);
    assert_eq!(e.fed().requests, 0);
}
