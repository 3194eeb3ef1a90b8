//! One CPU for a run: the calling thread (and every process and thread it starts afterwards)
//! pinned to one CPU, and the kernel's unbound workqueues (the writeback flusher, btrfs's and
//! xfs's workers) confined to the same CPU. Which CPU and which worker allocates a file's blocks
//! then no longer varies from run to run: ext4 puts small files in the locality group of the CPU
//! that allocates them, and on two cores the kernel's workers write back beside the writer.
//!
//! The workqueue mask is machine-wide. It is held by one fsage at a time (a lock in
//! [`crate::lock::lock_dir`]), its value is saved before it is changed and restored when the
//! guard is dropped (the end of a run, an error, a panic's unwinding). The value is also kept in
//! a file beside the lock until it is restored, so that after a run killed by SIGKILL the next
//! guard restores it rather than taking the confined mask for the machine's.

use crate::lock::{self, Lock, LockError};
use crate::Error;
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
use std::path::{Path, PathBuf};

/// The mask of the CPUs the kernel's unbound workqueues may run on.
pub const UNBOUND_CPUMASK: &str = "/sys/devices/virtual/workqueue/cpumask";

/// A run that does its work on one CPU, step by step ([`OneCpu::confine`]): held for the
/// run, so that a second such run is refused rather than left to fight over the machine-wide
/// workqueue mask.
#[derive(Debug)]
pub struct OneCpu {
    file: PathBuf,
    lock_dir: PathBuf,
    cpu: usize,
    /// The step under way, for [`OneCpu::hold`] and [`OneCpu::release`].
    held: std::sync::Mutex<Option<Confined>>,
    _run: Lock,
}

/// One step on one CPU: the calling thread pinned, the unbound workqueues confined, both set
/// free again when dropped.
#[derive(Debug)]
pub struct Confined {
    // Dropped in this order: the workqueues are set free before the thread.
    _mask: WorkqueueMask,
    _pinned: Pinned,
}

impl OneCpu {
    /// Takes the unbound workqueues ([`UNBOUND_CPUMASK`]) for this run and chooses the first
    /// CPU the calling thread may run on; nothing is changed before [`OneCpu::confine`].
    pub fn enter() -> Result<OneCpu, Error> {
        Self::enter_with(Path::new(UNBOUND_CPUMASK), &lock::lock_dir())
    }

    /// [`OneCpu::enter`] with another mask file and lock directory (for tests).
    pub fn enter_with(mask_file: &Path, lock_dir: &Path) -> Result<OneCpu, Error> {
        let key = format!("one-cpu run {}", mask_file.display());
        let run = lock::take(lock_dir, "", &key, false, false).map_err(|e| match e {
            LockError::Held { holder, lock } => Error::input(format!(
                "{}: another fsage runs on one CPU ({holder}; it holds the lock {}); wait for it \
                 to finish",
                mask_file.display(),
                lock.display()
            )),
            LockError::Unusable(e) => e,
        })?;
        let cpu = *allowed_cpus()?
            .first()
            .ok_or_else(|| Error::operation("the CPU affinity allows no CPU"))?;
        Ok(OneCpu {
            file: mask_file.to_path_buf(),
            lock_dir: lock_dir.to_path_buf(),
            cpu,
            held: Default::default(),
            _run: run,
        })
    }

    /// The CPU.
    pub fn cpu(&self) -> usize {
        self.cpu
    }

    /// [`OneCpu::confine`] until [`OneCpu::release`] (or the drop of `self`); holding twice
    /// holds once.
    pub fn hold(&self) -> Result<(), Error> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.is_none() {
            *held = Some(self.confine()?);
        }
        Ok(())
    }

    /// Sets the thread and the workqueues free (if held), until the next [`OneCpu::hold`].
    pub fn release(&self) {
        let step = self.held.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(step);
    }

    /// Pins the calling thread (and what it starts) to the CPU and confines the unbound
    /// workqueues to it, until the result is dropped.
    pub fn confine(&self) -> Result<Confined, Error> {
        let pinned = Pinned::to(self.cpu)?;
        let mask = WorkqueueMask::confine(&self.file, &self.lock_dir, self.cpu)?;
        Ok(Confined {
            _mask: mask,
            _pinned: pinned,
        })
    }
}

/// The CPUs the calling thread may run on now, lowest first.
pub fn allowed_cpus() -> Result<Vec<usize>, Error> {
    let set = sched_getaffinity(None)
        .map_err(|e| Error::operation(format!("cannot read the CPU affinity: {e}")))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// The calling thread pinned to one CPU; its former affinity comes back when dropped.
#[derive(Debug)]
pub struct Pinned {
    before: Vec<usize>,
    cpu: usize,
}

impl Pinned {
    /// Pins the calling thread to the lowest-numbered CPU it may run on now.
    pub fn first_allowed() -> Result<Pinned, Error> {
        let before = allowed_cpus()?;
        let cpu = *before
            .first()
            .ok_or_else(|| Error::operation("the CPU affinity allows no CPU"))?;
        Self::pin(before, cpu)
    }

    /// Pins the calling thread to `cpu`.
    pub fn to(cpu: usize) -> Result<Pinned, Error> {
        Self::pin(allowed_cpus()?, cpu)
    }

    fn pin(before: Vec<usize>, cpu: usize) -> Result<Pinned, Error> {
        let mut one = CpuSet::new();
        one.set(cpu);
        sched_setaffinity(None, &one)
            .map_err(|e| Error::operation(format!("cannot pin the run to CPU {cpu}: {e}")))?;
        Ok(Pinned { before, cpu })
    }

    pub fn cpu(&self) -> usize {
        self.cpu
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let mut set = CpuSet::new();
        for &c in &self.before {
            set.set(c);
        }
        let _ = sched_setaffinity(None, &set);
    }
}

/// The unbound workqueues confined to one CPU; the mask they had comes back when dropped.
#[derive(Debug)]
pub struct WorkqueueMask {
    file: PathBuf,
    saved: PathBuf,
    before: String,
    /// Whether dropping writes `before` back (not when the mask was never changed).
    restore: bool,
    _lock: Lock,
}

impl WorkqueueMask {
    /// Writes the mask of `cpu` into `file` (the kernel's [`UNBOUND_CPUMASK`]), holding the
    /// lock of it in `lock_dir`.
    pub fn confine(file: &Path, lock_dir: &Path, cpu: usize) -> Result<WorkqueueMask, Error> {
        let key = format!("unbound workqueue cpumask {}", file.display());
        let lock = lock::take(lock_dir, "", &key, false, false).map_err(|e| match e {
            LockError::Held { holder, lock } => Error::input(format!(
                "{}: another fsage has confined the unbound workqueues to one CPU ({holder}; it \
                 holds the lock {}); wait for it to finish",
                file.display(),
                lock.display()
            )),
            LockError::Unusable(e) => e,
        })?;
        let saved = lock_dir.join("unbound-cpumask.saved");
        // A run that was killed before it restored the mask left the machine's value here.
        let (before, killed_run) = match std::fs::read_to_string(&saved) {
            Ok(s) if !s.trim().is_empty() => (s.trim().to_string(), true),
            _ => {
                let now = std::fs::read_to_string(file).map_err(|e| {
                    Error::input(format!(
                        "{}: cannot read the unbound workqueues' CPU mask ({e}); confining \
                         them to one CPU needs a kernel that has it",
                        file.display()
                    ))
                })?;
                let now = now.trim().to_string();
                std::fs::write(&saved, format!("{now}\n"))
                    .map_err(|e| Error::io(&saved, "cannot keep the workqueue mask", e))?;
                (now, false)
            }
        };
        let mut guard = WorkqueueMask {
            file: file.to_path_buf(),
            saved,
            before,
            restore: true,
            _lock: lock,
        };
        // A write to a cpumask file is taken whole or refused: when refused, the mask is as it
        // was (still a killed run's, which the guard then restores).
        std::fs::write(file, format!("{}\n", cpu_mask(cpu))).map_err(|e| {
            guard.restore = killed_run;
            Error::input(format!(
                "{}: cannot confine the unbound workqueues to CPU {cpu} ({e}); it needs root \
                 and a CPU the kernel does not keep isolated",
                file.display()
            ))
        })?;
        Ok(guard)
    }

    /// The mask the workqueues had before (and get back).
    pub fn before(&self) -> &str {
        &self.before
    }
}

impl Drop for WorkqueueMask {
    fn drop(&mut self) {
        if !self.restore || std::fs::write(&self.file, format!("{}\n", self.before)).is_ok() {
            let _ = std::fs::remove_file(&self.saved);
        } else {
            // Left for the next guard to restore (the file says what it was).
            eprintln!(
                "fsage: could not restore {} to {} (kept in {})",
                self.file.display(),
                self.before,
                self.saved.display()
            );
        }
    }
}

/// A CPU's mask as the kernel's cpumask files take it: hexadecimal, in comma-separated groups of
/// 32 bits (`1` for CPU 0, `1,00000000` for CPU 32).
pub fn cpu_mask(cpu: usize) -> String {
    let mut s = format!("{:x}", 1u32 << (cpu % 32));
    for _ in 0..cpu / 32 {
        s.push_str(",00000000");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_group_32_bits() {
        assert_eq!(cpu_mask(0), "1");
        assert_eq!(cpu_mask(5), "20");
        assert_eq!(cpu_mask(31), "80000000");
        assert_eq!(cpu_mask(32), "1,00000000");
        assert_eq!(cpu_mask(65), "2,00000000,00000000");
    }

    fn allowed() -> Vec<usize> {
        allowed_cpus().unwrap()
    }

    #[test]
    fn the_thread_is_pinned_and_set_free_again() {
        let before = allowed();
        {
            let p = Pinned::first_allowed().unwrap();
            assert_eq!(allowed(), vec![p.cpu()]);
            assert_eq!(p.cpu(), before[0]);
        }
        assert_eq!(allowed(), before);
    }

    #[test]
    fn the_mask_comes_back_after_an_error_and_a_panic() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("cpumask");
        let locks = d.path().join("locks");
        std::fs::write(&file, "3\n").unwrap();
        let one = OneCpu::enter_with(&file, &locks).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "3\n");
        let run = |fail: bool| -> Result<(), Error> {
            let _step = one.confine()?;
            assert_eq!(
                std::fs::read_to_string(&file).unwrap(),
                format!("{}\n", cpu_mask(one.cpu()))
            );
            assert!(locks.join("unbound-cpumask.saved").exists());
            if fail {
                return Err(Error::operation("the run failed"));
            }
            panic!("the run panicked");
        };
        assert!(run(true).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "3\n");
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(false))).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "3\n");
        assert!(!locks.join("unbound-cpumask.saved").exists());
        one.hold().unwrap();
        one.hold().unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("{}\n", cpu_mask(one.cpu()))
        );
        one.release();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "3\n");
        one.hold().unwrap();
        // A second run on one CPU (another fsage: here another thread) is refused meanwhile.
        let e = std::thread::scope(|s| {
            s.spawn(|| OneCpu::enter_with(&file, &locks).unwrap_err())
                .join()
                .unwrap()
        });
        assert!(e.message.contains("another fsage"), "{}", e.message);
        drop(one);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "3\n");
    }

    #[test]
    fn a_killed_runs_mask_is_restored_and_a_second_holder_refused() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("cpumask");
        let locks = d.path().join("locks");
        std::fs::create_dir(&locks).unwrap();
        // A run killed with the mask confined: the file holds CPU 0's mask, the saved one the
        // machine's.
        std::fs::write(&file, "1\n").unwrap();
        std::fs::write(locks.join("unbound-cpumask.saved"), "f\n").unwrap();
        {
            let m = WorkqueueMask::confine(&file, &locks, 1).unwrap();
            assert_eq!(m.before(), "f");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "2\n");
            // Another thread (as another fsage) is refused while this one holds it.
            let e = std::thread::scope(|s| {
                s.spawn(|| WorkqueueMask::confine(&file, &locks, 0).unwrap_err())
                    .join()
                    .unwrap()
            });
            assert!(e.message.contains("another fsage"), "{}", e.message);
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "2\n");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "f\n");
    }

    #[test]
    fn a_mask_file_that_is_not_there_is_refused_clearly() {
        let d = tempfile::tempdir().unwrap();
        let e =
            WorkqueueMask::confine(&d.path().join("none"), &d.path().join("locks"), 0).unwrap_err();
        assert!(e.message.contains("cannot read"), "{}", e.message);
        assert!(!d.path().join("none").exists());
    }
}
