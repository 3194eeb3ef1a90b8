//! `fsage frag --against-fresh`: an image beside a fresh twin of the same kind and size.

mod common;

use common::*;
use std::path::Path;

fn twins() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("fsage-twin-"))
                .collect()
        })
        .unwrap_or_default()
}

fn against(mount: &Path, out: &Path) -> serde_json::Value {
    let o = fsage_ok([
        "frag",
        s(mount),
        "--against-fresh",
        "--probe",
        "8MiB",
        "--no-files",
        "--json",
        s(out),
    ]);
    let text = stdout(&o);
    assert!(text.contains("against a fresh ext4"), "{text}");
    read_json(out)
}

#[test]
fn a_fragmented_ext4_is_far_from_its_fresh_twin_and_a_fresh_one_is_not() {
    const T: &str = "a_fragmented_ext4_is_far_from_its_fresh_twin_and_a_fresh_one_is_not";
    let fresh = match Ext4::ext4(128 << 20) {
        Ok(f) => f,
        Err(e) => return skip(T, &e),
    };
    let before = twins();
    let d = tmp();
    let j = against(fresh.path(), &d.path().join("fresh.json"));
    assert_eq!(j["verdict"], "close_to_fresh", "{j:#}");
    assert_eq!(j["fs_type"], "ext4");

    // Fragment the free space: 3000 files of 12 KiB, every other one deleted.
    let aged = Ext4::ext4(128 << 20).unwrap_or_else(|e| panic!("{e}"));
    let dir = aged.path().join("f");
    std::fs::create_dir(&dir).unwrap();
    let data = vec![7u8; 12 << 10];
    for i in 0..3000 {
        std::fs::write(dir.join(i.to_string()), &data).unwrap();
    }
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    for i in (0..3000).step_by(2) {
        std::fs::remove_file(dir.join(i.to_string())).unwrap();
    }
    let j = against(aged.path(), &d.path().join("aged.json"));
    let ratio = j["free_extents_ratio"].as_f64().unwrap();
    assert!(
        ratio > 10.0,
        "free extents per GiB only {ratio}x fresh: {j:#}"
    );
    assert!(
        j["aged"]["free_under_1mib_percent"].as_f64().unwrap()
            > j["fresh"]["free_under_1mib_percent"].as_f64().unwrap()
    );
    assert_ne!(j["verdict"], "close_to_fresh", "{j:#}");
    // The twin is gone.
    assert_eq!(twins(), before, "a fresh twin was left in /dev/shm");
}
