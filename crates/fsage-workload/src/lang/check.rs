//! Cross-references once every statement is read: filesets named by flowops exist and hold
//! what the flowop works on, I/O flowops have an iosize, targets exist.

use super::parser::Parser;
use super::{MAX_ENTRIES, MAX_FLOWOPS, MAX_THREADS};
use crate::error::Error;
use crate::model::{FileOp, FlowopKind, Model, PaceOp};

/// Cross-references: filesets named by flowops exist, I/O flowops have an iosize, targets exist.
pub(super) fn check(p: &Parser, m: &mut Model) -> Result<(), Error> {
    if m.threads.is_empty() {
        return Err(p.err(
            m.run_line.unwrap_or(1),
            "the workload defines no process with a thread",
        ));
    }
    let names: Vec<String> = m.filesets.iter().map(|f| f.name.clone()).collect();
    let all_flowops: Vec<(FlowopKind, String)> = m
        .threads
        .iter()
        .flat_map(|t| t.flowops.iter().map(|f| (f.kind, f.name.clone())))
        .collect();
    let dirs: Vec<bool> = m.filesets.iter().map(|f| f.dirs).collect();
    let (mut threads, mut flowops, mut entries) = (0u64, 0usize, 0u64);
    for f in &m.filesets {
        entries = entries.saturating_add(f.entries);
        if entries > MAX_ENTRIES {
            return Err(p.err(
                f.line,
                format!(
                    "fileset {}: the filesets have more than {MAX_ENTRIES} entries in all",
                    f.name
                ),
            ));
        }
    }
    for t in &m.threads {
        threads = threads.saturating_add(t.instances);
        flowops += t.flowops.len();
        if threads > MAX_THREADS {
            return Err(p.err(
                t.line,
                format!(
                    "thread {}: the workload has more than {MAX_THREADS} thread instances in all",
                    t.name
                ),
            ));
        }
        if flowops > MAX_FLOWOPS {
            return Err(p.err(
                t.line,
                format!("thread {}: the workload has more than {MAX_FLOWOPS} flowops in all once composites are expanded", t.name),
            ));
        }
    }
    for t in &mut m.threads {
        if t.instances == 0 || t.instances > 10_000 {
            return Err(p.err(
                t.line,
                format!("thread {}: instances must be 1 to 10000", t.name),
            ));
        }
        let own: Vec<(FlowopKind, String)> =
            t.flowops.iter().map(|f| (f.kind, f.name.clone())).collect();
        let t_opens: Vec<(u32, String)> = t
            .flowops
            .iter()
            .filter(|f| {
                matches!(
                    f.kind,
                    FlowopKind::File(FileOp::OpenFile | FileOp::CreateFile)
                )
            })
            .filter_map(|f| Some((f.fd, f.fileset_name.clone()?)))
            .collect();
        for f in &mut t.flowops {
            if let Some(n) = &f.fileset_name {
                let i = names.iter().position(|x| x == n).ok_or_else(|| {
                    p.err(
                        f.line,
                        format!("flowop {}: undefined fileset {n:?}", f.name),
                    )
                })?;
                f.fileset = Some(i);
                if f.kind.on_dirs() != dirs[i] && f.kind.needs_fileset() {
                    return Err(p.err(
                        f.line,
                        format!(
                            "flowop {} ({}): fileset {n} holds {}",
                            f.name,
                            f.kind.name(),
                            if dirs[i] {
                                "directories (leafdirs=), not files"
                            } else {
                                "files, not directories (give it leafdirs=)"
                            }
                        ),
                    ));
                }
            } else if f.kind == FlowopKind::File(FileOp::DeleteFile) {
                // By fd: the file an openfile or createfile of this thread put there.
                let fd = f.fd;
                let by = t_opens
                    .iter()
                    .find(|(ofd, _)| *ofd == fd)
                    .map(|(_, n)| n.clone());
                match by.and_then(|n| names.iter().position(|x| *x == n)) {
                    Some(i) => f.fileset = Some(i),
                    None => {
                        return Err(p.err(
                            f.line,
                            format!("flowop {} (deletefile) needs filesetname= or an fd that an openfile or createfile of its thread opens", f.name),
                        ))
                    }
                }
            } else if f.kind.needs_fileset() {
                return Err(p.err(
                    f.line,
                    format!("flowop {} ({}) needs filesetname=", f.name, f.kind.name()),
                ));
            }
            if f.iosize.is_none() && f.kind.needs_iosize() {
                return Err(p.err(
                    f.line,
                    format!("flowop {} ({}) needs iosize=", f.name, f.kind.name()),
                ));
            }
            if let Some(tg) = &f.target {
                let ok = match f.kind {
                    // Semaphores and wakeups reach flowops of any thread.
                    FlowopKind::Pace(PaceOp::SemPost) => all_flowops
                        .iter()
                        .any(|(k, n)| *k == FlowopKind::Pace(PaceOp::SemBlock) && n == tg),
                    FlowopKind::Pace(PaceOp::Wakeup) => all_flowops
                        .iter()
                        .any(|(k, n)| *k == FlowopKind::Pace(PaceOp::Block) && n == tg),
                    _ => own.iter().any(|(_, n)| n == tg),
                };
                if !ok {
                    let what = match f.kind {
                        FlowopKind::Pace(PaceOp::SemPost) => "no semblock flowop has that name",
                        FlowopKind::Pace(PaceOp::Wakeup) => "no block flowop has that name",
                        _ => "no flowop of the same thread has that name",
                    };
                    return Err(p.err(f.line, format!("flowop {}: target {tg:?}: {what}", f.name)));
                }
            }
        }
    }
    Ok(())
}
