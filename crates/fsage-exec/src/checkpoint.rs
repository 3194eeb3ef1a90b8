//! The state file: everything a run needs to go on after a stop or a crash (planner state with its
//! random generator, tick and counters, the whole profile, every option that changes decisions, the
//! op log's length), written atomically.
//!
//! Layout: the magic `FSAGE-STATE\0`, a format number (u32), the payload length (u64) and its CRC-32
//! (u32), all little-endian, then the payload (bincode). A truncated, corrupt or foreign file is
//! refused with a message that says which.

use fsage_plan::Planner;
use fsage_report::StopReason;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 12] = b"FSAGE-STATE\0";
/// Bumped whenever the payload's layout changes; older files are refused, not misread.
pub const STATE_FORMAT: u32 = 1;
const HEADER: usize = 12 + 4 + 8 + 4;

/// The state as read back.
pub type State = StateOf<Planner>;

/// Generic over the planner so that a checkpoint serialises a borrowed planner (`StateOf<&Planner>`)
/// to the very bytes an owned one would give, without copying millions of live files.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StateOf<P> {
    pub fsage_version: String,
    pub profile_name: String,
    /// The whole profile, in fsage's TOML format.
    pub profile_toml: String,
    pub plan: P,
    /// Absolute path of the aged directory; `None` for a dry run.
    pub target: Option<PathBuf>,
    /// "fallocate" or "write".
    pub write_mode: String,
    /// For `age --fs`: the image file the target is the mount point of, and its file system.
    pub image: Option<PathBuf>,
    pub fs: Option<String>,
    /// The op log being written, and its length at this checkpoint.
    pub op_log: Option<PathBuf>,
    pub op_log_len: u64,
    /// Run time before this checkpoint, over all sessions.
    pub elapsed_s: f64,
    /// Why the last session stopped; `None` while it runs (or after a crash).
    pub stopped: Option<StopReason>,
    /// The last session's error, if an I/O error stopped it.
    pub error: Option<String>,
}

#[derive(Debug)]
pub struct StateError(pub String);

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StateError {}

impl<P: Serialize> StateOf<P> {
    /// Writes the state through a temporary file, fsync and rename: a reader (or a crash) sees the
    /// old state or the new one, never half of one.
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        let payload = bincode::serialize(self)
            .map_err(|e| StateError(format!("{}: cannot encode the state: {e}", path.display())))?;
        let mut bytes = Vec::with_capacity(HEADER + payload.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&STATE_FORMAT.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let tmp = dir.join(format!(".{}.tmp", name.as_deref().unwrap_or("state")));
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            fs::rename(&tmp, path)?;
            fs::File::open(dir)?.sync_all()
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            StateError(format!(
                "{}: cannot write the state file: {e}",
                path.display()
            ))
        })
    }
}

impl State {
    pub fn load(path: &Path) -> Result<State, StateError> {
        let p = path.display();
        let bytes = fs::read(path)
            .map_err(|e| StateError(format!("{p}: cannot read the state file: {e}")))?;
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(StateError(format!("{p}: not an fsage state file")));
        }
        if bytes.len() < HEADER {
            return Err(StateError(format!(
                "{p}: the state file is truncated (header cut short)"
            )));
        }
        let word = |at: usize, n: usize| -> u64 {
            let mut v = [0u8; 8];
            v[..n].copy_from_slice(&bytes[at..at + n]);
            u64::from_le_bytes(v)
        };
        let format = word(12, 4) as u32;
        if format != STATE_FORMAT {
            return Err(StateError(format!(
                "{p}: state format {format}, but this fsage ({}) reads format {STATE_FORMAT}; \
                 finish the run with the fsage that started it",
                env!("CARGO_PKG_VERSION")
            )));
        }
        let len = word(16, 8);
        let crc = word(24, 4) as u32;
        let payload = &bytes[HEADER..];
        if (payload.len() as u64) < len {
            return Err(StateError(format!(
                "{p}: the state file is truncated ({} of {len} payload bytes)",
                payload.len()
            )));
        }
        if (payload.len() as u64) > len {
            return Err(StateError(format!(
                "{p}: the state file has trailing bytes"
            )));
        }
        if crc32fast::hash(payload) != crc {
            return Err(StateError(format!(
                "{p}: the state file is corrupt (checksum mismatch)"
            )));
        }
        let state: State = bincode::deserialize(payload)
            .map_err(|e| StateError(format!("{p}: the state file is corrupt: {e}")))?;
        state
            .plan
            .check_consistency()
            .map_err(|e| StateError(format!("{p}: the state file is inconsistent: {e}")))?;
        Ok(state)
    }
}
