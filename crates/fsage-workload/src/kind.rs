//! The flowop kinds a `.f` file can name, grouped by the part of the engine that runs them: the
//! type says which, so that running a flowop is one exhaustive match at each level.
//!
//! To add a flowop: a variant of [`FileOp`], [`DataOp`] or [`PaceOp`] with its `.f` name (in
//! its `name` and in [`FlowopKind::ALL`]); what it needs from its attributes
//! ([`FlowopKind::needs_fileset`], [`FlowopKind::needs_iosize`], ..., which the parser checks)
//! and what it moves ([`FlowopKind::reads`], [`FlowopKind::writes`], for the summary); then the
//! compiler asks for its arm where its group is run (`flowop::exec_file`, `flowop::exec_data`
//! or `control::exec`). The engine around it (threads, timing, warm-up, stop conditions,
//! statistics) needs no change.

/// A flowop's kind: which group runs it, and which flowop of the group it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowopKind {
    /// Works on the tree or an open file's state: takes an entry of a fileset, or the file at
    /// an fd.
    File(FileOp),
    /// Moves data at an open file (or waits for the asynchronous writes).
    Data(DataOp),
    /// Only paces the thread (the engine's control module).
    Pace(PaceOp),
}

/// Flowops that open, close, create, delete, inspect or sync files and directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileOp {
    CreateFile,
    OpenFile,
    CloseFile,
    Fsync,
    DeleteFile,
    StatFile,
    MakeDir,
    RemoveDir,
    ListDir,
}

/// Flowops that read or write an open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataOp {
    ReadWholeFile,
    WriteWholeFile,
    AppendFile,
    AppendFileRand,
    Read,
    Write,
    AioWrite,
    /// Waits for the thread's asynchronous writes: no I/O of its own.
    AioWait,
}

/// Flowops that pace the thread: semaphores, the event generator's limits, hog, delay and the
/// finish conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaceOp {
    SemBlock,
    SemPost,
    Block,
    Wakeup,
    Hog,
    Delay,
    EventLimit,
    IopsLimit,
    OpsLimit,
    BwLimit,
    FinishOnCount,
    FinishOnBytes,
}

impl FileOp {
    pub fn name(self) -> &'static str {
        match self {
            FileOp::CreateFile => "createfile",
            FileOp::OpenFile => "openfile",
            FileOp::CloseFile => "closefile",
            FileOp::Fsync => "fsync",
            FileOp::DeleteFile => "deletefile",
            FileOp::StatFile => "statfile",
            FileOp::MakeDir => "makedir",
            FileOp::RemoveDir => "removedir",
            FileOp::ListDir => "listdir",
        }
    }
}

impl DataOp {
    pub fn name(self) -> &'static str {
        match self {
            DataOp::ReadWholeFile => "readwholefile",
            DataOp::WriteWholeFile => "writewholefile",
            DataOp::AppendFile => "appendfile",
            DataOp::AppendFileRand => "appendfilerand",
            DataOp::Read => "read",
            DataOp::Write => "write",
            DataOp::AioWrite => "aiowrite",
            DataOp::AioWait => "aiowait",
        }
    }
}

impl PaceOp {
    pub fn name(self) -> &'static str {
        match self {
            PaceOp::SemBlock => "semblock",
            PaceOp::SemPost => "sempost",
            PaceOp::Block => "block",
            PaceOp::Wakeup => "wakeup",
            PaceOp::Hog => "hog",
            PaceOp::Delay => "delay",
            PaceOp::EventLimit => "eventlimit",
            PaceOp::IopsLimit => "iopslimit",
            PaceOp::OpsLimit => "opslimit",
            PaceOp::BwLimit => "bwlimit",
            PaceOp::FinishOnCount => "finishoncount",
            PaceOp::FinishOnBytes => "finishonbytes",
        }
    }

    /// `finishoncount` and `finishonbytes`: reaching one ends the thread (or the run).
    pub fn is_finish(self) -> bool {
        matches!(self, PaceOp::FinishOnCount | PaceOp::FinishOnBytes)
    }
}

impl FlowopKind {
    /// Every kind, in the order error messages list them.
    pub const ALL: [FlowopKind; 29] = [
        FlowopKind::File(FileOp::CreateFile),
        FlowopKind::File(FileOp::OpenFile),
        FlowopKind::File(FileOp::CloseFile),
        FlowopKind::Data(DataOp::ReadWholeFile),
        FlowopKind::Data(DataOp::WriteWholeFile),
        FlowopKind::Data(DataOp::AppendFile),
        FlowopKind::Data(DataOp::AppendFileRand),
        FlowopKind::Data(DataOp::Read),
        FlowopKind::Data(DataOp::Write),
        FlowopKind::File(FileOp::Fsync),
        FlowopKind::File(FileOp::DeleteFile),
        FlowopKind::File(FileOp::StatFile),
        FlowopKind::File(FileOp::MakeDir),
        FlowopKind::File(FileOp::RemoveDir),
        FlowopKind::File(FileOp::ListDir),
        FlowopKind::Data(DataOp::AioWrite),
        FlowopKind::Data(DataOp::AioWait),
        FlowopKind::Pace(PaceOp::SemBlock),
        FlowopKind::Pace(PaceOp::SemPost),
        FlowopKind::Pace(PaceOp::Block),
        FlowopKind::Pace(PaceOp::Wakeup),
        FlowopKind::Pace(PaceOp::Hog),
        FlowopKind::Pace(PaceOp::Delay),
        FlowopKind::Pace(PaceOp::EventLimit),
        FlowopKind::Pace(PaceOp::IopsLimit),
        FlowopKind::Pace(PaceOp::OpsLimit),
        FlowopKind::Pace(PaceOp::BwLimit),
        FlowopKind::Pace(PaceOp::FinishOnCount),
        FlowopKind::Pace(PaceOp::FinishOnBytes),
    ];

    /// Its name in a `.f` file.
    pub fn name(self) -> &'static str {
        match self {
            FlowopKind::File(op) => op.name(),
            FlowopKind::Data(op) => op.name(),
            FlowopKind::Pace(op) => op.name(),
        }
    }

    pub fn from_name(s: &str) -> Option<FlowopKind> {
        FlowopKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Flowops that pick a file (or directory) of a fileset themselves.
    pub fn needs_fileset(self) -> bool {
        matches!(
            self,
            FlowopKind::File(
                FileOp::CreateFile
                    | FileOp::OpenFile
                    | FileOp::DeleteFile
                    | FileOp::StatFile
                    | FileOp::MakeDir
                    | FileOp::RemoveDir
                    | FileOp::ListDir
            )
        )
    }

    /// Flowops whose fileset must hold directories (`leafdirs=`); listdir takes either.
    pub fn on_dirs(self) -> bool {
        matches!(self, FlowopKind::File(FileOp::MakeDir | FileOp::RemoveDir))
    }

    /// Flowops that move `iosize` bytes at a time and have no default for it.
    pub fn needs_iosize(self) -> bool {
        matches!(
            self,
            FlowopKind::Data(
                DataOp::Read
                    | DataOp::Write
                    | DataOp::AppendFile
                    | DataOp::AppendFileRand
                    | DataOp::AioWrite
            )
        )
    }

    pub fn needs_value(self) -> bool {
        matches!(
            self,
            FlowopKind::Pace(
                PaceOp::FinishOnCount | PaceOp::FinishOnBytes | PaceOp::Hog | PaceOp::Delay
            )
        )
    }

    pub fn needs_target(self) -> bool {
        matches!(self, FlowopKind::Pace(PaceOp::SemPost | PaceOp::Wakeup))
    }

    /// Operations on files and directories: they make the IO summary and the counts that
    /// `finishoncount`, `opslimit` and `iopslimit` read. The others (limits, semaphores, hog,
    /// delay, finish, and aiowait, which only waits) are listed apart.
    pub fn is_io(self) -> bool {
        match self {
            FlowopKind::File(_) => true,
            FlowopKind::Data(op) => op != DataOp::AioWait,
            FlowopKind::Pace(_) => false,
        }
    }

    /// `finishoncount` and `finishonbytes`.
    pub fn is_finish(self) -> bool {
        matches!(self, FlowopKind::Pace(op) if op.is_finish())
    }

    /// Reads data (for the read/write split of the summary).
    pub fn reads(self) -> bool {
        matches!(self, FlowopKind::Data(DataOp::Read | DataOp::ReadWholeFile))
    }

    pub fn writes(self) -> bool {
        matches!(
            self,
            FlowopKind::Data(
                DataOp::Write
                    | DataOp::WriteWholeFile
                    | DataOp::AppendFile
                    | DataOp::AppendFileRand
                    | DataOp::AioWrite
            )
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_under_its_own_name() {
        let names: std::collections::BTreeSet<&str> =
            FlowopKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), FlowopKind::ALL.len());
        for k in FlowopKind::ALL {
            assert_eq!(FlowopKind::from_name(k.name()), Some(k));
        }
        // The summary's I/O: everything but the pacing flowops and aiowait.
        let io = FlowopKind::ALL.iter().filter(|k| k.is_io()).count();
        assert_eq!(io, 16);
    }
}
