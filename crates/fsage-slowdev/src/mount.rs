//! A file system mounted through a slow device, put up and taken down in the one safe order: the
//! device first, then the mount on it; the mount off first, then the device. Experiments (a
//! cell's working copy) and Git aging (a measurement's image) both go through it.

use crate::{DeviceGuard, DeviceSpec, Result, SlowDevice};
use fsage_lab::mount::MountOptions;
use fsage_lab::Mounted;
use std::path::Path;

/// A slow device and, once [`DeviceMount::mount`] is called, the file system mounted from it.
/// Dropped (an error on the way, a panic), it unmounts and then destroys the device by force.
/// Once an unmount has failed, the file system may still be mounted on the device: the device is
/// then left running (registered, for `fsage dev destroy` or the experiment's clean-up), since
/// stopping its daemon would fail that file system's I/O.
pub struct DeviceMount {
    mounted: Option<Mounted>,
    device: Option<DeviceGuard>,
    stuck: bool,
}

impl DeviceMount {
    /// Makes the device of `spec` ([`SlowDevice::create`]); nothing is mounted yet (a caller
    /// may trace the device first, or hand the block device to a guest instead).
    pub fn create(spec: &DeviceSpec) -> Result<DeviceMount> {
        Ok(DeviceMount {
            mounted: None,
            device: Some(SlowDevice::create(spec)?.into_guard()),
            stuck: false,
        })
    }

    /// Mounts the device's file system on `mnt` (an existing directory).
    pub fn mount(&mut self, mnt: &Path, opts: &MountOptions) -> Result<()> {
        let block = self.path().to_path_buf();
        self.mounted = Some(Mounted::attach_and_mount_with(&block, mnt, opts)?);
        Ok(())
    }

    pub fn device(&self) -> &SlowDevice {
        self.device
            .as_ref()
            .expect("a DeviceMount has its device until it is finished")
            .device()
    }

    /// The block device (`/dev/loopN`).
    pub fn path(&self) -> &Path {
        self.device().path()
    }

    /// Unmounts the file system, if mounted; the device stays (its statistics can still be
    /// read). A failed unmount leaves the device for good (see [`DeviceMount`]).
    pub fn unmount(&mut self) -> Result<()> {
        if let Some(m) = self.mounted.take() {
            if let Err(e) = m.finish() {
                self.stuck = true;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Unmounts (if mounted), then destroys the device. When the unmount fails its error is
    /// returned and the device is left running.
    pub fn finish(mut self) -> Result<()> {
        self.unmount()?;
        match self.device.take() {
            Some(d) => d.destroy(),
            None => Ok(()),
        }
    }
}

impl Drop for DeviceMount {
    fn drop(&mut self) {
        if self.stuck {
            if let Some(d) = self.device.take() {
                // Left running, on purpose (see the type's documentation).
                std::mem::forget(d);
            }
            return;
        }
        drop(self.mounted.take());
        drop(self.device.take());
    }
}
