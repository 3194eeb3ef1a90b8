//! The planner in memory: determinism, convergence, the fullness band, the tree.

use fsage_plan::stats::{rmse, to_fractions};
use fsage_plan::{OpKind, PlanConfig, Planner};
use fsage_profile::{AgeBin, DepthBin, Fullness, Profile, SizeBin};
use std::collections::HashMap;

mod common;

fn profile() -> Profile {
    Profile {
        name: "test".into(),
        description: String::new(),
        source: String::new(),
        fullness: Fullness::new(0.8).unwrap(),
        sizes: [
            (0, 3.0),
            (4096, 40.0),
            (16384, 30.0),
            (65536, 20.0),
            (1 << 20, 7.0),
        ]
        .iter()
        .map(|&(max_bytes, weight)| SizeBin { max_bytes, weight })
        .collect(),
        depths: [(0, 5.0, 4), (1, 30.0, 20), (2, 40.0, 10), (3, 25.0, 0)]
            .iter()
            .map(|&(depth, weight, subdirs)| DepthBin {
                depth,
                weight,
                subdirs,
            })
            .collect(),
        ages: [
            (1.0, 10.0),
            (4.0, 20.0),
            (16.0, 0.0),
            (64.0, 30.0),
            (100.0, 40.0),
        ]
        .iter()
        .map(|&(age, weight)| AgeBin { age, weight })
        .collect(),
    }
}

fn cfg(seed: u64) -> PlanConfig {
    common::cfg(1 << 30, 0.8, seed)
}

fn run(seed: u64) -> (Planner, Vec<fsage_plan::Op>) {
    let mut p = Planner::new(&profile(), cfg(seed)).unwrap();
    let mut ops = Vec::new();
    while let Some(op) = p.next_op() {
        ops.push(op);
    }
    (p, ops)
}

#[test]
fn same_seed_same_decisions_other_seed_others() {
    let (_, a) = run(1);
    let (_, b) = run(1);
    let (_, c) = run(2);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn converges_to_every_histogram() {
    let (p, ops) = run(3);
    assert_eq!(ops.len() as u64, p.total());
    let age = to_fractions(&p.age_counts_now());
    assert_eq!(p.age_counts_now(), p.planned_age_counts());
    let age_rmse = rmse(p.age_targets(), &age);
    eprintln!(
        "K {} T {} live {} targets {:?} got {:?} counts {:?} ctr {:?}",
        p.rapid_files(),
        p.total(),
        p.live(),
        p.age_targets(),
        age,
        p.age_counts_now(),
        p.counters
    );
    assert!(age_rmse < 1e-3, "age rmse {age_rmse}");
    for (want, got) in p
        .size_targets()
        .iter()
        .zip(to_fractions(p.size_counts()))
        .chain(p.depth_targets().iter().zip(to_fractions(p.depth_counts())))
    {
        assert!((want - got).abs() < 0.005, "want {want} got {got}");
    }
}

#[test]
fn ops_replay_to_the_live_set_and_ticks_are_consecutive() {
    let (p, ops) = run(4);
    let mut live: HashMap<u64, (u64, u32)> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        assert_eq!(op.tick, i as u64);
        match op.kind {
            OpKind::Create => {
                assert_eq!(op.file.created, op.tick);
                assert!(live
                    .insert(op.file.created, (op.file.size, op.file.dir))
                    .is_none());
            }
            OpKind::Delete => {
                let was = live
                    .remove(&op.file.created)
                    .expect("delete of a live file");
                assert_eq!(was, (op.file.size, op.file.dir));
            }
        }
    }
    let mut planned: Vec<_> = p.live_files().map(|f| (f.created, f.size, f.dir)).collect();
    let mut replayed: Vec<_> = live.iter().map(|(&c, &(s, d))| (c, s, d)).collect();
    planned.sort();
    replayed.sort();
    assert_eq!(planned, replayed);
}

#[test]
fn stable_phase_keeps_allocated_bytes_in_the_band() {
    let (p, ops) = run(5);
    let largest = 1 << 20;
    assert!(
        p.counters.max_deviation <= p.band() + largest,
        "deviation {} band {}",
        p.counters.max_deviation,
        p.band()
    );
    let creates = ops.iter().filter(|o| o.kind == OpKind::Create).count() as u64;
    assert_eq!(creates, p.counters.creates);
    // The stable phase's coin is fair: creates and deletes balance around K.
    let stable = p.total() - p.rapid_files();
    let stable_creates = creates - p.rapid_files();
    assert!(stable_creates.abs_diff(stable / 2) < stable / 50);
}

#[test]
fn sizes_stay_inside_their_bins_and_exact_sizes_hit_the_edge() {
    let (_, ops) = run(6);
    let edges = [0u64, 4096, 16384, 65536, 1 << 20];
    for op in &ops {
        let s = op.file.size;
        assert!(s <= 1 << 20);
        let bin = edges.partition_point(|&e| e < s);
        assert!(bin < edges.len());
    }
    let mut c = cfg(6);
    c.exact_sizes = true;
    let mut p = Planner::new(&profile(), c).unwrap();
    for _ in 0..10_000 {
        let op = p.next_op().unwrap();
        assert!(edges.contains(&op.file.size), "{}", op.file.size);
    }
}

#[test]
fn the_tree_has_the_profiles_directories_per_depth() {
    let p = Planner::new(&profile(), cfg(7)).unwrap();
    let t = p.tree();
    assert_eq!(t.count_at(1), 4);
    assert_eq!(t.count_at(2), 20);
    assert_eq!(t.count_at(3), 10);
    assert_eq!(t.len(), 35);
    for (id, path) in t.created() {
        let depth = t.depth(id);
        assert_eq!(path.split('/').count() as u32, depth);
        assert_eq!(t.depth(t.parent(id)), depth - 1);
    }
    // Files sit at the depth of their bin.
    let (p, ops) = run(7);
    for op in ops.iter().take(1000) {
        let _ = p.tree().depth(op.file.dir);
    }
}

#[test]
fn too_small_a_capacity_is_an_error_not_a_panic() {
    let mut c = cfg(1);
    c.capacity = 64 << 10;
    assert!(Planner::new(&profile(), c).is_err());
    c.fullness = 1.5;
    assert!(Planner::new(&profile(), c).is_err());
}

#[test]
fn enospc_lowers_the_ceiling_and_the_run_goes_on() {
    let mut p = Planner::new(&profile(), cfg(8)).unwrap();
    let k = p.rapid_files();
    let mut rejected = false;
    while let Some(op) = p.next_op() {
        // The "file system" is full at 60% of the capacity.
        if op.kind == OpKind::Create && !rejected && p.allocated() > (1u64 << 30) * 6 / 10 {
            p.reject_create(&op);
            rejected = true;
        }
    }
    assert!(rejected);
    assert!(p.rapid_files() < k);
    assert_eq!(p.counters.enospc, 1);
    assert!(p.allocated() <= p.ceiling());
    assert!(p.target_bytes() < (1u64 << 30) * 6 / 10);
}

#[test]
fn a_tree_rebuilt_from_its_paths_is_the_same_tree() {
    let p = Planner::new(&profile(), cfg(9)).unwrap();
    let paths: Vec<String> = p.tree().created().map(|(_, s)| s.to_string()).collect();
    let rebuilt = fsage_plan::DirTree::from_paths(&paths).unwrap();
    assert_eq!(rebuilt.len(), p.tree().len());
    for id in 0..p.tree().len() as u32 {
        assert_eq!(rebuilt.path(id), p.tree().path(id));
        assert_eq!(rebuilt.parent(id), p.tree().parent(id));
        assert_eq!(rebuilt.depth(id), p.tree().depth(id));
    }
    assert!(fsage_plan::DirTree::from_paths(&["a/b".into()]).is_err());
    assert!(fsage_plan::DirTree::from_paths(&["..".into()]).is_err());
}
