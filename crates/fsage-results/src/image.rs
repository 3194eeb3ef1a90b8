//! What a snapshot of the aged-image library records (`manifest.json`, [`Manifest`]), and what
//! its recorded aging report says in words ([`Manifest::aging_record`], for `image show`). The
//! library itself (zstd, SHA-256, save and restore) is fsage-core's `image`.

use serde::{Deserialize, Serialize};

/// The profile an image was aged with, whole.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileRecord {
    pub name: String,
    /// The profile in fsage's TOML format (`fsage profile show NAME --toml`).
    pub toml: String,
}

/// Checksums of a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Checksums {
    /// SHA-256 of the whole image as a byte sequence (holes as zeros): what `sha256sum IMAGE`
    /// prints for the image that was saved.
    pub image_sha256: String,
    /// SHA-256 of `data.zst` as stored.
    pub data_sha256: String,
}

/// `manifest.json` of a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// "fsage-image/1".
    pub format: String,
    pub name: String,
    /// Seconds since the Unix epoch.
    pub created_unix: u64,
    pub fsage_version: String,
    /// `uname -r` of the machine that saved it.
    pub kernel: String,
    /// The image or device saved, as given.
    pub source: String,
    /// File system found in the image ("ext4", "xfs", "btrfs", other blkid types) or null.
    pub fs: Option<String>,
    /// mkfs options (the user's), from `--mkfs-opts` or the image's `IMAGE.fsage.json`.
    pub mkfs_opts: Option<Vec<String>>,
    /// The whole mkfs command as run by `fsage fs create`, when known.
    pub mkfs_command: Option<Vec<String>>,
    /// Image size in bytes.
    pub size: u64,
    /// Bytes of non-zero 4 KiB blocks stored.
    pub data_bytes: u64,
    /// Runs of consecutive non-zero blocks stored.
    pub data_runs: u64,
    /// Size of `data.zst`.
    pub compressed_bytes: u64,
    pub zstd_level: i32,
    pub checksums: Checksums,
    /// The whole aging profile, when given (`--profile`) or found from the report's name.
    pub profile: Option<ProfileRecord>,
    /// The aging seed (from the report).
    pub seed: Option<u64>,
    /// The aging run's JSON report (`fsage age --json`), whole.
    pub aging: Option<serde_json::Value>,
    /// Free text (`--note`).
    pub note: Option<String>,
    /// The drive the image aged on (an SSD model's state, `IMAGE.ftl`), kept as `drive.ftl`:
    /// restoring the image brings its drive back with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive: Option<DriveRecord>,
}

/// A saved drive state (an SSD's FTL) in a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DriveRecord {
    /// `drive.ftl`, in the snapshot's directory.
    pub file: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Whether a report is a Git-aging series (`fsage git-age --json`) rather than an aging run's.
pub fn is_git_series(report: &serde_json::Value) -> bool {
    report["format"]
        .as_str()
        .is_some_and(|f| f.starts_with("fsage-git-series/"))
}

/// What an image's recorded report says, in words, for `image show`.
#[derive(Debug, Clone, PartialEq)]
pub enum AgingRecord {
    None,
    /// An aging run (`fsage age`).
    Run {
        stop: String,
        ticks: Option<u64>,
        t_estimate: Option<u64>,
        live_files: Option<u64>,
        live_bytes: Option<u64>,
        capacity: Option<u64>,
        fullness: Option<f64>,
    },
    /// A Git-aging series (`fsage git-age`).
    GitSeries {
        repo: String,
        mode: String,
        fs: String,
        pulls_done: Option<u64>,
        commits_total: Option<u64>,
        first_commit: String,
        last_commit: String,
    },
}

impl Manifest {
    /// The recorded report, read for `image show`.
    pub fn aging_record(&self) -> AgingRecord {
        let Some(r) = &self.aging else {
            return AgingRecord::None;
        };
        let s = |k: &str| r[k].as_str().unwrap_or("-").to_string();
        if is_git_series(r) {
            return AgingRecord::GitSeries {
                repo: s("repo"),
                mode: s("mode"),
                fs: s("fs"),
                pulls_done: r["pulls_done"].as_u64(),
                commits_total: r["commits_total"].as_u64(),
                first_commit: s("first_commit"),
                last_commit: s("last_commit"),
            };
        }
        let stop = serde_json::from_value::<fsage_exec::StopReason>(r["stop_reason"].clone())
            .map_or_else(|_| s("stop_reason"), |s| s.describe().to_string());
        AgingRecord::Run {
            stop,
            ticks: r["ticks"].as_u64(),
            t_estimate: r["t_estimate"].as_u64(),
            live_files: r["live_files"].as_u64(),
            live_bytes: r["live_bytes"].as_u64(),
            capacity: r["capacity"].as_u64(),
            fullness: r["fullness"].as_f64(),
        }
    }
}
