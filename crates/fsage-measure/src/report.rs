//! The `fsage frag` report: free space, file layout and probe of one file system, and two or
//! more reports side by side. Plain serde data: `fsage-report` exports it (text, JSON).

use crate::freesp::{self, FreeSpace};
use crate::layout::{FileStats, Probe};
use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the JSON layout below.
pub const FRAG_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragReport {
    pub format: u32,
    /// Where it ran: absent (native) unless in a VM, whose timings compare only with the same
    /// platform's (`tcg`: emulated).
    #[serde(default, skip_serializing_if = "fsage_sys::PlatformKind::is_native")]
    pub platform: fsage_sys::PlatformKind,
    pub mount: String,
    pub fs_type: String,
    pub block_size: u64,
    /// The free-space histogram, or why it could not be measured.
    pub free_space: Option<FreeSpace>,
    pub free_space_error: Option<String>,
    pub free_space_seconds: f64,
    /// File layout (absent with --no-files).
    pub files: Option<FileStats>,
    pub probe: Option<Probe>,
    /// f2fs and nilfs2: segment usage, their free-space fragmentation (absent elsewhere and in
    /// reports written before fsage measured it; why it is missing is in `free_space_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<crate::segments::Segments>,
}

/// What `fsage frag` measures.
#[derive(Debug, Clone, Default)]
pub struct FragOptions {
    /// Scan every file with FIEMAP.
    pub files: bool,
    pub scan: crate::layout::ScanOptions,
    /// Write, map and delete a file of this many bytes.
    pub probe: Option<u64>,
}

/// Measures the file system mounted at `mount`: free space (an unsupported route is reported,
/// not fatal), then files, then the probe (last, so that it disturbs nothing measured).
pub fn measure(mount: &std::path::Path, opts: &FragOptions) -> Result<FragReport, Error> {
    let info =
        crate::sys::statfs(mount).map_err(|e| format!("{}: statfs: {e}", mount.display()))?;
    if !std::fs::metadata(mount)
        .map_err(|e| format!("{}: {e}", mount.display()))?
        .is_dir()
    {
        return Err(Error::Failed(format!(
            "{}: not a directory",
            mount.display()
        )));
    }
    // Commit pending frees first: ext4 and xfs return the blocks of a deleted file to the free
    // space only when the journal commits.
    {
        let d = std::fs::File::open(mount).map_err(|e| format!("{}: {e}", mount.display()))?;
        crate::sys::syncfs(&d).map_err(|e| format!("{}: syncfs: {e}", mount.display()))?;
    }
    let t0 = std::time::Instant::now();
    let fs_type = crate::sys::fs_type_name(info.magic);
    let (mut free_space, mut free_space_error) = match freesp::free_space(mount) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut segments = None;
    if let Some(kind) = fsage_sys::FsKind::by_magic(info.magic).filter(|k| k.is_log_structured()) {
        match device_of(mount)
            .map_err(fsage_sys::Error::operation)
            .and_then(|d| crate::segments::measure(kind, &d))
        {
            Ok(s) => {
                segments = Some(s);
                free_space_error = None;
            }
            Err(e) => free_space_error = Some(format!("{}: segments: {e}", mount.display())),
        }
        free_space = None;
    }
    let free_space_seconds = t0.elapsed().as_secs_f64();
    let files = if opts.files {
        Some(crate::layout::scan_files(mount, &opts.scan)?)
    } else {
        None
    };
    let probe = match opts.probe {
        Some(b) => Some(crate::layout::probe(mount, b)?),
        None => None,
    };
    Ok(FragReport {
        format: FRAG_FORMAT,
        platform: fsage_sys::PlatformKind::current(),
        mount: mount.to_string_lossy().into_owned(),
        fs_type,
        block_size: info.block_size,
        free_space,
        free_space_error,
        free_space_seconds,
        files,
        probe,
        segments,
    })
}

/// The block device a mounted file system comes from (the mount table's source for its st_dev).
fn device_of(mount: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(mount)
        .map_err(|e| format!("{}: {e}", mount.display()))?
        .dev();
    let want = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let table = fsage_sys::mount_table().map_err(|e| e.to_string())?;
    table
        .iter()
        .rev()
        .find(|e| e.dev == want && e.source.starts_with('/'))
        .map(|e| PathBuf::from(&e.source))
        .ok_or_else(|| format!("{}: no block device in the mount table", mount.display()))
}

impl FragReport {
    /// Whether any figure was measured: tmpfs, for one, has neither GETFSMAP nor FIEMAP.
    pub fn measured_anything(&self) -> bool {
        self.free_space.is_some()
            || self.segments.is_some()
            || self.files.as_ref().is_some_and(|f| f.files > 0)
            || self.probe.is_some()
    }

    /// Why nothing could be measured, for a message (the first reason of each kind).
    pub fn why_nothing(&self) -> String {
        let mut why = Vec::new();
        if let Some(e) = &self.free_space_error {
            why.push(e.clone());
        }
        if let Some(e) = self.files.as_ref().and_then(|f| f.walk.errors.first()) {
            why.push(e.clone());
        }
        why.join("; ")
    }
}

/// A probe that cannot be written is bad input, found before anything is measured.
fn check_probe(mount: &Path, bytes: u64) -> Result<(), Error> {
    let refuse = |m: String| {
        Error::Setting(fsage_sys::Error::input(m).with_remedy(fsage_sys::Remedy::Probe))
    };
    if bytes == 0 {
        return Err(refuse(
            "a probe of 0 bytes: the size must be at least 1 byte".into(),
        ));
    }
    // The measurement itself fails on a path statfs cannot read; leave that error to it.
    if let Ok(info) = crate::sys::statfs(mount) {
        let avail = info.blocks_avail.saturating_mul(info.block_size);
        if bytes > avail {
            return Err(refuse(format!(
                "a probe of {}: only {} available on {}",
                fsage_profile::human_bytes(bytes),
                fsage_profile::human_bytes(avail),
                mount.display()
            )));
        }
    }
    Ok(())
}

/// `fsage frag`: measures the file system at `mount` (see [`measure`]) and refuses, as bad
/// input, a path that does not exist and a file system on which nothing can be measured
/// (tmpfs has neither GETFSMAP nor FIEMAP). The warnings are for the user.
pub fn frag(mount: &Path, opts: &FragOptions) -> Result<(FragReport, Vec<String>), Error> {
    if !mount.exists() {
        return Err(Error::Input(format!(
            "{}: no such file or directory",
            mount.display()
        )));
    }
    if !mount.is_dir() {
        return Err(Error::Input(format!(
            "{}: not a directory: give the mount point of a file system (or a directory on it)",
            mount.display()
        )));
    }
    let mut warnings = Vec::new();
    if !fsage_sys::is_mount_point(mount) {
        warnings.push(format!(
            "{} is not a mount point: the free space reported is that of the whole file system \
             holding it, the file measures only those below it",
            mount.display()
        ));
    }
    if let Some(bytes) = opts.probe {
        check_probe(mount, bytes)?;
    }
    let report = measure(mount, opts)?;
    if !report.measured_anything() {
        return Err(Error::Input(format!(
            "{}: nothing can be measured on this {} file system: {}",
            mount.display(),
            report.fs_type,
            report.why_nothing()
        )));
    }
    Ok((report, warnings))
}

/// Reports to show side by side, each named after its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragComparison {
    pub names: Vec<String>,
    pub reports: Vec<FragReport>,
}

/// Reads one saved report, refusing a file that is not one or has another format version.
pub fn load_report(path: &Path) -> Result<FragReport, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    let r: FragReport = serde_json::from_str(&text).map_err(|e| {
        Error::Input(format!(
            "{}: not an `fsage frag` JSON report: {e}",
            path.display()
        ))
    })?;
    if r.format != FRAG_FORMAT {
        return Err(Error::Input(format!(
            "{}: report format {} (this fsage reads {FRAG_FORMAT})",
            path.display(),
            r.format
        )));
    }
    Ok(r)
}

/// `fsage frag compare`: the saved reports at `paths`, named by their file stems.
pub fn load_reports(paths: &[PathBuf]) -> Result<FragComparison, Error> {
    let mut c = FragComparison {
        names: Vec::new(),
        reports: Vec::new(),
    };
    for p in paths {
        c.reports.push(load_report(p)?);
        c.names.push(p.file_stem().map_or_else(
            || p.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        ));
    }
    Ok(c)
}
