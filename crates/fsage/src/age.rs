//! `fsage age`: resolve the profile and the capacity, plan, print T, run, report.

use crate::cli::{AgeArgs, WriteModeArg};
use crate::progress::Bar;
use crate::util::{fs_size, parse_duration, prepare_target, write_atomic};
use fsage_exec::{report, run, Backend, DryRun, OpLog, Posix, RunMeta, StopConditions, WriteMode};
use fsage_plan::{PlanConfig, Planner};
use fsage_profile::{human_bytes, parse_size};
use fsage_report::StopReason;
use std::process::ExitCode;

pub fn run_cmd(args: AgeArgs) -> Result<ExitCode, String> {
    let profile = fsage_profile::resolve(&args.profile).map_err(|e| e.to_string())?;
    let fullness = args.fullness.unwrap_or(profile.fullness.get());
    if !(fullness > 0.0 && fullness <= 1.0) {
        return Err(format!("--fullness {fullness}: must lie in (0, 1]"));
    }
    if let Some(c) = args.confidence {
        if !(c > 0.0 && c < 1.0) {
            return Err(format!("--confidence {c}: must lie in (0, 1), e.g. 0.95"));
        }
    }
    if let Some(m) = args.max_overwrites {
        if !(m > 0.0 && m.is_finite()) {
            return Err(format!("--max-overwrites {m}: must be a positive number"));
        }
    }
    let stop = StopConditions {
        max_time: args
            .max_time
            .as_deref()
            .map(|t| parse_duration("--max-time", t))
            .transpose()?,
        max_overwrites: args.max_overwrites,
        confidence: args.confidence,
        max_ops: args.max_ops,
    };

    if !args.dry_run {
        let target = args
            .target
            .as_deref()
            .ok_or("TARGET_DIR is required (or use --dry-run with --capacity)")?;
        prepare_target(target, args.force)?;
    }
    let fs = match &args.target {
        Some(t) if t.exists() => Some(fs_size(t)?),
        _ => None,
    };
    let capacity = match (&args.capacity, fs) {
        (Some(c), _) => parse_size(c).map_err(|e| format!("--capacity {c:?}: {e}"))?,
        (None, Some((size, _))) => size,
        (None, None) => {
            return Err(
                "--capacity is needed: there is no target file system to take it from".into(),
            )
        }
    };
    let block_size = match (&args.block_size, fs) {
        (Some(b), _) => parse_size(b).map_err(|e| format!("--block-size {b:?}: {e}"))?,
        (None, Some((_, bs))) => bs,
        (None, None) => 4096,
    };
    if block_size == 0 {
        return Err("--block-size must be positive".into());
    }
    if let (Some((size, _)), false) = (fs, args.dry_run) {
        if capacity > size {
            eprintln!(
                "fsage: warning: --capacity {} is larger than the file system ({}); the run will meet \
                 a full file system and adapt",
                human_bytes(capacity),
                human_bytes(size)
            );
        }
    }
    let cfg = PlanConfig {
        capacity,
        fullness,
        block_size,
        seed: args.seed,
        exact_sizes: args.exact_sizes,
    };
    let mut planner = Planner::new(&profile, cfg).map_err(|e| {
        format!(
            "profile {} at capacity {} and fullness {fullness}: {e}",
            profile.name,
            human_bytes(capacity)
        )
    })?;
    let target_name = args
        .target
        .as_ref()
        .map_or_else(|| "(no target)".to_string(), |t| t.display().to_string());
    if !args.quiet {
        eprintln!(
            "fsage: profile {}, capacity {}, fullness {fullness}, seed {}; {} directories; rapid phase: {} files; T = {} ticks (convergence theorem)",
            profile.name,
            human_bytes(capacity),
            args.seed,
            planner.tree().len() - 1,
            planner.rapid_files(),
            planner.total()
        );
        for u in planner.unmeetable_bins() {
            eprintln!(
                "fsage: note: size bin {} (target {:.4}%) cannot be met at this capacity: {}",
                u.bin,
                100.0 * u.target_fraction,
                u.reason
            );
        }
    }

    let mut oplog = match &args.op_log {
        Some(p) => Some(OpLog::create(p).map_err(|e| format!("--op-log {}: {e}", p.display()))?),
        None => None,
    };
    fsage_exec::signals::install();
    let mut bar = Bar::new(args.quiet);
    let (outcome, backend_name) = if args.dry_run {
        let mut b = DryRun;
        (
            run(&mut planner, &mut b, oplog.as_mut(), &stop, &mut bar),
            b.name(),
        )
    } else {
        let target = args.target.as_deref().expect("checked above");
        let mode = match args.write_mode {
            WriteModeArg::Fallocate => WriteMode::Fallocate,
            WriteModeArg::Write => WriteMode::Write,
        };
        let mut b = Posix::open(target, mode, args.seed)
            .map_err(|e| format!("{}: {e}", target.display()))?;
        (
            run(&mut planner, &mut b, oplog.as_mut(), &stop, &mut bar),
            b.name(),
        )
    };
    let meta = RunMeta::new(&profile, backend_name, target_name);
    let rep = report(&planner, &outcome, &meta, &stop);
    if let Some(path) = &args.json {
        write_atomic(path, rep.to_json().as_bytes()).map_err(|e| format!("--json {e}"))?;
    }
    if !args.quiet {
        print!("{}", rep.render_text());
    }
    Ok(match rep.stop_reason {
        StopReason::IoError => {
            eprintln!(
                "fsage: the run stopped on an I/O error: {}. This is a stress-test finding: the file \
                 system could not sustain the aging workload.",
                rep.error.as_deref().unwrap_or("unknown")
            );
            ExitCode::from(1)
        }
        StopReason::Interrupted => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    })
}
