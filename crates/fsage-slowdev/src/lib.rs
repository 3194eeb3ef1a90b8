//! Block devices of chosen latency, for the slippery-slope experiments (Santana et al., INFLOW '15:
//! file systems on a RAM disk under a high-resolution dm-delay). This machine has no
//! device-mapper, so a device is built from a FUSE daemon and a loop device: the daemon serves one
//! file (the backing image) through FUSE, the loop device sits on that file with direct I/O, so
//! each block request reaches the daemon as one FUSE read, write, fsync or fallocate, and the
//! daemon answers it at its arrival time plus the latency asked.
//!
//! # API
//!
//! - [`DeviceSpec`]: the backing image (or a size for a sparse file in /dev/shm), [`Latencies`]
//!   (read, write, flush, in nanoseconds), bandwidth, queue depth, or a device model instead;
//!   daemon threads.
//! - [`SlowDevice::create(&spec)`](SlowDevice::create) starts the daemon (its own process, in its
//!   own session, so a dying fsage never wedges I/O), waits until the loop device is attached and
//!   returns the device; [`SlowDevice::path`] is the block device (`/dev/loopN`).
//!   [`SlowDevice::set_latency`], [`SlowDevice::stats`], [`SlowDevice::destroy`].
//!   [`SlowDevice::into_guard`] gives a [`DeviceGuard`] that destroys the device when dropped
//!   (tests, the experiment runner).
//! - [`DeviceMount`]: a file system mounted through a slow device, taken down in the safe order
//!   (unmount, then destroy; a device whose file system would not come off is left running).
//! - [`Registry`]: the devices fsage made, one directory each under `/run/fsage-dev`
//!   ([`Registry::default_root`]): `device.json` ([`DeviceRecord`]), the FUSE mountpoint `mnt/`,
//!   the control socket `ctl.sock`, the daemon's log. `list`, `find`, and only what is listed
//!   there is ever touched.
//! - `serve`: the daemon's entry point (the `fsage-slowdevd` binary and the hidden
//!   `fsage dev serve DIR` both call it), with the feature `daemon`.
//!
//! # Client and daemon
//!
//! Without features the crate is the client: making, listing, changing, measuring and
//! destroying devices, which talks to a daemon over its control socket and starts one by
//! running a program (`fsage dev serve`). The daemon itself (the FUSE file system, the timing
//! threads, the model thread: the modules `daemon`, `timing`, `modeled`, and the `fuser`
//! dependency) is behind the feature `daemon`, which only the program that serves devices turns
//! on (the `fsage` command line and the `fsage-slowdevd` binary): a client (fsage-git,
//! experiments, the report) does not build FUSE. The two share the registry's records
//! (`registry`), the control protocol (`control`) and the statistics types (`stats`); the
//! client's modules never use the daemon's.
//! - [`bench::run`]: the benchmark behind `fsage dev bench` (floor, accuracy, parallelism).
//! - [`measure`]: direct-I/O latency and IOPS measurement of a block device (4 KiB random reads or
//!   writes at a queue depth), for the benchmarks and tests.
//!
//! # The model
//!
//! A device always runs a device model of `fsage-device`: the one of [`DeviceSpec::model`] (a
//! hard disk: seeks, rotation, caches, a command queue; an SSD), or the fixed-latency model of
//! the spec's latencies, bandwidth and queue depth. Each request is handed to the model at its
//! arrival and answered at the completion time the model gives: at once through the completion
//! threads or, when the model completes it later, from the model thread (the module `modeled`).
//! A fixed latency completes each request at `arrival + latency(kind) + bytes / bandwidth`
//! (dm-delay's model; with a queue depth N, at most N in service at once, the others waiting for
//! a slot in a virtual queue that holds no thread); its kind answers every request at arrival,
//! so the daemon takes a fast path for it (no event to run, the answer timed from the arrival).
//! There is no device cache beyond what a model has: the data is read from and written to the
//! backing file when the request arrives, and the answer waits. Delays are timed with
//! high-resolution timers (timer slack 1 ns) that wake a completion thread shortly before the
//! deadline, which then spins to it; delays shorter than that spin window are spun in the thread
//! that read the request (there are several).

pub mod bench;
mod control;
#[cfg(feature = "daemon")]
mod daemon;
mod device;
mod measure;
#[cfg(feature = "daemon")]
mod modeled;
mod mount;
mod registry;
mod sched;
mod spec;
mod stats;
#[cfg(feature = "daemon")]
mod timing;

#[cfg(feature = "daemon")]
pub use daemon::serve;
pub use device::{destroy_all, list_devices, sparse_note, DeviceGuard, DeviceInfo, SlowDevice};
pub use measure::{measure, MeasureSpec, Measurement, Pattern};
pub use mount::DeviceMount;
pub use registry::{state_file_of, DeviceRecord, Registry};
pub use spec::{Backing, DeviceSpec, Latencies, LatencyChange};
pub use stats::{DeviceStats, DiskStats, KindStats, LatencySummary, ModelInfo};

/// An error of the slow-device crate: what went wrong, where, and who is to act on it (the type
/// every lab-side crate shares, so a lab error passes through unchanged).
pub use fsage_sys::Error;

pub type Result<T> = std::result::Result<T, Error>;
