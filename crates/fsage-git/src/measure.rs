//! One measurement of one instance, on a file system just mounted: drop caches and the timed grep
//! of the whole mount (its block reads traced with their times, for the layout score and for
//! costing on device models), repeated; drop caches, fsage's own recursive read, then the
//! `fsage frag` figures (last: FIEMAP warms the caches).

use crate::drives::ImageMount;
use crate::series::{FragFigures, InstanceFigures, ModeledFigures};
use crate::slow::{MeasureDevice, SlowMount};
use crate::{Error, Result};
use fsage_lab::drive::{Drives, FeedReport};
use fsage_lab::mount::MountOptions;
use fsage_lab::trace::{device_trace, read_layout, BlockRq, BlockTrace, RqFilter};
use fsage_lab::FsKind;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const GIB: f64 = (1u64 << 30) as f64;

/// GNU grep's version line; anything else is refused (the published scripts use GNU grep).
pub fn grep_version() -> Result<String> {
    let out = Command::new("grep")
        .arg("--version")
        .output()
        .map_err(|e| Error::input(format!("cannot run grep (install GNU grep): {e}")))?;
    let v = String::from_utf8_lossy(&out.stdout);
    let first = v.lines().next().unwrap_or("").trim().to_string();
    if !first.contains("GNU grep") {
        return Err(Error::input(format!(
            "grep is not GNU grep ({first:?}); install Debian's grep"
        )));
    }
    Ok(first)
}

/// A string no file holds, different for every run.
pub fn random_pattern() -> String {
    let mut b = [0u8; 12];
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if ok.is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b.copy_from_slice(&(t ^ std::process::id() as u128).to_le_bytes()[..12]);
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("fsage-{hex}")
}

/// `du -s` of `path`, in bytes.
pub fn du_bytes(path: &Path) -> Result<u64> {
    let out = Command::new("du")
        .args(["-s", "-B1"])
        .arg(path)
        .output()
        .map_err(|e| Error::operation(format!("cannot run du: {e}")))?;
    if !out.status.success() {
        return Err(Error::operation(format!(
            "du -s {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::operation(format!("du -s {}: unreadable output", path.display())))
}

/// The timed `grep -r --binary-files=text PATTERN MOUNT`: its wall time in seconds and its own
/// CPU time in ns (user and system: how much of the wall time was grep's own work). Exit
/// 1 (no match) is the expected result; a match (0) is fine too; 2 is an error.
pub fn timed_grep(mount: &Path, pattern: &str) -> Result<(f64, u64)> {
    let t = Instant::now();
    let run = fsage_sys::run_with_cpu_time(
        Command::new("grep")
            .args(["-r", "--binary-files=text", pattern])
            .arg(mount),
    )
    .map_err(|e| Error::operation(format!("cannot run grep: {e}")))?;
    let secs = t.elapsed().as_secs_f64();
    match run.status.code() {
        Some(0) | Some(1) => Ok((secs, run.cpu_ns)),
        _ => Err(Error::operation(format!(
            "grep -r {} failed ({}): {}",
            mount.display(),
            run.status,
            String::from_utf8_lossy(&run.stderr).trim()
        ))),
    }
}

/// The read-ahead (KiB) the file system mounted from the block device `rdev` reads with: its
/// own backing device's where it keeps one (btrfs: `/sys/fs/btrfs/FSID/bdi`, found by the
/// device among the file system's members), else the device's.
pub fn read_ahead_kb(rdev: u64) -> Option<u64> {
    let (ma, mi) = fsage_sys::mountinfo::dev_parts(rdev);
    let dev_name = std::fs::read_link(format!("/sys/dev/block/{ma}:{mi}"))
        .ok()?
        .file_name()?
        .to_string_lossy()
        .into_owned();
    if let Ok(rd) = std::fs::read_dir("/sys/fs/btrfs") {
        for e in rd.flatten() {
            if e.path().join("devices").join(&dev_name).exists() {
                return std::fs::read_to_string(e.path().join("bdi/read_ahead_kb"))
                    .ok()?
                    .trim()
                    .parse()
                    .ok();
            }
        }
    }
    fsage_lab::loopdev::read_ahead_kb(rdev)
}

/// Reads every regular file under `root` in readdir order, depth first (symlinks not followed);
/// (bytes, files).
pub fn read_tree(root: &Path) -> Result<(u64, u64)> {
    let mut buf = vec![0u8; 1 << 18];
    let (mut bytes, mut files) = (0u64, 0u64);
    let mut stack: Vec<PathBuf> = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let rd = std::fs::read_dir(&dir).map_err(|e| crate::Error::io(&dir, "readdir", e))?;
        let mut subdirs = Vec::new();
        for e in rd {
            let e = e.map_err(|e| crate::Error::io(&dir, "readdir", e))?;
            let ft = e
                .file_type()
                .map_err(|er| crate::Error::io(&e.path(), "stat", er))?;
            if ft.is_dir() {
                subdirs.push(e.path());
            } else if ft.is_file() {
                let p = e.path();
                let mut f =
                    std::fs::File::open(&p).map_err(|er| crate::Error::io(&p, "open", er))?;
                loop {
                    let n = f
                        .read(&mut buf)
                        .map_err(|er| crate::Error::io(&p, "read", er))?;
                    if n == 0 {
                        break;
                    }
                    bytes += n as u64;
                }
                files += 1;
            }
        }
        // Depth first, in readdir order: the first subdirectory is visited next.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok((bytes, files))
}

/// The frag figures of the file system mounted at `mount`.
pub fn frag_figures(mount: &Path) -> FragFigures {
    let opts = fsage_measure::FragOptions {
        files: true,
        scan: fsage_measure::ScanOptions {
            top: 0,
            ..Default::default()
        },
        probe: None,
    };
    match fsage_measure::measure(mount, &opts) {
        Ok(r) => {
            let fs = r.free_space.as_ref();
            let f = r.files.as_ref();
            // Without FIEMAP (tmpfs) no file has a block mapped: there is no mean to give, and
            // 0 would read as "perfectly laid out".
            let mapped = f.filter(|x| x.files > x.files_without_blocks);
            let walk_error = f.and_then(|x| x.walk.errors.first().cloned());
            FragFigures {
                free_extents: fs.map(|x| x.free_extents),
                free_blocks: fs.map(|x| x.free_blocks),
                largest_free_blocks: fs.map(|x| x.max_blocks),
                files: f.map(|x| x.files),
                fragments_per_file: mapped.map(|x| x.fragments_per_file),
                layout_score: f.and_then(|x| x.layout_score),
                dynamic_layout_score: f.and_then(|x| x.dynamic_layout_score),
                error: match (r.free_space_error.clone(), walk_error) {
                    (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                    (a, b) => a.or(b),
                },
            }
        }
        Err(e) => FragFigures {
            error: Some(e.to_string()),
            ..Default::default()
        },
    }
}

/// The median of `v` (the mean of the middle two for an even count); 0 for none.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// How many times a cold grep is taken again when the caches were dropped during it.
pub const DROP_RETRIES: u32 = 3;

/// Where the kernel's DAMON sysfs interface lists its monitoring threads.
pub const DAMON_KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// Proactive reclaim running on the machine: each DAMON thread under `kdamonds` (normally
/// [`DAMON_KDAMONDS`]) that is on and has a `pageout` scheme, in words (the thread, and after how
/// long idle memory goes). Such a thread drops page cache that nothing touched for a while,
/// whatever a memory cgroup holds, so a warm-cache grep finds pages gone without memory pressure
/// (found on the lab's VM: pages idle for a minute). Empty where there is none or no DAMON.
pub fn proactive_reclaimers(kdamonds: &Path) -> Vec<String> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .ok()
    };
    let dirs = |p: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut found = Vec::new();
    for k in dirs(kdamonds) {
        if read(&k.join("state")).as_deref() != Some("on") {
            continue;
        }
        for c in dirs(&k.join("contexts")) {
            let aggr_us: Option<u64> =
                read(&c.join("monitoring_attrs/intervals/aggr_us")).and_then(|s| s.parse().ok());
            for sch in dirs(&c.join("schemes")) {
                if read(&sch.join("action")).as_deref() != Some("pageout") {
                    continue;
                }
                let min_age: Option<u64> =
                    read(&sch.join("access_pattern/age/min")).and_then(|s| s.parse().ok());
                let name = k
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into());
                found.push(match (min_age, aggr_us) {
                    (Some(a), Some(us)) => format!(
                        "DAMON kdamond {name} pages out memory idle for {:.0} s or more",
                        (a * us) as f64 / 1e6
                    ),
                    _ => format!("DAMON kdamond {name} pages out idle memory"),
                });
            }
        }
    }
    found
}

/// How many times anyone has dropped the page cache since boot (`/proc/vmstat`'s
/// `drop_pagecache`), if the kernel says.
pub fn caches_dropped() -> Option<u64> {
    std::fs::read_to_string("/proc/vmstat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("drop_pagecache ")?.trim().parse().ok())
}

/// The timed grep: the pattern no file holds, and how many times to run it.
#[derive(Debug, Clone, Copy)]
pub struct Grep<'a> {
    pub pattern: &'a str,
    /// At least 1.
    pub reps: u32,
    /// Warm cache (Conway's Figure 5): no caches dropped before the greps or the tree's read,
    /// so they find whatever the replay and the greps before left in memory.
    pub warm: bool,
    /// Cold without dropping the machine's caches: the instance was just mounted on a loop
    /// device of its own, so nothing of it is in memory. A warm-cache run measures its clean
    /// reference so, because a drop of the page cache is global and would empty the aged
    /// instance's warm cache as well. Only one grep is then cold: `reps` is taken as 1, and
    /// the tree's read after it finds what the grep left.
    pub cold_by_mount: bool,
}

/// An instance's figures, every timed grep's block trace (its reads with issue and completion
/// times; none for a grep that could not be traced), in order, and the instance's drives as they
/// were when it was mounted for the measurement (with a few words on each), to cost them on.
#[derive(Debug)]
pub struct Measured {
    pub figures: InstanceFigures,
    pub traces: Vec<Option<fsage_device::Trace>>,
    pub drives: Vec<(fsage_device::AgedDrive, String)>,
}

/// Measures the instance mounted at `mount` (just mounted or remounted): `rdev` is the device to
/// trace, `du` the size the seconds per GiB are computed over. The grep runs `grep.reps` times
/// (at least once), caches dropped before each, and each is traced the same way (so that the
/// samples are alike, and every one can be costed: a grep issues the same reads in another order
/// now and then); the figures keep the median and every sample, the layout score and grep's CPU
/// time come from the first. `renew`, when given, is called before every grep after the first
/// and gives the device to trace from then on (a slow device running a model with state is
/// replaced by a fresh one, [`SlowMount::renew`]).
pub fn measure_instance(
    mount: &Path,
    mut rdev: Option<u64>,
    du: u64,
    grep: Grep,
    mut renew: Option<&mut dyn FnMut() -> Result<Option<u64>>>,
) -> Result<Measured> {
    let mut samples = Vec::new();
    let mut reps: Vec<(Option<Vec<BlockRq>>, Option<String>)> = Vec::new();
    let mut first_cpu_ns = 0;
    let read_ahead = rdev.and_then(read_ahead_kb);
    let drop = !grep.warm && !grep.cold_by_mount;
    let count = if grep.cold_by_mount {
        1
    } else {
        grep.reps.max(1)
    };
    for i in 0..count {
        if i > 0 {
            if let Some(f) = renew.as_mut() {
                rdev = f()?;
            }
        }
        // A cold grep during which another process dropped the caches (another run's
        // measurement on a shared machine) reads again what it had read before the drop: its
        // trace is taken again, up to DROP_RETRIES times.
        let mut attempt = 0;
        let (secs, traced) = loop {
            if drop {
                fsage_lab::drop_caches()?;
            }
            let drops = caches_dropped();
            let trace = match rdev {
                Some(d) => BlockTrace::start_timed(d, RqFilter::Reads).map_err(|e| e.message),
                None => Err("no block device to trace".to_string()),
            };
            let secs = timed_grep(mount, grep.pattern);
            let traced = match trace {
                Ok(t) => match t.finish() {
                    Ok(rqs) => (Some(rqs), None),
                    Err(e) => (None, Some(e.message)),
                },
                Err(e) => (None, Some(e)),
            };
            attempt += 1;
            if !drop || drops.is_none() || caches_dropped() == drops || attempt > DROP_RETRIES {
                break (secs, traced);
            }
        };
        let (secs, cpu_ns) = secs?;
        samples.push(secs);
        if reps.is_empty() {
            first_cpu_ns = cpu_ns;
        }
        reps.push(traced);
    }
    let (first_rqs, trace_error) = reps
        .first()
        .map_or((None, None), |(r, e)| (r.as_deref(), e.clone()));
    // Blocks are the file system's (1 KiB on a small ext4, 4 KiB usually).
    let block = fsage_sys::fs_stat(mount).map_or(4096, |s| s.block_size);
    let layout = first_rqs.map(|r| read_layout(r, block));
    let grep_seconds = median(&samples);
    if drop {
        fsage_lab::drop_caches()?;
    }
    let t = Instant::now();
    let (read_bytes, read_files) = read_tree(mount)?;
    let read_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let frag = frag_figures(mount);
    let frag_seconds = t.elapsed().as_secs_f64();
    let gib = du as f64 / GIB;
    let figures = InstanceFigures {
        grep_seconds,
        grep_seconds_per_gib: if gib > 0.0 { grep_seconds / gib } else { 0.0 },
        layout_score: layout.and_then(|l| l.score),
        read_requests: layout.map(|l| l.requests),
        read_blocks: layout.map(|l| l.blocks),
        discontiguities: layout.map(|l| l.discontiguities),
        trace_error,
        read_seconds,
        read_bytes,
        read_files,
        frag,
        prepare_seconds: 0.0,
        frag_seconds,
        device_reads: None,
        device_read_mean_ns: None,
        grep_samples: samples,
        trace_file: None,
        modeled: Vec::new(),
        cost_seconds: 0.0,
        grep_cpu_seconds: Some(first_cpu_ns as f64 / 1e9),
        read_ahead_kb: read_ahead,
        device_drive: None,
        caches_dropped_before: None,
        memory: None,
    };
    Ok(Measured {
        figures,
        traces: reps
            .into_iter()
            .map(|(r, _)| {
                r.map(|r| device_trace(&r, format!("cold grep -r of {}", mount.display()), None))
            })
            .collect(),
        drives: Vec::new(),
    })
}

/// Costs `trace` on each model with the think rule `think`: a model with a drive in `drives`
/// (by name) on a copy of that drive, any other built fresh (an erased drive, for one that keeps
/// a state) for a device of `device_size` bytes; pages a drive never saw written cost as data
/// written in logical order. Seconds per GiB over `du`.
pub fn cost_on_models(
    trace: &fsage_device::Trace,
    models: &[fsage_device::ModelSpec],
    device_size: u64,
    du: u64,
    think: fsage_device::Think,
    drives: &[(fsage_device::AgedDrive, String)],
) -> Result<Vec<ModeledFigures>> {
    let gib = du as f64 / GIB;
    let opts = fsage_device::CostOptions {
        think,
        ..fsage_device::CostOptions::default()
    };
    models
        .iter()
        .map(|m| {
            let drive = drives.iter().find(|(d, _)| d.spec().name == m.name);
            let mut dev = match drive {
                Some((d, _)) => d.model()?,
                None => m.build(device_size)?,
            };
            let r = fsage_device::cost_with(trace, dev.as_mut(), opts);
            let seconds = r.total_ns as f64 / 1e9;
            let keeps = m.keeps_state();
            Ok(ModeledFigures {
                model: m.name.clone(),
                seconds,
                seconds_per_gib: if gib > 0.0 { seconds / gib } else { 0.0 },
                requests: r.requests,
                think_seconds: r.think_ns as f64 / 1e9,
                drive: match drive {
                    Some((_, said)) => Some(said.clone()),
                    None => r.drive.clone().map(|d| format!("a drive of its own: {d}")),
                },
                unwritten_reads: keeps.then_some(r.unwritten),
                stats: Some(r.stats),
                rep_seconds: Vec::new(),
                rep: None,
            })
        })
        .collect()
}

/// One figure per model of `models` (in that order) from the figures of every costed grep
/// (`per_rep`: the grep's place among the instance's greps, from 0, and its figures on each
/// model): the grep whose modeled seconds are the median, whole (its requests, think time,
/// counters and drive go with its seconds), with every grep's seconds in `rep_seconds` and its
/// place in `rep`. With an even count, the lower middle (the cheaper of the middle two: one
/// grep's figures, never a mean of two); equal seconds go by the greps' order. One grep costed:
/// its figures as they are (no `rep_seconds`, as when only the first grep was costed). A model
/// no grep was costed on is left out; one missing from some greps is the median of the others.
pub fn median_modeled(
    per_rep: &[(u32, Vec<ModeledFigures>)],
    models: &[&str],
) -> Vec<ModeledFigures> {
    models
        .iter()
        .filter_map(|&name| {
            let on: Vec<(u32, &ModeledFigures)> = per_rep
                .iter()
                .filter_map(|(rep, figs)| Some((*rep, figs.iter().find(|f| f.model == name)?)))
                .collect();
            if on.len() < 2 {
                return on.first().map(|(_, f)| (*f).clone());
            }
            let mut sorted = on.clone();
            sorted.sort_by(|a, b| a.1.seconds.total_cmp(&b.1.seconds).then(a.0.cmp(&b.0)));
            let (rep, chosen) = sorted[(sorted.len() - 1) / 2];
            Some(ModeledFigures {
                rep_seconds: on.iter().map(|(_, f)| f.seconds).collect(),
                rep: Some(rep),
                ..chosen.clone()
            })
        })
        .collect()
}

/// The ext4 directory hash seed of both instances: ext4 places a directory made in the root in
/// the block group its name hashes to under this seed (the Orlov allocator), which mkfs otherwise
/// draws at random, so each instance's tree would start in another group from run to run.
pub const EXT4_HASH_SEED: &str = "6a1f3c5e-2b4d-4e8f-9a0b-c1d2e3f40516";

/// mkfs options of the aged instance: for ext4 the fixed directory hash seed
/// ([`EXT4_HASH_SEED`]), so that two replays of one history start their directories in the same
/// groups; nothing else differs from a default mkfs.
pub fn aged_mkfs_opts(kind: FsKind) -> Vec<String> {
    with_fixed_hash_seed(kind, Vec::new())
}

/// mkfs options of the clean instance: initialised fully at mkfs time (ext4's inode tables and
/// journal), as the scripts do, and for ext4 the fixed directory hash seed ([`EXT4_HASH_SEED`]).
pub fn clean_mkfs_opts(kind: FsKind) -> Vec<String> {
    let opts = kind
        .desc()
        .mkfs_full_init
        .iter()
        .map(|s| s.to_string())
        .collect();
    with_fixed_hash_seed(kind, opts)
}

/// `opts` with ext4's `hash_seed` extended option added (to an `-E` already there, or as one).
fn with_fixed_hash_seed(kind: FsKind, mut opts: Vec<String>) -> Vec<String> {
    if kind == FsKind::EXT4 {
        match opts.iter().position(|o| o == "-E") {
            Some(i) if i + 1 < opts.len() => {
                opts[i + 1] = format!("{},hash_seed={EXT4_HASH_SEED}", opts[i + 1]);
            }
            _ => opts.extend(["-E".to_string(), format!("hash_seed={EXT4_HASH_SEED}")]),
        }
    }
    opts
}

/// Removes the clean instance's image and mount directory, even on error.
struct CleanGuard {
    image: PathBuf,
    mnt: PathBuf,
    mounted: Option<ImageMount>,
    slow: Option<SlowMount>,
}

impl Drop for CleanGuard {
    fn drop(&mut self) {
        if let Some(s) = self.slow.take() {
            if let Err(e) = s.finish() {
                eprintln!("fsage: cleanup: {e}");
            }
        }
        if let Some(m) = self.mounted.take() {
            if let Err(e) = m.finish() {
                eprintln!("fsage: cleanup: {e}");
            }
        }
        let _ = std::fs::remove_dir(&self.mnt);
        let _ = std::fs::remove_file(&self.image);
        let _ = std::fs::remove_file(fsage_lab::fs::sidecar_path(&self.image));
    }
}

/// How fsage mounts the instances it makes. With one CPU (`git-age --one-cpu`), btrfs runs its
/// worker pools with one thread (`thread_pool=1`: each file's writeback and each write's
/// completion, which put its extents in the trees, in the order they were queued) and discards
/// freed space when the transaction commits (`discard=sync`; the default `discard=async` trims
/// from a timer and keeps the space from the allocator meanwhile), so that which tree block goes
/// where is more nearly the same in every run (BENCHMARKS.md, "Read-only greps, btrfs's own
/// sync, and a clean copy that commits"). Neither is one of btrfs's allocation options.
pub fn instance_mount_options(kind: FsKind, one_cpu: bool) -> MountOptions {
    MountOptions {
        fstype: None,
        options: if one_cpu && kind == FsKind::BTRFS {
            "thread_pool=1,discard=sync".into()
        } else {
            String::new()
        },
    }
}

/// How the clean instance is written: its mount's options ([`instance_mount_options`]) and,
/// for a run on one CPU, that CPU (the copy is made as the replay is, the greps are not).
pub struct CleanCopy<'a> {
    pub mount: MountOptions,
    pub one_cpu: Option<&'a fsage_sys::cpu::OneCpu>,
}

/// How the instances are mounted for their greps: read-only, so that a grep issues only its own
/// reads (no access times written back, no free-space caching by the file system's workers beside
/// it, which btrfs starts on its first allocation after a mount) and measuring leaves nothing in
/// the aged instance's history.
pub fn measure_mount_options() -> MountOptions {
    MountOptions {
        fstype: None,
        options: "ro".into(),
    }
}

/// The mount directory of an image: `IMAGE.mnt`.
pub fn mount_dir(image: &Path) -> PathBuf {
    fsage_sys::with_suffix(image, ".mnt")
}

/// Removes what a killed run left of a clean instance at `image` (ours by name): only a file
/// that is root's, has one name and is no link, and a mount point that is no link, so that
/// nothing planted there has another file system unmounted or another file removed.
pub fn remove_stale_clean(image: &Path) -> Result<()> {
    fsage_sys::safe::check_own_file(image, "the clean instance's image")?;
    fsage_sys::safe::lstat_own_name(&mount_dir(image), "the clean instance's mount point")?;
    if !fsage_sys::loops_backed_by(image).is_empty() {
        fsage_lab::mount::umount(image)?;
    }
    let _ = std::fs::remove_dir(mount_dir(image));
    if image.exists() {
        std::fs::remove_file(image).map_err(|e| crate::Error::io(image, "remove", e))?;
    }
    let _ = std::fs::remove_file(fsage_lab::fs::sidecar_path(image));
    Ok(())
}

/// The clean instance: a fresh file system of `kind` and `size` in `image`, the aged tree copied
/// onto it in sorted order, each file written whole and synced ([`crate::copy::copy_tree`], so
/// that its layout is the same in every run), unmounted, mounted again read-only
/// ([`measure_mount_options`]; through a slow device when `device` is given;
/// a new one before each grep for a model with state), measured, and removed. Each model of
/// `drive_specs` (those that keep a drive state) gets an erased drive fed the instance's writes
/// from the copy on (mkfs not fed); the measurement's copies of them are taken once it is
/// mounted for the greps.
#[allow(clippy::too_many_arguments)]
pub fn clean_instance(
    kind: FsKind,
    size: u64,
    image: &Path,
    aged_tree: &Path,
    du: u64,
    grep: Grep,
    device: Option<&MeasureDevice>,
    drive_specs: &[fsage_device::ModelSpec],
    copy: CleanCopy,
) -> Result<Measured> {
    let t = Instant::now();
    remove_stale_clean(image)?;
    let mnt = mount_dir(image);
    fsage_lab::create_image(kind, size, image, &clean_mkfs_opts(kind))?;
    let mut g = CleanGuard {
        image: image.to_path_buf(),
        mnt: mnt.clone(),
        mounted: None,
        slow: None,
    };
    let drives = if drive_specs.is_empty() {
        None
    } else {
        Some(Drives::erased(drive_specs, size)?)
    };
    let mut fed = 0u64;
    let mut count = |r: Option<FeedReport>| fed += r.map_or(0, |r| r.fed.bytes);
    fsage_sys::safe::make_mount_dir(&mnt)?;
    {
        // Written (to its unmount's commit) on the replay's CPU, if it has one.
        let _one = copy.one_cpu.map(|c| c.confine()).transpose()?;
        g.mounted = Some(ImageMount::mount(
            image,
            &mnt,
            drives.as_ref(),
            &copy.mount,
        )?);
        crate::copy::copy_tree(aged_tree, &mnt, crate::copy::CopySync::File)?;
        if let Some(m) = g.mounted.take() {
            count(m.finish()?);
        }
    }
    let rdev = match device {
        Some(d) => {
            let s = SlowMount::mount(image, &mnt, d, drives.as_ref())?;
            s.sync_drives()?;
            let r = s.rdev();
            g.slow = Some(s);
            Some(r)
        }
        None => {
            let m = ImageMount::mount(image, &mnt, drives.as_ref(), &measure_mount_options())?;
            m.sync_drives()?;
            let r = m.rdev();
            g.mounted = Some(m);
            r
        }
    };
    let copies = match &drives {
        Some(d) => crate::drives::snapshot(d)?,
        None => Vec::new(),
    };
    let prepare_seconds = t.elapsed().as_secs_f64();
    let mut m = match g.slow.as_mut() {
        Some(s) => measure_instance(&mnt, rdev, du, grep, Some(&mut || s.renew()))?,
        None => measure_instance(&mnt, rdev, du, grep, None)?,
    };
    m.figures.prepare_seconds = prepare_seconds;
    if let Some(s) = g.slow.take() {
        m.figures.device_drive = s.drive_note().map(str::to_string);
        let (reads, _) = s.finish()?;
        m.figures.set_device_reads(reads);
    }
    drop(g);
    m.drives = copies
        .into_iter()
        .map(|d| {
            let said = crate::drives::describe("clean", &d, fed);
            (d, said)
        })
        .collect();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DAMON tree as the lab's VM has it: one thread on, one `pageout` scheme for regions idle
    /// 12 aggregation intervals of 5 s; a thread that is off, or a scheme of another action, is
    /// not reclaim.
    #[test]
    fn proactive_reclaim_is_a_damon_thread_on_with_a_pageout_scheme() {
        let tmp = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let p = tmp.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{text}\n")).unwrap();
        };
        assert!(proactive_reclaimers(tmp.path()).is_empty());
        assert!(proactive_reclaimers(&tmp.path().join("absent")).is_empty());
        put("0/state", "on");
        put("0/contexts/0/monitoring_attrs/intervals/aggr_us", "5000000");
        put("0/contexts/0/schemes/0/action", "stat");
        put("0/contexts/0/schemes/0/access_pattern/age/min", "12");
        assert!(
            proactive_reclaimers(tmp.path()).is_empty(),
            "stat is no reclaim"
        );
        put("0/contexts/0/schemes/0/action", "pageout");
        assert_eq!(
            proactive_reclaimers(tmp.path()),
            vec!["DAMON kdamond 0 pages out memory idle for 60 s or more".to_string()]
        );
        put("0/state", "off");
        assert!(
            proactive_reclaimers(tmp.path()).is_empty(),
            "a thread that is off"
        );
    }

    #[test]
    fn both_ext4_instances_get_the_fixed_hash_seed_and_only_the_clean_one_full_init() {
        let seed = format!("hash_seed={EXT4_HASH_SEED}");
        let aged = aged_mkfs_opts(FsKind::EXT4);
        assert_eq!(aged, vec!["-E".to_string(), seed.clone()]);
        let clean = clean_mkfs_opts(FsKind::EXT4).join(" ");
        assert!(
            clean.contains("lazy_itable_init=0") && clean.contains(&seed),
            "{clean}"
        );
        assert_eq!(clean.matches("-E").count(), 1, "{clean}");
        assert!(aged_mkfs_opts(FsKind::XFS).is_empty());
        assert!(!clean_mkfs_opts(FsKind::BTRFS)
            .join(" ")
            .contains("hash_seed"));
    }

    fn figs(model: &str, seconds: f64, requests: u64) -> ModeledFigures {
        ModeledFigures {
            model: model.into(),
            seconds,
            seconds_per_gib: seconds * 10.0,
            requests,
            ..Default::default()
        }
    }

    /// The median grep's figures are kept whole (its requests go with its seconds), with every
    /// grep's seconds in their order; an even count takes the cheaper of the middle two.
    #[test]
    fn the_median_greps_figures_are_kept_per_model() {
        let per_rep = vec![
            (0, vec![figs("hdd", 3.0, 30), figs("ssd", 0.2, 30)]),
            (1, vec![figs("hdd", 1.0, 31), figs("ssd", 0.3, 31)]),
            (2, vec![figs("hdd", 2.0, 32), figs("ssd", 0.1, 32)]),
        ];
        let m = median_modeled(&per_rep, &["hdd", "ssd"]);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].model.as_str(), m[0].seconds), ("hdd", 2.0));
        assert_eq!(
            (m[0].requests, m[0].seconds_per_gib, m[0].rep),
            (32, 20.0, Some(2))
        );
        assert_eq!(m[0].rep_seconds, [3.0, 1.0, 2.0]);
        // Another grep is the median on another model.
        assert_eq!((m[1].seconds, m[1].requests, m[1].rep), (0.2, 30, Some(0)));
        // Even: the lower middle, one grep's figures (not 2.5, a mean of two).
        let m = median_modeled(&per_rep[..2], &["hdd"]);
        assert_eq!((m[0].seconds, m[0].requests, m[0].rep), (1.0, 31, Some(1)));
        let four = [per_rep.clone(), vec![(3, vec![figs("hdd", 4.0, 33)])]].concat();
        let m = median_modeled(&four, &["hdd"]);
        assert_eq!((m[0].seconds, m[0].rep), (2.0, Some(2)));
        assert_eq!(m[0].rep_seconds, [3.0, 1.0, 2.0, 4.0]);
        // Equal seconds go by the greps' order.
        let tie = vec![
            (0, vec![figs("hdd", 1.0, 40)]),
            (1, vec![figs("hdd", 1.0, 41)]),
        ];
        assert_eq!(median_modeled(&tie, &["hdd"])[0].requests, 40);
    }

    /// One grep costed: its figures as the first grep's always were; a model missing from a
    /// grep is the median of the others, one no grep has is left out.
    #[test]
    fn one_grep_is_kept_as_it_was_and_a_missing_model_does_not_panic() {
        let one = vec![(0, vec![figs("hdd", 3.0, 30)])];
        assert_eq!(median_modeled(&one, &["hdd"]), vec![figs("hdd", 3.0, 30)]);
        let gaps = vec![
            (0, vec![figs("hdd", 3.0, 30)]),
            (1, vec![figs("ssd", 0.5, 31)]),
            (2, vec![figs("hdd", 1.0, 32), figs("ssd", 0.4, 32)]),
        ];
        let m = median_modeled(&gaps, &["hdd", "ssd", "nvme"]);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!((m[0].seconds, m[0].rep), (1.0, Some(2)));
        assert_eq!(m[0].rep_seconds, [3.0, 1.0]);
        assert_eq!((m[1].model.as_str(), m[1].rep), ("ssd", Some(2)));
        assert!(median_modeled(&[], &["hdd"]).is_empty());
    }

    #[test]
    fn a_drop_of_the_caches_is_counted() {
        if !fsage_sys::is_root() {
            return eprintln!("SKIP: a_drop_of_the_caches_is_counted: not root");
        }
        let before = caches_dropped().expect("/proc/vmstat has drop_pagecache");
        fsage_lab::drop_caches().unwrap();
        assert!(caches_dropped().unwrap() > before);
    }

    /// A warm-cache run's clean instance is cold by its fresh mount: measuring it drops no cache
    /// (a drop is machine-wide and would empty the aged instance's warm cache), and it greps
    /// once. Three measurements that dropped as a cold one does would drop six times; another
    /// process dropping three times within them is not to be expected (one drop each would be three).
    #[test]
    fn a_clean_instance_cold_by_its_mount_drops_no_cache_and_greps_once() {
        if !fsage_sys::is_root() {
            return eprintln!("SKIP: a_clean_instance_cold_by_its_mount_drops_no_cache: not root");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"some text").unwrap();
        let grep = Grep {
            pattern: "no-such-pattern-xyzzy",
            reps: 3,
            warm: false,
            cold_by_mount: true,
        };
        let before = caches_dropped().expect("/proc/vmstat has drop_pagecache");
        for _ in 0..3 {
            let m = measure_instance(dir.path(), None, 1 << 20, grep, None).unwrap();
            assert_eq!(m.figures.grep_samples.len(), 1);
            assert_eq!(m.traces.len(), 1);
        }
        let dropped = caches_dropped().unwrap() - before;
        assert!(dropped < 3, "{dropped} drops of the page cache");
    }

    #[test]
    fn no_fragments_per_file_without_fiemap() {
        // tmpfs maps no blocks (no FIEMAP): the figure is missing, not 0.
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("SKIP: no_fragments_per_file_without_fiemap: no /dev/shm");
            return;
        };
        if fsage_sys::fs_stat(dir.path())
            .map(|s| s.type_name())
            .ok()
            .as_deref()
            != Some("tmpfs")
        {
            eprintln!("SKIP: no_fragments_per_file_without_fiemap: /dev/shm is not tmpfs");
            return;
        }
        std::fs::write(dir.path().join("a"), vec![7u8; 64 << 10]).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/b"), vec![7u8; 8 << 10]).unwrap();
        let f = frag_figures(dir.path());
        assert_eq!(f.fragments_per_file, None, "{f:?}");
    }
}
