//! The devices fsage made: one directory per device under the registry root (`/run/fsage-dev`),
//! holding `device.json`, the FUSE mountpoint `mnt/` (serving the one file `mnt/disk`), the
//! control socket `ctl.sock` and `daemon.log`. list, set, stats and destroy only ever act on
//! what is recorded here.

use crate::{Error, Result};
pub use fsage_results::slowdev::DeviceRecord;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

pub(crate) use fsage_device::in_use_mark;
pub use fsage_device::state_file_of;

/// The registry: a directory of device directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    root: PathBuf,
}

impl Registry {
    /// `/run/fsage-dev`, or `$FSAGE_DEV_REGISTRY` when set (tests use their own).
    pub fn default_root() -> PathBuf {
        std::env::var_os("FSAGE_DEV_REGISTRY")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/run/fsage-dev"))
    }

    pub fn new(root: impl Into<PathBuf>) -> Registry {
        Registry { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Makes a new, empty device directory with the first free name.
    pub(crate) fn allocate(&self) -> Result<(String, PathBuf)> {
        // Root's alone: a record someone else wrote would name what destroy removes and signals.
        fsage_sys::safe::ensure_private_dir(&self.root, "the device registry")?;
        for n in 0..10_000 {
            let name = format!("sd{n}");
            let dir = self.root.join(&name);
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok((name, dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(&dir, "", e)),
            }
        }
        Err(Error::operation(format!(
            "{}: 10000 devices registered; destroy some",
            self.root.display()
        )))
    }

    /// Every device directory with a readable `device.json`, by name.
    pub fn list(&self) -> Vec<(PathBuf, DeviceRecord)> {
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir(&self.root) else {
            return out;
        };
        for e in rd.flatten() {
            if let Ok(r) = read_record(&e.path()) {
                out.push((e.path(), r));
            }
        }
        out.sort_by_key(|(_, r)| {
            (
                r.name.len(),
                r.name.clone(), // sd2 before sd10
            )
        });
        out
    }

    /// The device named `which`: its name (`sd0`), its block device (`/dev/loop3`, `loop3`) or
    /// its directory.
    pub fn find(&self, which: &str) -> Result<(PathBuf, DeviceRecord)> {
        let all = self.list();
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let want = Path::new(which);
        let dev_form = if which.starts_with("loop") {
            PathBuf::from(format!("/dev/{which}"))
        } else {
            want.to_path_buf()
        };
        for (dir, r) in all.iter() {
            if r.name == which
                || canon(dir) == canon(want)
                || r.device.as_deref().is_some_and(|d| d == dev_form)
            {
                return Ok((dir.clone(), r.clone()));
            }
        }
        let names: Vec<String> = all
            .iter()
            .map(|(_, r)| {
                format!(
                    "{} ({})",
                    r.name,
                    r.device
                        .as_deref()
                        .map_or("starting".into(), |d| d.display().to_string())
                )
            })
            .collect();
        Err(Error::input(format!(
            "{which}: not a device fsage made (registry {}: {})",
            self.root.display(),
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        )))
    }
}

pub(crate) fn record_path(dir: &Path) -> PathBuf {
    dir.join("device.json")
}

pub(crate) fn read_record(dir: &Path) -> Result<DeviceRecord> {
    let p = record_path(dir);
    let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, "", e))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::operation(format!("{}: not a device record: {e}", p.display())))
}

pub(crate) fn write_record(dir: &Path, r: &DeviceRecord) -> Result<()> {
    let p = record_path(dir);
    let text = serde_json::to_string_pretty(r).expect("records serialise");
    fsage_sys::write_atomic(&p, text.as_bytes())
        .map_err(|e| Error::operation(format!("{}: {e}", p.display())))
}

/// The FUSE mountpoint in a device's directory.
pub(crate) fn mountpoint_of(dir: &Path) -> PathBuf {
    dir.join("mnt")
}

/// Removes what the device left in its directory (and a scratch backing file): the directory
/// goes last, so a device is listed until it is gone.
pub(crate) fn finish_dir(dir: &Path, rec: &DeviceRecord) {
    if rec.remove_backing {
        let _ = std::fs::remove_file(&rec.backing_file);
    }
    let _ = std::fs::remove_dir(&rec.fuse_mountpoint);
    for f in ["ctl.sock", "daemon.log"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let _ = std::fs::remove_file(record_path(dir));
    let _ = std::fs::remove_dir(dir);
}

/// Detaches a mount lazily (a daemon's FUSE mount that is stuck or held).
pub(crate) fn lazy_umount(mnt: &Path) -> std::io::Result<()> {
    rustix::mount::unmount(mnt, rustix::mount::UnmountFlags::DETACH).map_err(Into::into)
}

/// Why `dev set` cannot change the device's latencies, if it cannot: its timing comes from a
/// model other than a fixed latency.
pub(crate) fn refuses_set(rec: &DeviceRecord) -> Option<String> {
    let m = rec.model.as_ref().filter(|_| rec.model_runs_in_thread())?;
    Some(format!(
        "device {} runs the device model {} ({}): its timing is the model's, which has no \
         latency to set; make a new device (dev create --model or --latency) instead",
        rec.name, m.name, m.description
    ))
}

/// A file's bytes, never through a symbolic link at its last component.
pub(crate) fn read_nofollow(p: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut b = Vec::new();
    fsage_sys::safe::open_read_nofollow(p)?.read_to_end(&mut b)?;
    Ok(b)
}
