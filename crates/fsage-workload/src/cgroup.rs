//! A memory cgroup made for one run, to limit the page cache a benchmark may use (the
//! slippery-slope study ran its benchmarks with the cache at half the fileset). cgroup v1's
//! `memory` controller where the machine has it, else cgroup v2's. The whole fsage process moves
//! in (cgroup v1 charges memory per process) and back out when the guard drops, which then
//! removes the cgroup, also after an error.

use crate::error::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug)]
pub struct MemCgroup {
    dir: PathBuf,
    v2: bool,
    /// The `cgroup.procs` of the cgroup fsage was in, to go back to.
    home: PathBuf,
    entered: bool,
}

fn read(p: &Path) -> Result<String, Error> {
    std::fs::read_to_string(p).map_err(|e| Error::Cgroup(format!("{}: {e}", p.display())))
}

fn write(p: &Path, s: &str) -> Result<(), Error> {
    std::fs::write(p, s)
        .map_err(|e| Error::Cgroup(format!("writing {s:?} to {}: {e}", p.display())))
}

fn stat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

impl MemCgroup {
    /// Makes a new, unlimited memory cgroup (not entered yet).
    pub fn create() -> Result<MemCgroup, Error> {
        MemCgroup::create_named("fsage-bench")
    }

    /// Makes a new, unlimited memory cgroup named `PREFIX-PID-SERIAL-RANDOM`, made exclusively
    /// (not entered yet).
    pub fn create_named(prefix: &str) -> Result<MemCgroup, Error> {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let v1 = Path::new("/sys/fs/cgroup/memory");
        let (base, v2, rel) = if v1.join("memory.limit_in_bytes").exists() {
            let rel = own
                .lines()
                .find_map(|l| {
                    let mut f = l.splitn(3, ':');
                    let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
                    ctl.split(',')
                        .any(|c| c == "memory")
                        .then(|| path.to_string())
                })
                .unwrap_or_else(|| "/".into());
            (v1.to_path_buf(), false, rel)
        } else {
            let base = PathBuf::from("/sys/fs/cgroup");
            let ctl = std::fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
            if !ctl.split_whitespace().any(|c| c == "memory") {
                return Err(Error::Cgroup(
                    "no memory controller: neither cgroup v1 /sys/fs/cgroup/memory nor cgroup v2 with memory in /sys/fs/cgroup/cgroup.controllers".into(),
                ));
            }
            // Enable memory for children of the root (already on for most systems).
            let sub = base.join("cgroup.subtree_control");
            if !read(&sub)?.split_whitespace().any(|c| c == "memory") {
                write(&sub, "+memory")?;
            }
            let rel = own
                .lines()
                .find_map(|l| l.strip_prefix("0::").map(str::to_string))
                .unwrap_or_else(|| "/".into());
            (base, true, rel)
        };
        let home = base.join(rel.trim_start_matches('/')).join("cgroup.procs");
        let dir = base.join(format!(
            "{prefix}-{}-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed),
            &fsage_sys::safe::random_hex()[..8]
        ));
        std::fs::create_dir(&dir)
            .map_err(|e| Error::Cgroup(format!("making {}: {e}", dir.display())))?;
        Ok(MemCgroup {
            dir,
            v2,
            home,
            entered: false,
        })
    }

    pub fn version(&self) -> &'static str {
        if self.v2 {
            "v2"
        } else {
            "v1"
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Moves the whole process in.
    pub fn enter(&mut self) -> Result<(), Error> {
        write(
            &self.dir.join("cgroup.procs"),
            &std::process::id().to_string(),
        )?;
        self.entered = true;
        Ok(())
    }

    pub fn set_limit(&self, bytes: u64) -> Result<(), Error> {
        let f = if self.v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        write(&self.dir.join(f), &bytes.to_string())
    }

    fn stat(&self, key_v1: &str, key_v2: &str) -> u64 {
        let s = std::fs::read_to_string(self.dir.join("memory.stat")).unwrap_or_default();
        stat_field(&s, if self.v2 { key_v2 } else { key_v1 }).unwrap_or(0)
    }

    /// Starts the peak over (cgroup v1: memory.max_usage_in_bytes); `false` where that cannot be
    /// done (v2's memory.peak resets only per open file), and the caller samples instead.
    pub fn reset_peak(&self) -> bool {
        !self.v2 && write(&self.dir.join("memory.max_usage_in_bytes"), "0").is_ok()
    }

    /// Bytes charged now.
    pub fn usage(&self) -> u64 {
        let f = if self.v2 {
            "memory.current"
        } else {
            "memory.usage_in_bytes"
        };
        read(&self.dir.join(f))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    /// tmpfs pages charged now (files in /dev/shm written from inside, an image among them: a
    /// loop device charges its writes to the writer's cgroup). They cannot be evicted.
    pub fn shmem(&self) -> u64 {
        self.stat("shmem", "shmem")
    }

    /// Page cache charged now.
    pub fn cache(&self) -> u64 {
        self.stat("cache", "file")
    }

    /// The largest usage since the cgroup was made.
    pub fn peak(&self) -> u64 {
        let f = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        read(&self.dir.join(f))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Leaves the cgroup and removes it.
    pub fn remove(mut self) -> Result<(), Error> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> Result<(), Error> {
        if self.entered {
            write(&self.home, &std::process::id().to_string())?;
            self.entered = false;
        }
        let mut last = None;
        for i in 0..20 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(20 * (i + 1)));
        }
        Err(Error::Cgroup(format!(
            "removing {}: {}",
            self.dir.display(),
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        if self.dir.exists() {
            if let Err(e) = self.cleanup() {
                eprintln!("fsage: {e}");
            }
        }
    }
}
