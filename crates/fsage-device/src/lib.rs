//! Device models: what each block request costs on a device, computed in simulated time.
//!
//! A fixed latency per request (dm-delay's model, the slippery-slope study's devices) cannot show
//! what a fragmented layout costs: on a hard disk a file in pieces costs seeks and rotations, and
//! an aged file system's reads scatter over the platter. A model here keeps the device's state
//! (head position, rotational angle, caches, queue) and answers, per request, when it completes.
//!
//! The same model is driven two ways, so that they agree by construction:
//! - in real time by the slow device (`fsage-slowdev`): arrivals stamped with the clock, the
//!   daemon answers each request at the completion time the model gives;
//! - in simulated time by [`cost`](crate::cost): a recorded trace's requests are submitted at the
//!   times the trace's dependencies allow, and nothing sleeps.
//!
//! # The interface
//!
//! [`DeviceModel`] is event-driven: [`DeviceModel::submit`] hands it a request at its arrival
//! time, [`DeviceModel::next_event`] says when it next has something to do and
//! [`DeviceModel::advance`] runs it up to a time, reporting the requests completed. A model whose
//! answer is known at arrival (a fixed latency; a write taken into a drive's write cache) returns
//! the completion time from `submit` at once. Times are nanoseconds ([`Ns`]) on the model's own
//! clock, which starts at 0; callers never go back in time.

pub mod aging;
pub mod cost;
pub mod counters;
pub mod fixed;
pub mod hdd;
pub mod kinds;
pub mod models;
pub mod sim;
pub mod ssd;
pub mod trace;

pub use aging::{AgedDrive, Fed};
pub use cost::{cost, cost_trace_file, cost_with, CostOptions, CostReport, Dist, Think};
pub use counters::{Counter, DeviceCounters, KindCounters, ModelStats, Requests, Value};
pub use fixed::{FixedLatency, FixedParams};
pub use kinds::{Capabilities, KindEntry, KINDS};
pub use models::{resolve, ModelKind, ModelSpec};
pub use ssd::{ReadSizes, SsdCounters};
pub use trace::{Trace, TraceRq};

use serde::{Deserialize, Serialize};

/// A time or a duration in nanoseconds, on the model's clock.
pub type Ns = u64;

/// What a request asks of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RqKind {
    Read,
    Write,
    /// A cache flush (an fsync reaching the device): no data.
    Flush,
    /// A discard (TRIM): the range's contents are no longer needed.
    Discard,
    /// Zeroes written without data (`BLKZEROOUT`, `blkdiscard -z`, mkfs).
    WriteZeroes,
}

impl RqKind {
    pub const ALL: [RqKind; 5] = [
        RqKind::Read,
        RqKind::Write,
        RqKind::Flush,
        RqKind::Discard,
        RqKind::WriteZeroes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RqKind::Read => "read",
            RqKind::Write => "write",
            RqKind::Flush => "flush",
            RqKind::Discard => "discard",
            RqKind::WriteZeroes => "write_zeroes",
        }
    }

    /// Does the request move data between host and media?
    pub fn moves_data(self) -> bool {
        matches!(self, RqKind::Read | RqKind::Write)
    }
}

/// One request to a model. `id` is the caller's, unique among the requests in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rq {
    pub id: u64,
    pub kind: RqKind,
    /// Byte offset on the device.
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u64,
}

/// A model of a device's timing. See the crate documentation for the protocol.
pub trait DeviceModel: Send {
    /// Takes `rq`, arriving at `now` (never earlier than any time given before). Returns its
    /// completion time when that is known at once; otherwise the request completes through
    /// [`DeviceModel::advance`]. Each request completes exactly once, one way or the other.
    fn submit(&mut self, now: Ns, rq: Rq) -> Option<Ns>;

    /// When the model next has something to do (a request to complete, a service to start, a
    /// write-back), if anything; never earlier than the last time given.
    fn next_event(&self) -> Option<Ns>;

    /// Runs every event due at or before `now` and pushes the requests completed, with their
    /// completion times (each at or before `now`), onto `done`.
    fn advance(&mut self, now: Ns, done: &mut Vec<(u64, Ns)>);

    /// What the model has done so far: its requests and its kind's own counters.
    fn stats(&self) -> ModelStats;

    /// Whether what the model does depends on the data written (a compressing SSD): the
    /// real-time device then hands it each write's data with [`DeviceModel::submit_data`].
    fn wants_data(&self) -> bool {
        false
    }

    /// [`DeviceModel::submit`] for a write whose data is known (`data`: its bytes, `rq.len` of
    /// them). A model that does not look at data ignores it.
    fn submit_data(&mut self, now: Ns, rq: Rq, _data: &[u8]) -> Option<Ns> {
        self.submit(now, rq)
    }

    /// Takes new parameters of its kind while it runs (`dev set` on a fixed-latency device),
    /// keeping its state; a kind whose row is not `retimable` refuses.
    fn retime(&mut self, _kind: &ModelKind) -> Result<()> {
        Err(Error::input(
            "this model's timing cannot be changed while it runs",
        ))
    }

    /// A one-line description for tables (`hdd-7200: 7200 rpm, ...`).
    fn describe(&self) -> String;

    /// The state the device keeps across power cycles (an SSD's FTL: what it maps where, what
    /// is free, how worn), as bytes to save beside the image; None for a model without one.
    fn save_state(&self) -> Option<Vec<u8>> {
        None
    }

    /// A few words on the drive's state (how much of it holds data), for a model that keeps one.
    fn describe_state(&self) -> Option<String> {
        None
    }

    /// Takes a state [`DeviceModel::save_state`] gave (of a device of the same model and
    /// size), instead of a fresh device's.
    fn load_state(&mut self, _bytes: &[u8]) -> Result<()> {
        Err(Error::input("this model keeps no state"))
    }

    /// Takes `rq`'s effect on the drive's state (an SSD's mapping, its garbage collection) at
    /// memory speed: no time passes and nothing is answered. What aging a drive from a traced
    /// file system's writes needs; a model without state ignores it.
    fn feed(&mut self, _rq: &Rq) {}

    /// How reads of pages the drive never saw written are served (models with a drive state;
    /// others ignore it). See [`UnwrittenReads`].
    fn set_unwritten_reads(&mut self, _rule: UnwrittenReads) {}

    /// Puts the device in the steady state benchmarks start from: the whole device written in
    /// order, then `overwrites` times its capacity written at random (`seed`), at memory speed
    /// (state only, no time passes). Returns what it did, for the user.
    fn precondition(&mut self, _overwrites: f64, _seed: u64) -> Result<String> {
        Err(Error::input(
            "this model has nothing to precondition (only SSDs do)",
        ))
    }
}

/// How a model with a drive state serves a read of a page it never saw written nor discarded.
///
/// A real SSD answers a read of an unmapped page with zeros at once, without flash: that is
/// [`UnwrittenReads::Free`], the default of a device running in real time. But a trace costed
/// on a drive without the history that wrote it (a bare `fsage dev cost`, or the pages `mkfs`
/// wrote when its writes were not fed to the drive) reads data that some history wrote: with
/// `Free`, every such read costs no flash at all, and any layout costs the same. With
/// [`UnwrittenReads::LbaOrder`] (the default when costing) such a page is read from the die it
/// would be on had the drive been written in logical order from erased (pages striped over the
/// dies in turn), and each is counted (`unwritten_reads`). Pages the drive saw discarded are
/// zeros under either rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnwrittenReads {
    /// No flash: zeros, as a real drive answers.
    Free,
    /// As data written in logical order from an erased drive.
    #[default]
    LbaOrder,
}

impl UnwrittenReads {
    pub fn name(self) -> &'static str {
        match self {
            UnwrittenReads::Free => "free",
            UnwrittenReads::LbaOrder => "lba-order",
        }
    }
}

impl std::fmt::Display for UnwrittenReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for UnwrittenReads {
    type Err = Error;

    fn from_str(s: &str) -> Result<UnwrittenReads> {
        match s {
            "free" => Ok(UnwrittenReads::Free),
            "lba-order" => Ok(UnwrittenReads::LbaOrder),
            _ => Err(Error::input(format!(
                "{s:?}: expected free (zeros without flash, as a real drive) or lba-order (as \
                 data written in logical order from erased)"
            ))),
        }
    }
}

impl Serialize for UnwrittenReads {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for UnwrittenReads {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An error of this crate: a model file or trace that cannot be used, or a request the model
/// cannot serve. The type every lab-side crate shares.
pub use fsage_sys::Error;

/// Where a drive's state (an SSD's FTL) is kept beside the image it belongs to: `IMAGE.ftl`, the
/// one name the slow device, `fsage age --device-model`, the image library and experiments use.
pub fn state_file_of(image: &std::path::Path) -> std::path::PathBuf {
    let mut s = image.as_os_str().to_owned();
    s.push(".ftl");
    std::path::PathBuf::from(s)
}

/// Checks that `bytes` are a saved drive state (an SSD's FTL: its header, length and checksum)
/// before fsage keeps, copies or stores them as one: a file put at `IMAGE.ftl` that is not one
/// (another user's link to a root-only file, say) is refused instead of copied.
pub fn check_drive_state(bytes: &[u8]) -> Result<()> {
    ssd::ftl::Ftl::from_bytes(bytes).map(drop)
}

/// The mark a running device leaves in place of the drive state it loaded (`IMAGE.ftl.inuse`):
/// if the daemon dies, the state would no longer match the image, so it is not loaded again.
pub fn in_use_mark(state: &std::path::Path) -> std::path::PathBuf {
    let mut s = state.as_os_str().to_owned();
    s.push(".inuse");
    std::path::PathBuf::from(s)
}

pub type Result<T> = std::result::Result<T, Error>;
