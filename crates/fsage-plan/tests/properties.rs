//! Property tests: for any valid profile, capacity and seed, the planner keeps its invariants.

use fsage_plan::stats::to_fractions;
use fsage_plan::{OpKind, PlanConfig, Planner};
use fsage_profile::{AgeBin, DepthBin, Fullness, Profile, SizeBin};
use proptest::prelude::*;
use std::collections::HashMap;

mod common;

fn arb_profile() -> impl Strategy<Value = Profile> {
    let sizes = prop::collection::vec((1u64..1 << 18, 0.0f64..100.0), 1..12);
    let depths = prop::collection::vec((0.0f64..100.0, 0u64..20), 1..8);
    let ages = prop::collection::vec((0.01f64..10.0, 0.0f64..100.0), 1..8);
    (sizes, depths, ages).prop_filter_map("weights all zero", |(sizes, depths, ages)| {
        let mut edge = 0u64;
        let sizes: Vec<SizeBin> = sizes
            .into_iter()
            .map(|(step, weight)| {
                edge += step;
                SizeBin {
                    max_bytes: edge,
                    weight,
                }
            })
            .collect();
        let depths: Vec<DepthBin> = depths
            .into_iter()
            .enumerate()
            .map(|(d, (weight, subdirs))| DepthBin {
                depth: d as u32,
                weight,
                subdirs,
            })
            .collect();
        let mut age = 0.0;
        let ages: Vec<AgeBin> = ages
            .into_iter()
            .map(|(step, weight)| {
                age += step;
                AgeBin { age, weight }
            })
            .collect();
        (sizes.iter().any(|b| b.weight > 0.0)
            && depths.iter().any(|b| b.weight > 0.0)
            && ages.iter().any(|b| b.weight > 0.0))
        .then(|| Profile {
            name: "prop".into(),
            description: String::new(),
            source: String::new(),
            fullness: Fullness::new(0.8).unwrap(),
            sizes,
            depths,
            ages,
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn invariants_hold_for_any_profile(
        profile in arb_profile(),
        cap_mib in 16u64..512,
        fullness in 0.05f64..1.0,
        seed in any::<u64>(),
        exact in any::<bool>(),
    ) {
        let cfg = PlanConfig {
            exact_sizes: exact,
            ..common::cfg(cap_mib << 20, fullness, seed)
        };
        let Ok(mut p) = Planner::new(&profile, cfg) else {
            // Too small a capacity is an error, never a panic; nothing more to check.
            return Ok(());
        };
        prop_assert!(p.total() >= p.rapid_files());
        let edges: Vec<u64> = profile.sizes.iter().map(|b| b.max_bytes).collect();
        let mut live: HashMap<u64, u64> = HashMap::new();
        let mut last = None;
        for _ in 0..20_000 {
            let Some(op) = p.next_op() else { break };
            prop_assert!(last.is_none_or(|t| op.tick == t + 1));
            last = Some(op.tick);
            prop_assert!(p.allocated() <= p.ceiling());
            prop_assert!(op.file.size <= *edges.last().unwrap());
            prop_assert!((op.file.dir as usize) < p.tree().len());
            match op.kind {
                OpKind::Create => {
                    prop_assert!(live.insert(op.file.created, op.file.size).is_none());
                    if exact {
                        prop_assert!(edges.contains(&op.file.size));
                    }
                }
                OpKind::Delete => {
                    prop_assert_eq!(live.remove(&op.file.created), Some(op.file.size));
                }
            }
        }
        prop_assert_eq!(live.len() as u64, p.live());
        let counted: u64 = p.size_counts().iter().sum();
        prop_assert_eq!(counted, p.live());
        prop_assert_eq!(p.depth_counts().iter().sum::<u64>(), p.live());
        prop_assert_eq!(p.planned_age_counts().iter().sum::<u64>(), p.live());
        let _ = to_fractions(p.size_counts());
    }

    #[test]
    fn same_seed_same_plan(profile in arb_profile(), seed in any::<u64>()) {
        let cfg = common::cfg(64 << 20, 0.7, seed);
        let (Ok(mut a), Ok(mut b)) = (Planner::new(&profile, cfg), Planner::new(&profile, cfg)) else {
            return Ok(());
        };
        for _ in 0..5_000 {
            prop_assert_eq!(a.next_op(), b.next_op());
        }
    }
}
