//! `fsage dev`: a slow device made, listed, changed live, inspected and destroyed from the command
//! line; ext4, xfs and btrfs made on one and aged with `fsage age --fs --device`, benchmarked,
//! destroyed, and the image then checks clean and mounts. Each test has its own registry (FSAGE_DEV_REGISTRY) in a temporary
//! directory and destroys its devices even when it fails.

mod common;

use common::{expect_code, expect_stderr, need_root_and, skip, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::TempDir;

struct Reg {
    dir: TempDir,
}

impl Reg {
    fn new() -> Reg {
        Reg {
            dir: fsage_testkit::shm_tmp("fsage-dev-cli-"),
        }
    }
    fn path(&self, n: &str) -> PathBuf {
        self.dir.path().join(n)
    }
    fn fsage<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(&self, args: I) -> Output {
        Command::new(common::bin())
            .args(args)
            .env("FSAGE_DEV_REGISTRY", self.path("registry"))
            .output()
            .unwrap()
    }
    fn ok<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(&self, args: I) -> Output {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().into()).collect();
        let o = self.fsage(&args);
        expect_code(&o, 0, &format!("fsage {args:?}"));
        o
    }
}

impl Drop for Reg {
    fn drop(&mut self) {
        // Whatever a failed test left: unmount our mounts, then destroy our devices.
        let p = self.path("mnt");
        if fsage_sys::is_mount_point(&p) {
            let _ = fsage_lab::mount::umount_point(&p);
        }
        let _ = self.fsage(["dev", "destroy", "--all", "--force"]);
    }
}

fn can_run(test: &str, cmds: &[&str]) -> bool {
    if let Err(e) = need_root_and(cmds) {
        skip(test, &e);
        return false;
    }
    if !Path::new("/dev/fuse").exists() {
        skip(test, "/dev/fuse is missing");
        return false;
    }
    true
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON: {e}\n{}", stdout(o)))
}

#[test]
fn dev_commands_make_change_show_and_destroy_a_device() {
    if !can_run("dev_commands_make_change_show_and_destroy_a_device", &[]) {
        return;
    }
    let r = Reg::new();
    let o = r.fsage(["dev", "create", "--size", "16MiB"]);
    expect_code(&o, 2, "create without a latency");
    let o = r.fsage([
        "dev",
        "create",
        "--size",
        "16MiB",
        "--latency",
        "3 fortnights",
    ]);
    expect_code(&o, 2, "bad latency");
    expect_stderr(&o, "--latency");
    let img = r.path("img");
    let o = r.ok([
        "dev",
        "create",
        "--image",
        &img.to_string_lossy(),
        "--size",
        "16MiB",
        "--read-latency",
        "50us",
        "--write-latency",
        "200us",
    ]);
    let dev = stdout(&o).trim().to_string();
    assert!(dev.starts_with("/dev/loop"), "{dev}");
    let list = json(&r.ok(["dev", "list", "--json"]));
    let d = &list[0];
    assert_eq!(d["device"], dev.as_str());
    assert_eq!(d["latencies"]["read_ns"], 50_000);
    assert_eq!(d["latencies"]["write_ns"], 200_000);
    assert_eq!(
        d["latencies"]["flush_ns"], 200_000,
        "flush defaults to the write latency"
    );
    assert_eq!(d["alive"], true);
    assert!(stdout(&r.ok(["dev", "list"])).contains(&dev));
    r.ok(["dev", "set", &dev, "--latency", "1ms"]);
    let o = r.fsage(["dev", "set", &dev]);
    expect_code(&o, 2, "set without a value");
    // Reads through the block device see the new latency.
    let o = Command::new("dd")
        .args([
            &format!("if={dev}"),
            "of=/dev/null",
            "bs=4k",
            "count=20",
            "iflag=direct",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let st = json(&r.ok(["dev", "stats", &dev, "--json"]));
    let reads = st["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "read")
        .unwrap();
    assert!(reads["requests"].as_u64().unwrap() >= 20, "{st}");
    assert!(
        reads["latency"]["p50_ns"].as_u64().unwrap() >= 1_000_000,
        "{st}"
    );
    assert_eq!(st["latencies"]["read_ns"], 1_000_000);
    let text = stdout(&r.ok(["dev", "stats", &dev]));
    assert!(text.contains("daemon and kernel agree"), "{text}");
    let o = r.fsage(["dev", "stats", "/dev/loop999999"]);
    expect_code(&o, 2, "stats of a device fsage did not make");
    r.ok(["dev", "destroy", &dev]);
    assert_eq!(
        json(&r.ok(["dev", "list", "--json"])),
        serde_json::json!([])
    );
    assert!(img.exists(), "an --image is kept");
    let o = r.fsage(["dev", "destroy", &dev]);
    expect_code(&o, 2, "destroying it twice");
}

/// Makes `fs` on a slow device and ages it (`fsage age --fs --device`), benchmarks it (varmail),
/// destroys the device, then checks the image and mounts it.
fn age_on_a_slow_device(fs: &str, size: &str) {
    let test = format!("age_{fs}_on_a_slow_device");
    let mkfs = format!("mkfs.{fs}");
    if !can_run(&test, &[&mkfs]) {
        return;
    }
    let r = Reg::new();
    let img = r.path("img");
    let o = r.ok([
        "dev",
        "create",
        "--image",
        &img.to_string_lossy(),
        "--size",
        size,
        "--latency",
        "50us",
    ]);
    let dev = stdout(&o).trim().to_string();
    let mnt = r.path("mnt");
    let mnt_s = mnt.to_string_lossy().into_owned();
    let o = r.ok([
        "age",
        "--profile",
        "dabre",
        "--fs",
        fs,
        "--device",
        &dev,
        "--max-ops",
        "400",
        &mnt_s,
    ]);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("file system is on {dev}")),
        "{fs}: {err}"
    );
    assert!(
        r.path("mnt.report.json").is_file() && r.path("mnt.fsage-state").is_file(),
        "{fs}: the report and state beside the mount point"
    );
    assert!(
        !fsage_sys::is_mount_point(&mnt),
        "{fs}: unmounted after aging"
    );
    // Formatting it again without --force: refused, the aged file system kept.
    let o = r.fsage([
        "age",
        "--profile",
        "dabre",
        "--fs",
        fs,
        "--device",
        &dev,
        "--max-ops",
        "10",
        &mnt_s,
    ]);
    expect_code(&o, 2, "aging over a file system without --force");
    std::fs::create_dir_all(&mnt).unwrap();
    r.ok(["fs", "mount", &dev, &mnt_s]);
    let aged = walk_count(&mnt);
    assert!(aged > 50, "{fs}: only {aged} files after aging");
    let bench_dir = mnt.join("bench");
    let o = r.ok([
        "bench",
        "run",
        "varmail",
        "--set",
        "nfiles=100",
        "--set",
        "nthreads=2",
        "--duration",
        "2s",
        "--json",
        &r.path("bench.json").to_string_lossy(),
        &bench_dir.to_string_lossy(),
    ]);
    let bench: serde_json::Value =
        serde_json::from_slice(&std::fs::read(r.path("bench.json")).unwrap()).unwrap();
    let ops = bench["reps"][0]["overall"]["ops"].as_u64().unwrap_or(0);
    assert!(
        ops > 100 && bench["environment"]["target_fs"] == fs,
        "{fs}: {ops} varmail operations: {}",
        stdout(&o)
    );
    let files = walk_count(&mnt);
    let o = r.fsage(["dev", "destroy", &dev]);
    expect_code(&o, 2, "destroying a mounted device without --force");
    r.ok(["fs", "umount", &mnt_s]);
    let st = json(&r.ok(["dev", "stats", &dev, "--json"]));
    let writes = st["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "write")
        .unwrap()
        .clone();
    assert!(writes["requests"].as_u64().unwrap() > 10, "{st}");
    r.ok(["dev", "destroy", &dev]);
    // The image alone holds the aged file system: clean, and it mounts with the same files.
    r.ok(["fs", "check", &img.to_string_lossy(), "--fs", fs]);
    r.ok(["fs", "mount", &img.to_string_lossy(), &mnt_s]);
    let again = walk_count(&mnt);
    r.ok(["fs", "umount", &mnt_s]);
    assert_eq!(again, files, "{fs}: the image holds what was written");
}

fn walk_count(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn age_ext4_on_a_slow_device() {
    age_on_a_slow_device("ext4", "256MiB");
}

#[test]
fn age_xfs_on_a_slow_device() {
    age_on_a_slow_device("xfs", "320MiB");
}

#[test]
fn age_btrfs_on_a_slow_device() {
    age_on_a_slow_device("btrfs", "256MiB");
}

/// Processes whose command line names a path under `dir` (daemons serving our registry).
fn processes_under(dir: &Path) -> Vec<u32> {
    let want = dir.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            cmd.split(|&b| b == 0)
                .any(|a| a.starts_with(want))
                .then_some(pid)
        })
        .filter(|&pid| pid != std::process::id())
        .collect()
}

#[test]
fn a_device_whose_maker_was_killed_while_its_daemon_started_is_destroyed_with_its_daemon() {
    let test =
        "a_device_whose_maker_was_killed_while_its_daemon_started_is_destroyed_with_its_daemon";
    if !can_run(test, &[]) {
        return;
    }
    let r = Reg::new();
    let image = r.path("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let registry = r.path("registry");
    let mut caught = 0;
    for attempt in 0..5 {
        // Kill `dev create` (SIGKILL: no cleanup of its own) the moment the device is registered
        // but before its daemon has recorded itself.
        let mut child = Command::new(common::bin())
            .args(["dev", "create", "--latency", "1ms", "--image"])
            .arg(&image)
            .env("FSAGE_DEV_REGISTRY", &registry)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        let mut early = false;
        while t0.elapsed().as_secs() < 20 {
            let rec = registry.join("sd0").join("device.json");
            if let Ok(text) = std::fs::read_to_string(&rec) {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                    if !v["daemon_pid"].is_null() {
                        break; // too late: the daemon has recorded itself
                    }
                    if !processes_under(&registry).is_empty() {
                        early = true; // registered, daemon started, not yet recorded
                        break;
                    }
                }
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        if early {
            caught += 1;
        }

        // A destroy (what a re-run of an experiment does first) stops the daemon too.
        r.ok(["dev", "destroy", "--all", "--force"]);
        let left = processes_under(&registry);
        assert!(left.is_empty(), "attempt {attempt}: daemons left: {left:?}");
        let o = r.ok(["dev", "list", "--json"]);
        assert_eq!(json(&o).as_array().map(Vec::len), Some(0), "{}", stdout(&o));
        // The image is free again: a new device on it can be made.
        let o = r.fsage([
            "dev",
            "create",
            "--latency",
            "0",
            "--image",
            image.to_str().unwrap(),
        ]);
        expect_code(&o, 0, "create on the image again");
        r.ok(["dev", "destroy", "--all"]);
    }
    assert!(
        caught > 0,
        "no attempt killed the maker before its daemon recorded itself"
    );
}

/// `dev cost` on a trace small enough to cost by hand: three reads on a 1 ms fixed-latency
/// device, the second issued while the first was outstanding, the third 50 us after the second
/// completed (as recorded). On the model: 0 → 1 ms and 0.01 → 1.01 ms overlap, the third issued
/// at 1.01 + 0.05 ms and done 1 ms later: 2.06 ms in all, with the recorded think times. With
/// the default rule (a fixed 50 us before a read that waited), the second is issued with the
/// first (it waited for nothing) and the third 50 us after it completed: 2.05 ms.
#[test]
fn dev_cost_costs_a_trace_as_the_rule_says() {
    let dir = TempDir::new().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::write(
        &trace,
        r#"{"version": 1, "source": "hand", "requests": [
            {"kind": "read", "offset": 0, "len": 4096, "issue_ns": 0, "complete_ns": 20000},
            {"kind": "read", "offset": 8192, "len": 4096, "issue_ns": 10000, "complete_ns": 30000},
            {"kind": "read", "offset": 65536, "len": 4096, "issue_ns": 80000, "complete_ns": 100000}
        ]}"#,
    )
    .unwrap();
    let out = common::fsage_ok([
        "dev",
        "cost",
        trace.to_str().unwrap(),
        "--model",
        "1ms",
        "--think",
        "recorded",
        "--json",
    ]);
    let v = json(&out);
    assert_eq!(v["total_ns"], 2_060_000, "{v}");
    assert_eq!(v["think"], "recorded");
    assert_eq!(v["median_think_ns"], 50_000);
    let dflt = json(&common::fsage_ok([
        "dev",
        "cost",
        trace.to_str().unwrap(),
        "--model",
        "1ms",
        "--json",
    ]));
    assert_eq!(dflt["total_ns"], 2_050_000, "{dflt}");
    assert_eq!(
        (&dflt["waited"], &dflt["think_ns"]),
        (&1.into(), &50_000.into())
    );
    let bad = common::fsage([
        "dev",
        "cost",
        trace.to_str().unwrap(),
        "--model",
        "1ms",
        "--think",
        "soon",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--think"));
    assert_eq!(v["recorded_ns"], 100_000);
    assert_eq!(v["requests"], 3);
    assert_eq!(v["closed_loop"], true);
    // On the hard disk it costs more than on 1 ms per request, and says what it did.
    let out = common::fsage_ok([
        "dev",
        "cost",
        trace.to_str().unwrap(),
        "--model",
        "hdd-7200",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("hdd-7200") && text.contains("seeks"),
        "{text}"
    );
    // A model that is none, and a trace that is none, are bad input naming what is wrong.
    let out = common::fsage(["dev", "cost", trace.to_str().unwrap(), "--model", "warp"]);
    expect_code(&out, 2, "dev cost");
    expect_stderr(&out, "neither a latency");
    std::fs::write(
        &trace,
        "{\"version\": 1, \"requests\": [{\"kind\": \"jump\"}]}",
    )
    .unwrap();
    let out = common::fsage(["dev", "cost", trace.to_str().unwrap(), "--model", "1ms"]);
    expect_code(&out, 2, "dev cost");
    expect_stderr(&out, "t.json:1:");
}

#[test]
fn dev_models_lists_every_parameter_with_its_source() {
    let out = common::fsage_ok(["dev", "models", "--json"]);
    let v = json(&out);
    let models = v.as_array().unwrap();
    let hdd = models
        .iter()
        .find(|m| m["name"] == "hdd-7200")
        .expect("hdd-7200 is built in");
    let params = hdd["params"].as_object().unwrap();
    assert!(params.len() >= 15);
    for (k, p) in params {
        assert!(
            !p["source"].as_str().unwrap().trim().is_empty(),
            "{k} has no source"
        );
    }
    let text = stdout(&common::fsage_ok(["dev", "models"]));
    assert!(
        text.contains("seek_avg") && text.contains("7K1000.C"),
        "{text}"
    );
}

/// The papers' drives are built in; `dev wa` compares a drive with its scaled copy in simulated
/// time, and bad scales and flags are refused with exit 2, naming what is wrong.
#[test]
fn dev_wa_and_the_papers_drives() {
    let text = stdout(&common::fsage_ok(["dev", "models"]));
    for m in [
        "crucial-m4-64g",
        "adata-s510-120g",
        "wd5000ys",
        "st500dm002",
        "sandisk-extreme-pro-240g",
    ] {
        assert!(text.contains(m), "{m} missing: {text}");
    }
    let out = common::fsage_ok([
        "dev",
        "wa",
        "--model",
        "ssd-sata@64MiB/4GiB",
        "--warm",
        "1",
        "--measured",
        "0.5",
        "--json",
    ]);
    let v = json(&out);
    assert_eq!(v["pools"], 1);
    assert_eq!(v["dies"], 64);
    assert!(v["write_amplification"].as_f64().unwrap() > 1.0);
    for (args, says) in [
        (vec!["--model", "ssd-sata@1GiB"], "ssd-sata@1GiB/FULL"),
        (vec!["--model", "hdd-7200@1GiB"], "only SSD models scale"),
        (
            vec!["--model", "crucial-m4-64g@1GiB", "--span", "120%"],
            "--span 120%",
        ),
        (
            vec!["--model", "crucial-m4-64g@1GiB", "--data-ratio", "0"],
            "not one",
        ),
    ] {
        let mut a = vec!["dev", "wa"];
        a.extend(args);
        let out = common::fsage(a);
        expect_code(&out, 2, "dev wa");
        expect_stderr(&out, says);
    }
    let out = common::fsage_ok([
        "dev",
        "read-curve",
        "--model",
        "st500dm002",
        "--sizes",
        "4KiB,1MiB",
        "--reads",
        "20",
        "--json",
    ]);
    let v = json(&out);
    let ms = v[0]["mean_ns"].as_f64().unwrap() / 1e6;
    assert!((8.0..16.0).contains(&ms), "{ms} ms");
}

/// `dev create --model`: a model file with a bad line is refused naming file:line before
/// anything is made; --model and --latency exclude each other.
#[test]
fn dev_create_refuses_a_bad_model_naming_its_line() {
    let r = Reg::new();
    let bad = r.path("disk.toml");
    std::fs::write(
        &bad,
        "name = \"disk\"\nkind = \"fixed\"\n[params]\n\
         read = { value = \"8 fortnights\", source = \"t\" }\n\
         write = { value = \"8ms\", source = \"t\" }\n",
    )
    .unwrap();
    let o = r.fsage([
        "dev",
        "create",
        "--size",
        "16MiB",
        "--model",
        bad.to_str().unwrap(),
    ]);
    expect_code(&o, 2, "a bad model file");
    expect_stderr(&o, &format!("{}:4", bad.display()));
    let o = r.fsage([
        "dev",
        "create",
        "--size",
        "16MiB",
        "--model",
        "hdd-7200",
        "--latency",
        "1ms",
    ]);
    expect_code(&o, 2, "--model with --latency");
    assert!(!r.path("registry").join("sd0").exists(), "nothing made");
}

/// A device on the built-in hard disk (100 GiB, sparse: only what is written takes memory) and
/// one on a latency given to --model: list and stats show the model and its counters, and
/// dev set refuses the disk (its timing is the model's) but changes the fixed one.
#[test]
fn dev_create_runs_a_model() {
    if !can_run("dev_create_runs_a_model", &[]) {
        return;
    }
    let r = Reg::new();
    let disk = stdout(&r.ok(["dev", "create", "--size", "100GiB", "--model", "hdd-7200"]))
        .trim()
        .to_string();
    let fixed = stdout(&r.ok(["dev", "create", "--size", "16MiB", "--model", "100us"]))
        .trim()
        .to_string();
    let o = Command::new("dd")
        .args([
            &format!("if={disk}"),
            "of=/dev/null",
            "bs=4k",
            "count=5",
            "skip=10000000",
            "iflag=direct",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let list = json(&r.ok(["dev", "list", "--json"]));
    let find = |dev: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == dev)
            .unwrap()
            .clone()
    };
    let d = find(&disk);
    assert_eq!(d["model"]["name"], "hdd-7200", "{d}");
    assert!(d["model_stats"]["seeks"].as_u64().unwrap() >= 1, "{d}");
    let f = find(&fixed);
    assert_eq!(f["latencies"]["read_ns"], 100_000, "{f}");
    assert!(f["model"]["name"].is_string(), "{f}");
    let text = stdout(&r.ok(["dev", "list"]));
    assert!(text.contains("hdd-7200"), "{text}");
    let st = json(&r.ok(["dev", "stats", &disk, "--json"]));
    assert_eq!(st["model"]["name"], "hdd-7200", "{st}");
    assert!(st["model"]["stats"]["reads"].as_u64().unwrap() >= 5, "{st}");
    let text = stdout(&r.ok(["dev", "stats", &disk]));
    assert!(
        text.contains("seeks") && text.contains("hard disk"),
        "{text}"
    );
    let o = r.fsage(["dev", "set", &disk, "--latency", "1ms"]);
    expect_code(&o, 2, "dev set on a hard disk");
    expect_stderr(&o, "runs the device model hdd-7200");
    r.ok(["dev", "set", &fixed, "--latency", "1ms"]);
    let f = json(&r.ok(["dev", "stats", &fixed, "--json"]));
    assert_eq!(f["latencies"]["read_ns"], 1_000_000, "{f}");
    r.ok(["dev", "destroy", "--all"]);
}

/// Each model kind prints its own counters: `dev cost` on an SSD shows flash counters (no seeks,
/// no rotation) and its JSON names the kind and gives the write amplification as a number; an
/// SSD device shows them in `dev list` before its first write and in `dev stats --json` after.
#[test]
fn dev_cost_and_stats_show_each_models_own_counters() {
    let dir = TempDir::new().unwrap();
    let trace = dir.path().join("t.json");
    let rqs: Vec<String> = (0..8)
        .map(|i| {
            format!(
                r#"{{"kind": "write", "offset": {}, "len": 65536, "issue_ns": {}, "complete_ns": {}}}"#,
                i * 65536,
                i * 100_000,
                i * 100_000 + 50_000
            )
        })
        .collect();
    std::fs::write(
        &trace,
        format!(
            r#"{{"version": 1, "device_size": 67108864, "requests": [{}]}}"#,
            rqs.join(",")
        ),
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    let text = stdout(&common::fsage_ok(["dev", "cost", t, "--model", "ssd-sata"]));
    assert!(
        text.contains("write amplification") && text.contains("programs"),
        "{text}"
    );
    assert!(
        !text.contains("seeks") && !text.contains("rotation"),
        "an SSD has no seeks: {text}"
    );
    let v = json(&common::fsage_ok([
        "dev", "cost", t, "--model", "ssd-sata", "--json",
    ]));
    assert_eq!(v["stats"]["kind"], "ssd", "{v}");
    assert!(v["stats"]["write_amplification"].is_f64(), "{v}");
    assert!(v["stats"].get("seeks").is_none(), "{v}");
    // The hard disk names its own, and has no flash.
    let v = json(&common::fsage_ok([
        "dev", "cost", t, "--model", "hdd-7200", "--json",
    ]));
    assert_eq!(v["stats"]["kind"], "hdd", "{v}");
    assert!(v["stats"].get("programs").is_none(), "{v}");

    if !can_run("dev_cost_and_stats_show_each_models_own_counters", &[]) {
        return;
    }
    let r = Reg::new();
    let ssd = stdout(&r.ok(["dev", "create", "--size", "64MiB", "--model", "ssd-sata"]))
        .trim()
        .to_string();
    let list = stdout(&r.ok(["dev", "list"]));
    assert!(
        list.contains("write amplification -") && !list.contains("seeks"),
        "an SSD's own counters before its first write: {list}"
    );
    let o = Command::new("dd")
        .args([
            "if=/dev/zero",
            &format!("of={ssd}"),
            "bs=64k",
            "count=16",
            "oflag=direct",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let st = json(&r.ok(["dev", "stats", &ssd, "--json"]));
    let m = &st["model"]["stats"];
    assert_eq!(m["kind"], "ssd", "{st}");
    assert!(m["write_amplification"].as_f64().unwrap() >= 1.0, "{st}");
    let text = stdout(&r.ok(["dev", "stats", &ssd]));
    assert!(
        text.contains("programs") && !text.contains("seeks"),
        "{text}"
    );
    r.ok(["dev", "destroy", "--all"]);
}

/// Bad input to `dev cost` (issue 34): each gets exit 2 and a message naming what is wrong, the
/// trace file or the flag: a request beyond the trace's device size or beyond what the model
/// holds, a device size of 0, a latency beyond 60 s or negative given to --model, a model file
/// whose `pages_per_block` is absurd (named, not `over_provisioning`), a trace that is not text.
#[test]
fn dev_cost_refuses_bad_traces_and_models_naming_them() {
    let dir = TempDir::new().unwrap();
    let file = |name: &str, text: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let rq = |offset: u64| {
        format!(
            r#"{{"kind": "read", "offset": {offset}, "len": 4096, "issue_ns": 0, "complete_ns": 10}}"#
        )
    };
    let pb = 1u64 << 50;
    let refused = |args: &[&str], needles: &[&str]| {
        let o = common::fsage(args);
        expect_code(&o, 2, &format!("{args:?}"));
        for n in needles {
            expect_stderr(&o, n);
        }
        stderr(&o)
    };
    // A request at 1 PiB on a 1 GiB trace, and with no device size on a 1 TB disk.
    let t = file(
        "pb.json",
        format!(
            r#"{{"version": 1, "device_size": 1073741824, "requests": [{}]}}"#,
            rq(pb)
        )
        .as_bytes(),
    );
    refused(
        &["dev", "cost", &t, "--model", "1ms"],
        &["pb.json", "request 0", "beyond the device_size"],
    );
    let t = file(
        "pb2.json",
        format!(r#"{{"version": 1, "requests": [{}]}}"#, rq(pb)).as_bytes(),
    );
    refused(
        &["dev", "cost", &t, "--model", "hdd-7200"],
        &["pb2.json", "no device_size", "1.0 PiB"],
    );
    let t = file(
        "zero.json",
        format!(
            r#"{{"version": 1, "device_size": 0, "requests": [{}]}}"#,
            rq(0)
        )
        .as_bytes(),
    );
    let e = refused(
        &["dev", "cost", &t, "--model", "ssd-sata"],
        &["zero.json", "device_size is 0"],
    );
    assert!(
        !e.contains("model ssd-sata"),
        "the trace is at fault, not the model: {e}"
    );
    // Latencies given to --model: the limit and the sign, not "neither a latency nor ...".
    let ok = file(
        "ok.json",
        format!(r#"{{"version": 1, "requests": [{}]}}"#, rq(0)).as_bytes(),
    );
    let e = refused(&["dev", "cost", &ok, "--model", "61s"], &["at most 60s"]);
    assert!(!e.contains("neither"), "{e}");
    let e = refused(
        &["dev", "cost", &ok, "--model=-5us"],
        &["cannot be negative"],
    );
    assert!(!e.contains("neither") && !e.contains("latencys"), "{e}");
    // An absurd pages_per_block is named, with its line.
    let ssd = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fsage-device/models/ssd-sata.toml"),
    )
    .unwrap();
    let huge = ssd.replace(
        "pages_per_block = { value = 256,",
        "pages_per_block = { value = 4000000000,",
    );
    assert_ne!(huge, ssd, "the built-in file changed: update this test");
    let m = file("huge.toml", huge.as_bytes());
    let e = refused(
        &["dev", "cost", &ok, "--model", &m],
        &["huge.toml:", "`pages_per_block`"],
    );
    assert!(!e.contains("over_provisioning"), "{e}");
    // A trace that is not text.
    let bin = file("bin.json", b"\xff\xfe{\"version\": 1}");
    refused(
        &["dev", "cost", &bin, "--model", "1ms"],
        &["bin.json", "not UTF-8"],
    );
}

/// Bad input to `dev create` (issue 34), refused before anything is made: --fresh-ftl with a
/// model that keeps no drive state, a size beyond Linux's largest file (8 EiB), and a sparse
/// image larger than its file system's largest file (ext4 here: its file is left behind by
/// nothing). A sparse image larger than memory works, with a note.
#[test]
fn dev_create_refuses_what_cannot_work_naming_it() {
    let r = Reg::new();
    let o = r.fsage([
        "dev",
        "create",
        "--size",
        "1GiB",
        "--model",
        "hdd-7200",
        "--fresh-ftl",
    ]);
    expect_code(&o, 2, "--fresh-ftl on a hard disk");
    expect_stderr(&o, "--fresh-ftl: model hdd-7200 keeps no drive state");
    let o = r.fsage(["dev", "create", "--size", "9EiB", "--latency", "0"]);
    expect_code(&o, 2, "9 EiB");
    expect_stderr(&o, "size 9 EiB: more than the largest file");
    assert!(!r.path("registry").join("sd0").exists(), "nothing made");
    if !can_run("dev_create_refuses_what_cannot_work_naming_it", &[]) {
        return;
    }
    let disk = TempDir::new_in(std::env::temp_dir()).unwrap();
    let img = disk.path().join("big.img");
    let fs = fsage_sys::fs_stat(disk.path()).unwrap().type_name();
    if fs == "ext4" {
        let o = r.fsage([
            "dev",
            "create",
            "--size",
            "2EiB",
            "--image",
            img.to_str().unwrap(),
            "--latency",
            "0",
        ]);
        expect_code(&o, 2, "2 EiB on ext4");
        expect_stderr(&o, "larger than the largest file ext4 can hold");
        assert!(!img.exists(), "no image left behind");
    } else {
        eprintln!("(the temporary directory is on {fs}, not ext4: its largest file not tried)");
    }
    let o = r.ok(["dev", "create", "--size", "1EiB", "--latency", "0"]);
    expect_stderr(&o, "sparse image of 1 EiB");
    r.ok(["dev", "destroy", "--all"]);
}

/// A file system on a slow device: `dev destroy` while it is mounted is refused with a hint
/// naming `--force`, and `fs umount` names the slow device and `fsage dev destroy` (not
/// `losetup -d`, which would bypass it).
#[test]
fn fs_umount_on_a_slow_device_names_it_and_dev_destroy() {
    if !can_run(
        "fs_umount_on_a_slow_device_names_it_and_dev_destroy",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let r = Reg::new();
    let o = r.ok(["dev", "create", "--size", "64MiB", "--latency", "0"]);
    let dev = stdout(&o).trim().to_string();
    let mnt = r.path("mnt");
    std::fs::create_dir(&mnt).unwrap();
    r.ok([
        "fs",
        "create",
        "--fs",
        "ext4",
        &dev,
        "--mount",
        &mnt.to_string_lossy(),
    ]);
    let o = r.fsage(["dev", "destroy", &dev]);
    expect_code(&o, 2, "destroying a mounted device");
    assert!(
        stderr(&o).contains("fsage: hint: --force"),
        "{}",
        stderr(&o)
    );
    let o = r.ok(["fs", "umount", &mnt.to_string_lossy()]);
    let out = stdout(&o);
    assert!(
        out.contains("slow device sd0") && out.contains(&format!("fsage dev destroy {dev}")),
        "{out}"
    );
    assert!(!out.contains("losetup -d"), "{out}");
    r.ok(["dev", "destroy", &dev]);
}

/// `image copy` onto a device running an SSD model: `--whole` writes every block as data, so the
/// drive maps every page; the default sparse copy writes the data and zeroes the rest with
/// BLKZEROOUT, which the model serves by unmapping: the drive maps only the image's data.
#[test]
fn a_whole_copy_maps_every_page_of_an_ssd_and_a_sparse_copy_only_the_data() {
    let test = "a_whole_copy_maps_every_page_of_an_ssd_and_a_sparse_copy_only_the_data";
    if !can_run(test, &["mkfs.ext4", "losetup"]) {
        return;
    }
    let r = Reg::new();
    let src = r.path("src.img");
    r.ok([
        "fs",
        "create",
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        src.to_str().unwrap(),
    ]);
    let pages = (64u64 << 20) / 4096;
    // Pages of the image that hold a non-zero byte: what a sparse copy writes.
    let data_pages = {
        let b = std::fs::read(&src).unwrap();
        b.chunks(4096).filter(|c| c.iter().any(|&x| x != 0)).count() as u64
    };
    assert!(data_pages > 0 && data_pages < pages / 2, "{data_pages}");
    let mut seen = Vec::new();
    for (mode, args) in [("whole", vec!["--whole"]), ("sparse", vec![])] {
        let backing = r.path(&format!("{mode}.img"));
        std::fs::File::create(&backing)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let dev = stdout(&r.ok([
            "dev",
            "create",
            "--image",
            backing.to_str().unwrap(),
            "--model",
            "ssd-sata",
        ]))
        .trim()
        .to_string();
        let mut copy = vec!["image", "copy", src.to_str().unwrap(), dev.as_str()];
        copy.extend(args);
        let said = stdout(&r.ok(&copy));
        assert!(said.contains("verified identical"), "{said}");
        let st = json(&r.ok(["dev", "stats", &dev, "--json"]));
        let m = &st["model"]["stats"];
        let (host, zeroes) = (
            m["host_pages"].as_u64().unwrap(),
            m["write_zeroes"].as_u64().unwrap(),
        );
        r.ok(["dev", "destroy", &dev]);
        let ftl = std::fs::read(fsage_device::state_file_of(&backing)).unwrap();
        let mapped = fsage_device::ssd::ftl::Ftl::from_bytes(&ftl)
            .unwrap()
            .mapped_pages();
        seen.push((mode, host, zeroes, mapped));
    }
    let (_, host, zeroes, mapped) = seen[0];
    assert_eq!((host, zeroes, mapped), (pages, 0, pages), "whole: {seen:?}");
    let (_, host, zeroes, mapped) = seen[1];
    assert!(zeroes > 0, "sparse: {seen:?}");
    assert_eq!(mapped, data_pages, "sparse: {seen:?}");
    assert!(host >= data_pages && host < pages / 2, "sparse: {seen:?}");
}

/// `fs umount IMAGE` of an image a slow device serves (it has no loop device of its own): the
/// slow device's mount is unmounted and the device left attached is named, with `dev destroy`
/// (it said nothing and left the mount).
#[test]
fn fs_umount_of_an_image_under_a_slow_device_unmounts_it_and_says_the_device_stays() {
    if !can_run(
        "fs_umount_of_an_image_under_a_slow_device_unmounts_it_and_says_the_device_stays",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let r = Reg::new();
    let img = r.path("x.img");
    let img_s = img.to_string_lossy().into_owned();
    r.ok(["fs", "create", "--fs", "ext4", "--size", "64MiB", &img_s]);
    let o = r.ok(["dev", "create", "--image", &img_s, "--latency", "0"]);
    let dev = stdout(&o).trim().to_string();
    let mnt = r.path("mnt");
    std::fs::create_dir(&mnt).unwrap();
    r.ok(["fs", "mount", &dev, &mnt.to_string_lossy()]);
    let o = r.ok(["fs", "umount", &img_s]);
    let out = stdout(&o);
    assert!(
        out.contains(&format!("unmounted {}", mnt.display())),
        "{out}"
    );
    assert!(!fsage_sys::is_mount_point(&mnt));
    assert!(
        out.contains(&format!("left {dev} attached: it is fsage's slow device"))
            && out.contains(&format!("fsage dev destroy {dev}")),
        "{out}"
    );
    // Nothing mounted any more: said, naming the slow device, exit 2.
    let o = r.fsage(["fs", "umount", &img_s]);
    expect_code(&o, 2, "umount of an image whose slow device is not mounted");
    expect_stderr(&o, &format!("is served by slow device {dev}"));
    r.ok(["dev", "destroy", &dev]);
}
