//! The engine's speed without the CLI: one built-in personality (full Filebench parameters) for
//! a number of seconds on an empty directory, through [`fsage_workload::run`] as `fsage bench
//! run` calls it (its default warm-up, seed 1), printing ops/s and CPU time per operation.
//! A change to the engine is compared by running the binaries built before and after it in turn
//! (BENCHMARKS.md, "Workload engine before and after issue 35's split").
//!
//! `cargo run --release -p fsage-workload --example engine_speed -- WORKLOAD TARGET_DIR SECONDS`

use fsage_workload::{default_warmup, run, NoObserver, RunConfig, Stop, Workload};
use std::time::Duration;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 4 {
        eprintln!("usage: engine_speed WORKLOAD TARGET_DIR SECONDS");
        std::process::exit(2);
    }
    let w = Workload::builtin(&a[1]).unwrap_or_else(|e| {
        eprintln!("engine_speed: {e}");
        std::process::exit(2)
    });
    let secs: f64 = match a[3].parse() {
        Ok(s) if s > 0.0 => s,
        _ => {
            eprintln!("engine_speed: SECONDS: {:?} is not a positive number", a[3]);
            std::process::exit(2)
        }
    };
    let stop = Some(Stop::Duration(Duration::from_secs_f64(secs)));
    let cfg = RunConfig {
        stop,
        warmup: default_warmup(w.model(), stop),
        ..RunConfig::default()
    };
    match run(&w, &cfg, std::path::Path::new(&a[2]), &mut NoObserver) {
        Ok(r) => {
            let o = &r.reps[0];
            println!(
                "{} ops/s {:.0} MB/s {:.1} cpu_us/op {:.2}",
                a[1],
                o.overall.ops_per_sec,
                o.overall.mb_per_sec,
                o.cpu_us_per_op.unwrap_or(f64::NAN)
            );
        }
        Err(e) => {
            eprintln!("engine_speed: {e}");
            std::process::exit(1)
        }
    }
}
