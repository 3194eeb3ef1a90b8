//! `fsage bench run|list|show`: every built-in on tmpfs and on a loop-mounted ext4 image, scaled
//! down with --set and --ops; a run limited by a memory cgroup; and the CLI's errors.

mod common;

use common::*;
use std::path::Path;

const BUILTINS: [&str; 4] = ["fileserver", "varmail", "webserver", "webproxy"];

/// Runs one scaled-down built-in on `root/NAME` and checks its JSON.
fn run_builtin(root: &Path, name: &str) {
    let target = root.join(name);
    let json = root.join(format!("{name}.json"));
    fsage_ok([
        "bench",
        "run",
        name,
        "--set",
        "nfiles=200",
        "--set",
        "nthreads=4",
        "--set",
        "filesize=16k",
        "--ops",
        "3000",
        "--seed",
        "3",
        "--json",
        s(&json),
        s(&target),
    ]);
    let j = read_json(&json);
    let rep = &j["reps"][0];
    assert_eq!(rep["overall"]["ops"].as_u64(), Some(3000), "{name}: {j}");
    assert_eq!(j["interrupted"].as_bool(), Some(false));
    assert!(j["cache_limit"].is_null(), "no limit asked");
    for f in rep["flowops"].as_array().unwrap() {
        assert!(
            f["stats"]["ops"].as_u64().unwrap() > 0,
            "{name}: flowop never ran: {f}"
        );
        assert!(f["stats"]["p99_us"].as_f64().is_some(), "{name}: {f}");
    }
    assert!(j_f64(&j["summary"], "ops_per_sec_mean") > 0.0);
    // Only the target was written: it holds the marker and the workload's filesets.
    let mut names: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let want: Vec<&str> = if name == "webserver" {
        vec![".fsage-bench.json", "bigfileset", "logfiles"]
    } else {
        vec![".fsage-bench.json", "bigfileset"]
    };
    assert_eq!(names, want, "{name}");
}

#[test]
fn every_builtin_runs_on_tmpfs() {
    let Some(m) = tmpfs_or_skip("every_builtin_runs_on_tmpfs", "512m") else {
        return;
    };
    for name in BUILTINS {
        run_builtin(m.path(), name);
    }
    // Only our targets and JSON files at the top of the tmpfs.
    let n = std::fs::read_dir(m.path()).unwrap().count();
    assert_eq!(n, 2 * BUILTINS.len());
    // The page cache of a tmpfs cannot be limited: refused as bad input.
    let o = fsage([
        "bench",
        "run",
        "varmail",
        "--set",
        "nfiles=50",
        "--ops",
        "100",
        "--cache-ratio",
        "0.5",
        s(&m.path().join("cg")),
    ]);
    expect_code(&o, 2, "--cache-ratio on tmpfs");
    expect_stderr(&o, "tmpfs");
}

#[test]
fn every_builtin_runs_on_ext4() {
    let fs = match Ext4::ext4(512 << 20) {
        Ok(f) => f,
        Err(reason) => return skip("every_builtin_runs_on_ext4", &reason),
    };
    for name in BUILTINS {
        run_builtin(fs.path(), name);
    }
}

/// `--lock-stats` on ext4: sixteen fileserver threads in directories of a few files contend for
/// their directories' locks, and the result names them, with their callers.
#[test]
fn lock_stats_finds_the_directory_locks_fileserver_contends_for() {
    let test = "lock_stats_finds_the_directory_locks_fileserver_contends_for";
    if let Err(e) = fsage_lab::locks::available() {
        return skip(test, &e);
    }
    let fs = match Ext4::ext4(512 << 20) {
        Ok(f) => f,
        Err(reason) => return skip(test, &reason),
    };
    let json = fs.path().join("b.json");
    fsage_ok([
        "bench",
        "run",
        "fileserver",
        "--set",
        "nfiles=200",
        "--set",
        "nthreads=16",
        "--set",
        "filesize=16k",
        "--duration",
        "3s",
        "--warmup",
        "1s",
        "--lock-stats",
        "--json",
        s(&json),
        s(&fs.path().join("t")),
    ]);
    let j = read_json(&json);
    let l = &j["lock_contention"];
    assert!(l["recorded_s"].as_f64().unwrap() > 1.0, "{l}");
    assert!(l["waits"].as_u64().unwrap() > 0, "{l}");
    let dirs: Vec<&serde_json::Value> = l["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"] == "directory i_rwsem (i_mutex_dir_key)")
        .collect();
    assert!(!dirs.is_empty(), "no directory lock among {l}");
    assert!(dirs[0]["callers"][0]["function"].as_str().is_some());
}

fn memory_cgroup_available() -> Result<(), Unavailable> {
    need_root_and(&["mount", "umount", "losetup", "mkfs.ext4"])?;
    if Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
        return Ok(());
    }
    let c = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").unwrap_or_default();
    if c.split_whitespace().any(|x| x == "memory") {
        return Ok(());
    }
    Err(Unavailable("no memory cgroup controller".into()))
}

/// `--cache-ratio 0.25` on a fileset of about 64 MiB: the cgroup's peak usage and its peak page
/// cache stay within the limit, and the cgroup is gone afterwards.
#[test]
fn a_cache_limited_run_holds_its_limit() {
    if let Err(reason) = memory_cgroup_available() {
        return skip("a_cache_limited_run_holds_its_limit", &reason);
    }
    let fs = match Ext4::ext4(512 << 20) {
        Ok(f) => f,
        Err(reason) => return skip("a_cache_limited_run_holds_its_limit", &reason),
    };
    let json = fs.path().join("cg.json");
    let child = std::process::Command::new(bin())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .args([
            "bench",
            "run",
            "fileserver",
            "--set",
            "nfiles=1500",
            "--set",
            "nthreads=4",
            "--duration",
            "2s",
            "--cache-ratio",
            "0.25",
            "--json",
            s(&json),
            s(&fs.path().join("t")),
        ])
        .spawn()
        .unwrap();
    let pid = child.id();
    let child = child.wait_with_output().unwrap();
    expect_code(&child, 0, "cache-limited run");
    let j = read_json(&json);
    let c = &j["cache_limit"];
    let limit = j_u64(c, "limit_bytes");
    let fileset = j_u64(c, "fileset_bytes");
    assert_eq!(j_u64(c, "cache_bytes"), (fileset as f64 * 0.25) as u64);
    assert!(
        j_u64(c, "peak_bytes") > 0 && j_u64(c, "peak_bytes") <= limit,
        "{c}"
    );
    assert!(j_u64(c, "peak_cache_bytes") <= limit, "{c}");
    // The fileset is far larger than the limit: the cache was really held below it.
    assert!(fileset > 2 * limit, "{c}");
    let left: Vec<_> = ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("fsage-bench-{pid}-"))
        })
        .collect();
    assert!(left.is_empty(), "cgroup left behind: {left:?}");
}

#[test]
fn list_show_and_bad_input() {
    let o = fsage_ok(["bench", "list"]);
    for n in BUILTINS {
        assert!(stdout(&o).contains(n));
    }
    let o = fsage_ok(["bench", "show", "fileserver", "--set", "nfiles=50000"]);
    assert!(stdout(&o).contains("set $nfiles=50000\n"), "{}", stdout(&o));
    assert!(stdout(&o).contains("define fileset name=bigfileset"));
    let d = tmp();
    let bad = d.path().join("bad.f");
    std::fs::write(&bad, "set $a=1\nflowop read name=r\n").unwrap();
    let o = fsage(["bench", "show", s(&bad)]);
    expect_code(&o, 2, "bad .f");
    expect_stderr(&o, &format!("{}:2:", bad.display()));
    let o = fsage(["bench", "run", "nosuch", s(&d.path().join("t"))]);
    expect_code(&o, 2, "unknown workload");
    let o = fsage([
        "bench",
        "run",
        "varmail",
        "--set",
        "nosuch=1",
        s(&d.path().join("t")),
    ]);
    expect_code(&o, 2, "unknown variable");
    expect_stderr(&o, "$nosuch");
    // A target with someone else's files is refused and left alone.
    let t = d.path().join("full");
    std::fs::create_dir(&t).unwrap();
    std::fs::write(t.join("keep"), "x").unwrap();
    let o = fsage(["bench", "run", "varmail", "--ops", "10", s(&t)]);
    expect_code(&o, 2, "non-empty target");
    assert_eq!(std::fs::read_dir(&t).unwrap().count(), 1);
}
