//! The control channel: one JSON line each way over the device's unix socket `ctl.sock`.

use crate::{DeviceStats, Error, Latencies, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request {
    Set {
        latencies: Latencies,
        bandwidth: Option<u64>,
    },
    /// The statistics; with `reset`, counting starts again afterwards.
    Stats {
        #[serde(default)]
        reset: bool,
    },
    /// Detach the loop device, unmount FUSE, exit. With `force`, go even if the loop device is
    /// still held by someone (a mount): its I/O then fails.
    Stop { force: bool },
    /// Precondition the model's drive (see `fsage_device::DeviceModel::precondition`).
    Precondition { overwrites: f64, seed: u64 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum Response {
    Ok,
    Stats {
        stats: Box<DeviceStats>,
    },
    Error {
        message: String,
        input: bool,
    },
    /// Done, and what was done.
    Done {
        message: String,
    },
}

pub(crate) fn socket_path(dir: &Path) -> std::path::PathBuf {
    dir.join("ctl.sock")
}

/// Sends `req` to the daemon of the device in `dir` and waits (up to `timeout`) for its answer.
pub(crate) fn call(dir: &Path, req: &Request, timeout: Duration) -> Result<Response> {
    let sock = socket_path(dir);
    let err = |what: &str, e: std::io::Error| {
        Error::operation(format!(
            "{}: {what}: {e} (is the device's daemon running?)",
            sock.display()
        ))
    };
    let mut s = UnixStream::connect(&sock).map_err(|e| err("cannot connect", e))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| err("socket", e))?;
    let mut line = serde_json::to_string(req).expect("requests serialise");
    line.push('\n');
    s.write_all(line.as_bytes())
        .map_err(|e| err("cannot send", e))?;
    let mut answer = String::new();
    BufReader::new(&s)
        .read_line(&mut answer)
        .map_err(|e| err("no answer", e))?;
    let resp: Response = serde_json::from_str(&answer)
        .map_err(|e| Error::operation(format!("{}: bad answer {answer:?}: {e}", sock.display())))?;
    match resp {
        Response::Error { message, input } => Err(if input {
            Error::input(message)
        } else {
            Error::operation(message)
        }),
        r => Ok(r),
    }
}

/// The variable that tells the daemon which of its descriptors is the image's lock, handed on
/// by `create` (see the daemon's `serve`).
pub(crate) const LOCK_FD_VAR: &str = "FSAGE_SLOWDEV_LOCK_FD";
