//! Real aging runs on ext4: a sparse image in /dev/shm, a loop device, a mount, all made by the
//! test and undone by its guards (root, losetup and mkfs.ext4 needed; skipped otherwise). After
//! each run the file system is unmounted and checked with `e2fsck -fn`.

mod common;

use common::*;
use std::fs;
use std::path::Path;
use std::time::Instant;

const IMAGE_BYTES: u64 = 512 << 20;

fn ext4_or_skip(test: &str) -> Option<Ext4> {
    let made = need_root_and(&["e2fsck"]).and_then(|()| Ext4::ext4(IMAGE_BYTES));
    match made {
        Ok(e) => Some(e),
        Err(reason) => {
            skip(test, &reason);
            None
        }
    }
}

/// f_blocks * f_frsize of the file system holding `path`.
fn fs_bytes(path: &Path) -> u64 {
    fsage_sys::fs_stat(path).unwrap().size
}

/// Unmounts and runs `e2fsck -fn` on the loop device: it must report a clean file system.
fn unmount_and_fsck(mut ext: Ext4) {
    ext.mount.unmount().expect("unmount the ext4 file system");
    let o = std::process::Command::new(find_cmd("e2fsck").unwrap())
        .args(["-fn", ext.loopdev.dev()])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "e2fsck -fn found problems:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn ext4_agrawal_converges_and_fsck_is_clean() {
    let Some(ext) = ext4_or_skip("ext4_agrawal_converges_and_fsck_is_clean") else {
        return;
    };
    let d = tmp();
    let start = Instant::now();
    let run = Age::on("agrawal", s(ext.path()))
        .seed("3")
        .run_logged(d.path());
    eprintln!("ext4 agrawal run: {:.1}s", start.elapsed().as_secs_f64());
    let (log, j) = (run.log, run.report);
    assert_eq!(j_str(&j, "stop_reason"), "converged");
    assert_eq!(j_u64(&j, "ticks"), j_u64(&j, "t_estimate"));
    assert_eq!(j_u64(&j, "capacity"), fs_bytes(ext.path()));
    assert_eq!(j_u64(&j, "block_size"), 4096);
    assert_eq!(j_u64(&j, "enospc_events"), 0);
    assert!(j["error"].is_null(), "{}", j["error"]);
    assert!(j_u64(&j, "live_bytes") <= j_u64(&j, "capacity"));

    let text = fs::read_to_string(&log).unwrap();
    let r = replay_log(&text);
    assert_tree_matches_log(ext.path(), &r);
    assert_eq!(r.allocated(4096), j_u64(&j, "live_bytes"));
    // fallocate gave every file its blocks.
    let t = walk(ext.path());
    for (p, &size) in &t.files {
        let a = t.allocated[p];
        assert!(a >= size / 4096 * 4096, "{p}: {size} bytes, {a} allocated");
    }

    // The same decisions as the dry run at this capacity.
    let dry = d.path().join("dry.log");
    Age::plan("agrawal", j_u64(&j, "capacity").to_string())
        .block_size("4096")
        .seed("3")
        .op_log(s(&dry))
        .run_ok();
    assert!(
        text == fs::read_to_string(&dry).unwrap(),
        "the ext4 run's op log differs from the dry run's"
    );

    unmount_and_fsck(ext);
}

#[test]
fn ext4_capacity_beyond_the_device_meets_enospc_and_survives() {
    let Some(ext) = ext4_or_skip("ext4_capacity_beyond_the_device_meets_enospc_and_survives")
    else {
        return;
    };
    let run = Age::on("agrawal", s(ext.path()))
        .capacity("2GiB")
        .fullness("0.9")
        .max_ops("40000")
        .seed("3")
        .run_logged_tmp();
    let o = &run.output;
    expect_code(o, 0, "2 GiB of capacity on a 512 MiB ext4");
    expect_stderr(o, "larger than the file system");
    let (log, j) = (run.log, run.report);
    assert_eq!(j_str(&j, "stop_reason"), "max_ops");
    assert_eq!(j_u64(&j, "ticks"), 40000);
    let events = j_u64(&j, "enospc_events");
    assert!(events > 0, "no ENOSPC reported");
    let size = fs_bytes(ext.path());
    assert!(
        j_u64(&j, "live_bytes") <= size,
        "{} > {size}",
        j["live_bytes"]
    );
    assert!(j_u64(&j, "ceiling_bytes") <= size);

    let text = fs::read_to_string(&log).unwrap();
    let r = replay_log(&text);
    assert_eq!(r.refused.len() as u64, events);
    assert_tree_matches_log(ext.path(), &r);
    assert_eq!(r.allocated(4096), j_u64(&j, "live_bytes"));

    unmount_and_fsck(ext);
}
