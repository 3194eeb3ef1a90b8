//! Shared by the planner's integration tests.

use fsage_plan::PlanConfig;

/// A plan of `capacity` bytes filled to `fullness`, with 4 KiB blocks and sizes drawn within
/// their bins (fsage's defaults), decided by `seed`.
pub fn cfg(capacity: u64, fullness: f64, seed: u64) -> PlanConfig {
    PlanConfig {
        capacity,
        fullness,
        block_size: 4096,
        seed,
        exact_sizes: false,
    }
}
