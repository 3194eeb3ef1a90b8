//! Safety: images in use are refused, a mounted device is not destroyed without force, and a
//! daemon that dies makes I/O fail instead of hang, and destroy still cleans up.

mod common;

use common::{can_run, Lab};
use fsage_slowdev::{destroy_all, list_devices, Backing, Registry, SlowDevice};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

#[test]
fn images_in_use_are_refused() {
    if !can_run("images_in_use_are_refused") {
        return;
    }
    let lab = Lab::new();
    let dev = lab.create(&lab.spec("img", 8 * MIB, 0));
    // The same image again: refused, nothing new registered.
    let mut again = lab.spec("other", 8 * MIB, 0);
    again.backing = Backing::Image(lab.path("img"));
    let e = SlowDevice::create(&again).unwrap_err();
    assert!(e.message.contains("already the backing file"), "{e}");
    assert_eq!(e.blame, fsage_sys::Blame::Input);
    assert_eq!(Registry::new(lab.registry()).list().len(), 1);
    // An image attached to a loop device elsewhere: refused.
    let other = lab.path("attached");
    std::fs::File::create(&other)
        .unwrap()
        .set_len(4 * MIB)
        .unwrap();
    let held = fsage_lab::LoopDevice::attach(&other, false).unwrap();
    let mut s = lab.spec("x", 0, 0);
    s.backing = Backing::Image(other.clone());
    let e = SlowDevice::create(&s).unwrap_err();
    assert!(e.message.contains("attached to"), "{e}");
    held.detach_and_wait(Duration::from_secs(5)).unwrap();
    // A new image over an existing file: refused, the file untouched.
    let mut s = lab.spec("attached", 4 * MIB, 0);
    s.backing = Backing::NewImage {
        path: other.clone(),
        size: 8 * MIB,
    };
    assert!(SlowDevice::create(&s).is_err());
    assert_eq!(std::fs::metadata(&other).unwrap().len(), 4 * MIB);
    drop(dev);
    assert!(Registry::new(lab.registry()).list().is_empty());
}

#[test]
fn a_mounted_device_is_destroyed_only_with_force() {
    if !can_run("a_mounted_device_is_destroyed_only_with_force") {
        return;
    }
    if fsage_sys::find_cmd("mkfs.ext4").is_none() {
        common::skip(
            "a_mounted_device_is_destroyed_only_with_force",
            "no mkfs.ext4",
        );
        return;
    }
    let lab = Lab::new();
    let dev = lab.create(&lab.spec("img", 32 * MIB, 0));
    let p = dev.path().to_path_buf();
    fsage_sys::run_tool("mkfs.ext4", &["-q", "-F", &p.to_string_lossy()]).unwrap();
    let mnt = lab.path("mnt");
    std::fs::create_dir(&mnt).unwrap();
    fsage_lab::mount::mount_device(&p, &mnt, "ext4", "").unwrap();
    struct Umount(std::path::PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = fsage_lab::mount::umount_point(&self.0);
        }
    }
    let guard = Umount(mnt.clone());
    std::fs::write(mnt.join("f"), b"hello").unwrap();
    let reg = Registry::new(lab.registry());
    let listed = list_devices(&reg);
    assert_eq!(listed[0].mounted_on, vec![mnt.clone()]);
    let e = SlowDevice::open(&reg, dev.device().name())
        .unwrap()
        .destroy(false)
        .unwrap_err();
    assert!(e.message.contains("mounted on"), "{e}");
    assert!(
        dev.device().alive(),
        "refused destroy leaves the daemon running"
    );
    std::fs::write(mnt.join("g"), b"still works").unwrap();
    drop(guard);
    // Unmounted: destroy all goes through.
    std::mem::forget(dev); // destroyed below, through the registry
    for (name, r) in destroy_all(&reg, false) {
        r.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert!(reg.list().is_empty());
    fsage_lab::fsck(&lab.path("img"), fsage_lab::FsKind::EXT4).unwrap();
}

#[test]
fn a_dead_daemon_makes_io_fail_not_hang() {
    if !can_run("a_dead_daemon_makes_io_fail_not_hang") {
        return;
    }
    let lab = Lab::new();
    let dev = lab.create(&lab.spec("img", 8 * MIB, 1_000_000));
    let pid = dev.device().record().daemon_pid.unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev.path())
        .unwrap();
    let mut buf = vec![0u8; 8192];
    let off = buf.as_ptr().align_offset(4096);
    f.read_exact_at(&mut buf[off..off + 4096], 0).unwrap();
    // SAFETY: a signal to the daemon this test started.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    let t0 = Instant::now();
    while dev.device().alive() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 8192];
        let off = buf.as_ptr().align_offset(4096);
        let r = f.read_exact_at(&mut buf[off..off + 4096], 4096);
        let _ = tx.send(r.map_err(|e| e.raw_os_error()));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("I/O on a device whose daemon died must fail, not hang");
    assert!(r.is_err(), "I/O succeeded after the daemon died");
    assert_eq!(r.unwrap_err(), Some(libc::EIO));
    let reg = Registry::new(lab.registry());
    assert!(!list_devices(&reg)[0].alive);
    dev.destroy().unwrap();
    assert!(reg.list().is_empty());
    assert!(!std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .contains(&*lab.registry().to_string_lossy()));
}

/// The daemon holds its image's lock for as long as it serves it (issue 34: every command that
/// serves an image holds its lock), whether `create` took the lock itself or its caller held it
/// already; another command is refused, naming the daemon, until the device is destroyed.
#[test]
fn the_daemon_holds_the_images_lock_while_it_serves() {
    if !can_run("the_daemon_holds_the_images_lock_while_it_serves") {
        return;
    }
    use fsage_sys::lock::{lock_target, LockError};
    let lab = Lab::new();
    let img = lab.path("img");
    let held_by = |what: &str| match lock_target(&img) {
        Err(LockError::Held { holder, .. }) => holder,
        other => panic!("{what}: the image's lock is not held: {other:?}"),
    };
    let dev = lab.create(&lab.spec("img", 8 * MIB, 0));
    let pid = dev.device().record().daemon_pid.unwrap();
    let holder = held_by("after create returned");
    assert!(holder.starts_with(&format!("pid {pid}: ")), "{holder}");
    assert!(holder.contains("fsage-slowdevd"), "{holder}");
    drop(dev);
    drop(lock_target(&img).expect("free once the device is gone"));
    // A caller that holds the image's lock already (a Git-aging run measuring through a slow
    // device) makes a device over it: the daemon takes the lock over.
    let mine = lock_target(&img).unwrap();
    let mut spec = lab.spec("unused", 8 * MIB, 0);
    spec.backing = Backing::Image(img.clone());
    let dev = lab.create(&spec);
    drop(mine);
    let pid = dev.device().record().daemon_pid.unwrap();
    let theirs = img.clone();
    let other = std::thread::spawn(move || match lock_target(&theirs) {
        Err(LockError::Held { holder, .. }) => holder,
        other => panic!("another thread took the served image's lock: {other:?}"),
    });
    let holder = other.join().unwrap();
    assert!(holder.starts_with(&format!("pid {pid}: ")), "{holder}");
    drop(dev);
    drop(lock_target(&img).expect("free once the device is gone"));
}
