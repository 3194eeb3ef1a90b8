//! `fsage bench planner`: the planner's speed and memory at a given number of live files, so
//! BENCHMARKS.md can show decisions per second, bytes per live file and how the cost of one
//! decision changes from 10^4 to 10^7 live files.

use crate::cli::BenchArgs;
#[allow(unused_imports)]
use crate::exit::{bad_input, CmdResult};
use fsage_plan::{PlanConfig, Planner};
use fsage_profile::human_bytes;
use std::process::ExitCode;
use std::time::Instant;

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|x| x.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

pub fn run(args: BenchArgs) -> CmdResult {
    let profile = fsage_profile::resolve(&args.profile)?;
    println!(
        "profile {}; {} stable ticks per size; one line per live-file count",
        profile.name, args.ticks
    );
    println!(
        "{:>10} {:>10} {:>12} {:>12} {:>14} {:>12} {:>12}",
        "live", "capacity", "rapid s", "ns/decision", "decisions/s", "heap B/file", "rss B/file"
    );
    for &target in &args.live {
        // Capacity for about `target` live files: scale from a probe plan.
        let probe_cap = 1u64 << 30;
        let mk = |capacity: u64| PlanConfig {
            capacity,
            fullness: 0.8,
            block_size: 4096,
            seed: args.seed,
            exact_sizes: false,
        };
        let probe = Planner::new(&profile, mk(probe_cap))?;
        let per_file = probe_cap as f64 / probe.steady_state().max(1) as f64;
        drop(probe);
        let capacity = (target as f64 * per_file) as u64;
        let rss0 = rss_bytes();
        let t0 = Instant::now();
        let mut p = Planner::new(&profile, mk(capacity))?;
        while p.tick() < p.rapid_files() {
            p.next_op();
        }
        let rapid_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let mut done = 0u64;
        while done < args.ticks {
            if p.next_op().is_none() {
                break;
            }
            done += 1;
        }
        let secs = t1.elapsed().as_secs_f64();
        let live = p.live().max(1);
        let rss = rss_bytes().saturating_sub(rss0);
        println!(
            "{:>10} {:>10} {:>12.2} {:>12.1} {:>14.0} {:>12.1} {:>12.1}",
            p.live(),
            human_bytes(capacity),
            rapid_s,
            secs * 1e9 / done.max(1) as f64,
            done as f64 / secs.max(1e-9),
            p.heap_bytes() as f64 / live as f64,
            rss as f64 / live as f64
        );
        drop(p);
    }
    Ok(ExitCode::SUCCESS)
}
