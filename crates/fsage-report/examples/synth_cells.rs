//! Writes synthetic cell results (the shape the experiment runner will write) for the report's
//! tests and the screenshots in docs/: `cargo run -p fsage-report --example synth_cells DIR`.
//! Made from known curves, not measured: the environment says so.
//!
//! - `DIR/aged`: ext4, xfs, btrfs fresh and aged (meyer), varmail and fileserver, 3 repetitions,
//!   plain images. Aging costs ext4 two fifths of its varmail throughput, so ext4 and xfs swap
//!   places; one btrfs cell failed.
//! - `DIR/sweep`: the same file systems fresh under fileserver at 10 latencies from 0 to 10 ms,
//!   3 repetitions: ext4 follows the model C / (l + l_sw) down to 1 ms and is flat below (class
//!   I), xfs beats it (II), btrfs falls below it from 2 ms (III) and so inverts with ext4
//!   between 3 and 2 ms.

use fsage_experiment::analysis::{FlowopLatency, Sample};
use fsage_experiment::result::{CellResult, CellStatus, Environment, RESULT_FORMAT};
use fsage_experiment::spec::{parse, Cell};
use std::path::Path;

const AGED: &str = r#"
name = "synthetic-aged"
duration = "60s"
warmup = "10s"
repetitions = 3
cache_ratio = 0.5
image_size = "4GiB"
[[fs]]
kind = "ext4"
[[fs]]
kind = "xfs"
[[fs]]
kind = "btrfs"
[[state]]
kind = "fresh"
[[state]]
kind = "aged"
profile = "meyer"
[[workload]]
name = "varmail"
[[workload]]
name = "fileserver"
"#;

const SWEEP: &str = r#"
name = "synthetic-sweep"
duration = "60s"
warmup = "10s"
repetitions = 3
cache_ratio = 0.5
image_size = "4GiB"
[[fs]]
kind = "ext4"
[[fs]]
kind = "xfs"
[[fs]]
kind = "btrfs"
[[state]]
kind = "fresh"
[devices]
latencies = ["0", "100us", "200us", "500us", "1ms", "2ms", "3ms", "5ms", "7ms", "10ms"]
[[workload]]
name = "fileserver"
"#;

/// ±2% of repeatable noise per repetition.
fn noise(rep: u32, salt: f64) -> f64 {
    1.0 + 0.02 * ((rep as f64 * 2.1 + salt).sin())
}

fn sweep_ops(fs: &str, l: f64) -> f64 {
    let m = |c: f64, s: f64, l: f64| c / (l + s);
    match fs {
        "ext4" => m(6e7, 300.0, l.max(1000.0)),
        "xfs" => {
            m(5e7, 400.0, l)
                * if l < 5000.0 {
                    1.0 + 0.6 * (5000.0 - l) / 5000.0
                } else {
                    1.0
                }
        }
        _ => {
            if l >= 3000.0 {
                m(7e7, 500.0, l)
            } else {
                m(7e7, 500.0, 3000.0) * (1.0 + 0.15 * (3000.0 - l) / 3000.0)
            }
        }
    }
}

fn aged_ops(fs: &str, wl: &str, aged: bool) -> f64 {
    match (fs, wl, aged) {
        ("ext4", "varmail", false) => 3400.0,
        ("ext4", "varmail", true) => 2000.0,
        ("xfs", "varmail", false) => 2800.0,
        ("xfs", "varmail", true) => 2600.0,
        ("btrfs", "varmail", false) => 2000.0,
        ("btrfs", "varmail", true) => 1900.0,
        ("ext4", _, false) => 5000.0,
        ("ext4", _, true) => 4700.0,
        ("xfs", _, false) => 4500.0,
        ("xfs", _, true) => 4300.0,
        ("btrfs", _, false) => 3500.0,
        _ => 3000.0,
    }
}

fn flowops(wl: &str, aged: bool, rep: u32) -> Vec<FlowopLatency> {
    let names: &[(&str, f64)] = if wl == "varmail" {
        &[
            ("deletefile", 150.0),
            ("createfile", 120.0),
            ("appendfilerand", 40.0),
            ("fsync", 2000.0),
            ("openfile", 15.0),
            ("readwholefile", 60.0),
            ("closefile", 5.0),
        ]
    } else {
        &[
            ("createfile", 200.0),
            ("writewholefile", 900.0),
            ("appendfilerand", 300.0),
            ("readwholefile", 700.0),
            ("deletefile", 250.0),
            ("statfile", 10.0),
        ]
    };
    names
        .iter()
        .map(|&(n, p99)| {
            let f = if aged { 2.5 } else { 1.0 } * noise(rep, p99);
            FlowopLatency {
                flowop: n.into(),
                p99_us: p99 * f,
                max_us: p99 * f * 8.0,
            }
        })
        .collect()
}

fn write(dir: &Path, cell: Cell, ops: f64, fl: Vec<FlowopLatency>, failed: bool) {
    let env = Environment {
        fsage_version: "synthetic fixture (not measured)".into(),
        kernel: "synthetic".into(),
        hostname: "synthetic".into(),
        cpus: 2,
        memory_bytes: 24 << 30,
        fs_kind: cell.fs.kind.clone(),
        mkfs_opts: cell.fs.mkfs_opts.clone(),
        image_sha256: None,
        seed: cell.seed,
        workload_text: String::new(),
        device: None,
        drive_state: None,
        placement: None,
        cpu_model: None,
        slurm_job: None,
        storage: None,
        platform: Default::default(),
        vm: None,
    };
    let sample = Sample {
        fs: cell.fs.label.clone(),
        state: cell.state.state(),
        workload: cell.workload.label.clone(),
        latency_us: cell.latency_us(),
        device_model: None,
        rep: cell.rep,
        ops_per_s: ops,
        flowops: fl,
        flash: None,
        platform: Default::default(),
    };
    let r = CellResult {
        format: RESULT_FORMAT,
        status: if failed {
            CellStatus::Failed {
                error: "mount /dev/loop7: wrong fs type (synthetic failure)".into(),
            }
        } else {
            CellStatus::Done
        },
        started_unix: 1_700_000_000,
        seconds: cell.warmup_s + cell.duration_s + 6.0,
        base_seconds: None,
        environment: Some(env),
        samples: if failed { vec![] } else { vec![sample] },
        workload_report: None,
        cell,
    };
    let path = dir.join(format!("{}.json", r.cell.id));
    std::fs::write(&path, serde_json::to_string_pretty(&r).unwrap() + "\n").unwrap();
}

fn main() {
    let out = std::env::args().nth(1).expect("usage: synth_cells DIR");
    let out = Path::new(&out);
    let aged_dir = out.join("aged");
    let sweep_dir = out.join("sweep");
    std::fs::create_dir_all(&aged_dir).unwrap();
    std::fs::create_dir_all(&sweep_dir).unwrap();
    for c in parse(AGED, "aged.toml", Path::new("."))
        .unwrap()
        .plan()
        .cells
    {
        let aged = !c.state.state().is_fresh();
        let failed = c.fs.kind == "btrfs" && aged && c.workload.label == "fileserver" && c.rep == 2;
        let ops =
            aged_ops(&c.fs.kind, &c.workload.label, aged) * noise(c.rep, c.fs.kind.len() as f64);
        let fl = flowops(&c.workload.label, aged && c.fs.kind == "ext4", c.rep);
        write(&aged_dir, c, ops, fl, failed);
    }
    for c in parse(SWEEP, "sweep.toml", Path::new("."))
        .unwrap()
        .plan()
        .cells
    {
        let l = c.latency_us().unwrap();
        let ops =
            sweep_ops(&c.fs.kind, l) * (1.0 + 0.005 * ((c.rep as f64 * 1.7 + l / 900.0).sin()));
        write(&sweep_dir, c, ops, vec![], false);
    }
}
