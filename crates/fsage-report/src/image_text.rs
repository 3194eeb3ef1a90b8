//! The aged-image library on a terminal: `fsage image list` and `fsage image show`.

use fsage_profile::human_bytes;
use fsage_results::image::{AgingRecord, Manifest};
use std::fmt::Write;
use std::path::Path;

/// A library's images, as `fsage image list` prints them.
pub struct ImageList<'a> {
    pub dir: &'a Path,
    /// `None` when there is no library directory yet.
    pub items: Option<&'a [Result<Manifest, fsage_sys::Error>]>,
}

/// One stored image's manifest and where it is kept, as `fsage image show` prints it.
pub struct StoredImage<'a> {
    pub manifest: &'a Manifest,
    pub dir: &'a Path,
}

pub fn list(l: &ImageList) -> String {
    let Some(items) = l.items else {
        return format!(
            "no image library at {} (the first `fsage image save` there makes it)\n",
            l.dir.display()
        );
    };
    if items.is_empty() {
        return format!("no images in {}\n", l.dir.display());
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<24} {:<6} {:>10} {:>10} {:>10}  {:<10} {:>6}",
        "name", "fs", "size", "data", "stored", "profile", "seed"
    );
    for m in items {
        let _ = match m {
            Ok(m) => writeln!(
                s,
                "{:<24} {:<6} {:>10} {:>10} {:>10}  {:<10} {:>6}",
                m.name,
                m.fs.as_deref().unwrap_or("-"),
                human_bytes(m.size),
                human_bytes(m.data_bytes),
                human_bytes(m.compressed_bytes),
                m.profile.as_ref().map_or("-", |p| p.name.as_str()),
                m.seed.map_or("-".into(), |s| s.to_string())
            ),
            Err(e) => writeln!(s, "(unreadable: {e})"),
        };
    }
    s
}

pub fn show(i: &StoredImage) -> String {
    let m = i.manifest;
    let mut s = String::new();
    let mut line = |label: &str, value: String| {
        let _ = writeln!(s, "{:<15}{value}", format!("{label}:"));
    };
    line("name", m.name.clone());
    line("stored in", i.dir.display().to_string());
    line("file system", m.fs.as_deref().unwrap_or("unknown").into());
    line(
        "mkfs options",
        m.mkfs_opts
            .as_ref()
            .map_or("unknown".into(), |o| o.join(" ")),
    );
    if let Some(c) = &m.mkfs_command {
        line("mkfs command", c.join(" "));
    }
    line(
        "size",
        format!("{} ({} bytes)", human_bytes(m.size), m.size),
    );
    line(
        "data",
        format!(
            "{} in {} runs, {} compressed (zstd -{})",
            human_bytes(m.data_bytes),
            m.data_runs,
            human_bytes(m.compressed_bytes),
            m.zstd_level
        ),
    );
    line(
        "drive",
        m.drive.as_ref().map_or(
            "none (restored without a drive state: a device on it starts erased)".into(),
            |d| {
                format!(
                    "the SSD drive state it aged on, {} ({}, sha256 {}): restored beside the image",
                    d.file,
                    human_bytes(d.bytes),
                    d.sha256
                )
            },
        ),
    );
    line("image sha256", m.checksums.image_sha256.clone());
    line("data sha256", m.checksums.data_sha256.clone());
    line("source", m.source.clone());
    line(
        "saved",
        format!(
            "{} by fsage {} on kernel {}",
            fsage_sys::utc_time(m.created_unix),
            m.fsage_version,
            m.kernel
        ),
    );
    line(
        "profile",
        m.profile
            .as_ref()
            .map_or("none recorded", |p| p.name.as_str())
            .into(),
    );
    line("seed", m.seed.map_or("unknown".into(), |s| s.to_string()));
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    line(
        "aging",
        match m.aging_record() {
            AgingRecord::Run {
                stop,
                ticks,
                t_estimate,
                live_files,
                live_bytes,
                capacity,
                fullness,
            } => format!(
                "{stop}; {} ticks of T = {}, {} live files, {} live of capacity {}, fullness {}",
                opt(ticks),
                opt(t_estimate),
                opt(live_files),
                live_bytes.map_or("-".into(), human_bytes),
                capacity.map_or("-".into(), human_bytes),
                fullness.map_or("-".into(), |f| format!("{f}"))
            ),
            AgingRecord::GitSeries {
                repo,
                mode,
                fs,
                pulls_done,
                commits_total,
                first_commit,
                last_commit,
            } => format!(
                "Git history of {repo} ({mode} mode) on {fs}: {} of {} commits replayed, \
                 {first_commit}..{last_commit}",
                opt(pulls_done),
                opt(commits_total)
            ),
            AgingRecord::None => "no report recorded".into(),
        },
    );
    if let Some(n) = &m.note {
        line("note", n.clone());
    }
    s
}
