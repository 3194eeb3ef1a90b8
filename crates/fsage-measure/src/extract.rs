//! Profile extraction: walk a tree (in parallel) and write down its fullness, file sizes,
//! depths with directory counts, and relative ages, as an fsage [`Profile`].

use crate::walk::{self, WalkStats};
use fsage_profile::{AgeBin, DepthBin, Fullness, Profile, SizeBin};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

/// Which timestamp gives a file's age.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgeFrom {
    /// Birth time where statx has it, else mtime.
    Btime,
    Mtime,
    Ctime,
}

#[derive(Debug, Clone)]
pub struct ExtractOptions {
    pub name: String,
    /// Capacity in bytes: fullness = the tree's allocated bytes / capacity. None: the fullness
    /// of the file system holding the tree.
    pub capacity: Option<u64>,
    pub age_from: AgeFrom,
    /// Size bin edges are powers of this base (2 by default).
    pub size_base: u64,
    /// Age bin edges are powers of this base, in seconds (2 by default).
    pub age_base: f64,
    pub threads: usize,
    /// "Now", the reference for ages (default: the time of the walk).
    pub now: Option<SystemTime>,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            name: "extracted".into(),
            capacity: None,
            age_from: AgeFrom::Btime,
            size_base: 2,
            age_base: 2.0,
            threads: walk::default_threads(),
            now: None,
        }
    }
}

/// What the extraction saw besides the profile.
#[derive(Debug, Clone, Default)]
pub struct ExtractStats {
    pub walk: WalkStats,
    /// Files whose age came from mtime because birth time was missing (with --age-from btime).
    pub btime_missing: u64,
    /// Files with a timestamp in the future (age 0).
    pub future: u64,
    /// Allocated bytes of the tree (files' st_blocks and one block per directory).
    pub allocated: u64,
    pub seconds: f64,
}

struct Rec {
    size: u64,
    depth: u32,
    /// Age in seconds.
    age: f64,
    alloc: u64,
    no_btime: bool,
}

fn bin_index(x: u64, base: u64) -> usize {
    // Smallest k with base^k >= x (x >= 1).
    let mut k = 0;
    let mut edge: u64 = 1;
    while edge < x {
        edge = edge.saturating_mul(base);
        k += 1;
    }
    k
}

/// Walks `root` and builds its profile.
pub fn extract(root: &Path, opts: &ExtractOptions) -> Result<(Profile, ExtractStats), String> {
    if opts.size_base < 2 {
        return Err(format!(
            "--size-base {}: must be at least 2",
            opts.size_base
        ));
    }
    if !(opts.age_base > 1.0 && opts.age_base.is_finite()) {
        return Err(format!("--age-base {}: must be above 1", opts.age_base));
    }
    let t0 = std::time::Instant::now();
    let now = opts.now.unwrap_or_else(SystemTime::now);
    let now_s = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|_| "the clock is before 1970".to_string())?
        .as_secs_f64();
    let info = crate::sys::statfs(root).map_err(|e| format!("{}: statfs: {e}", root.display()))?;
    let age_from = opts.age_from;
    let (recs, walk) = walk::walk(root, opts.threads, |ctx| {
        let m = ctx.meta;
        let mtime = m.mtime() as f64 + m.mtime_nsec() as f64 * 1e-9;
        let (t, no_btime) = match age_from {
            AgeFrom::Mtime => (mtime, false),
            AgeFrom::Ctime => (m.ctime() as f64 + m.ctime_nsec() as f64 * 1e-9, false),
            AgeFrom::Btime => match m.created() {
                Ok(b) => (
                    b.duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_secs_f64()),
                    false,
                ),
                Err(_) => (mtime, true),
            },
        };
        Ok(Rec {
            size: m.len(),
            depth: ctx.depth,
            age: now_s - t,
            alloc: m.blocks() * 512,
            no_btime,
        })
    })?;
    let mut st = ExtractStats {
        walk,
        ..Default::default()
    };
    if recs.is_empty() {
        return Err(format!(
            "{}: no regular files to build a profile from",
            root.display()
        ));
    }
    // Sizes: bin 0 holds empty files (edge 0), bin k>0 files of (base^(k-1), base^k] bytes.
    let mut sizes: Vec<u64> = Vec::new();
    let mut depths: Vec<u64> = Vec::new();
    let mut ages: Vec<u64> = Vec::new();
    let mut max_age: f64 = 0.0;
    for r in &recs {
        let k = if r.size == 0 {
            0
        } else {
            1 + bin_index(r.size, opts.size_base)
        };
        if sizes.len() <= k {
            sizes.resize(k + 1, 0);
        }
        sizes[k] += 1;
        let d = r.depth as usize;
        if depths.len() <= d {
            depths.resize(d + 1, 0);
        }
        depths[d] += 1;
        st.allocated += r.alloc;
        st.btime_missing += u64::from(r.no_btime);
        if r.age < 0.0 {
            st.future += 1;
        }
        max_age = max_age.max(r.age);
    }
    // Ages: edges base^k seconds; ages of a second or less in the first.
    for r in &recs {
        let a = r.age.max(0.0);
        let k = if a <= 1.0 {
            0
        } else {
            (a.ln() / opts.age_base.ln()).ceil().max(0.0) as usize
        };
        // Guard against rounding: the edge must hold the age.
        let k = if opts.age_base.powi(k as i32) < a {
            k + 1
        } else {
            k
        };
        if ages.len() <= k {
            ages.resize(k + 1, 0);
        }
        ages[k] += 1;
    }
    st.allocated += st.walk.dirs * info.block_size;
    let fullness = match opts.capacity {
        Some(c) => {
            let u = st.allocated as f64 / c as f64;
            Fullness::new(u).ok_or_else(|| {
                format!(
                    "--capacity {c}: the tree allocates {} bytes, a fullness of {u:.4}, outside (0, 1]",
                    st.allocated
                )
            })?
        }
        None => {
            let used = info.blocks.saturating_sub(info.blocks_free);
            let u = used as f64 / info.blocks.max(1) as f64;
            Fullness::new(u).ok_or_else(|| {
                format!(
                    "{}: the file system reports a fullness of {u:.4}; give --capacity",
                    root.display()
                )
            })?
        }
    };
    // Keep size bins from the first to the last holding files; the first starts at 0 anyway.
    let edge = |k: usize| -> u64 {
        if k == 0 {
            0
        } else {
            opts.size_base.saturating_pow(k as u32 - 1)
        }
    };
    let first = sizes.iter().position(|&n| n > 0).unwrap_or(0);
    let size_bins: Vec<SizeBin> = (first..sizes.len())
        .map(|k| SizeBin {
            max_bytes: edge(k),
            weight: sizes[k] as f64,
        })
        .collect();
    // Depths: every depth with files or directories, with the directories at it.
    let dirs = &st.walk.dirs_at_depth;
    let n_depth = depths.len().max(dirs.len());
    let depth_bins: Vec<DepthBin> = (0..n_depth)
        .map(|d| DepthBin {
            depth: d as u32,
            weight: depths.get(d).copied().unwrap_or(0) as f64,
            subdirs: dirs.get(d).copied().unwrap_or(0),
        })
        .collect();
    let first = ages.iter().position(|&n| n > 0).unwrap_or(0);
    let age_bins: Vec<AgeBin> = (first..ages.len())
        .map(|k| AgeBin {
            age: opts.age_base.powi(k as i32),
            weight: ages[k] as f64,
        })
        .collect();
    st.seconds = t0.elapsed().as_secs_f64();
    let p = Profile {
        name: opts.name.clone(),
        description: format!(
            "Extracted from {} ({} files, {} directories); ages from {}, in seconds",
            root.display(),
            st.walk.files,
            st.walk.dirs,
            match opts.age_from {
                AgeFrom::Btime => "birth time (mtime where missing)",
                AgeFrom::Mtime => "mtime",
                AgeFrom::Ctime => "ctime",
            }
        ),
        source: "fsage profile extract".into(),
        fullness,
        sizes: size_bins,
        depths: depth_bins,
        ages: age_bins,
    };
    // Our own output must satisfy the format's rules: check by a round trip through TOML.
    let text = fsage_profile::to_toml(&p);
    fsage_profile::parse(&text, "extracted profile")
        .map_err(|e| format!("internal error: the extracted profile does not validate: {e}"))?;
    Ok((p, st))
}
