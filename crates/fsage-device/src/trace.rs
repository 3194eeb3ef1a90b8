//! A recorded sequence of block requests, as a device saw them: what, where, when issued and
//! (when the recording has it) when completed. Recorded on a fast device (a loop device in
//! memory) and costed on a model, it answers what the same work would take on that device
//! without running it there.
//!
//! File format (`fsage dev cost TRACE`): JSON, `{"version": 1, "source": "...", "device_size":
//! N, "requests": [{"kind": "read", "offset": B, "len": B, "issue_ns": T, "complete_ns": T}, ...]}`,
//! requests in issue order, times in nanoseconds from any origin, offsets and lengths in bytes.

use crate::{Error, Ns, Result, RqKind};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The trace file format's version.
pub const TRACE_VERSION: u32 = 1;

/// One recorded request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRq {
    pub kind: RqKind,
    /// Byte offset on the device.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// When the request was issued to the device.
    pub issue_ns: Ns,
    /// When it completed, if the recording saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_ns: Option<Ns>,
}

/// A recorded request sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub version: u32,
    /// What was recorded (`cold grep -r of ... at commit ...`).
    #[serde(default)]
    pub source: String,
    /// The size of the device recorded on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_size: Option<u64>,
    /// In issue order.
    pub requests: Vec<TraceRq>,
}

impl Trace {
    pub fn new(
        source: impl Into<String>,
        device_size: Option<u64>,
        requests: Vec<TraceRq>,
    ) -> Trace {
        Trace {
            version: TRACE_VERSION,
            source: source.into(),
            device_size,
            requests,
        }
    }

    /// Reads a trace file, checking its version and that requests are in issue order.
    pub fn read(path: &Path) -> Result<Trace> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, "cannot read the trace", e))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            Error::input(format!(
                "{}: not a trace file: not UTF-8 text (byte {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ))
        })?;
        let t: Trace = serde_json::from_str(&text).map_err(|e| {
            Error::input(format!(
                "{}:{}:{}: not a trace file: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        if t.version != TRACE_VERSION {
            return Err(Error::input(format!(
                "{}: trace format version {}, this fsage reads version {TRACE_VERSION}",
                path.display(),
                t.version
            )));
        }
        t.check()
            .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
        Ok(t)
    }

    /// Writes the trace (through a temporary file: never half a trace).
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string(self).expect("a trace serialises");
        Ok(fsage_sys::write_atomic(path, text.as_bytes())?)
    }

    /// Requests in issue order, each completing no earlier than it was issued and lying on the
    /// device (within `device_size` when the trace gives it; a device of 0 bytes is none).
    fn check(&self) -> Result<()> {
        if self.device_size == Some(0) {
            return Err(Error::input(
                "device_size is 0: give the recorded device's size in bytes, or leave it out \
                 (the device is then taken as large as the furthest request)",
            ));
        }
        for (i, r) in self.requests.iter().enumerate() {
            // Linux's largest device (and file) is 8 EiB.
            let end = r
                .offset
                .checked_add(r.len)
                .filter(|&e| e <= i64::MAX as u64);
            let Some(end) = end else {
                return Err(Error::input(format!(
                    "request {i} ends past the largest byte offset of any device (8 EiB): offset \
                     {} + length {}",
                    r.offset, r.len
                )));
            };
            if let Some(size) = self.device_size.filter(|&s| end > s) {
                return Err(Error::input(format!(
                    "request {i} ({} of {} at {}) ends at {}, beyond the device_size {} ({size} \
                     bytes)",
                    r.kind.name(),
                    fsage_units::format_size(r.len),
                    fsage_units::format_size(r.offset),
                    fsage_units::format_size(end),
                    fsage_units::format_size(size),
                )));
            }
        }
        for (i, w) in self.requests.windows(2).enumerate() {
            if w[1].issue_ns < w[0].issue_ns {
                return Err(Error::input(format!(
                    "request {} was issued before request {}: requests must be in issue order",
                    i + 1,
                    i
                )));
            }
        }
        for (i, r) in self.requests.iter().enumerate() {
            if r.complete_ns.is_some_and(|c| c < r.issue_ns) {
                return Err(Error::input(format!(
                    "request {i} completes before it was issued"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_round_trip_and_are_checked() {
        let dir = std::env::temp_dir().join(format!("fsage-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.json");
        let t = Trace::new(
            "test",
            Some(1 << 30),
            vec![
                TraceRq {
                    kind: RqKind::Read,
                    offset: 4096,
                    len: 8192,
                    issue_ns: 10,
                    complete_ns: Some(50),
                },
                TraceRq {
                    kind: RqKind::Write,
                    offset: 0,
                    len: 4096,
                    issue_ns: 20,
                    complete_ns: None,
                },
            ],
        );
        t.write(&p).unwrap();
        assert_eq!(Trace::read(&p).unwrap(), t);
        let mut bad = t.clone();
        bad.requests[1].issue_ns = 5;
        bad.write(&p).unwrap();
        let e = Trace::read(&p).unwrap_err().to_string();
        assert!(e.contains("issue order"), "{e}");
        // An end past u64 overflowed where the device's size is taken from the requests.
        let mut bad = t.clone();
        bad.requests[1].offset = u64::MAX;
        bad.write(&p).unwrap();
        let e = Trace::read(&p).unwrap_err().to_string();
        assert!(
            e.contains("request 1 ends past the largest byte offset"),
            "{e}"
        );
        std::fs::write(&p, "{\"version\": 1, \"requests\": [{\"kind\": \"jump\"}]}").unwrap();
        let e = Trace::read(&p).unwrap_err().to_string();
        assert!(e.contains("t.json:1:"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
