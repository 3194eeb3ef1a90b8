//! The planning checks of a new run (fullness, block size, memory, size bins the capacity cannot
//! make), shared by a run and by `profile show`, which reports the plan without a target.

use super::{input, AgeRequest, Result};
use fsage_exec::preflight;
use fsage_exec::RunMeta;
use fsage_plan::{PlanConfig, Planner};
use fsage_profile::{human_bytes, Profile};

/// Checks the profile and its plan at `capacity` before anything is made, so that a profile that
/// cannot fit is refused with nothing formatted; returns the profile for the run.
pub(super) fn check_plan_at(req: &AgeRequest, capacity: u64, what: &str) -> Result<Profile> {
    let profile = resolve_profile(req)?;
    let fullness = req.fullness.unwrap_or(profile.fullness.get());
    check_fullness(fullness)?;
    plan(
        &profile,
        PlanConfig {
            capacity,
            fullness,
            block_size: req.block_size.unwrap_or(4096),
            seed: req.seed.unwrap_or(1),
            exact_sizes: req.exact_sizes,
        },
    )
    .map_err(|e| {
        input(format!(
            "{e} ({what} {}); nothing was made",
            human_bytes(capacity)
        ))
    })?;
    Ok(profile)
}

/// A block size fsage can count in: a power of two of at least 512 bytes.
pub fn check_block_size(block_size: u64) -> Result<()> {
    if !block_size.is_power_of_two() || block_size < 512 {
        return Err(input(format!(
            "block size {block_size}: must be a power of two of at least 512 bytes"
        )));
    }
    Ok(())
}

/// The plan a new run of `profile` would make at `capacity` (fullness: the profile's unless
/// given), checked exactly as a run checks it (fullness, block size, memory, a size bin that
/// cannot be met, a capacity too small): what `profile show` reports without a target.
pub fn plan_at(
    profile: &Profile,
    capacity: u64,
    fullness: Option<f64>,
    block_size: u64,
    seed: u64,
) -> Result<(Planner, fsage_plan::MemoryEstimate)> {
    let fullness = fullness.unwrap_or(profile.fullness.get());
    check_fullness(fullness)?;
    check_block_size(block_size)?;
    let cfg = PlanConfig {
        capacity,
        fullness,
        block_size,
        seed,
        exact_sizes: false,
    };
    let planner = plan(profile, cfg)?;
    Ok((planner, fsage_plan::estimate_memory(profile, &cfg)))
}

/// A fullness of 1 leaves no room above the target for the stable phase to create into: every
/// size bin would be unmeetable and the run refused later, so it is refused here, with the reason.
pub fn check_fullness(fullness: f64) -> Result<()> {
    if !(fullness > 0.0 && fullness < 1.0) {
        return Err(input(format!(
            "fullness {fullness}: must lie in (0, 1); at 1 there is no room above the target for \
             the stable phase's creates (0.95 is a full file system in practice)"
        )));
    }
    Ok(())
}

/// Builds the planner after checking that it fits in memory, and refuses a capacity at which size
/// bins holding more than 10% of the profile's files cannot be made.
pub fn plan(profile: &Profile, cfg: PlanConfig) -> Result<Planner> {
    let what = || {
        format!(
            "profile {} at capacity {} and fullness {}",
            profile.name,
            human_bytes(cfg.capacity),
            cfg.fullness
        )
    };
    preflight::check_memory(profile, &cfg, None).map_err(|e| {
        input(format!(
            "{}: {e}; lower the capacity or the fullness",
            what()
        ))
    })?;
    let planner = Planner::new(profile, cfg).map_err(|e| input(format!("{}: {e}", what())))?;
    let (unmet_share, labels) = unmet_summary(profile, &planner);
    if unmet_share > 0.10 {
        return Err(input(format!(
            "{} cannot be met: size bins holding {:.1}% of its files are too large for the room \
             left ({labels}). Lower the fullness or raise the capacity",
            what(),
            100.0 * unmet_share,
        )));
    }
    Ok(planner)
}

/// The share of the profile's files in size bins the plan cannot make, and those bins' labels.
pub(super) fn unmet_summary(profile: &Profile, planner: &Planner) -> (f64, String) {
    let meta = RunMeta::new(profile, String::new(), String::new());
    let unmet = planner.unmeetable_bins();
    let share = unmet.iter().map(|u| u.target_fraction).sum();
    let labels = unmet
        .iter()
        .map(|u| meta.size_labels[u.bin].clone())
        .collect::<Vec<_>>()
        .join(", ");
    (share, labels)
}

/// The profile a new run ages with (a built-in name or a file).
pub(super) fn resolve_profile(req: &AgeRequest) -> Result<Profile> {
    let name = req
        .profile
        .as_deref()
        .ok_or_else(|| input("a profile is needed (or a saved run to resume)"))?;
    Ok(fsage_profile::resolve(name)?)
}
