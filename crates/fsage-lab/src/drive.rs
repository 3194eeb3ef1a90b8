//! Drives that age with a file system: the writes, discards and write-zeroes a block device
//! receives are traced (tracefs, [`BlockTrace`] with [`RqFilter::Writes`]) and fed as they come,
//! in order and at memory speed, to models that keep a drive state (an SSD's FTL,
//! [`fsage_device::AgedDrive`]), so that what the file system wrote sits where its history put it.
//! A feeder thread drains the trace every fraction of a second: a replay that writes many
//! gigabytes is never held whole in memory.
//!
//! - [`Drives`]: a set of drives (one per model), shared by the feeds that age it.
//! - [`Feed`]: one device traced into a set of drives; [`Feed::sync`] feeds everything issued so
//!   far (before a drive state is copied to cost a trace on), [`Feed::finish`] stops.
//! - [`DriveMount`]: an image attached to a loop device, traced from before the mount until the
//!   device is gone (so the unmount's writes are fed too), and mounted.
//! - [`DriveAging`]: what `fsage age --device-model` and experiments do: one model's drive
//!   continued from `IMAGE.ftl` (or erased), fed the run's requests and saved there again.
//!
//! The file system's creation (mkfs) is not traced by any of these: the drive starts as its
//! state file (or an erased drive) says, and pages mkfs alone wrote are ones the drive never saw
//! written (costed by `fsage_device::UnwrittenReads`).

use crate::mount::MountOptions;
use crate::trace::{BlockRq, BlockTrace, RqFilter};
use crate::{Error, LoopDevice, Mounted, Result};
use fsage_device::{AgedDrive, Fed, ModelSpec};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Drives fed by the same requests (one per model), shared between the feeds that age them.
#[derive(Clone, Debug, Default)]
pub struct Drives(Arc<Mutex<Vec<AgedDrive>>>);

impl Drives {
    pub fn new(drives: Vec<AgedDrive>) -> Drives {
        Drives(Arc::new(Mutex::new(drives)))
    }

    /// Erased drives of `specs` for a device of `size` bytes (the models that keep a drive
    /// state; others are left out).
    pub fn erased(specs: &[ModelSpec], size: u64) -> Result<Drives> {
        let drives = specs
            .iter()
            .filter(|s| s.keeps_state())
            .map(|s| AgedDrive::erased(s, size))
            .collect::<fsage_device::Result<Vec<_>>>()?;
        Ok(Drives::new(drives))
    }

    /// The drives, locked (a feed waits meanwhile).
    pub fn lock(&self) -> MutexGuard<'_, Vec<AgedDrive>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn feed(drives: &mut [AgedDrive], rqs: &[BlockRq]) -> Fed {
        let mut fed = Fed::default();
        for r in rqs {
            for d in drives.iter_mut() {
                d.feed(r.kind, r.sector * 512, r.sectors * 512);
            }
            fed.requests += 1;
            fed.bytes += r.sectors * 512;
        }
        fed
    }
}

/// What a feed fed its drives, and the events its trace lost (writes the drives never saw).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeedReport {
    pub fed: Fed,
    pub lost_events: u64,
}

/// One block device's writes, discards and write-zeroes traced and fed to a set of drives as
/// they come. Dropping it stops the trace; what was not yet fed is lost (an error path).
pub struct Feed {
    trace: Option<Arc<BlockTrace>>,
    drives: Drives,
    stop: Arc<AtomicBool>,
    feeder: Option<std::thread::JoinHandle<Result<()>>>,
    fed: Arc<Mutex<Fed>>,
}

/// How often the feeder drains the trace.
const FEED_EVERY: Duration = Duration::from_millis(250);

/// Feeds `drives` what `trace` recorded: everything issued until now when `synced` (it waits
/// for the trace's reader), else what the reader has read. Under the drives' lock, so that
/// batches are fed in the order they were taken.
fn drain_into(trace: &BlockTrace, drives: &Drives, fed: &Mutex<Fed>, synced: bool) -> Result<()> {
    let mut g = drives.lock();
    let rqs = if synced { trace.drain()? } else { trace.take() };
    let f = Drives::feed(&mut g, &rqs);
    fed.lock().unwrap_or_else(|e| e.into_inner()).add(f);
    Ok(())
}

impl Feed {
    /// Starts tracing the block device `rdev` into `drives`. Needs root.
    pub fn start(rdev: u64, drives: &Drives) -> Result<Feed> {
        let trace = Arc::new(BlockTrace::start(rdev, RqFilter::Writes)?);
        let stop = Arc::new(AtomicBool::new(false));
        let fed = Arc::new(Mutex::new(Fed::default()));
        let feeder = {
            let (trace, drives, stop, fed) =
                (trace.clone(), drives.clone(), stop.clone(), fed.clone());
            std::thread::spawn(move || -> Result<()> {
                while !stop.load(Ordering::SeqCst) {
                    let t = std::time::Instant::now();
                    while t.elapsed() < FEED_EVERY && !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    drain_into(&trace, &drives, &fed, false)?;
                }
                Ok(())
            })
        };
        Ok(Feed {
            trace: Some(trace),
            drives: drives.clone(),
            stop,
            feeder: Some(feeder),
            fed,
        })
    }

    /// Feeds every request issued so far (so that the drives' state is the device's now).
    pub fn sync(&self) -> Result<()> {
        match &self.trace {
            Some(t) => drain_into(t, &self.drives, &self.fed, true),
            None => Ok(()),
        }
    }

    /// Stops: feeds what is left and says what was fed (an error if the trace failed).
    pub fn finish(mut self) -> Result<FeedReport> {
        self.stop.store(true, Ordering::SeqCst);
        let fed_thread = self
            .feeder
            .take()
            .map(|h| h.join())
            .unwrap_or(Ok(Ok(())))
            .map_err(|_| Error::operation("the drive feeder thread panicked"))?;
        let trace = self.trace.take().expect("a running feed has its trace");
        let trace = Arc::try_unwrap(trace)
            .map_err(|_| Error::operation("the drive feeder still holds the trace"))?;
        // The rest, in order after what the feeder fed (it has stopped).
        let (rest, lost_events) = trace.finish_counting_losses()?;
        let mut g = self.drives.lock();
        let f = Drives::feed(&mut g, &rest);
        drop(g);
        let mut fed = *self.fed.lock().unwrap_or_else(|e| e.into_inner());
        fed.add(f);
        fed_thread?;
        Ok(FeedReport { fed, lost_events })
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.feeder.take() {
            let _ = h.join();
        }
    }
}

/// An image attached to a loop device whose writes are fed to `drives` from before the mount
/// until the device is gone, and mounted. Dropping it unmounts, detaches and stops the trace
/// (what was not yet fed is lost); [`DriveMount::finish`] feeds everything.
pub struct DriveMount {
    // Dropped in this order: the mount, then the device, then the trace.
    mounted: Option<Mounted>,
    device: Option<LoopDevice>,
    feed: Option<Feed>,
    /// The image's lock ([`fsage_sys::lock`]), released last.
    _lock: fsage_sys::lock::Lock,
}

impl DriveMount {
    /// Attaches `image` to a free loop device, starts feeding its writes to `drives`, and
    /// mounts it on `mount_point`.
    pub fn attach_and_mount(image: &Path, mount_point: &Path, drives: &Drives) -> Result<Self> {
        Self::attach_and_mount_with(image, mount_point, drives, &MountOptions::default())
    }

    /// [`DriveMount::attach_and_mount`] with mount options.
    pub fn attach_and_mount_with(
        image: &Path,
        mount_point: &Path,
        drives: &Drives,
        opts: &MountOptions,
    ) -> Result<Self> {
        let lock = fsage_sys::lock::lock_target_or_refuse(image, "the image")?;
        let loops = fsage_sys::loops_backed_by(image);
        if !loops.is_empty() {
            crate::bail!(
                "{}: already attached to {} (mounted or in use elsewhere); unmount it first",
                image.display(),
                loops[0].display()
            );
        }
        let device = LoopDevice::attach(image, false)?;
        let feed = Feed::start(device.rdev(), drives)?;
        let mut m = DriveMount {
            mounted: None,
            device: Some(device),
            feed: Some(feed),
            _lock: lock,
        };
        let dev = m.device.as_ref().map(|d| d.path().to_path_buf());
        m.mounted = Some(Mounted::attach_and_mount_with(
            dev.as_deref().unwrap_or(Path::new("")),
            mount_point,
            opts,
        )?);
        Ok(m)
    }

    pub fn mount_point(&self) -> &Path {
        self.mounted
            .as_ref()
            .map(|m| m.mount_point())
            .unwrap_or(Path::new(""))
    }

    /// The loop device's number (to trace its reads).
    pub fn rdev(&self) -> u64 {
        self.device.as_ref().map_or(0, |d| d.rdev())
    }

    /// Feeds every write issued so far.
    pub fn sync_drives(&self) -> Result<()> {
        self.feed.as_ref().map_or(Ok(()), |f| f.sync())
    }

    /// Unmounts, waits until the loop device is detached, then feeds what is left.
    pub fn finish(mut self) -> Result<FeedReport> {
        if let Some(m) = self.mounted.take() {
            m.finish()?;
        }
        if let Some(d) = self.device.take() {
            d.detach_and_wait(Duration::from_secs(10))?;
        }
        self.feed
            .take()
            .map_or(Ok(FeedReport::default()), |f| f.finish())
    }
}

/// `fsage age --device-model`'s drive: a trace of the run's requests to its image, fed to the
/// model's drive (continued from `IMAGE.ftl` when there is one), whose state goes back there.
/// Also used by the experiment runner when a guest ages the image: the guest's requests reach a
/// loop device here, which is what is traced.
pub struct DriveAging {
    feed: Feed,
    drives: Drives,
    spec: ModelSpec,
    state: PathBuf,
    resumed: bool,
}

impl DriveAging {
    /// Builds the model for `image`, continues its saved state if there is one, and starts
    /// tracing `device`, the block device the image's requests reach (the loop device it is
    /// mounted through, or one a guest writes through).
    pub fn start(spec: &ModelSpec, image: &Path, device: &Path) -> Result<DriveAging> {
        let size = std::fs::metadata(image)
            .map_err(|e| Error::io(image, "cannot open the image", e))?
            .len();
        let state = fsage_device::state_file_of(image);
        // Never through a link planted at IMAGE.ftl.
        let resumed =
            fsage_sys::safe::lstat_own_name(&state, "the drive state beside the image")?.is_some();
        let drive = if resumed {
            let bytes = std::fs::read(&state)
                .map_err(|e| Error::io(&state, "cannot read the drive state", e))?;
            AgedDrive::load(spec, size, &bytes).map_err(|e| {
                Error::input(format!(
                    "{}: cannot continue this drive state: {} (remove it to start from an \
                     erased drive)",
                    state.display(),
                    e.message
                ))
            })?
        } else {
            AgedDrive::erased(spec, size)
                .map_err(|e| Error::input(format!("--device-model {}: {}", spec.name, e.message)))?
        };
        let rdev = std::fs::metadata(device)
            .map_err(|e| Error::io(device, "", e))?
            .rdev();
        let drives = Drives::new(vec![drive]);
        let feed = Feed::start(rdev, &drives)?;
        Ok(DriveAging {
            feed,
            drives,
            spec: spec.clone(),
            state,
            resumed,
        })
    }

    /// Stops the trace, feeds what is left and saves the drive's state; returns a line saying
    /// what was done.
    pub fn finish(self) -> Result<String> {
        let DriveAging {
            feed,
            drives,
            spec,
            state,
            resumed,
        } = self;
        let report = feed.finish()?;
        let g = drives.lock();
        let d = &g[0];
        // Root's alone (mode 0600), as every drive state.
        fsage_sys::write_atomic_private(&state, &d.state())?;
        // (An aged drive is an SSD's: checked when it was made.)
        let st = d.stats().ssd().copied().unwrap_or_default();
        Ok(format!(
            "the drive ({}) aged with the file system: {} requests ({} MiB written or discarded) \
             fed to its FTL{}{}; write amplification {}, {} erases, {} free blocks; saved to {}",
            spec.name,
            report.fed.requests,
            report.fed.bytes >> 20,
            if resumed {
                ", continuing the saved drive"
            } else {
                " from an erased drive"
            },
            if report.lost_events > 0 {
                format!(
                    " ({} events lost by the trace: the drive misses them)",
                    report.lost_events
                )
            } else {
                String::new()
            },
            st.write_amplification()
                .map_or("-".into(), |w| format!("{w:.2}")),
            st.erases,
            st.free_blocks,
            state.display()
        ))
    }
}
