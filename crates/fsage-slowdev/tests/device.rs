//! A slow device end to end: made, written and read through its loop device with direct I/O,
//! destroyed, and the image holds exactly what was written; its latency is really applied.

mod common;

use common::{can_run, Lab};
use fsage_slowdev::{measure, MeasureSpec, Pattern, Registry, SlowDevice};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Duration;

const MIB: u64 = 1 << 20;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8)
        .collect()
}

/// A 4096-aligned copy of `data` (O_DIRECT needs aligned buffers).
fn aligned(data: &[u8]) -> (Vec<u8>, usize) {
    let mut v = vec![0u8; data.len() + 4096];
    let off = v.as_ptr().align_offset(4096);
    v[off..off + data.len()].copy_from_slice(data);
    (v, off)
}

#[test]
fn written_data_reaches_the_image_and_reads_back() {
    if !can_run("written_data_reaches_the_image_and_reads_back") {
        return;
    }
    let lab = Lab::new();
    let spec = lab.spec("img", 16 * MIB, 20_000);
    let dev = lab.create(&spec);
    let path = dev.path().to_path_buf();
    assert!(path.to_string_lossy().starts_with("/dev/loop"), "{path:?}");
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
            .unwrap()
            .trim(),
        "1",
        "direct I/O must be on"
    );
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .unwrap();
    let data = pattern(256 * 1024, 7);
    let (buf, off) = aligned(&data);
    let at = [0u64, 3 * MIB + 8192, 16 * MIB - 256 * 1024];
    for &o in &at {
        f.write_all_at(&buf[off..off + data.len()], o).unwrap();
    }
    let mut back = vec![0u8; data.len() + 4096];
    let boff = back.as_ptr().align_offset(4096);
    f.read_exact_at(&mut back[boff..boff + data.len()], at[1])
        .unwrap();
    assert!(
        back[boff..boff + data.len()] == data[..],
        "read back differs"
    );
    f.sync_all().unwrap();
    drop(f);
    let st = dev.device().stats().unwrap();
    let w = st.kind("write").unwrap();
    assert!(w.requests >= 3, "{st:?}");
    assert_eq!(w.bytes, 3 * data.len() as u64, "{st:?}");
    assert!(
        st.disagreements().is_empty(),
        "{:?}\n{st:#?}",
        st.disagreements()
    );
    // The latency asked for is the latency each request got (at least).
    assert!(w.latency.p50_ns >= 20_000, "{:?}", w.latency);
    dev.destroy().unwrap();
    assert!(
        Registry::new(lab.registry()).list().is_empty(),
        "destroy leaves nothing registered"
    );
    assert!(
        !std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&*lab.registry().to_string_lossy()),
        "the FUSE mount is gone"
    );
    let img = std::fs::read(lab.path("img")).unwrap();
    assert_eq!(img.len() as u64, 16 * MIB);
    let mut want = vec![0u8; 16 * MIB as usize];
    for &o in &at {
        want[o as usize..o as usize + data.len()].copy_from_slice(&data);
    }
    assert!(img == want, "the image holds exactly what was written");
}

#[test]
fn a_device_applies_its_latency_and_overlaps_requests() {
    if !can_run("a_device_applies_its_latency_and_overlaps_requests") {
        return;
    }
    let lab = Lab::new();
    let dev = lab.create(&lab.spec("img", 8 * MIB, 2_000_000));
    let mut m = MeasureSpec::new(dev.path(), Pattern::RandRead, 1);
    m.duration = Duration::from_millis(400);
    m.warmup_ops = 2;
    let qd1 = measure(&m).unwrap();
    // A device that ignored its 2 ms would answer in tens of microseconds.
    assert!(
        qd1.latency.mean_ns >= 2_000_000.0 && qd1.latency.mean_ns < 6_000_000.0,
        "{qd1:?}"
    );
    // Eight in flight overlap: far more than one request per 2 ms (loose: a loaded machine).
    m.queue_depth = 8;
    let qd8 = measure(&m).unwrap();
    assert!(qd8.iops > 3.0 * qd1.iops, "qd1 {qd1:?}\nqd8 {qd8:?}");
    // A queue depth of 2 caps it at two per 2 ms.
    drop(dev);
    let mut spec = lab.spec("img2", 8 * MIB, 2_000_000);
    spec.queue_depth = Some(2);
    let dev = lab.create(&spec);
    m.device = dev.path().to_path_buf();
    let capped = measure(&m).unwrap();
    assert!(capped.iops <= 1_100.0, "{capped:?}");
    assert!(capped.latency.mean_ns >= 6_000_000.0, "{capped:?}");
}

#[test]
fn open_finds_a_device_by_name_and_by_loop_path() {
    if !can_run("open_finds_a_device_by_name_and_by_loop_path") {
        return;
    }
    let lab = Lab::new();
    let dev = lab.create(&lab.spec("img", 4 * MIB, 0));
    let reg = Registry::new(lab.registry());
    let by_name = SlowDevice::open(&reg, dev.device().name()).unwrap();
    assert_eq!(by_name.path(), dev.path());
    let by_path = SlowDevice::open(&reg, &dev.path().to_string_lossy()).unwrap();
    assert_eq!(by_path.name(), dev.device().name());
    assert!(SlowDevice::open(&reg, "/dev/loop999999").is_err());
}

/// ext4 writes through its page cache in large folios: the loop device takes them as requests of
/// up to 1,280 KiB, which FUSE hands the daemon as a 1 MiB and a 256 KiB piece. The daemon then
/// counts more writes than the kernel, and `dev stats` said "DISAGREE: writes" although every
/// sector matched: now they agree, and the pieces are counted (`at_limit`).
#[test]
fn kernel_requests_split_at_fuses_limit_still_agree() {
    let test = "kernel_requests_split_at_fuses_limit_still_agree";
    if !can_run(test) {
        return;
    }
    if let Err(e) = fsage_testkit::need_root_and(&["mkfs.ext4", "mount"]) {
        common::skip(test, e);
        return;
    }
    let lab = Lab::new();
    let dev = lab.create(&lab.spec("img", 256 << 20, 0));
    let p = dev.path().to_string_lossy().into_owned();
    fsage_testkit::run_cmd("mkfs.ext4", &["-q", "-F", &p]).unwrap();
    {
        let mnt = fsage_testkit::MountGuard::mount(&p, &["-t", "ext4"]).unwrap();
        let data = pattern(64 << 20, 3);
        let f = mnt.path().join("f");
        std::fs::write(&f, &data).unwrap();
        std::fs::File::open(&f).unwrap().sync_all().unwrap();
    }
    let st = dev.device().stats().unwrap();
    let w = st.kind("write").unwrap();
    let k = st.diskstats.unwrap();
    eprintln!(
        "{test}: daemon {} writes ({} of 1 MiB), kernel {} writes",
        w.requests, w.at_limit, k.writes
    );
    assert!(st.disagreements().is_empty(), "{:?}", st.disagreements());
    assert!(w.bytes >= 64 << 20, "{st:?}");
}
