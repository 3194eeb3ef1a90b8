//! `fsage bench planner`: the planner's speed and memory at a given number of live files, so
//! BENCHMARKS.md can show decisions per second, bytes per live file and how the cost of one
//! decision changes from 10^4 to 10^7 live files. The work is `fsage_exec::planner_bench`.

use crate::cli::BenchArgs;
use crate::exit::CmdResult;
use fsage_exec::planner_bench;
use fsage_profile::human_bytes;

pub fn run(args: BenchArgs) -> CmdResult {
    let profile = fsage_profile::resolve(&args.profile)?;
    // Every count is checked (memory included) before the first is measured.
    let capacities = planner_bench::check(&profile, &args.live, args.seed, None)?;
    println!(
        "profile {}; {} stable ticks per size; one line per live-file count",
        profile.name, args.ticks
    );
    println!(
        "{:>10} {:>10} {:>12} {:>12} {:>14} {:>12} {:>12}",
        "live", "capacity", "rapid s", "ns/decision", "decisions/s", "heap B/file", "rss B/file"
    );
    for (&target, &capacity) in args.live.iter().zip(&capacities) {
        let r = planner_bench::measure(&profile, target, capacity, args.ticks, args.seed)?;
        let live = r.live.max(1) as f64;
        println!(
            "{:>10} {:>10} {:>12.2} {:>12.1} {:>14.0} {:>12.1} {:>12.1}",
            r.live,
            human_bytes(r.capacity),
            r.rapid_s,
            r.stable_s * 1e9 / r.decisions.max(1) as f64,
            r.decisions as f64 / r.stable_s.max(1e-9),
            r.heap_bytes as f64 / live,
            r.rss_bytes as f64 / live
        );
    }
    Ok(())
}
