//! `fsage age`: resolve the profile and the capacity, plan, print T, run, report.

use crate::cli::{AgeArgs, WriteModeArg};
use crate::progress::Bar;
use crate::util::{
    check_writable, free_inodes, fs_size, parse_duration, prepare_target, write_atomic,
};
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
        check_writable(target)?;
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
    if !block_size.is_power_of_two() || block_size < 512 {
        return Err(format!(
            "--block-size {block_size}: must be a power of two of at least 512 bytes"
        ));
    }
    if args.max_ops == Some(0) {
        return Err("--max-ops 0: must be at least 1".into());
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
    let backend_label = if args.dry_run { "dry-run" } else { "posix" };
    let mut meta = RunMeta::new(&profile, backend_label.into(), target_name);
    let unmet = planner.unmeetable_bins();
    let unmet_share: f64 = unmet.iter().map(|u| u.target_fraction).sum();
    let unmet_labels = unmet
        .iter()
        .map(|u| meta.size_labels[u.bin].clone())
        .collect::<Vec<_>>()
        .join(", ");
    if unmet_share > 0.10 {
        return Err(format!(
            "profile {} cannot be met at capacity {} and fullness {fullness}: size bins holding {:.1}% \
             of its files are too large for the room left ({unmet_labels}). Lower --fullness or raise \
             --capacity",
            profile.name,
            human_bytes(capacity),
            100.0 * unmet_share,
        ));
    }
    if unmet_share > 0.005 && !args.quiet {
        eprintln!(
            "fsage: warning: at this capacity the run makes no files in size bins holding {:.2}% of the \
             profile's files ({unmet_labels}); the size histogram will miss them. A larger --capacity \
             includes them",
            100.0 * unmet_share
        );
    }
    if let (false, Some(target)) = (args.dry_run, args.target.as_deref()) {
        let needed =
            planner.tree().len() as u64 + planner.rapid_files().max(planner.steady_state());
        if let Some(free) = free_inodes(target) {
            if free < needed + needed / 20 {
                return Err(format!(
                    "{}: the file system has {free} free inodes, but this run needs about {needed} \
                     ({} directories and the files); make the file system with more inodes (for \
                     ext4, mkfs.ext4 -i 4096) or give a smaller --capacity",
                    target.display(),
                    planner.tree().len() - 1
                ));
            }
        }
    }
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
        for &(d, _, made) in &planner.tree().adjusted {
            eprintln!(
                "fsage: note: the profile has no directories at depth {d} but has files deeper; made {made}"
            );
        }
        for u in &unmet {
            eprintln!(
                "fsage: note: size bin {} (target {:.4}% of files) cannot be met at this capacity: {}",
                meta.size_labels[u.bin], 100.0 * u.target_fraction, u.reason
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
    meta.backend = backend_name;
    let rep = report(&planner, &outcome, &meta, &stop);
    if let Some(path) = &args.json {
        write_atomic(path, rep.to_json().as_bytes()).map_err(|e| format!("--json {e}"))?;
    }
    if !args.quiet {
        print!("{}", rep.render_text());
    }
    Ok(match rep.stop_reason {
        StopReason::IoError => {
            let err = rep.error.as_deref().unwrap_or("unknown");
            let user_side = [
                "os error 30)",
                "os error 13)",
                "os error 1)",
                "os error 17)",
            ]
            .iter()
            .any(|e| err.ends_with(e));
            if user_side {
                eprintln!("fsage: the run stopped: {err}. The target cannot be aged as it is.");
            } else {
                eprintln!(
                    "fsage: the run stopped on an I/O error: {err}. If the file system failed \
                     under the aging workload, that is a stress-test finding worth reporting."
                );
            }
            ExitCode::from(1)
        }
        StopReason::Interrupted => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    })
}
