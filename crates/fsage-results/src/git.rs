//! The result: a time series with the published scripts' columns (pulls performed, `du -s` size,
//! aged grep time and layout score, clean grep time and layout score) plus the commit, seconds
//! per GiB, their ratio and the fragmentation figures. Plain data; fsage-git makes it (and
//! re-exports it), `fsage-report` exports it.

use serde::{Deserialize, Serialize};

/// Version of the JSON layout below.
pub const SERIES_FORMAT: &str = "fsage-git-series/1";

/// `fsage frag` figures of one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct FragFigures {
    pub free_extents: Option<u64>,
    pub free_blocks: Option<u64>,
    /// Largest free extent, in blocks.
    pub largest_free_blocks: Option<u64>,
    pub files: Option<u64>,
    pub fragments_per_file: Option<f64>,
    /// Smith and Seltzer layout score over multi-block files (FIEMAP).
    pub layout_score: Option<f64>,
    /// Dynamic layout score in recursive readdir order (FIEMAP).
    pub dynamic_layout_score: Option<f64>,
    /// Why a figure is missing.
    pub error: Option<String>,
}

/// A memory-limited run's cgroup at a measurement, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MemoryFigures {
    /// The limit in force: `--mem-limit` plus `shmem` (tmpfs pages cannot be evicted: an image
    /// in /dev/shm would otherwise take the page cache's room, where a real disk takes none).
    pub limit_bytes: u64,
    /// tmpfs pages charged to the run (its image when that is in /dev/shm).
    pub shmem_bytes: u64,
    /// Page cache charged to the run, tmpfs pages included as the kernel counts them.
    pub cache_bytes: u64,
}

/// One instance (aged or clean) at one measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct InstanceFigures {
    /// Wall time of the cold-cache `grep -r --binary-files=text RANDOM MOUNT`.
    pub grep_seconds: f64,
    /// Seconds per GiB of the `du -s` size.
    pub grep_seconds_per_gib: f64,
    /// A warm-cache run's aged instance: how many times another process dropped the machine's
    /// page cache since the previous measurement (or the replay's start). Above 0, this warm
    /// grep found an emptied cache. Absent in cold runs and older series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_dropped_before: Option<u64>,
    /// A run under `--mem-limit`, its aged instance: the run's memory cgroup just before the
    /// grep (what the warm grep could find cached). Absent without a limit and in older series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryFigures>,
    /// 1 − discontiguities ÷ blocks over the first grep's block reads in issue order (None: no
    /// trace). This, `read_requests`, `read_blocks` and `discontiguities` describe the first
    /// grep's trace (`trace_file`) also when every grep was costed: the modeled median is chosen
    /// per model and may be another grep's on each.
    pub layout_score: Option<f64>,
    pub read_requests: Option<u64>,
    /// File-system blocks the grep read from the device.
    pub read_blocks: Option<u64>,
    pub discontiguities: Option<u64>,
    /// Why there is no layout score.
    pub trace_error: Option<String>,
    /// fsage's own cold-cache recursive read in readdir order.
    pub read_seconds: f64,
    pub read_bytes: u64,
    pub read_files: u64,
    pub frag: FragFigures,
    /// Time to get the instance ready: remount (aged), or mkfs, the copy and remount (clean).
    /// (0 in series written before it was recorded.)
    #[serde(default)]
    pub prepare_seconds: f64,
    /// Time of the frag figures (FIEMAP of every file, free space).
    #[serde(default)]
    pub frag_seconds: f64,
    /// On a slow device: the reads it served from mount to unmount (grep, own read, frag) and
    /// their mean latency as the device's daemon timed them.
    #[serde(default)]
    pub device_reads: Option<u64>,
    #[serde(default)]
    pub device_read_mean_ns: Option<f64>,
    /// Every timed grep's wall time (caches dropped before each); `grep_seconds` is their median.
    /// (Empty in series written before repetitions: one sample, `grep_seconds`.)
    #[serde(default)]
    pub grep_samples: Vec<f64>,
    /// The first grep's block trace (`fsage dev cost` reads it), when one was kept; the other
    /// greps' lie beside it, `NNNNN-aged-r1.json`, `-r2`... (series since every grep was costed).
    #[serde(default)]
    pub trace_file: Option<String>,
    /// Each of the run's models, in their order: every timed grep's trace costed on it and the
    /// median grep's figures kept (`ModeledFigures::rep_seconds`); in series written before
    /// that (no `rep_seconds`), or with one grep, the first grep's trace costed.
    #[serde(default)]
    pub modeled: Vec<ModeledFigures>,
    /// Time spent costing the traces on the models.
    #[serde(default)]
    pub cost_seconds: f64,
    /// The first grep's own CPU time, user and system (absent in older series).
    #[serde(default)]
    pub grep_cpu_seconds: Option<f64>,
    /// The read-ahead the file system read with, in KiB (absent in older series).
    #[serde(default)]
    pub read_ahead_kb: Option<u64>,
    /// On a slow device whose model keeps a drive state (an SSD): what its drive started from
    /// (the instance's traced drive, or a fresh one), as the device said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_drive: Option<String>,
}

/// What one grep's trace costs on one device model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ModeledFigures {
    /// The model's name (as `--cost-models` gave it).
    pub model: String,
    /// From the first request's issue to the last completion on the model.
    pub seconds: f64,
    /// Seconds per GiB of the `du -s` size.
    pub seconds_per_gib: f64,
    pub requests: u64,
    /// The think time the series' rule (`cost_think`) put into `seconds`.
    #[serde(default)]
    pub think_seconds: f64,
    /// For a model that keeps a drive state (an SSD): the drive the trace was costed on (the
    /// instance's own, aged by its writes; absent in older series, whose drives were erased).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive: Option<String>,
    /// How the model read pages its drive never saw written (absent in older series: free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwritten_reads: Option<fsage_device::UnwrittenReads>,
    /// The model's counters over the costed trace (where its time came from: an SSD's die
    /// waits, flash reads per read, read sizes; a disk's seeks). Absent in older series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<fsage_device::ModelStats>,
    /// With more than one grep traced: each traced grep's modeled seconds, in the greps' order.
    /// The figures above are then all one grep's, the median's (with an even count the lower
    /// middle: the cheaper of the middle two), so that requests, think time, counters and drive
    /// stay consistent with `seconds`. Empty with one grep and in older series, which costed
    /// the first grep only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rep_seconds: Vec<f64>,
    /// Which grep the figures are, from 0 (the first: `NNNNN-aged.json`; k: `NNNNN-aged-rk.json`),
    /// when `rep_seconds` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rep: Option<u32>,
}

/// The aged over clean modeled time on one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ModeledRatio {
    pub model: String,
    pub ratio: Option<f64>,
}

impl InstanceFigures {
    /// The fastest and slowest timed grep (the one sample of an older series).
    pub fn grep_spread(&self) -> (f64, f64) {
        if self.grep_samples.is_empty() {
            return (self.grep_seconds, self.grep_seconds);
        }
        let lo = self
            .grep_samples
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let hi = self.grep_samples.iter().copied().fold(0.0, f64::max);
        (lo, hi)
    }

    /// The modeled figures on `model`, if costed.
    pub fn modeled_on(&self, model: &str) -> Option<&ModeledFigures> {
        self.modeled.iter().find(|m| m.model == model)
    }

    pub fn set_device_reads(&mut self, r: Option<DeviceReads>) {
        self.device_reads = r.map(|r| r.requests);
        self.device_read_mean_ns = r.map(|r| r.mean_ns);
    }
}

/// One measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitRow {
    /// Pulls performed (commits replayed) so far, the measurement taken after the last of them.
    /// The published scripts number their first measurement `pulls_performed=0` though it is
    /// taken after the first pull (their loop counter); fsage counts pulls done, so that row is
    /// `pulls = 1`. Neither measures the empty file system before any pull.
    pub pulls: u64,
    pub commit: String,
    /// Committer date of the commit (ISO 8601).
    pub commit_date: String,
    /// `du -s` of the aged tree, in bytes.
    pub du_bytes: u64,
    pub aged: InstanceFigures,
    pub clean: InstanceFigures,
    /// Aged over clean grep time (medians).
    pub ratio: Option<f64>,
    /// Aged over clean modeled time, per model of the run (empty without models).
    #[serde(default)]
    pub modeled_ratio: Vec<ModeledRatio>,
}

impl GitRow {
    /// The aged/clean modeled ratio on `model`.
    pub fn modeled_ratio_on(&self, model: &str) -> Option<f64> {
        self.modeled_ratio
            .iter()
            .find(|m| m.model == model)
            .and_then(|m| m.ratio)
    }
}

/// A whole run (also its checkpoint's content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitSeries {
    pub format: String,
    /// The repository as given.
    pub repo: String,
    /// `git` (the published method) or `tree`.
    pub mode: String,
    /// The aged file system's kind: ext4, xfs or btrfs for an image; for a directory target what
    /// the mount table says of the file system holding it.
    pub fs: String,
    /// The clean instance's kind (empty in series written before it was recorded: then `fs`).
    #[serde(default)]
    pub clean_fs: String,
    /// The last session replayed without measuring (absent in older series: false).
    #[serde(default)]
    pub no_measure: bool,
    pub size_bytes: u64,
    pub every: u64,
    pub gc: bool,
    /// Where the aged tree lies (inside the mount).
    pub tree: String,
    pub first_commit: String,
    pub last_commit: String,
    pub commits_total: u64,
    /// Commits replayed so far.
    pub pulls_done: u64,
    pub finished: bool,
    /// Whether the aged instance was unmounted and mounted again before each measurement (not
    /// for a TARGET_DIR fsage did not mount: caches are dropped only).
    pub remounted: bool,
    /// The aged instance was measured warm (`--warm-cache`): neither remounted nor caches
    /// dropped before its greps; the clean copy cold (absent in older series: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm_cache: bool,
    /// The memory cgroup's limit the run ran under (`--mem-limit`), page cache included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_limit_bytes: Option<u64>,
    /// The latencies of the slow device every measurement was taken on (both instances mounted
    /// through it), when it ran a fixed latency; none: plain loop devices over the images, or a
    /// model with state (`device_model`).
    #[serde(default)]
    pub device_latencies: Option<crate::slowdev::Latencies>,
    /// The model the slow device ran (`--device-model`, or the fixed model of
    /// `--device-latency`), its file's text included; absent in series from before models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_model: Option<fsage_device::ModelSpec>,
    /// Timed greps per instance and measurement (1 in series written before repetitions).
    #[serde(default = "one")]
    pub grep_reps: u32,
    /// The device models every kept trace is costed on (`--cost-models`), with their text.
    #[serde(default)]
    pub cost_models: Vec<fsage_device::ModelSpec>,
    /// What stood in for grep's think time when the traces were costed (`recorded` in series
    /// from before the rule was chosen: the recorded wall-clock gaps).
    #[serde(default = "recorded_think")]
    pub cost_think: fsage_device::Think,
    /// Whether the aged file system was synced (`syncfs`; btrfs's own ioctl on btrfs in builds
    /// since 29 Nov 2026) after every pull, so that what each
    /// pull wrote reached the disk before the next, whatever the host's timing (absent in older
    /// series: false).
    #[serde(default)]
    pub sync_each_pull: bool,
    /// The replay (making the aged instance and every pull with its sync) ran on one CPU with
    /// the kernel's unbound workqueues confined to it (`--one-cpu`); measurements on every CPU
    /// (absent in older series: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_cpu: bool,
    /// The greps ran on read-only mounts (the aged image's remount and the clean copy's): no
    /// access times written, nothing of the measurement left in the aged history (absent in
    /// older series, measured on writable mounts: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub greps_read_only: bool,
    /// Where the greps' traces are kept (`IMAGE.traces`), when any are.
    #[serde(default)]
    pub traces_dir: Option<String>,
    /// The models whose greps were costed on drives aged by the replay's own writes (the aged
    /// instance's, kept in `drives_dir`; the clean instance's fed its copy); empty when none
    /// keeps a drive state, or for a directory target (whose drives are erased).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aged_drives: Vec<String>,
    /// Where the aged drives are kept (`IMAGE.drives`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drives_dir: Option<String>,
    /// What the aged drives missed (the writes of pulls a stopped run replayed after their last
    /// save, events the trace lost), in the order found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drive_notes: Vec<String>,
    /// Time spent replaying (git or tree operations), over every session.
    pub replay_seconds: f64,
    /// Time spent measuring, over every session.
    pub measure_seconds: f64,
    pub commits_per_second: Option<f64>,
    pub git_version: String,
    pub grep_version: String,
    pub rows: Vec<GitRow>,
}

fn one() -> u32 {
    1
}

fn recorded_think() -> fsage_device::Think {
    fsage_device::Think::Recorded
}

impl GitSeries {
    /// The names of the models the series was costed on, in order.
    pub fn model_names(&self) -> Vec<&str> {
        self.cost_models.iter().map(|m| m.name.as_str()).collect()
    }

    /// How many greps' traces a modeled figure was the median of, at most, when any was of more
    /// than one (`rep_seconds`); none in a series that costed one grep per instance.
    pub fn costed_reps(&self) -> Option<usize> {
        self.rows
            .iter()
            .flat_map(|r| r.aged.modeled.iter().chain(&r.clean.modeled))
            .map(|m| m.rep_seconds.len())
            .max()
            .filter(|&n| n > 1)
    }

    /// The clean instance's kind (`fs` in series from before `clean_fs` was recorded).
    pub fn clean_fs(&self) -> &str {
        if self.clean_fs.is_empty() {
            &self.fs
        } else {
            &self.clean_fs
        }
    }

    /// The last row's aged/clean ratio.
    pub fn final_ratio(&self) -> Option<f64> {
        self.rows.last().and_then(|r| r.ratio)
    }
}

/// The reads a slow device served, as its daemon counted and timed them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceReads {
    pub requests: u64,
    /// Mean time from a read's arrival in the daemon to its answer.
    pub mean_ns: f64,
}

impl DeviceReads {
    /// The reads of two devices taken in turn, as one.
    pub fn plus(a: Option<DeviceReads>, b: Option<DeviceReads>) -> Option<DeviceReads> {
        match (a, b) {
            (Some(a), Some(b)) => {
                let n = a.requests + b.requests;
                Some(DeviceReads {
                    requests: n,
                    mean_ns: if n == 0 {
                        0.0
                    } else {
                        (a.mean_ns * a.requests as f64 + b.mean_ns * b.requests as f64) / n as f64
                    },
                })
            }
            (a, b) => a.or(b),
        }
    }
}
