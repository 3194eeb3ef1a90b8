//! `fsage experiment submit|status|cancel|run-cell` against a real Slurm: a one-node cluster of
//! Debian's munged, slurmctld and slurmd, started here as root with a generated `slurm.conf` in
//! a temporary directory (its own ports, state, spool and logs) and stopped by PID at the end,
//! also when the test fails. No other Slurm or munge daemon is touched.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Two file systems, fresh and aged, one workload, 2 repetitions: 8 cells of about 1 s.
const SPEC: &str = r#"
name = "slurm-e2e"
duration = "1s"
repetitions = 2
seed = 3
image_size = "512MiB"

[[fs]]
kind = "ext4"

[[fs]]
kind = "xfs"

[[state]]
kind = "fresh"

[[state]]
kind = "aged"
profile = "meyer"
max_ops = 3000

[[workload]]
name = "varmail"
set = { nfiles = 100, nthreads = 2 }
"#;

/// A one-node cluster: its daemons are children of this process and are stopped by their PIDs
/// (after every job of the cluster is cancelled, so no job outlives it).
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn short_hostname() -> String {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    h.trim().split('.').next().unwrap().to_string()
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("fsage-slurm-")
            .tempdir_in("/tmp")
            .unwrap();
        let p = |n: &str| dir.path().join(n);
        for d in ["state", "spool", "log", "munge"] {
            std::fs::create_dir(p(d)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p("munge"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let key: Vec<u8> = (0..1024u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ std::process::id() as u8)
            .collect();
        std::fs::write(p("munge/key"), key).unwrap();
        std::fs::set_permissions(p("munge/key"), std::fs::Permissions::from_mode(0o400)).unwrap();
        let host = short_hostname();
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let d = dir.path().display().to_string();
        let root = dir.path().to_path_buf();
        let conf = p("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=fsagetest\n\
                 SlurmctldHost={host}(127.0.0.1)\n\
                 SlurmctldPort={ctld_port}\n\
                 SlurmdPort={slurmd_port}\n\
                 SlurmUser=root\nSlurmdUser=root\n\
                 AuthType=auth/munge\nCredType=cred/munge\n\
                 AuthInfo=socket={d}/munge/sock\n\
                 StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
                 SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
                 JobAcctGatherType=jobacct_gather/none\n\
                 AccountingStorageType=accounting_storage/none\n\
                 SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
                 SchedulerType=sched/builtin\nSchedulerParameters=sched_interval=1\n\
                 MpiDefault=none\nReturnToService=2\nMailProg=/bin/true\n\
                 NodeName={host} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n\
                 PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
            ),
        )
        .unwrap();
        let mut c = Cluster {
            dir,
            conf,
            daemons: Vec::new(),
        };
        let log = |n: &str| std::fs::File::create(root.join(format!("log/{n}.out"))).unwrap();
        let munged = Command::new("munged")
            .args(["-F", "--force"])
            .arg(format!("--key-file={d}/munge/key"))
            .arg(format!("--socket={d}/munge/sock"))
            .arg(format!("--pid-file={d}/munge/pid"))
            .arg(format!("--seed-file={d}/munge/seed"))
            .arg(format!("--log-file={d}/log/munged.log"))
            .stdout(log("munged"))
            .stderr(log("munged.err"))
            .spawn()
            .unwrap();
        c.daemons.push(("munged", munged));
        c.wait_for("munged's socket", |c| c.path("munge/sock").exists());
        let ctld = Command::new("slurmctld")
            .args(["-D", "-i"])
            .env("SLURM_CONF", &c.conf)
            .stdout(log("slurmctld"))
            .stderr(log("slurmctld.err"))
            .spawn()
            .unwrap();
        c.daemons.push(("slurmctld", ctld));
        let slurmd = Command::new("slurmd")
            .args(["-D", "-N", &host])
            .env("SLURM_CONF", &c.conf)
            .stdout(log("slurmd"))
            .stderr(log("slurmd.err"))
            .spawn()
            .unwrap();
        c.daemons.push(("slurmd", slurmd));
        c.wait_for("the node to be idle", |c| {
            c.cmd("sinfo")
                .args(["--noheader", "--format=%t"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        c
    }

    fn path(&self, n: &str) -> PathBuf {
        self.dir.path().join(n)
    }

    /// A command that talks to this cluster (and only to it).
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for n in ["slurmctld.log", "slurmd.log", "munged.log"] {
            let t = std::fs::read_to_string(self.path(&format!("log/{n}"))).unwrap_or_default();
            let tail: Vec<&str> = t.lines().rev().take(15).collect();
            s += &format!("--- {n} (last lines)\n");
            for l in tail.into_iter().rev() {
                s += l;
                s.push('\n');
            }
        }
        s
    }

    fn wait_for(&mut self, what: &str, ok: impl Fn(&Cluster) -> bool) {
        let t0 = Instant::now();
        while !ok(self) {
            let ended = self
                .daemons
                .iter_mut()
                .find_map(|(n, ch)| ch.try_wait().ok().flatten().map(|st| (*n, st)));
            if let Some((n, st)) = ended {
                panic!("{n} ended ({st}) while waiting for {what}\n{}", self.logs());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no {what} after 30 s\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn job_count(&self) -> usize {
        self.cmd("squeue")
            .args(["--noheader", "--array", "--format=%i"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
            .unwrap_or(0)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Every job of this cluster is the test's: cancel them so none outlives slurmd.
        if self.job_count() > 0 {
            let _ = self.cmd("scancel").args(["--user=root"]).output();
            let t0 = Instant::now();
            while self.job_count() > 0 && t0.elapsed() < Duration::from_secs(40) {
                std::thread::sleep(Duration::from_millis(300));
            }
        }
        for (_, ch) in self.daemons.iter_mut().rev() {
            let pid = rustix::process::Pid::from_raw(ch.id() as i32).unwrap();
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let t0 = Instant::now();
            while ch.try_wait().ok().flatten().is_none() {
                if t0.elapsed() > Duration::from_secs(10) {
                    let _ = ch.kill();
                    let _ = ch.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// The experiment's scratch: output directories in /dev/shm with their own lock and slow
/// device directories; unmounts what a cancelled cell may have left under it.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn path(&self, n: &str) -> PathBuf {
        self.dir.path().join(n)
    }
    /// `fsage ARGS` against `cluster`, with this lab's lock and registry directories (which
    /// sbatch passes on to the jobs with the rest of the environment).
    fn fsage(&self, cluster: &Cluster, args: &[&str]) -> std::process::Output {
        cluster
            .cmd(bin())
            .args(args)
            .env("FSAGE_DEV_REGISTRY", self.path("registry"))
            .env("FSAGE_LOCK_DIR", self.path("locks"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let mut under: Vec<PathBuf> = fsage_sys::mounts()
            .unwrap_or_default()
            .into_iter()
            .map(|m| m.mount_point)
            .filter(|m| m.starts_with(self.dir.path()))
            .collect();
        under.reverse();
        for m in under {
            let _ = fsage_lab::mount::umount_point(&m);
        }
    }
}

fn cells(dir: &Path) -> BTreeMap<String, serde_json::Value> {
    std::fs::read_dir(dir.join("cells"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .map(|e| {
                    let v: serde_json::Value =
                        serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
                    (v["cell"]["id"].as_str().unwrap().to_string(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn status(lab: &Lab, cluster: &Cluster, out: &Path) -> serde_json::Value {
    let o = lab.fsage(cluster, &["experiment", "status", "--json", s(out)]);
    expect_code(&o, 0, "experiment status");
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Waits until no job of `out`'s last submission is queued or running.
fn wait_done(lab: &Lab, cluster: &Cluster, out: &Path, limit: Duration) -> serde_json::Value {
    let t0 = Instant::now();
    loop {
        let st = status(lab, cluster, out);
        let live = st["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["state"] != "ended");
        if !live {
            return st;
        }
        assert!(
            t0.elapsed() < limit,
            "the jobs did not end in {limit:?}: {st:#}\n{}",
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn job_logs(out: &Path) -> String {
    let mut s = String::new();
    if let Ok(rd) = std::fs::read_dir(out.join("slurm/logs")) {
        for e in rd.flatten() {
            s += &format!(
                "--- {}\n{}",
                e.path().display(),
                std::fs::read_to_string(e.path()).unwrap_or_default()
            );
        }
    }
    s
}

#[test]
fn a_submitted_experiment_matches_a_local_run_and_a_cancelled_one_resumes_with_only_the_missing_cells(
) {
    let test = "slurm";
    if let Err(e) = need_root_and(&[
        "munged",
        "slurmctld",
        "slurmd",
        "sbatch",
        "squeue",
        "scancel",
        "sinfo",
        "mkfs.ext4",
        "mkfs.xfs",
    ]) {
        skip(
            test,
            format!("{e} (Debian: apt-get install slurm-wlm slurmctld slurmd munge)"),
        );
        return;
    }
    let t_all = Instant::now();
    let cluster = Cluster::start();
    let lab = Lab {
        dir: fsage_testkit::shm_tmp("fsage-slurm-e2e-"),
    };
    let file = lab.path("e2e.toml");
    std::fs::write(&file, SPEC).unwrap();

    // 1. The whole experiment through Slurm: 4 base jobs, 4 arrays of 2 cells.
    let a = lab.path("a");
    let o = lab.fsage(
        &cluster,
        &[
            "experiment",
            "submit",
            s(&file),
            "--out",
            s(&a),
            "--max-parallel",
            "2",
            "--time",
            "10m",
        ],
    );
    expect_code(&o, 0, "experiment submit");
    assert!(
        stdout(&o).contains("8 cells: 0 done already, 8 submitted"),
        "{}",
        stdout(&o)
    );
    let st = wait_done(&lab, &cluster, &a, Duration::from_secs(120));
    assert_eq!(st["done"], 8, "{st:#}\n{}", job_logs(&a));
    let slurm_cells = cells(&a);
    for (id, r) in &slurm_cells {
        let job = r["environment"]["slurm_job"].as_str().unwrap_or_default();
        assert!(job.contains('_'), "{id} ran in no array task: {r}");
        assert_eq!(r["environment"]["hostname"], short_hostname());
        assert!(r["environment"]["cpu_model"].is_string(), "{id}");
    }
    // Each base was made once, by its base job, in the shared image directory.
    let bases = std::fs::read_dir(a.join("images"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".base.json")
        })
        .count();
    assert_eq!(bases, 4);

    // 2. A local run of the same file on the same image directory: the bases are keyed by
    // content, so it finds the four the base jobs made, and its cells are the same cells.
    let b = lab.path("b");
    let o = lab.fsage(
        &cluster,
        &[
            "experiment",
            "run",
            s(&file),
            "--out",
            s(&b),
            "--images",
            s(&a.join("images")),
            "--quiet",
        ],
    );
    expect_code(&o, 0, "local experiment run");
    assert!(
        !stderr(&o).contains("making the fresh") && !stderr(&o).contains("aging "),
        "the local run made a base again: {}",
        stderr(&o)
    );
    let local_cells = cells(&b);
    assert_eq!(
        local_cells.keys().collect::<Vec<_>>(),
        slurm_cells.keys().collect::<Vec<_>>()
    );
    for (id, l) in &local_cells {
        let r = &slurm_cells[id];
        assert_eq!(l["cell"], r["cell"], "{id}: configuration");
        assert_eq!(
            l["environment"]["image_sha256"], r["environment"]["image_sha256"],
            "{id}: base image"
        );
        assert_eq!(
            l["environment"]["workload_text"],
            r["environment"]["workload_text"]
        );
        assert!(l["environment"].get("slurm_job").is_none());
    }

    // 3. A second submission, cancelled half way, then submitted again: only what is missing
    // runs. One task at a time, so the cancel finds cells done, running and queued.
    let c = lab.path("c");
    let submit_c = |par: &str| {
        lab.fsage(
            &cluster,
            &[
                "experiment",
                "submit",
                s(&file),
                "--out",
                s(&c),
                "--images",
                s(&a.join("images")),
                "--max-parallel",
                par,
            ],
        )
    };
    let o = submit_c("1");
    expect_code(&o, 0, "second submission");
    let t0 = Instant::now();
    while cells(&c).len() < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "3 cells not done in 90 s\n{}",
            job_logs(&c)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mid = status(&lab, &cluster, &c);
    assert!(
        mid["queued"].as_u64().unwrap() + mid["running"].as_u64().unwrap() > 0,
        "{mid:#}"
    );
    // Submitting again while its jobs are queued is refused: it would run cells twice.
    let o = submit_c("1");
    expect_code(&o, 2, "a submission while jobs are queued");
    expect_stderr(&o, "still queued or running");
    let o = lab.fsage(&cluster, &["experiment", "cancel", s(&c)]);
    expect_code(&o, 0, "experiment cancel");
    assert!(stdout(&o).contains("cancelled: "), "{}", stdout(&o));
    let st = wait_done(&lab, &cluster, &c, Duration::from_secs(60));
    assert_eq!(st["queued"], 0);
    assert_eq!(st["running"], 0);
    let before = cells(&c);
    let n = before.len();
    assert!((3..8).contains(&n), "{n} cells done at the cancel");
    assert_eq!(st["done"].as_u64().unwrap() as usize, n);
    assert_eq!(st["left"].as_u64().unwrap() as usize, 8 - n);

    let o = submit_c("2");
    expect_code(&o, 0, "resubmission");
    assert!(
        stdout(&o).contains(&format!("8 cells: {n} done already, {} submitted", 8 - n)),
        "{}",
        stdout(&o)
    );
    let subs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.join("slurm/submissions.json")).unwrap()).unwrap();
    let second = &subs.as_array().unwrap()[1];
    let mut resubmitted: Vec<String> = second["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["tasks"].as_array().unwrap().iter())
        .flat_map(|t| t.as_array().unwrap().iter())
        .map(|id| id.as_str().unwrap().to_string())
        .collect();
    resubmitted.sort();
    let mut missing: Vec<String> = slurm_cells
        .keys()
        .filter(|id| !before.contains_key(*id))
        .cloned()
        .collect();
    missing.sort();
    assert_eq!(
        resubmitted, missing,
        "the resubmission holds the missing cells only"
    );
    let st = wait_done(&lab, &cluster, &c, Duration::from_secs(90));
    assert_eq!(st["done"], 8, "{st:#}\n{}", job_logs(&c));
    let after = cells(&c);
    let arrays2: Vec<&str> = second["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["job_id"].as_str().unwrap())
        .collect();
    for (id, r) in &after {
        let job = r["environment"]["slurm_job"].as_str().unwrap();
        let in_second = arrays2.iter().any(|a| job.starts_with(&format!("{a}_")));
        match before.get(id) {
            Some(old) => {
                assert_eq!(old, r, "{id} ran again");
                assert!(!in_second, "{id}");
            }
            None => assert!(in_second, "{id} ran in {job}, not in the resubmission"),
        }
    }
    // Nothing left running anywhere: cancel has nothing to do.
    let o = lab.fsage(&cluster, &["experiment", "cancel", s(&c)]);
    expect_code(&o, 0, "cancel with nothing queued");
    assert!(stdout(&o).contains("no job of"), "{}", stdout(&o));
    eprintln!("slurm test: {:.0} s", t_all.elapsed().as_secs_f64());
}
