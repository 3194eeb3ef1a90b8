//! Measuring on a slow device: an image in /dev/shm reads at memory speed, so its layout barely
//! shows in the grep's time. With a device latency, each measurement mounts the (unmounted)
//! image through a `fsage-slowdev` device of that latency instead of a plain loop device, takes
//! the measurement, unmounts and destroys the device; the replay and the clean instance's copy
//! run on plain loop devices at full speed.

use crate::{Error, Result};
use fsage_lab::Mounted;
use fsage_slowdev::{Backing, DeviceGuard, DeviceSpec, Latencies, SlowDevice};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The device the measurements are taken on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasureDevice {
    /// Per-request latencies (reads, writes, flushes) of the device.
    pub latencies: Latencies,
    /// The command that runs the device's daemon (default: the running executable with
    /// `dev serve`, which is fsage itself).
    pub daemon_cmd: Option<Vec<OsString>>,
    /// The slow-device registry (default: `fsage_slowdev::Registry::default_root`).
    pub registry: Option<PathBuf>,
}

impl MeasureDevice {
    /// One latency for every request.
    pub fn uniform(latency_ns: u64) -> MeasureDevice {
        MeasureDevice {
            latencies: Latencies::uniform(latency_ns),
            daemon_cmd: None,
            registry: None,
        }
    }
}

/// The reads a slow device served, as its daemon counted and timed them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceReads {
    pub requests: u64,
    /// Mean time from a read's arrival in the daemon to its answer.
    pub mean_ns: f64,
}

/// A file system mounted from `image` through a slow device. Dropping it unmounts, then
/// destroys the device (fields drop in order); [`SlowMount::finish`] does so and reports errors.
pub struct SlowMount {
    mounted: Option<Mounted>,
    device: Option<DeviceGuard>,
    rdev: u64,
}

fn slow_err(e: fsage_slowdev::Error) -> Error {
    Error {
        message: format!("slow device: {}", e.message),
        ..e
    }
}

impl SlowMount {
    /// Puts a slow device over `image` (unmounted, not attached) and mounts it on `mnt`.
    pub fn mount(image: &Path, mnt: &Path, dev: &MeasureDevice) -> Result<SlowMount> {
        let mut spec = DeviceSpec::new(Backing::Image(image.to_path_buf()), 0);
        spec.latencies = dev.latencies;
        spec.daemon_cmd = dev.daemon_cmd.clone();
        if let Some(r) = &dev.registry {
            spec.registry = r.clone();
        }
        let guard = SlowDevice::create(&spec).map_err(slow_err)?.into_guard();
        let rdev = std::fs::metadata(guard.path())
            .map_err(|e| crate::Error::io(guard.path(), "stat", e))?
            .rdev();
        let mut m = SlowMount {
            mounted: None,
            device: Some(guard),
            rdev,
        };
        let path = m.device.as_ref().map(|g| g.path().to_path_buf());
        m.mounted = Some(Mounted::attach_and_mount(
            path.as_deref().unwrap_or(Path::new("")),
            mnt,
        )?);
        Ok(m)
    }

    /// The slow device's number (for the block trace).
    pub fn rdev(&self) -> u64 {
        self.rdev
    }

    /// Unmounts and destroys the device; the reads it served from mount to unmount (none when
    /// its daemon did not answer).
    pub fn finish(mut self) -> Result<Option<DeviceReads>> {
        if let Some(m) = self.mounted.take() {
            m.finish()?;
        }
        let mut reads = None;
        if let Some(g) = self.device.take() {
            reads = g.device().stats().ok().and_then(|st| {
                st.kinds
                    .iter()
                    .find(|k| k.kind == "read")
                    .map(|k| DeviceReads {
                        requests: k.requests,
                        mean_ns: k.latency.mean_ns,
                    })
            });
            g.destroy().map_err(slow_err)?;
        }
        Ok(reads)
    }
}

impl Drop for SlowMount {
    fn drop(&mut self) {
        // Unmount before the device goes (its guard destroys it by force).
        drop(self.mounted.take());
        drop(self.device.take());
    }
}
