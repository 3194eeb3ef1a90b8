//! Measuring on a slow device: an image in /dev/shm reads at memory speed, so its layout barely
//! shows in the grep's time. With a device (a fixed latency or a device model such as
//! `hdd-7200`), each measurement mounts the (unmounted) image through a `fsage-slowdev` device
//! running that model instead of a plain loop device, takes the measurement, unmounts and
//! destroys the device; the replay and the clean instance's copy run on plain loop devices at
//! full speed. A model with state (a disk's head, rotation and caches) gets a new device before
//! every timed grep, so that what the drive cached in one grep does not serve the next; a fixed
//! latency has no state and keeps one device per measurement. The replay never runs through the
//! model; a model that keeps a drive state (an SSD) starts every device from the drive the
//! instance's traced writes aged (`crate::drives`: written to `IMAGE.ftl` for the device to load,
//! with pages it never saw written read as data in logical order, as the costing does), and the
//! device's own writes (the measurement's mount and unmount) are traced and fed to that drive
//! too; the state the device saves when destroyed is removed. Without drives (a directory
//! target), every device starts with a fresh drive.

use crate::{Error, Result};
use fsage_device::{FixedParams, ModelSpec};
use fsage_lab::drive::{Drives, Feed, FeedReport};
pub use fsage_results::git::DeviceReads;
use fsage_slowdev::{Backing, DeviceMount, DeviceSpec, Latencies};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The device the measurements are taken on.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasureDevice {
    /// The model the device runs (`fsage_device::resolve`: a latency, a built-in, a model file),
    /// built for the image's size.
    pub model: ModelSpec,
    /// The command that runs the device's daemon (default: the running executable with
    /// `dev serve`, which is fsage itself).
    pub daemon_cmd: Option<Vec<OsString>>,
    /// The slow-device registry (default: `fsage_slowdev::Registry::default_root`).
    pub registry: Option<PathBuf>,
}

impl MeasureDevice {
    /// One latency for every request (the fixed model of that latency).
    pub fn uniform(latency_ns: u64) -> MeasureDevice {
        MeasureDevice::model(ModelSpec::fixed(latency_ns))
    }

    /// A device running `model`.
    pub fn model(model: ModelSpec) -> MeasureDevice {
        MeasureDevice {
            model,
            daemon_cmd: None,
            registry: None,
        }
    }

    /// The latencies of a fixed-latency model (none for another kind).
    pub fn latencies(&self) -> Option<Latencies> {
        FixedParams::of(&self.model).map(|p| Latencies {
            read_ns: p.read_ns,
            write_ns: p.write_ns,
            flush_ns: p.flush_ns,
        })
    }

    /// Whether every grep needs a device of its own: a model whose requests' costs depend on
    /// the ones before (a disk's head and caches) would otherwise serve a grep from what the
    /// last one left.
    pub fn fresh_per_grep(&self) -> bool {
        self.model.capabilities().history
    }
}

/// A file system mounted from `image` through a slow device ([`DeviceMount`]). Dropping it
/// unmounts, then destroys the device; [`SlowMount::finish`] does so and reports errors.
pub struct SlowMount {
    slow: Option<DeviceMount>,
    /// The device's writes traced into `drives` (stopped after the device is gone).
    feed: Option<Feed>,
    rdev: u64,
    image: PathBuf,
    mnt: PathBuf,
    dev: MeasureDevice,
    /// The reads of the devices [`SlowMount::renew`] replaced.
    earlier: Option<DeviceReads>,
    drives: Option<Drives>,
    /// What the devices' writes fed the drives.
    fed: FeedReport,
    /// What the first device's drive started from, as its record says (a model with state).
    drive_note: Option<String>,
}

fn slow_err(e: fsage_slowdev::Error) -> Error {
    Error {
        message: format!("slow device: {}", e.message),
        ..e
    }
}

impl SlowMount {
    /// Puts a slow device over `image` (unmounted, not attached) and mounts it on `mnt`. With
    /// `drives`, the device's drive starts as the one of its model there (if any) and its writes
    /// are fed to them.
    pub fn mount(
        image: &Path,
        mnt: &Path,
        dev: &MeasureDevice,
        drives: Option<&Drives>,
    ) -> Result<SlowMount> {
        let mut m = SlowMount {
            slow: None,
            feed: None,
            rdev: 0,
            image: image.to_path_buf(),
            mnt: mnt.to_path_buf(),
            dev: dev.clone(),
            earlier: None,
            drives: drives.cloned(),
            fed: FeedReport::default(),
            drive_note: None,
        };
        m.attach()?;
        Ok(m)
    }

    fn attach(&mut self) -> Result<()> {
        let mut spec =
            DeviceSpec::with_model(Backing::Image(self.image.clone()), self.dev.model.clone());
        // The replay does not go through the model: a drive state saved beside the image
        // matches nothing unless it is the traced one written here now.
        spec.fresh_state = true;
        if let Some(drives) = &self.drives {
            let g = drives.lock();
            if let Some(d) = g.iter().find(|d| d.spec().name == self.dev.model.name) {
                let file = fsage_slowdev::state_file_of(&self.image);
                fsage_sys::write_atomic_private(&file, &d.state())
                    .map_err(|e| Error::operation(format!("the drive for the device: {e}")))?;
                spec.fresh_state = false;
                spec.unwritten_reads = Some(fsage_device::UnwrittenReads::LbaOrder);
            }
        }
        spec.daemon_cmd = self.dev.daemon_cmd.clone();
        if let Some(r) = &self.dev.registry {
            spec.registry = r.clone();
        }
        let slow = self
            .slow
            .insert(DeviceMount::create(&spec).map_err(slow_err)?);
        if self.drive_note.is_none() {
            self.drive_note = slow.device().record().state_note.clone();
        }
        let path = slow.path().to_path_buf();
        self.rdev = std::fs::metadata(&path)
            .map_err(|e| crate::Error::io(&path, "stat", e))?
            .rdev();
        // Traced from before the mount: the mount's own writes reach the drives too.
        if let Some(d) = &self.drives {
            self.feed = Some(Feed::start(self.rdev, d)?);
        }
        slow.mount(&self.mnt, &crate::measure::measure_mount_options())?;
        Ok(())
    }

    /// What the device's drive started from (its model keeps a drive state), as the device
    /// said.
    pub fn drive_note(&self) -> Option<&str> {
        self.drive_note.as_deref()
    }

    /// Feeds the drives every write the device received so far.
    pub fn sync_drives(&self) -> Result<()> {
        self.feed.as_ref().map_or(Ok(()), |f| f.sync())
    }

    /// The slow device's number (for the block trace).
    pub fn rdev(&self) -> u64 {
        self.rdev
    }

    /// Before a grep after the first: a model with state gets a new device (unmount, destroy,
    /// create, mount), so the grep starts on a drive that has cached nothing; a fixed latency
    /// keeps its device. The device to trace.
    pub fn renew(&mut self) -> Result<Option<u64>> {
        if self.dev.fresh_per_grep() {
            let r = self.take_down()?;
            self.earlier = DeviceReads::plus(self.earlier, r);
            self.attach()?;
        }
        Ok(Some(self.rdev))
    }

    /// Unmounts and destroys the device; the reads it served from mount to unmount (none when
    /// its daemon did not answer).
    fn take_down(&mut self) -> Result<Option<DeviceReads>> {
        let mut reads = None;
        if let Some(mut g) = self.slow.take() {
            g.unmount()?;
            reads = g.device().stats().ok().and_then(|st| {
                st.kinds
                    .iter()
                    .find(|k| k.kind == "read")
                    .map(|k| DeviceReads {
                        requests: k.requests,
                        mean_ns: k.latency.mean_ns,
                    })
            });
            g.finish().map_err(slow_err)?;
            // The drive state a device of a model with one saved on destroy is not the run's:
            // the traced drives are (they were fed the same writes). Nothing of it is left
            // beside the image.
            let state = fsage_slowdev::state_file_of(&self.image);
            for f in [fsage_device::in_use_mark(&state), state] {
                match std::fs::remove_file(&f) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(crate::Error::io(&f, "remove", e))
                    }
                    _ => {}
                }
            }
        }
        if let Some(f) = self.feed.take() {
            let r = f.finish()?;
            self.fed.fed.add(r.fed);
            self.fed.lost_events += r.lost_events;
        }
        Ok(reads)
    }

    /// Unmounts and destroys the device; the reads it (and the devices it replaced) served from
    /// mount to unmount (none when no daemon answered), and what their writes fed the drives.
    pub fn finish(mut self) -> Result<(Option<DeviceReads>, FeedReport)> {
        let r = self.take_down()?;
        Ok((DeviceReads::plus(self.earlier, r), self.fed))
    }
}

impl Drop for SlowMount {
    fn drop(&mut self) {
        // Unmount before the device goes (by force), and trace until it has gone.
        drop(self.slow.take());
        drop(self.feed.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_models_with_state_get_a_device_per_grep() {
        assert!(!MeasureDevice::uniform(100_000).fresh_per_grep());
        let hdd = fsage_device::resolve("hdd-7200").unwrap();
        let d = MeasureDevice::model(hdd);
        assert!(d.fresh_per_grep());
        assert_eq!(d.latencies(), None);
        assert_eq!(
            MeasureDevice::uniform(7).latencies(),
            Some(Latencies::uniform(7))
        );
    }

    #[test]
    fn reads_of_devices_in_turn_add_up_with_a_weighted_mean() {
        let a = DeviceReads {
            requests: 1,
            mean_ns: 10.0,
        };
        let b = DeviceReads {
            requests: 3,
            mean_ns: 30.0,
        };
        let s = DeviceReads::plus(Some(a), Some(b)).unwrap();
        assert_eq!(s.requests, 4);
        assert!((s.mean_ns - 25.0).abs() < 1e-9);
        assert_eq!(DeviceReads::plus(None, Some(b)), Some(b));
        assert_eq!(DeviceReads::plus(None, None), None);
    }
}
