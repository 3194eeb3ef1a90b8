//! The VM runner end to end: a QEMU guest booted from the cached Debian kernel runs a command
//! and gives back its output and exit code; f2fs (which the host kernel may lack) is made, aged
//! and measured from the host's command line, the results coming back as files that say which
//! platform measured them.
//!
//! Skips (with a `SKIP:` line) without root, QEMU, a static busybox or a cached kernel
//! (`fsage vm kernel fetch`, which scripts/setup runs); `FSAGE_REQUIRE_VM_TESTS=1` turns the
//! skips into failures. Under TCG the two tests take about a minute together.

mod common;
use common::*;
use std::path::Path;

/// `Some(release)` of the newest cached kernel when a guest can boot here, else `None` after
/// saying why (or failing, under FSAGE_REQUIRE_VM_TESTS).
fn vm_or_skip(test: &str) -> Option<String> {
    let why = if !is_root() {
        Some("not root (9p passthrough and mounts in the guest)".to_string())
    } else if fsage_sys::find_cmd("qemu-system-x86_64").is_none() {
        Some("qemu-system-x86_64 not installed (scripts/setup)".into())
    } else if fsage_sys::find_cmd("busybox").is_none() {
        Some("busybox not installed (busybox-static; scripts/setup)".into())
    } else {
        None
    };
    let release = if why.is_none() {
        let o = fsage(["vm", "kernel", "list"]);
        stdout(&o)
            .lines()
            .last()
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
    } else {
        None
    };
    let why = why.or_else(|| {
        release
            .is_none()
            .then(|| "no kernel in fsage's cache (fsage vm kernel fetch; scripts/setup)".into())
    });
    match why {
        None => release,
        Some(why) => {
            if std::env::var_os("FSAGE_REQUIRE_VM_TESTS").is_some_and(|v| v != "0") {
                panic!("{test}: cannot run ({why}) but FSAGE_REQUIRE_VM_TESTS is set");
            }
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIP: {test}: {why}");
            None
        }
    }
}

#[test]
fn a_guest_runs_a_command_and_gives_back_its_output_and_exit_code() {
    let Some(release) = vm_or_skip("a_guest_runs_a_command") else {
        return;
    };
    let o = fsage([
        "vm",
        "run",
        "--fs",
        "ext4",
        "--timeout",
        "5m",
        "--",
        "sh",
        "-c",
        "echo out:$FSAGE_PLATFORM:$(uname -r); echo err >&2; \
         touch /probe 2>/dev/null && echo root-writable; \
         echo controllers: $(cat /sys/fs/cgroup/cgroup.controllers); exit 3",
    ]);
    expect_code(&o, 3, "the guest command's exit code comes back");
    let out = stdout(&o);
    // The guest's own kernel, and the platform it tells fsage (KVM only where the CPU has vmx/svm).
    let platform = if std::fs::read_to_string("/proc/cpuinfo")
        .unwrap()
        .split_whitespace()
        .any(|f| f == "vmx" || f == "svm")
    {
        "kvm"
    } else {
        "tcg"
    };
    assert!(
        out.contains(&format!("out:{platform}:{release}")),
        "stdout: {out}\nstderr: {}",
        stderr(&o)
    );
    assert!(
        !out.contains("root-writable"),
        "the host's / must be read-only in the guest"
    );
    // cgroup v2 with the memory controller: what a page-cache limit (cache_ratio) needs.
    let controllers = out
        .lines()
        .find_map(|l| l.strip_prefix("controllers:"))
        .unwrap_or_default();
    assert!(
        controllers.split_whitespace().any(|c| c == "memory"),
        "no memory controller in the guest: {out}"
    );
    expect_stderr(&o, "err\n");
    expect_stderr(&o, &format!("fsage: guest {release} on {platform}"));
    assert!(!Path::new("/probe").exists());
}

#[test]
fn f2fs_is_made_aged_and_measured_in_a_guest_from_the_host_command_line() {
    let Some(release) = vm_or_skip("f2fs_in_a_guest") else {
        return;
    };
    if fsage_sys::find_cmd("mkfs.f2fs").is_none() {
        return skip("f2fs_in_a_guest", "mkfs.f2fs not installed (f2fs-tools)");
    }
    let dir = shm_tmp("fsage-vm-test-");
    let img = dir.path().join("f2.img");
    // --vm: in a guest even on a host whose kernel has f2fs, so the test means the same anywhere.
    let o = fsage([
        "age",
        "--fs",
        "f2fs",
        "--size",
        "256MiB",
        "--vm",
        "-p",
        "agrawal",
        "--max-ops",
        "400",
        "-q",
        s(&img),
    ]);
    expect_code(&o, 0, "age --fs f2fs --vm");
    expect_stderr(&o, "fsage: running in a VM (");
    let report = read_json(&dir.path().join("f2.img.report.json"));
    assert_eq!(j_u64(&report, "ticks"), 400);
    assert_eq!(
        j_u64(&report, "live_files"),
        400,
        "the rapid phase creates only"
    );
    let platform = j_str(&report, "platform");
    assert!(platform == "tcg" || platform == "kvm", "{platform}");
    // mkfs ran in the guest: the sidecar names the guest's kernel.
    let side = read_json(&dir.path().join("f2.img.fsage.json"));
    assert_eq!(j_str(&side, "kernel"), release);
    assert_eq!(j_str(&side, "fs"), "f2fs");
    assert!(
        !dir.path().join("f2.img.mnt").exists(),
        "the mount point goes"
    );
    // The general form: the image as a virtio disk at its own path, a share for the result.
    let frag = dir.path().join("f2.frag.json");
    let script = format!(
        "set -e; mkdir -p /tmp/m; {b} fs mount {i} /tmp/m; test -b {i}; \
         {b} frag /tmp/m --json {f}; {b} fs umount /tmp/m",
        b = bin(),
        i = s(&img),
        f = s(&frag)
    );
    let o = fsage([
        "vm",
        "run",
        "--fs",
        "f2fs",
        "--disk",
        s(&img),
        "--share",
        s(dir.path()),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    expect_code(&o, 0, "frag in a guest");
    let f = read_json(&frag);
    assert_eq!(j_str(&f, "fs_type"), "f2fs");
    assert_eq!(j_str(&f, "platform"), platform);
    assert_eq!(f["files"]["files"].as_u64(), Some(400), "{f}");
}

/// Issue 34: Ctrl-C in `age --fs f2fs` run in a guest stops the guest's fsage cleanly (exit 130,
/// its report and state back on the host, the mount point gone), and `age --resume STATE` of
/// that run goes back into a guest (this kernel lacks f2fs; `--vm` is not needed for it to).
#[test]
fn ctrl_c_in_a_guest_keeps_the_report_and_resume_goes_back_into_the_guest() {
    let test = "ctrl_c_and_resume_in_a_guest";
    let Some(_release) = vm_or_skip(test) else {
        return;
    };
    if fsage_sys::find_cmd("mkfs.f2fs").is_none() {
        return skip(test, "mkfs.f2fs not installed (f2fs-tools)");
    }
    if fsage_lab::FsKind::F2FS.check_kernel().is_ok() {
        return skip(test, "this kernel has f2fs: --resume would run natively");
    }
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = shm_tmp("fsage-vm-test-");
    let img = dir.path().join("c.img");
    let mut age = Command::new(bin())
        .args(["age", "--fs", "f2fs", "--size", "256MiB", "-p", "agrawal"])
        .args(["--max-ops", "100000000", s(&img)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted however the test ends.
    struct Int(u32);
    impl Drop for Int {
        fn drop(&mut self) {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(self.0 as i32).unwrap(),
                rustix::process::Signal::INT,
            );
        }
    }
    let int = Int(age.id());
    let stdout = age.stdout.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let mut said = String::new();
    let mut err = BufReader::new(age.stderr.take().unwrap());
    // The guest's own lines come through as they come: wait until it ages.
    loop {
        let mut l = String::new();
        if err.read_line(&mut l).unwrap_or(0) == 0 {
            panic!("age ended before the guest mounted: {said}");
        }
        said.push_str(&l);
        if l.contains("mounted it on") {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_secs(5));
    drop(int);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    said.push_str(&rest);
    let st = age.wait().unwrap();
    let printed = out.join().unwrap();
    assert_eq!(st.code(), Some(130), "{said}\n{printed}");
    assert!(printed.contains("interrupted"), "{printed}");
    let report = read_json(&dir.path().join("c.img.report.json"));
    let ticks = j_u64(&report, "ticks");
    assert!(ticks > 0, "{report}");
    assert!(
        !dir.path().join("c.img.mnt").exists(),
        "the mount point goes"
    );
    let state = dir.path().join("c.img.fsage-state");
    assert!(state.is_file(), "{said}");
    // Resumed: back into a guest, on to a limit past where it stopped.
    let limit = (ticks + 50).to_string();
    let o = fsage(["age", "--resume", s(&state), "--max-ops", &limit, "-q"]);
    expect_code(&o, 0, "age --resume of a run made in a guest");
    expect_stderr(&o, "fsage: running in a VM (");
    let report = read_json(&dir.path().join("c.img.report.json"));
    assert_eq!(j_u64(&report, "ticks"), ticks + 50);
    assert!(!dir.path().join("c.img.mnt").exists());
}

/// Issue 25's experiment cell: f2fs (which this host's kernel lacks) on the slow device at 1 ms,
/// fresh, a few seconds of a scaled-down varmail. mkfs, the copy and the slow device are the
/// host's; one guest boot mounts the slow device (a virtio disk backed by it), runs the workload
/// and unmounts; the cell's result comes back with the guest's kernel and platform.
#[test]
fn an_experiment_cell_of_f2fs_on_a_slow_device_runs_in_a_guest() {
    let Some(release) = vm_or_skip("an_experiment_cell_in_a_guest") else {
        return;
    };
    if fsage_sys::find_cmd("mkfs.f2fs").is_none() {
        return skip("an_experiment_cell_in_a_guest", "mkfs.f2fs not installed");
    }
    if !Path::new("/dev/fuse").exists() {
        return skip(
            "an_experiment_cell_in_a_guest",
            "no /dev/fuse (slow device)",
        );
    }
    let dir = shm_tmp("fsage-vm-exp-");
    let file = dir.path().join("x.toml");
    let version = release.trim_end_matches("-amd64");
    std::fs::write(
        &file,
        format!(
            "name = \"vm-cell\"\nduration = \"4s\"\nwarmup = \"1s\"\nsample = \"1s\"\n\
             image_size = \"256MiB\"\n\
             [devices]\nlatencies = [\"1ms\"]\n\
             [[fs]]\nkind = \"f2fs\"\nkernel = \"{version}\"\n[[state]]\nkind = \"fresh\"\n\
             [[workload]]\nname = \"varmail\"\nset = {{ nfiles = 100, nthreads = 2 }}\n"
        ),
    )
    .unwrap();
    let plan = fsage(["experiment", "plan", s(&file)]);
    expect_code(&plan, 0, "experiment plan");
    expect_stdout(&plan, "f2fs (VM ");
    expect_stdout(&plan, "1 cell(s) run in a VM");
    let out = dir.path().join("out");
    let images = dir.path().join("images");
    // The working copy in a directory of the test's (a tmpfs: the test's directory is in
    // /dev/shm), to see that nothing is left there.
    let scratch = dir.path().join("scratch");
    let t0 = std::time::Instant::now();
    let o = fsage([
        "experiment",
        "run",
        s(&file),
        "--out",
        s(&out),
        "--images",
        s(&images),
        "--scratch",
        s(&scratch),
    ]);
    expect_code(&o, 0, "experiment run of one f2fs cell in a guest");
    let cells: Vec<_> = std::fs::read_dir(out.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(cells.len(), 1, "{cells:?}");
    let r = read_json(&cells[0]);
    assert_eq!(j_str(&r, "status"), "done", "{r}");
    let env = &r["environment"];
    assert_eq!(j_str(env, "kernel"), release, "the guest's kernel");
    let platform = j_str(env, "platform");
    assert!(platform == "tcg" || platform == "kvm", "{env}");
    assert_eq!(
        j_str(&env["vm"], "host_kernel"),
        fsage_sys::kernel_release()
    );
    assert_eq!(j_str(env, "fs_kind"), "f2fs");
    // The slow device ran on the host at 1 ms, and the guest's requests went through it.
    assert_eq!(
        env["device"]["latencies"]["read_ns"].as_u64(),
        Some(1_000_000),
        "{env}"
    );
    let reqs: u64 = env["device"]["stats"]["kinds"]
        .as_array()
        .map_or(0, |k| k.iter().filter_map(|k| k["requests"].as_u64()).sum());
    assert!(reqs > 100, "the guest's I/O reached the slow device: {env}");
    let sample = &r["samples"][0];
    assert!(j_f64(sample, "ops_per_s") > 0.0, "{sample}");
    assert!(j_str(sample, "fs").contains("emulated (TCG)") || platform == "kvm");
    // The time series came back from the guest.
    let series = &r["workload_report"]["reps"][0]["timeline"];
    assert!(
        series.is_object() || series.is_array(),
        "no time series: {}",
        r["workload_report"]["reps"][0]
    );
    // The base's layout was measured in a guest too (read-only; no probe there): f2fs's
    // segments, since it has no GETFSMAP.
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        said.contains("layout of f2fs-fresh-") && said.contains("measured in a VM"),
        "{said}"
    );
    // Nothing is left mounted or attached: the working copy and its directory are gone.
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(env["storage"]["setting"], s(&scratch), "{env}");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(s(&images)), "{mounts}");
    eprintln!(
        "one f2fs cell in a guest: {:.0} s",
        t0.elapsed().as_secs_f64()
    );
}

/// An aged f2fs cell on an SSD model's drive, its experiment run from the directory it writes
/// to with relative paths (`--out out`). The guest ages the image on a host loop device whose
/// writes and discards are fed to the drive's FTL here, as `fsage age --device-model` does
/// natively; the cell then runs on that aged drive. And the guest runs from `/`, so the aging's
/// JSON must be named from the root (it was not: "its directory out/aging: No such file").
#[test]
fn an_aged_cell_on_an_ssd_drive_with_relative_paths_runs_in_a_guest() {
    let test = "an_aged_cell_on_an_ssd_drive_with_relative_paths";
    let Some(release) = vm_or_skip(test) else {
        return;
    };
    if fsage_sys::find_cmd("mkfs.f2fs").is_none() || !Path::new("/dev/fuse").exists() {
        return skip(test, "mkfs.f2fs not installed or no /dev/fuse");
    }
    let dir = Scratch::new("fsage-vm-aged-");
    // Geriatrix's scaled-down SATA drive, made as large as 256 MiB is of 1 GiB.
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/experiments/geriatrix-ssd/ssd-92.toml"),
    )
    .unwrap()
    .replace("\"1113MiB\"", "\"278MiB\"");
    assert!(model.contains("\"278MiB\""));
    std::fs::write(dir.dir().join("ssd.toml"), model).unwrap();
    let version = release.trim_end_matches("-amd64");
    std::fs::write(
        dir.dir().join("x.toml"),
        format!(
            "name = \"vm-aged\"\nduration = \"2s\"\nwarmup = \"0s\"\nimage_size = \"256MiB\"\n\
             [devices]\nlatencies = [\"ssd.toml\"]\n\
             [[fs]]\nkind = \"f2fs\"\nkernel = \"{version}\"\n\
             [[state]]\nkind = \"aged\"\nprofile = \"meyer\"\nmax_ops = 1500\n\
             [[workload]]\nname = \"varmail\"\nset = {{ nfiles = 50, nthreads = 1 }}\n"
        ),
    )
    .unwrap();
    let o = dir
        .cmd(&[
            "experiment",
            "run",
            "x.toml",
            "--out",
            "out",
            "--images",
            "images",
        ])
        .current_dir(dir.dir())
        .output()
        .unwrap();
    expect_code(
        &o,
        0,
        "an aged f2fs cell on an SSD drive in a guest, relative paths",
    );
    let aging: Vec<_> = std::fs::read_dir(dir.dir().join("out/aging"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(aging.len(), 1, "{aging:?}");
    let a = read_json(&aging[0]);
    assert_eq!(j_str(&a, "stop_reason"), "max_ops", "{a}");
    assert_eq!(a["ticks"].as_u64(), Some(1500), "{a}");
    // Absent when native: aged in the guest.
    assert!(
        matches!(a["platform"].as_str(), Some("tcg" | "kvm")),
        "aged in the guest: {a}"
    );
    assert_eq!(
        j_str(&a, "backend"),
        "posix (write)",
        "the drive must see data: {a}"
    );
    // The drive aged with it: the FTL saw the guest's writes, and its state is the base's.
    let said = stderr(&o) + &stdout(&o);
    let fed = said
        .split("aged with the file system: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(
        fed > 100,
        "the drive was not fed the guest's requests: {said}"
    );
    let bases: Vec<_> = std::fs::read_dir(dir.dir().join("out/bases"))
        .unwrap()
        .map(|e| read_json(&e.unwrap().path()))
        .collect();
    assert_eq!(bases.len(), 1);
    assert!(bases[0]["drive_sha256"].is_string(), "{}", bases[0]);
    let cells: Vec<_> = std::fs::read_dir(dir.dir().join("out/cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(cells.len(), 1, "{cells:?}");
    let r = read_json(&cells[0]);
    assert_eq!(j_str(&r, "status"), "done", "{r}");
    assert_eq!(j_str(&r["environment"], "kernel"), release);
    let flash = &r["samples"][0]["flash"];
    assert!(flash["host_pages"].as_u64().unwrap_or(0) > 0, "{flash}");
    let st = j_str(&r["environment"]["device"]["stats"], "drive_state");
    assert!(st.starts_with("started from the drive state saved"), "{st}");
}

/// A guest's discards reach the host's device: a slow device (a FUSE daemon, as an SSD model's
/// is) given to the guest as a disk, `blkdiscard` run on it there, and the daemon counts the
/// discards. QEMU drops them unless the disk is opened with `discard=unmap`, and an SSD model
/// whose drive never sees a trim ages wrongly.
#[test]
fn a_guests_discards_reach_the_slow_device() {
    let test = "a_guests_discards_reach_the_slow_device";
    if vm_or_skip(test).is_none() {
        return;
    }
    if !Path::new("/dev/fuse").exists() || fsage_sys::find_cmd("blkdiscard").is_none() {
        return skip(test, "no /dev/fuse or no blkdiscard");
    }
    let d = Scratch::new("fsage-vm-discard-");
    let o = d
        .cmd(&["dev", "create", "--size", "32MiB", "--latency", "0"])
        .output()
        .unwrap();
    expect_code(&o, 0, "dev create");
    let dev = stdout(&o).trim().to_string();
    let o = fsage([
        "vm",
        "run",
        "--fs",
        "none",
        "--timeout",
        "5m",
        "--disk",
        &dev,
        "--",
        "blkdiscard",
        &dev,
    ]);
    expect_code(&o, 0, "blkdiscard in the guest");
    let o = d.cmd(&["dev", "stats", &dev, "--json"]).output().unwrap();
    expect_code(&o, 0, "dev stats");
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let discards = st["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "discard")
        .and_then(|k| k["requests"].as_u64())
        .unwrap_or(0);
    assert!(discards > 0, "no discard reached the device: {st}");
}

/// Issue 33: a share's path was put into the guest's setup script as shell text, so a directory
/// named `x"; touch ...; echo "` ran `touch` in the guest (which wrote through the other share
/// onto the host). The path is data now: the command sees the directory, and nothing ran.
#[test]
fn a_share_path_with_shell_text_in_it_runs_nothing() {
    let test = "a_share_path_with_shell_text_in_it_runs_nothing";
    if vm_or_skip(test).is_none() {
        return;
    }
    let dir = shm_tmp("fsage-vm-inject-");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let pwned = out.join("pwned");
    let evil = dir
        .path()
        .join(format!("x\"; touch /root{}; echo \"", s(&pwned)));
    std::fs::create_dir_all(&evil).unwrap();
    let o = fsage([
        "vm",
        "run",
        "--fs",
        "none",
        "--timeout",
        "5m",
        "--share",
        s(&out),
        "--share",
        s(&evil),
        "--",
        "sh",
        "-c",
        "test -d \"$1\" && echo seen",
        "sh",
        s(&evil),
    ]);
    expect_code(&o, 0, "vm run with a share whose path holds shell text");
    expect_stdout(&o, "seen");
    assert!(
        !pwned.exists(),
        "the share's path ran as a command in the guest"
    );
}

/// Issue 33: shares used 9p's passthrough model with QEMU as root, so a guest's `chmod 4755`
/// made a setuid-root program on the host that an unprivileged user then ran as root. Now the
/// guest's modes stay in extended attributes: it believes it made a setuid file, and on the
/// host the file is root's, mode 0600, and the user cannot run it.
#[test]
fn a_guest_cannot_leave_a_setuid_root_program_on_the_host() {
    let test = "a_guest_cannot_leave_a_setuid_root_program_on_the_host";
    if vm_or_skip(test).is_none() {
        return;
    }
    let user = match TestUser::create() {
        Ok(u) => u,
        Err(why) => return skip(test, why),
    };
    let dir = shm_tmp("fsage-vm-setuid-");
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let x = dir.path().join("x");
    let o = fsage([
        "vm",
        "run",
        "--fs",
        "none",
        "--timeout",
        "5m",
        "--share",
        s(dir.path()),
        "--",
        "sh",
        "-c",
        "cp /bin/sh \"$1\" && chmod 4755 \"$1\" && ls -l \"$1\"",
        "sh",
        s(&x),
    ]);
    expect_code(&o, 0, "the guest copies a shell and makes it setuid");
    assert!(stdout(&o).starts_with("-rws"), "{}", stdout(&o));
    let ran = user.sh(&format!("'{}' -p -c 'id -u' 2>&1; echo rc=$?", s(&x)));
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(
        !said.lines().any(|l| l.trim() == "0"),
        "an unprivileged user ran the guest's file as root: {said}"
    );
    let md = std::fs::symlink_metadata(&x).unwrap();
    assert_eq!(md.mode() & 0o6000, 0, "mode {:o} on the host", md.mode());
}

/// Issue 34: `vm run --fs zfs` was accepted (the guest loaded nothing) and `--mem 100T` failed
/// in QEMU with exit 1; both are refused before a guest starts, exit 2, naming the flag.
#[test]
fn vm_run_refuses_an_unknown_file_system_and_more_memory_than_the_host_has() {
    let o = fsage(["vm", "run", "--fs", "ext4,zfs", "--", "true"]);
    expect_code(&o, 2, "vm run --fs zfs");
    expect_stderr(&o, "--fs: \"zfs\": not a file system a guest loads");
    let o = fsage(["vm", "run", "--mem", "100T", "--", "true"]);
    expect_code(&o, 2, "vm run --mem 100T");
    expect_stderr(
        &o,
        "--mem: 104857600 MiB of guest memory: more than this machine has",
    );
}
