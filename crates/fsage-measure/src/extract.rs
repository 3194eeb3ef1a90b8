//! Profile extraction: walk a tree (in parallel) and write down its fullness, file sizes,
//! depths with directory counts, and relative ages, as an fsage [`Profile`].

use crate::walk::{self, WalkStats};
use fsage_profile::{AgeBin, DepthBin, Fullness, Profile, SizeBin};
use fsage_sys::Remedy;
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
    /// Budget for the convergence theorem: the youngest age bins are merged until T is at most
    /// this many times K (T/K depends on the age histogram alone).
    pub max_t_factor: f64,
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
            max_t_factor: DEFAULT_MAX_T_FACTOR,
        }
    }
}

/// T at most 1000 K: a 4 GiB image of a typical tree then converges in minutes.
pub const DEFAULT_MAX_T_FACTOR: f64 = 1000.0;

/// 1980-01-01T00:00:00Z: timestamps before it are placeholders (0, package builds with
/// SOURCE_DATE_EPOCH unset, file systems that never stored them), not ages.
pub const EARLIEST_PLAUSIBLE: f64 = 315_532_800.0;

/// Which timestamp a file's age came from, and whether it counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stamp {
    /// Seconds since the epoch, from the source asked for.
    Ok(f64),
    /// Birth time was before 1980 (or missing): mtime used instead.
    FellBack(f64),
    /// Before 1980 even after any fallback: left out of the age histogram.
    TooOld,
    /// After "now": left out of the age histogram.
    Future,
}

/// Decides a file's timestamp: `primary` is the source asked for (birth time may be `None`),
/// `mtime` the fallback when birth time is missing or before 1980.
pub fn pick_stamp(primary: Option<f64>, mtime: f64, is_btime: bool, now: f64) -> Stamp {
    let judge = |t: f64| {
        if t < EARLIEST_PLAUSIBLE {
            Stamp::TooOld
        } else if t > now + 1.0 {
            Stamp::Future
        } else {
            Stamp::Ok(t)
        }
    };
    match (primary, is_btime) {
        (Some(t), true) if t < EARLIEST_PLAUSIBLE => match judge(mtime) {
            Stamp::Ok(m) => Stamp::FellBack(m),
            other => other,
        },
        (None, true) => match judge(mtime) {
            Stamp::Ok(m) => Stamp::FellBack(m),
            other => other,
        },
        (Some(t), _) => judge(t),
        (None, false) => judge(mtime),
    }
}

/// The age bins' T over K: max(2 g_b / s_b over the younger bins, 1 / s_B), the theorem's factor.
pub fn t_factor(weights: &[f64], edges: &[f64]) -> f64 {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 || edges.is_empty() {
        return 1.0;
    }
    let oldest = *edges.last().unwrap_or(&1.0);
    let rel: Vec<f64> = edges.iter().map(|e| e / oldest).collect();
    let s = fsage_plan::theorem::widths(&rel);
    let b = s.len();
    let mut t = 1.0 / s[b - 1];
    for i in 0..b - 1 {
        t = t.max(2.0 * (weights[i] / total) / s[i]);
    }
    t
}

/// Age bins merged to keep T within the budget.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgeMerge {
    /// How many of the youngest bins were folded into the next.
    pub bins: usize,
    /// Upper edge (seconds) of the bin they were folded into.
    pub into_age: f64,
    /// Their share of the files.
    pub share: f64,
    pub factor_before: f64,
    pub factor_after: f64,
    /// The budget T/K had to meet.
    pub budget: f64,
}

/// Folds the youngest bin into the next until T/K is at most `max_factor` (or one bin is left).
/// `bins` are (upper edge in seconds, weight), youngest first.
pub fn merge_young_bins(bins: &mut Vec<(f64, f64)>, max_factor: f64) -> Option<AgeMerge> {
    let factor = |b: &[(f64, f64)]| {
        let (e, w): (Vec<f64>, Vec<f64>) = b.iter().copied().unzip();
        t_factor(&w, &e)
    };
    let before = factor(bins);
    let total: f64 = bins.iter().map(|b| b.1).sum();
    let original: Vec<f64> = bins.iter().map(|b| b.1).collect();
    let mut merged = 0;
    while bins.len() > 1 && factor(bins) > max_factor {
        let young = bins.remove(0);
        bins[0].1 += young.1;
        merged += 1;
    }
    let share = original[..merged].iter().sum::<f64>() / total.max(1.0);
    (merged > 0).then(|| AgeMerge {
        bins: merged,
        into_age: bins[0].0,
        share,
        factor_before: before,
        factor_after: factor(bins),
        budget: max_factor,
    })
}

/// What the extraction saw besides the profile.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExtractStats {
    pub walk: WalkStats,
    /// Where the ages came from, in words (the description says it too).
    pub age_source: String,
    /// Files whose age came from mtime because birth time was missing or before 1980.
    pub btime_missing: u64,
    /// Files with a timestamp in the future: left out of the age histogram.
    pub future: u64,
    /// Files with a timestamp before 1980 (after any fallback): left out of the age histogram.
    pub before_1980: u64,
    /// The youngest age bins merged to keep T within the budget.
    pub merged: Option<AgeMerge>,
    /// Allocated bytes of the tree (files' st_blocks and one block per directory).
    pub allocated: u64,
    pub seconds: f64,
}

struct Rec {
    size: u64,
    depth: u32,
    stamp: Stamp,
    alloc: u64,
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

/// The name an extracted profile gets by default: the last component of `root` (resolved).
pub fn default_name(root: &Path) -> String {
    root.canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "extracted".into())
}

/// An extracted profile, its TOML text and what the walk saw.
#[derive(Debug, Clone)]
pub struct Extracted {
    pub profile: Profile,
    pub toml: String,
    pub stats: ExtractStats,
}

/// `fsage profile extract`: the profile of `root`, named `name` (default: [`default_name`]),
/// written atomically to `output` when given. An existing `output` is refused unless
/// `overwrite`, before the walk starts.
pub fn extract_profile(
    root: &Path,
    name: Option<&str>,
    opts: &ExtractOptions,
    output: Option<&Path>,
    overwrite: bool,
) -> Result<Extracted, crate::Error> {
    use crate::Error;
    if let Some(o) = output {
        if o.exists() && !overwrite {
            return Err(Error::Setting(
                fsage_sys::Error::input(format!(
                    "{}: exists; refusing to overwrite it",
                    o.display()
                ))
                .with_remedy(fsage_sys::Remedy::Force),
            ));
        }
        fsage_sys::check_writable_file(o)?;
    }
    if opts.threads == 0 {
        return Err(Error::Input("0 threads: need at least one".into()));
    }
    let opts = ExtractOptions {
        name: name.map_or_else(|| default_name(root), str::to_string),
        ..opts.clone()
    };
    let (profile, stats) = extract(root, &opts).map_err(Error::Setting)?;
    let toml = fsage_profile::to_toml(&profile);
    if let Some(o) = output {
        fsage_sys::write_atomic(o, toml.as_bytes())?;
    }
    Ok(Extracted {
        profile,
        toml,
        stats,
    })
}

/// Walks `root` and builds its profile.
pub fn extract(
    root: &Path,
    opts: &ExtractOptions,
) -> Result<(Profile, ExtractStats), fsage_sys::Error> {
    if opts.size_base < 2 {
        return Err(fsage_sys::Error::input(format!(
            "size base {}: must be at least 2",
            opts.size_base
        ))
        .with_remedy(Remedy::SizeBase));
    }
    if !(opts.age_base > 1.0 && opts.age_base.is_finite()) {
        return Err(fsage_sys::Error::input(format!(
            "age base {}: must be above 1",
            opts.age_base
        ))
        .with_remedy(Remedy::AgeBase));
    }
    let t0 = std::time::Instant::now();
    let now = opts.now.unwrap_or_else(SystemTime::now);
    let now_s = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|_| "the clock is before 1970".to_string())?
        .as_secs_f64();
    if !(opts.max_t_factor >= 2.0 && opts.max_t_factor.is_finite()) {
        return Err(format!(
            "the T budget {} is too small: T is at least 2 K",
            opts.max_t_factor
        )
        .into());
    }
    let info = crate::sys::statfs(root).map_err(|e| format!("{}: statfs: {e}", root.display()))?;
    let age_from = opts.age_from;
    let (recs, walk) = walk::walk(root, opts.threads, |ctx| {
        let m = ctx.meta;
        let mtime = m.mtime() as f64 + m.mtime_nsec() as f64 * 1e-9;
        let stamp = match age_from {
            AgeFrom::Mtime => pick_stamp(Some(mtime), mtime, false, now_s),
            AgeFrom::Ctime => pick_stamp(
                Some(m.ctime() as f64 + m.ctime_nsec() as f64 * 1e-9),
                mtime,
                false,
                now_s,
            ),
            AgeFrom::Btime => {
                let b = m.created().ok().map(|b| {
                    b.duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_secs_f64())
                });
                pick_stamp(b, mtime, true, now_s)
            }
        };
        Ok(Rec {
            size: m.len(),
            depth: ctx.depth,
            stamp,
            alloc: m.blocks() * 512,
        })
    })
    // An unreadable root is the caller's to fix here: it is the tree they asked to describe.
    .map_err(|e| fsage_sys::Error::input(e.to_string()))?;
    let mut st = ExtractStats {
        walk,
        ..Default::default()
    };
    if recs.is_empty() {
        return Err(format!(
            "{}: no regular files to build a profile from",
            root.display()
        )
        .into());
    }
    // Sizes: bin 0 holds empty files (edge 0), bin k>0 files of (base^(k-1), base^k] bytes.
    let mut sizes: Vec<u64> = Vec::new();
    let mut depths: Vec<u64> = Vec::new();
    let mut ages: Vec<u64> = Vec::new();
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
        match r.stamp {
            Stamp::FellBack(_) => st.btime_missing += 1,
            Stamp::Future => st.future += 1,
            Stamp::TooOld => st.before_1980 += 1,
            Stamp::Ok(_) => {}
        }
    }
    // Ages: edges base^k seconds; ages of a second or less in the first. Implausible timestamps
    // (before 1980, in the future) stay out.
    for r in &recs {
        let a = match r.stamp {
            Stamp::Ok(t) | Stamp::FellBack(t) => (now_s - t).max(0.0),
            Stamp::TooOld | Stamp::Future => continue,
        };
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
                fsage_sys::Error::input(format!(
                    "a capacity of {c} bytes: the tree allocates {} bytes, a fullness of {u:.4}, \
                     outside (0, 1]",
                    st.allocated
                ))
                .with_remedy(Remedy::Capacity)
            })?
        }
        None => {
            let used = info.blocks.saturating_sub(info.blocks_free);
            let u = used as f64 / info.blocks.max(1) as f64;
            Fullness::new(u).ok_or_else(|| {
                fsage_sys::Error::input(format!(
                    "{}: the file system reports a fullness of {u:.4}; give the capacity to \
                     measure the tree against",
                    root.display()
                ))
                .with_remedy(Remedy::Capacity)
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
    if ages.iter().all(|&n| n == 0) {
        return Err(format!(
            "{}: no file has a usable timestamp for its age ({} before 1980, {} in the future);              try another age source",
            root.display(),
            st.before_1980,
            st.future
        ).into());
    }
    let first = ages.iter().position(|&n| n > 0).unwrap_or(0);
    let mut age_pairs: Vec<(f64, f64)> = (first..ages.len())
        .map(|k| (opts.age_base.powi(k as i32), ages[k] as f64))
        .collect();
    st.merged = merge_young_bins(&mut age_pairs, opts.max_t_factor);
    let age_bins: Vec<AgeBin> = age_pairs
        .into_iter()
        .map(|(age, weight)| AgeBin { age, weight })
        .collect();
    let fs_name = crate::sys::fs_type_name(info.magic);
    st.age_source = match opts.age_from {
        AgeFrom::Btime if st.btime_missing == 0 => format!("birth time ({fs_name})"),
        AgeFrom::Btime => format!(
            "birth time ({fs_name}), mtime for {} files whose birth time was missing or before 1980",
            st.btime_missing
        ),
        AgeFrom::Mtime => "mtime".into(),
        AgeFrom::Ctime => "ctime".into(),
    };
    st.seconds = t0.elapsed().as_secs_f64();
    let p = Profile {
        name: opts.name.clone(),
        description: format!(
            "Extracted from {} ({} files, {} directories); ages from {}, in seconds{}{}",
            root.display(),
            st.walk.files,
            st.walk.dirs,
            st.age_source,
            if st.before_1980 + st.future > 0 {
                format!(
                    "; {} timestamps before 1980 and {} in the future left out",
                    st.before_1980, st.future
                )
            } else {
                String::new()
            },
            st.merged.as_ref().map_or(String::new(), |m| format!(
                "; the {} youngest age bins merged into <= {} s so that T <= {} K",
                m.bins, m.into_age, opts.max_t_factor
            ))
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

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1.7e9;

    #[test]
    fn implausible_timestamps_are_left_out_and_old_birth_times_fall_back() {
        let y2020 = 1.58e9;
        assert_eq!(pick_stamp(Some(y2020), 0.0, false, NOW), Stamp::Ok(y2020));
        assert_eq!(pick_stamp(Some(10.0), y2020, false, NOW), Stamp::TooOld);
        assert_eq!(
            pick_stamp(Some(NOW + 100.0), y2020, false, NOW),
            Stamp::Future
        );
        // A birth time of 1970 falls back to mtime; a missing one too.
        assert_eq!(
            pick_stamp(Some(0.0), y2020, true, NOW),
            Stamp::FellBack(y2020)
        );
        assert_eq!(pick_stamp(None, y2020, true, NOW), Stamp::FellBack(y2020));
        assert_eq!(pick_stamp(Some(0.0), 5.0, true, NOW), Stamp::TooOld);
        assert_eq!(pick_stamp(Some(y2020), 0.0, true, NOW), Stamp::Ok(y2020));
    }

    #[test]
    fn the_t_factor_is_the_theorems() {
        // Two bins of equal width, 30% young: max(2 * 0.3 / 0.5, 1 / 0.5) = 2.
        assert!((t_factor(&[3.0, 7.0], &[1.0, 2.0]) - 2.0).abs() < 1e-12);
        // A young bin of relative width 1/1024 holding half the files: 2 * 0.5 * 1024 = 1024.
        assert!((t_factor(&[1.0, 1.0], &[1.0, 1024.0]) - 1024.0).abs() < 1e-9);
    }

    #[test]
    fn young_bins_merge_until_t_fits_the_budget() {
        // log2 bins of 2^10 .. 2^31 s, files in the youngest and the oldest: T/K is huge.
        let mut bins: Vec<(f64, f64)> = (10..=31)
            .map(|k| (2f64.powi(k), if k == 10 || k == 31 { 50.0 } else { 0.0 }))
            .collect();
        let before = bins.len();
        let m = merge_young_bins(&mut bins, 1000.0).expect("some bins merge");
        assert!(m.factor_before > 1e6, "{}", m.factor_before);
        assert!(m.factor_after <= 1000.0, "{}", m.factor_after);
        assert_eq!(bins.len() + m.bins, before);
        assert!(
            (m.share - 0.5).abs() < 1e-12,
            "the young files moved: {}",
            m.share
        );
        let total: f64 = bins.iter().map(|b| b.1).sum();
        assert_eq!(total, 100.0, "no file lost");
        // Merging stops as soon as the budget holds: one bin fewer would not do.
        let (e, w): (Vec<f64>, Vec<f64>) = bins.iter().copied().unzip();
        assert!(t_factor(&w, &e) <= 1000.0);
        // Already within budget: nothing changes.
        let mut ok = vec![(1.0, 1.0), (2.0, 1.0)];
        assert!(merge_young_bins(&mut ok, 1000.0).is_none());
    }
}
