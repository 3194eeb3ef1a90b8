//! Profile extraction: exact histograms of a tree built here, specials and hard links skipped
//! and counted, and the round trip: a dry run of the planner with the extracted profile ends
//! with the extracted histograms.

use fsage_measure::{extract, AgeFrom, ExtractOptions};
use fsage_plan::{PlanConfig, Planner};
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A deterministic generator (xorshift64).
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

struct Built {
    /// Files per size bin (bin 0: empty; bin k: (2^(k-1), 2^k] bytes).
    sizes: Vec<u64>,
    depths: Vec<u64>,
    dirs_at: Vec<u64>,
    /// Files per age bin (edge 2^k seconds, k >= 12; bin index k - 12).
    ages: Vec<u64>,
}

/// A tree of `n` files in a few levels, sizes up to 256 KiB (sparse), mtimes 2^11..2^18 s ago.
fn build(root: &Path, n: usize, now: SystemTime) -> Built {
    let mut g = Gen(0x1234_5678_9abc_def1);
    let mut b = Built {
        sizes: vec![0; 20],
        depths: vec![0; 4],
        dirs_at: vec![0; 4],
        ages: vec![0; 7],
    };
    // Directories: 3 at depth 1, 2 under each, 2 under each of those.
    let mut dirs = vec![(root.to_path_buf(), 0usize)];
    for i in 0..3 {
        let d1 = root.join(format!("a{i}"));
        fs::create_dir(&d1).unwrap();
        b.dirs_at[0] += 1;
        dirs.push((d1.clone(), 1));
        for j in 0..2 {
            let d2 = d1.join(format!("b{j}"));
            fs::create_dir(&d2).unwrap();
            b.dirs_at[1] += 1;
            dirs.push((d2.clone(), 2));
            for k in 0..2 {
                let d3 = d2.join(format!("c{k}"));
                fs::create_dir(&d3).unwrap();
                b.dirs_at[2] += 1;
                dirs.push((d3, 3));
            }
        }
    }
    for i in 0..n {
        let (dir, depth) = &dirs[(g.next() % dirs.len() as u64) as usize];
        let size = match g.next() % 10 {
            0 => 0,
            1..=6 => 1 + g.next() % 8192,
            _ => 1 + g.next() % (256 << 10),
        };
        let bin = if size == 0 {
            0
        } else {
            1 + (64 - (size - 1).leading_zeros()) as usize
        };
        b.sizes[bin] += 1;
        b.depths[*depth] += 1;
        // Age: strictly inside (2^(11+j), 2^(12+j)] seconds, j in 0..7.
        let j = (g.next() % 7) as u32;
        let lo = 1u64 << (11 + j);
        let age = lo + 1 + g.next() % (lo - 2);
        b.ages[j as usize] += 1;
        let p = dir.join(format!("f{i}"));
        let f = fs::File::create(&p).unwrap();
        f.set_len(size).unwrap();
        f.set_modified(now - Duration::from_secs(age)).unwrap();
    }
    b
}

#[test]
fn extraction_is_exact_and_the_plan_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    fs::create_dir(&root).unwrap();
    let now = SystemTime::now();
    let built = build(&root, 6000, now);
    // Things to skip and count.
    std::os::unix::fs::symlink("f0", root.join("link")).unwrap();
    let first_file = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_file())
        .unwrap();
    fs::hard_link(&first_file, root.join("hard")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();

    let opts = ExtractOptions {
        name: "rt".into(),
        capacity: Some(1 << 30),
        age_from: AgeFrom::Mtime,
        now: Some(now),
        ..Default::default()
    };
    let (p, st) = extract(&root, &opts).expect("extract");
    assert_eq!(st.walk.files, 6000);
    assert_eq!(st.walk.symlinks, 1);
    assert_eq!(st.walk.specials, 1);
    assert_eq!(st.walk.hardlink_dups, 1);
    assert_eq!(st.walk.unreadable, 0);
    assert_eq!(st.walk.dirs, 3 + 6 + 12);

    // Sizes: bin k's edge 2^(k-1), bin 0 edge 0; only bins from the first non-empty.
    let want_sizes: Vec<(u64, f64)> = built
        .sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| (if k == 0 { 0 } else { 1u64 << (k - 1) }, n as f64))
        .skip_while(|(_, n)| *n == 0.0)
        .collect();
    let mut got_sizes: Vec<(u64, f64)> = p.sizes.iter().map(|b| (b.max_bytes, b.weight)).collect();
    // The built histogram has trailing empty bins; the extracted one stops at the last file.
    let last = want_sizes.iter().rposition(|b| b.1 > 0.0).unwrap();
    got_sizes.truncate(last + 1);
    assert_eq!(got_sizes, want_sizes[..=last].to_vec());
    let got_depths: Vec<(u32, f64, u64)> = p
        .depths
        .iter()
        .map(|b| (b.depth, b.weight, b.subdirs))
        .collect();
    let want_depths: Vec<(u32, f64, u64)> = (0..4)
        .map(|d| (d as u32, built.depths[d] as f64, built.dirs_at[d]))
        .collect();
    assert_eq!(got_depths, want_depths);
    let got_ages: Vec<(f64, f64)> = p.ages.iter().map(|b| (b.age, b.weight)).collect();
    let want_ages: Vec<(f64, f64)> = (0..7)
        .map(|j| ((1u64 << (12 + j)) as f64, built.ages[j] as f64))
        .collect();
    assert_eq!(got_ages, want_ages);
    let alloc_want = st.allocated as f64 / (1u64 << 30) as f64;
    assert!((p.fullness.get() - alloc_want).abs() < 1e-12);

    // Round trip: a dry run with the extracted profile ends with its histograms.
    let cfg = PlanConfig {
        capacity: 2 << 30,
        fullness: 0.5,
        block_size: 4096,
        seed: 3,
        exact_sizes: false,
    };
    let mut plan = Planner::new(&p, cfg).expect("planner");
    while plan.next_op().is_some() {}
    let frac = |c: &[u64]| -> Vec<f64> {
        let t: u64 = c.iter().sum();
        c.iter().map(|&x| x as f64 / t as f64).collect()
    };
    let sizes = frac(plan.size_counts());
    for (i, (g, w)) in sizes.iter().zip(p.size_fractions()).enumerate() {
        assert!(
            (g - w).abs() <= 0.005,
            "size bin {i}: plan {g} extracted {w}"
        );
    }
    let depths = frac(plan.depth_counts());
    for (i, (g, w)) in depths.iter().zip(p.depth_fractions()).enumerate() {
        assert!(
            (g - w).abs() <= 0.005,
            "depth bin {i}: plan {g} extracted {w}"
        );
    }
    let ages = frac(&plan.age_counts_now());
    let want = p.age_fractions();
    let rmse = (ages
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).powi(2))
        .sum::<f64>()
        / want.len() as f64)
        .sqrt();
    assert!(
        rmse < 1e-4,
        "age RMSE {rmse}: plan {ages:?} extracted {want:?}"
    );
}

#[test]
fn extraction_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let e = extract(&dir.path().join("missing"), &ExtractOptions::default()).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    let e = extract(dir.path(), &ExtractOptions::default()).unwrap_err();
    assert!(e.to_string().contains("no regular files"), "{e}");
    fs::write(dir.path().join("x"), vec![1u8; 100_000]).unwrap();
    let opts = ExtractOptions {
        capacity: Some(10),
        ..Default::default()
    };
    let e = extract(dir.path(), &opts).unwrap_err();
    assert!(e.to_string().contains("a capacity of 10 bytes"), "{e}");
    assert_eq!(e.remedy, Some(fsage_sys::Remedy::Capacity));
}
