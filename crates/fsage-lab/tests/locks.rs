//! Lock contention on this machine's kernel: eight threads creating and removing files in one
//! ext4 directory contend for the directory's inode lock, and the recording finds it among the
//! contended instances, named by its callers, and leaves no trace instance behind. Needs root
//! and a kernel since 5.19 (skipped otherwise; failed with FSAGE_REQUIRE_MOUNT_TESTS=1).

use fsage_lab::locks::LockTrace;
use fsage_results::locks::DIR_RWSEM;
use fsage_testkit::{skip, ImageFs};
use std::path::Path;

#[test]
fn many_creators_in_one_directory_contend_for_its_lock() {
    let test = "many_creators_in_one_directory_contend_for_its_lock";
    if let Err(e) = fsage_lab::locks::available() {
        return skip(test, e);
    }
    let fs = match ImageFs::ext4(256 << 20) {
        Ok(f) => f,
        Err(e) => return skip(test, e),
    };
    let dir = fs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let instances = || -> Vec<String> {
        std::fs::read_dir("/sys/kernel/tracing/instances")
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&format!("fsage-{}-", std::process::id())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let t = LockTrace::start().unwrap();
    assert_eq!(instances().len(), 1, "its own trace instance");
    std::thread::scope(|s| {
        for k in 0..8 {
            let dir: &Path = &dir;
            s.spawn(move || {
                for i in 0..1500 {
                    let f = dir.join(format!("f{k}-{i}"));
                    std::fs::write(&f, b"x").unwrap();
                    std::fs::remove_file(&f).unwrap();
                }
            });
        }
    });
    let r = t.finish().unwrap();
    assert!(instances().is_empty(), "the trace instance is removed");
    assert!(r.waits > 0, "{r:?}");
    let dirs: Vec<_> = r.named(DIR_RWSEM).collect();
    assert!(
        !dirs.is_empty(),
        "no directory lock among {:#?}",
        r.locks.iter().take(5).collect::<Vec<_>>()
    );
    let d = dirs[0];
    assert_eq!(d.kind, "rwsem");
    assert!(d.waits > 0 && d.wait_total_ns >= d.wait_max_ns && d.write_waits > 0);
    // One directory, one instance: the files' creators and removers all wait on it.
    let fns: Vec<&str> = d.callers.iter().map(|c| c.function.as_str()).collect();
    assert!(
        fns.iter()
            .any(|f| ["path_openat", "open_last_lookups", "do_unlinkat"].contains(f)),
        "{fns:?}"
    );
    assert!(d.identified_by.is_some());
}
