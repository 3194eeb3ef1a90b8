//! The op log: one line per operation, `TICK OP PATH SIZE`, space-separated, paths relative to the
//! target. Directories come first as `- mkdir PATH -`. The same seed gives the same log, byte for
//! byte, whichever backend ran it.

use fsage_plan::{DirTree, Op, OpKind};
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

pub struct OpLog {
    out: BufWriter<File>,
}

impl OpLog {
    pub fn create(path: &Path) -> io::Result<OpLog> {
        let f = File::create(path)?;
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
            writeln!(self.out, "- mkdir {path} -")?;
        }
        Ok(())
    }

    #[inline]
    pub fn op(&mut self, op: &Op, tree: &DirTree) -> io::Result<()> {
        let verb = match op.kind {
            OpKind::Create => "create",
            OpKind::Delete => "delete",
        };
        let dir = tree.path(op.file.dir);
        let sep = if dir.is_empty() { "" } else { "/" };
        writeln!(
            self.out,
            "{} {verb} {dir}{sep}f{} {}",
            op.tick, op.file.created, op.file.size
        )
    }

    /// A create the file system refused for lack of space; the plan dropped it.
    pub fn refused(&mut self, op: &Op, tree: &DirTree) -> io::Result<()> {
        writeln!(
            self.out,
            "{} enospc {} {}",
            op.tick,
            tree.file_path(op.file.dir, &op.file.name()),
            op.file.size
        )
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
