//! The op log: one line per operation, `TICK OP PATH SIZE`, space-separated, paths relative to the
//! target. Directories come first as `- mkdir PATH -`. The same seed gives the same log, byte for
//! byte, whichever backend ran it.

use fsage_plan::{DirTree, Op, OpKind};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

pub struct OpLog {
    out: BufWriter<Box<dyn Write + Send>>,
}

impl OpLog {
    pub fn create(path: &Path) -> io::Result<OpLog> {
        let f = File::create(path)?;
        Ok(OpLog::to_writer(Box::new(f)))
    }

    pub fn to_writer(w: Box<dyn Write + Send>) -> OpLog {
        OpLog {
            out: BufWriter::with_capacity(1 << 20, w),
        }
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
