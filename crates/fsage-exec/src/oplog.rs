//! The op log: one line per step, `TICK OP PATH ARG`, space-separated, paths relative to the
//! target with ` `, `%` and control characters percent-encoded. The planner's directories come
//! first as `- mkdir PATH -`. The same seed gives the same log, byte for byte, whichever backend
//! ran it. Its reader sits beside its writer, so the format has one definition.
//!
//! | OP | ARG |
//! | --- | --- |
//! | `create` | size in bytes |
//! | `delete` | size in bytes, or `-` where unknown |
//! | `mkdir`, `rmdir` | `-` |
//! | `write` | `LEN@OFFSET` |
//! | `truncate` | size in bytes |
//! | `rename` | the new path |
//! | `enospc` | size: a create the file system refused (the source dropped it) |

use crate::op::{check_relative, BadPath, FileRef, OpSource, Operation, Step};
use crate::report::StopReason;
use fsage_plan::{DirTree, Op};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

pub struct OpLog {
    out: BufWriter<File>,
}

/// Percent-encodes what would break the line format.
fn encode(path: &str) -> std::borrow::Cow<'_, str> {
    if !path
        .bytes()
        .any(|b| b == b' ' || b == b'%' || b < 0x20 || b == 0x7f)
    {
        return path.into();
    }
    let mut o = String::with_capacity(path.len() + 8);
    for c in path.chars() {
        match c {
            ' ' | '%' | '\u{0}'..='\u{1f}' | '\u{7f}' => o.push_str(&format!("%{:02X}", c as u32)),
            c => o.push(c),
        }
    }
    o.into()
}

fn decode(s: &str) -> Result<String, BadPath> {
    if !s.contains('%') {
        return Ok(s.to_string());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| BadPath::BadEscape(s.to_string()))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| BadPath::NotUtf8(s.to_string()))
}

impl OpLog {
    /// Makes (or empties) the op log at `path`, never through a symbolic link there.
    pub fn create(path: &Path) -> io::Result<OpLog> {
        let f = fsage_sys::safe::open_or_create_nofollow(path, 0o666)?;
        f.set_len(0)?;
        Ok(OpLog {
            out: BufWriter::with_capacity(1 << 20, f),
        })
    }

    /// Reopens the op log of a stopped run, cut back to `len` bytes (its length at the checkpoint
    /// the run resumes from), to append to it.
    pub fn resume(path: &Path, len: u64) -> io::Result<OpLog> {
        let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
        let have = f.metadata()?.len();
        if have < len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the op log holds {have} bytes, fewer than the {len} the state recorded"),
            ));
        }
        f.set_len(len)?;
        f.seek(SeekFrom::End(0))?;
        Ok(OpLog {
            out: BufWriter::with_capacity(1 << 20, f),
        })
    }

    /// Flushes and says how long the log is: what a checkpoint records.
    pub fn flushed_len(&mut self) -> io::Result<u64> {
        self.out.flush()?;
        self.out.get_mut().stream_position()
    }

    pub fn dirs(&mut self, tree: &DirTree) -> io::Result<()> {
        for (_, path) in tree.created() {
            writeln!(self.out, "- mkdir {} -", encode(path))?;
        }
        Ok(())
    }

    /// The planner's decision (kept for callers that hold an [`Op`]).
    #[inline]
    pub fn op(&mut self, op: &Op, tree: &DirTree) -> io::Result<()> {
        self.step(&Step::from(*op), tree)
    }

    #[inline]
    pub fn step(&mut self, step: &Step, tree: &DirTree) -> io::Result<()> {
        let t = step.tick;
        match &step.op {
            // The hot path: no path string is built.
            Operation::Create {
                file: FileRef::Planned { dir, created },
                size,
            } => self.planned(t, "create", tree, *dir, *created, Some(*size)),
            Operation::Delete {
                file: FileRef::Planned { dir, created },
                size,
            } => self.planned(t, "delete", tree, *dir, *created, *size),
            Operation::Create {
                file: FileRef::Path(p),
                size,
            } => writeln!(self.out, "{t} create {} {size}", encode(p)),
            Operation::Delete {
                file: FileRef::Path(p),
                size,
            } => match size {
                Some(s) => writeln!(self.out, "{t} delete {} {s}", encode(p)),
                None => writeln!(self.out, "{t} delete {} -", encode(p)),
            },
            Operation::Mkdir { path } => writeln!(self.out, "{t} mkdir {} -", encode(path)),
            Operation::Rmdir { path } => writeln!(self.out, "{t} rmdir {} -", encode(path)),
            Operation::Write { path, offset, len } => {
                writeln!(self.out, "{t} write {} {len}@{offset}", encode(path))
            }
            Operation::Truncate { path, size } => {
                writeln!(self.out, "{t} truncate {} {size}", encode(path))
            }
            Operation::Rename { from, to } => {
                writeln!(self.out, "{t} rename {} {}", encode(from), encode(to))
            }
        }
    }

    fn planned(
        &mut self,
        tick: u64,
        verb: &str,
        tree: &DirTree,
        dir: u32,
        created: u64,
        size: Option<u64>,
    ) -> io::Result<()> {
        let d = tree.path(dir);
        let sep = if d.is_empty() { "" } else { "/" };
        match size {
            Some(s) => writeln!(self.out, "{tick} {verb} {}{sep}f{created} {s}", encode(d)),
            None => writeln!(self.out, "{tick} {verb} {}{sep}f{created} -", encode(d)),
        }
    }

    /// A create the file system refused for lack of space; the source dropped it.
    pub fn refused(&mut self, step: &Step, tree: &DirTree) -> io::Result<()> {
        let size = match &step.op {
            Operation::Create { size, .. } => *size,
            _ => 0,
        };
        writeln!(
            self.out,
            "{} enospc {} {size}",
            step.tick,
            encode(&step.path(tree))
        )
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A line of an op log that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}: {message}")]
pub struct OpLogError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

impl fsage_sys::Blamed for OpLogError {
    fn blame(&self) -> fsage_sys::Blame {
        fsage_sys::Blame::Input
    }
}

/// An op log read back: the planner's directories and every step, in order. Refused creates
/// (`enospc`) are left out: they did not happen.
#[derive(Debug, Clone)]
pub struct OpLogContents {
    pub tree: DirTree,
    pub steps: Vec<Step>,
}

/// Reads an op log, naming the line of any error. Files named `f<N>` in the planner's directories
/// come back as planner steps (so a replay runs the very system calls of the run that wrote the
/// log); everything else as named-path steps.
pub fn read(text: &str, origin: &str) -> Result<OpLogContents, OpLogError> {
    let (tree, entries) = read_entries(text, origin)?;
    let steps = entries
        .into_iter()
        .filter_map(|e| match e {
            Entry::Step(s) => Some(s),
            Entry::Mkdir(_) | Entry::Refused(_) => None,
        })
        .collect();
    Ok(OpLogContents { tree, steps })
}

/// One line of an op log, in the log's order: a planner directory, a step, or a create the file
/// system refused (`enospc`).
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Mkdir(String),
    Step(Step),
    Refused(Step),
}

/// Every line of an op log, in order (with the planner's directories as a tree): [`read`] keeps
/// the steps; checkers and tests also see the directories and the refused creates.
pub fn read_entries(text: &str, origin: &str) -> Result<(DirTree, Vec<Entry>), OpLogError> {
    let mut dirs: Vec<String> = Vec::new();
    let mut raw = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let err = |m: String| OpLogError {
            origin: origin.to_string(),
            line: i + 1,
            message: format!("{m}: {line:?}"),
        };
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 4 {
            return Err(err("expected 4 fields: TICK OP PATH ARG".into()));
        }
        if f[0] == "-" {
            if f[1] != "mkdir" || f[3] != "-" {
                return Err(err("only `- mkdir PATH -` lines have no tick".into()));
            }
            if !raw.is_empty() {
                return Err(err(
                    "the planner's directories come before every step".into()
                ));
            }
            dirs.push(decode(f[2]).map_err(|e| err(e.to_string()))?);
            continue;
        }
        raw.push((i + 1, line, f));
    }
    let tree = DirTree::from_paths(&dirs).map_err(|m| OpLogError {
        origin: origin.to_string(),
        line: 0,
        message: m.to_string(),
    })?;
    let index: HashMap<&str, u32> = tree.created().map(|(id, p)| (p, id)).collect();
    let mut entries: Vec<Entry> = dirs.iter().cloned().map(Entry::Mkdir).collect();
    entries.reserve(raw.len());
    for (n, line, f) in raw {
        let err = |m: String| OpLogError {
            origin: origin.to_string(),
            line: n,
            message: format!("{m}: {line:?}"),
        };
        let tick: u64 = f[0].parse().map_err(|_| err("bad tick".into()))?;
        let num = |s: &str, what: &str| s.parse::<u64>().map_err(|_| err(format!("bad {what}")));
        let path = decode(f[2]).map_err(|e| err(e.to_string()))?;
        check_relative(&path).map_err(|e| err(e.to_string()))?;
        let file = || -> FileRef {
            let (dir, name) = match path.rsplit_once('/') {
                Some((d, n)) => (index.get(d).copied(), n),
                None => (Some(0), path.as_str()),
            };
            match (
                dir,
                name.strip_prefix('f').and_then(|c| c.parse::<u64>().ok()),
            ) {
                (Some(dir), Some(created)) if name[1..].bytes().all(|b| b.is_ascii_digit()) => {
                    FileRef::Planned { dir, created }
                }
                _ => FileRef::Path(path.clone()),
            }
        };
        let refused = f[1] == "enospc";
        let op = match f[1] {
            "create" | "enospc" => Operation::Create {
                file: file(),
                size: num(f[3], "size")?,
            },
            "delete" => Operation::Delete {
                file: file(),
                size: if f[3] == "-" {
                    None
                } else {
                    Some(num(f[3], "size")?)
                },
            },
            "mkdir" => Operation::Mkdir { path },
            "rmdir" => Operation::Rmdir { path },
            "write" => {
                let (len, off) = f[3]
                    .split_once('@')
                    .ok_or_else(|| err("write takes LEN@OFFSET".into()))?;
                Operation::Write {
                    path,
                    offset: num(off, "offset")?,
                    len: num(len, "length")?,
                }
            }
            "truncate" => Operation::Truncate {
                path,
                size: num(f[3], "size")?,
            },
            "rename" => {
                let to = decode(f[3]).map_err(|e| err(e.to_string()))?;
                check_relative(&to).map_err(|e| err(e.to_string()))?;
                Operation::Rename { from: path, to }
            }
            other => return Err(err(format!("unknown operation {other:?}"))),
        };
        let step = Step { tick, op };
        entries.push(if refused {
            Entry::Refused(step)
        } else {
            Entry::Step(step)
        });
    }
    Ok((tree, entries))
}

/// An op log as an operation source: replays its steps in order.
pub struct OpLogSource {
    contents: OpLogContents,
    next: usize,
}

impl OpLogSource {
    pub fn new(contents: OpLogContents) -> OpLogSource {
        OpLogSource { contents, next: 0 }
    }
}

impl OpSource for OpLogSource {
    fn tree(&self) -> &DirTree {
        &self.contents.tree
    }
    fn next_step(&mut self) -> Option<Step> {
        let s = self.contents.steps.get(self.next)?.clone();
        self.next += 1;
        Some(s)
    }
    fn position(&self) -> u64 {
        self.next as u64
    }
    fn total(&self) -> Option<u64> {
        Some(self.contents.steps.len() as u64)
    }
    fn exhausted(&self) -> StopReason {
        StopReason::Completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_round_trips_through_the_log() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("ops");
        let tree = DirTree::from_paths(&["a".into(), "a/b".into()]).unwrap();
        let p = |s: &str| s.to_string();
        let steps = vec![
            Step::from(Op {
                tick: 0,
                kind: fsage_plan::OpKind::Create,
                file: fsage_plan::LiveFile {
                    created: 0,
                    size: 4096,
                    dir: 2,
                },
            }),
            Step {
                tick: 1,
                op: Operation::Mkdir { path: p("src dir") },
            },
            Step {
                tick: 2,
                op: Operation::Create {
                    file: FileRef::Path(p("src dir/100% done.c")),
                    size: 10,
                },
            },
            Step {
                tick: 3,
                op: Operation::Write {
                    path: p("src dir/100% done.c"),
                    offset: 5,
                    len: 7,
                },
            },
            Step {
                tick: 4,
                op: Operation::Truncate {
                    path: p("src dir/100% done.c"),
                    size: 3,
                },
            },
            Step {
                tick: 5,
                op: Operation::Rename {
                    from: p("src dir/100% done.c"),
                    to: p("a/x.c"),
                },
            },
            Step {
                tick: 6,
                op: Operation::Delete {
                    file: FileRef::Path(p("a/x.c")),
                    size: None,
                },
            },
            Step {
                tick: 7,
                op: Operation::Rmdir { path: p("src dir") },
            },
        ];
        let mut log = OpLog::create(&path).unwrap();
        log.dirs(&tree).unwrap();
        for s in &steps {
            log.step(s, &tree).unwrap();
        }
        log.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("- mkdir a -\n- mkdir a/b -\n0 create a/b/f0 4096\n"),
            "{text}"
        );
        let back = read(&text, "ops").unwrap();
        assert_eq!(back.tree, tree);
        assert_eq!(back.steps, steps);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = read("- mkdir a -\n0 create a/f0 x\n", "ops").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("ops:2: bad size"), "{e}");
        let e = read("0 create ../etc/passwd 1\n", "ops").unwrap_err();
        assert!(e.to_string().contains("not a plain relative path"), "{e}");
        let e = read("0 frobnicate a 1\n", "ops").unwrap_err();
        assert!(e.to_string().contains("unknown operation"), "{e}");
        assert!(read("0 create a 1 2\n", "ops").is_err());
    }
}
