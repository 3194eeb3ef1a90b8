//! The state file: everything a run needs to go on after a stop or a crash, written atomically.
//!
//! Layout (format 2): the magic `FSAGE-STATE\0`, the format number (u32), the payload length (u64)
//! and its CRC-32 (u32), all little-endian, then the payload: [`StateFile`] in postcard's stable
//! wire format, fields in the order declared below. The planner is saved as its explicit snapshot
//! ([`fsage_plan::Snapshot`]): only the state a run changes, checked on restore against the profile
//! stored beside it. A file of another format, truncated, corrupt or foreign is refused with a
//! message that says which. Format 1 (fsage before the foundation rework) held the planner's
//! in-memory layout through bincode and is refused. Format 3 added the report's path
//! ([`RunRecord::json`]); format 2 files still load, without it.

use crate::report::StopReason;
use crate::stop::StopConditions;
use fsage_plan::{Planner, Snapshot};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

const MAGIC: &[u8; 12] = b"FSAGE-STATE\0";
/// Bumped whenever the payload's layout changes; older files are read by their own layout (back
/// to [`OLDEST_FORMAT`]) or refused, never misread.
pub const STATE_FORMAT: u32 = 3;
/// The oldest format still read (2: before the report's path was kept).
const OLDEST_FORMAT: u32 = 2;
const HEADER: usize = 12 + 4 + 8 + 4;

/// The stopping conditions a run was started with: a resume keeps them unless given again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SavedStop {
    pub max_time_s: Option<f64>,
    pub max_overwrites: Option<f64>,
    pub confidence: Option<f64>,
    pub max_ops: Option<u64>,
}

impl From<&StopConditions> for SavedStop {
    fn from(s: &StopConditions) -> SavedStop {
        SavedStop {
            max_time_s: s.max_time.map(|d| d.as_secs_f64()),
            max_overwrites: s.max_overwrites,
            confidence: s.confidence,
            max_ops: s.max_ops,
        }
    }
}

impl From<SavedStop> for StopConditions {
    fn from(s: SavedStop) -> StopConditions {
        StopConditions {
            max_time: s
                .max_time_s
                .filter(|t| t.is_finite() && *t >= 0.0)
                .map(Duration::from_secs_f64),
            max_overwrites: s.max_overwrites,
            confidence: s.confidence,
            max_ops: s.max_ops,
        }
    }
}

/// Everything in a state file besides the planner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub fsage_version: String,
    pub profile_name: String,
    /// The whole profile, in fsage's TOML format.
    pub profile_toml: String,
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
    /// The stopping conditions in force (the first session's, or those given again at a resume).
    pub stop: SavedStop,
    /// Why the last session stopped; `None` while it runs (or after a crash).
    pub stopped: Option<StopReason>,
    /// The last session's error, if an I/O error stopped it.
    pub error: Option<String>,
    /// Where the report goes as JSON (absolute): a resume writes it there too.
    pub json: Option<PathBuf>,
}

/// [`RunRecord`] as format 2 laid it out: without `json`.
#[derive(Deserialize)]
struct RunRecordV2 {
    fsage_version: String,
    profile_name: String,
    profile_toml: String,
    target: Option<PathBuf>,
    write_mode: String,
    image: Option<PathBuf>,
    fs: Option<String>,
    op_log: Option<PathBuf>,
    op_log_len: u64,
    elapsed_s: f64,
    stop: SavedStop,
    stopped: Option<StopReason>,
    error: Option<String>,
}

impl From<RunRecordV2> for RunRecord {
    fn from(r: RunRecordV2) -> RunRecord {
        RunRecord {
            fsage_version: r.fsage_version,
            profile_name: r.profile_name,
            profile_toml: r.profile_toml,
            target: r.target,
            write_mode: r.write_mode,
            image: r.image,
            fs: r.fs,
            op_log: r.op_log,
            op_log_len: r.op_log_len,
            elapsed_s: r.elapsed_s,
            stop: r.stop,
            stopped: r.stopped,
            error: r.error,
            json: None,
        }
    }
}

#[derive(Deserialize)]
struct StateFileV2 {
    record: RunRecordV2,
    plan: Snapshot,
}

#[derive(Serialize)]
struct StateFileRef<'a> {
    record: &'a RunRecord,
    plan: fsage_plan::SnapshotRef<'a>,
}

#[derive(Deserialize)]
struct StateFileOwned {
    record: RunRecord,
    plan: Snapshot,
}

/// A state read back: the record and the planner, restored and checked.
#[derive(Debug, Clone)]
pub struct State {
    pub record: RunRecord,
    pub plan: Planner,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    // The causes are in the text and not sources: a source would be printed a second time.
    #[error("{}: cannot read the state file: {err}", path.display())]
    Read { path: PathBuf, err: std::io::Error },
    #[error("cannot write the state file: {err}")]
    Write {
        path: PathBuf,
        err: fsage_sys::WriteError,
    },
    #[error("{}: cannot encode the state: {message}", path.display())]
    Encode { path: PathBuf, message: String },
    #[error("{}: not an fsage state file", path.display())]
    Foreign { path: PathBuf },
    #[error(
        "{}: not an fsage state file, and no state file {} beside it (where `fsage age` keeps \
         the state of a run on it unless --state named another)",
        path.display(), beside.display()
    )]
    NoStateBeside { path: PathBuf, beside: PathBuf },
    #[error(
        "{}: state format {found}, but this fsage ({}) reads format {STATE_FORMAT}; {hint}",
        path.display(), env!("CARGO_PKG_VERSION")
    )]
    Format {
        path: PathBuf,
        found: u32,
        hint: &'static str,
    },
    #[error("{}: the state file is {what}", path.display())]
    Corrupt { path: PathBuf, what: String },
}

impl fsage_sys::Blamed for StateError {
    fn blame(&self) -> fsage_sys::Blame {
        match self {
            StateError::Read { err, .. } => fsage_sys::io_blame(err.kind()),
            StateError::Write { err, .. } => err.blame(),
            StateError::Encode { .. } => fsage_sys::Blame::Operation,
            _ => fsage_sys::Blame::Input,
        }
    }
}

/// Writes the state: a reader (or a crash) sees the old state or the new one, never half of one.
pub fn save(path: &Path, record: &RunRecord, plan: &Planner) -> Result<(), StateError> {
    let payload = postcard::to_stdvec(&StateFileRef {
        record,
        plan: plan.snapshot(),
    })
    .map_err(|e| StateError::Encode {
        path: path.into(),
        message: e.to_string(),
    })?;
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&STATE_FORMAT.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    fsage_sys::write_atomic(path, &bytes).map_err(|err| StateError::Write {
        path: path.into(),
        err,
    })
}

impl State {
    /// The state `path` names: `path` itself when it is a state file, else the one `fsage age`
    /// keeps beside the image or target `path` (`PATH.fsage-state`); with the file it read.
    pub fn locate(path: &Path) -> Result<(PathBuf, State), StateError> {
        match State::load(path) {
            Err(StateError::Foreign { .. }) => {
                let beside = fsage_sys::with_suffix(path, ".fsage-state");
                if beside.is_file() {
                    State::load(&beside).map(|s| (beside, s))
                } else {
                    Err(StateError::NoStateBeside {
                        path: path.into(),
                        beside,
                    })
                }
            }
            r => r.map(|s| (path.to_path_buf(), s)),
        }
    }

    /// Reads a state file. The header is read and checked first, and the rest only when the
    /// file is as long as the header says: another file given by mistake (an image of many
    /// GiB, say) is refused without reading it into memory.
    pub fn load(path: &Path) -> Result<State, StateError> {
        use std::io::Read as _;
        let read_err = |err| StateError::Read {
            path: path.into(),
            err,
        };
        let mut f = std::fs::File::open(path).map_err(read_err)?;
        let meta = f.metadata().map_err(read_err)?;
        // A directory, a device or a FIFO is no state file (and a FIFO's read could block).
        if !meta.is_file() {
            return Err(StateError::Foreign { path: path.into() });
        }
        let file_len = meta.len();
        let mut head = Vec::with_capacity(HEADER);
        (&mut f)
            .take(HEADER as u64)
            .read_to_end(&mut head)
            .map_err(read_err)?;
        let corrupt = |what: String| StateError::Corrupt {
            path: path.into(),
            what,
        };
        if head.len() < MAGIC.len() || &head[..MAGIC.len()] != MAGIC {
            return Err(StateError::Foreign { path: path.into() });
        }
        if head.len() < HEADER {
            return Err(corrupt("truncated (header cut short)".into()));
        }
        let word = |at: usize, n: usize| -> u64 {
            let mut v = [0u8; 8];
            v[..n].copy_from_slice(&head[at..at + n]);
            u64::from_le_bytes(v)
        };
        let format = word(12, 4) as u32;
        if !(OLDEST_FORMAT..=STATE_FORMAT).contains(&format) {
            return Err(StateError::Format {
                path: path.into(),
                found: format,
                hint: if format < STATE_FORMAT {
                    "it was written by an older fsage: finish the run with that fsage, or start it \
                     again"
                } else {
                    "it was written by a newer fsage: use that one"
                },
            });
        }
        let len = word(16, 8);
        let crc = word(24, 4) as u32;
        let have = file_len - HEADER as u64;
        if have < len {
            return Err(corrupt(format!(
                "truncated ({have} of {len} payload bytes)"
            )));
        }
        if have > len {
            return Err(corrupt("followed by trailing bytes".into()));
        }
        let mut payload = Vec::with_capacity(len as usize);
        f.read_to_end(&mut payload).map_err(read_err)?;
        if payload.len() as u64 != len {
            return Err(corrupt("changed while it was read".into()));
        }
        let payload = &payload[..];
        if crc32fast::hash(payload) != crc {
            return Err(corrupt("corrupt (checksum mismatch)".into()));
        }
        let file: StateFileOwned = if format == 2 {
            let v2: StateFileV2 =
                postcard::from_bytes(payload).map_err(|e| corrupt(format!("corrupt: {e}")))?;
            StateFileOwned {
                record: v2.record.into(),
                plan: v2.plan,
            }
        } else {
            postcard::from_bytes(payload).map_err(|e| corrupt(format!("corrupt: {e}")))?
        };
        let profile = fsage_profile::parse(
            &file.record.profile_toml,
            &format!("{} (profile)", path.display()),
        )
        .map_err(|e| corrupt(format!("holding a profile that does not parse: {e}")))?;
        let plan = Planner::restore(&profile, file.plan)
            .map_err(|e| corrupt(format!("inconsistent: {e}")))?;
        Ok(State {
            record: file.record,
            plan,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_plan::PlanConfig;
    use fsage_sys::Blamed;

    fn record() -> RunRecord {
        let p = fsage_profile::builtin("agrawal").unwrap();
        RunRecord {
            fsage_version: "test".into(),
            profile_name: p.name.clone(),
            profile_toml: fsage_profile::to_toml(&p),
            target: Some("/tmp/x".into()),
            write_mode: "fallocate".into(),
            image: None,
            fs: None,
            op_log: None,
            op_log_len: 0,
            elapsed_s: 1.5,
            stop: SavedStop {
                max_ops: Some(120_000),
                ..SavedStop::default()
            },
            stopped: Some(StopReason::Interrupted),
            error: None,
            json: Some("/tmp/run.json".into()),
        }
    }

    fn planner() -> Planner {
        let p = fsage_profile::builtin("agrawal").unwrap();
        let mut pl = Planner::new(
            &p,
            PlanConfig {
                capacity: 64 << 20,
                fullness: 0.5,
                block_size: 4096,
                seed: 3,
                exact_sizes: false,
            },
        )
        .unwrap();
        for _ in 0..3000 {
            pl.next_op();
        }
        pl
    }

    #[test]
    fn round_trip_keeps_record_stop_conditions_and_plan() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s");
        let (r, mut p) = (record(), planner());
        save(&path, &r, &p).unwrap();
        let mut st = State::load(&path).unwrap();
        assert_eq!(st.record, r);
        assert_eq!(st.record.stop.max_ops, Some(120_000));
        for _ in 0..5000 {
            assert_eq!(p.next_op(), st.plan.next_op());
        }
    }

    /// A format-2 state (fsage before the report's path was kept) loads, with no report path.
    #[test]
    fn a_format_2_state_still_loads() {
        #[derive(Serialize)]
        struct V2<'a> {
            fsage_version: &'a str,
            profile_name: &'a str,
            profile_toml: &'a str,
            target: &'a Option<PathBuf>,
            write_mode: &'a str,
            image: &'a Option<PathBuf>,
            fs: &'a Option<String>,
            op_log: &'a Option<PathBuf>,
            op_log_len: u64,
            elapsed_s: f64,
            stop: SavedStop,
            stopped: Option<StopReason>,
            error: &'a Option<String>,
        }
        #[derive(Serialize)]
        struct File<'a> {
            record: V2<'a>,
            plan: fsage_plan::SnapshotRef<'a>,
        }
        let (r, mut p) = (record(), planner());
        let payload = postcard::to_stdvec(&File {
            record: V2 {
                fsage_version: &r.fsage_version,
                profile_name: &r.profile_name,
                profile_toml: &r.profile_toml,
                target: &r.target,
                write_mode: &r.write_mode,
                image: &r.image,
                fs: &r.fs,
                op_log: &r.op_log,
                op_log_len: r.op_log_len,
                elapsed_s: r.elapsed_s,
                stop: r.stop,
                stopped: r.stopped,
                error: &r.error,
            },
            plan: p.snapshot(),
        })
        .unwrap();
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        b.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        b.extend_from_slice(&payload);
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("v2");
        std::fs::write(&path, &b).unwrap();
        let mut st = State::load(&path).unwrap();
        assert_eq!(
            st.record,
            RunRecord {
                json: None,
                ..r.clone()
            }
        );
        for _ in 0..1000 {
            assert_eq!(p.next_op(), st.plan.next_op());
        }
        // Read as format 3, the same bytes are not a state: the formats really differ.
        b[12..16].copy_from_slice(&3u32.to_le_bytes());
        std::fs::write(&path, &b).unwrap();
        assert!(State::load(&path).is_err());
    }

    #[test]
    fn an_older_format_is_refused_clearly() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("old");
        // A format-1 header (as fsage 0.1's bincode state files began), payload irrelevant.
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&4u64.to_le_bytes());
        b.extend_from_slice(&crc32fast::hash(b"abcd").to_le_bytes());
        b.extend_from_slice(b"abcd");
        std::fs::write(&path, &b).unwrap();
        let e = State::load(&path).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("state format 1") && m.contains("older fsage"),
            "{m}"
        );
        assert_eq!(e.blame(), fsage_sys::Blame::Input);
    }

    #[test]
    fn damage_is_named() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s");
        save(&path, &record(), &planner()).unwrap();
        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, &good[..good.len() - 10]).unwrap();
        assert!(State::load(&path)
            .unwrap_err()
            .to_string()
            .contains("truncated"));
        let mut bad = good.clone();
        let n = bad.len();
        bad[n - 3] ^= 0xff;
        std::fs::write(&path, &bad).unwrap();
        assert!(State::load(&path)
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        std::fs::write(&path, b"hello").unwrap();
        assert!(State::load(&path)
            .unwrap_err()
            .to_string()
            .contains("not an fsage state"));
    }

    /// An image (or a run's target directory) leads to the state beside it; a large file that is
    /// no state is refused from its first bytes (a sparse 64 GiB file here: reading it whole
    /// would run out of memory).
    #[test]
    fn an_image_leads_to_its_state_and_a_large_foreign_file_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("x.img");
        let f = std::fs::File::create(&img).unwrap();
        f.set_len(64 << 30).unwrap();
        let e = State::load(&img).unwrap_err();
        assert!(matches!(e, StateError::Foreign { .. }), "{e}");
        let e = State::locate(&img).unwrap_err();
        assert!(e.to_string().contains("x.img.fsage-state beside it"), "{e}");
        assert_eq!(e.blame(), fsage_sys::Blame::Input);
        save(&d.path().join("x.img.fsage-state"), &record(), &planner()).unwrap();
        let (found, s) = State::locate(&img).unwrap();
        assert_eq!(found, d.path().join("x.img.fsage-state"));
        assert_eq!(s.record.write_mode, "fallocate");
        let (same, _) = State::locate(&found).unwrap();
        assert_eq!(same, found);
        // A directory: the state beside it.
        let t = d.path().join("t");
        std::fs::create_dir(&t).unwrap();
        std::fs::copy(&found, d.path().join("t.fsage-state")).unwrap();
        assert_eq!(State::locate(&t).unwrap().0, d.path().join("t.fsage-state"));
    }
}
