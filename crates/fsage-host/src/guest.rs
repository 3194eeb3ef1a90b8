//! A QEMU guest as the place a step runs: one boot per step, fsage's own binary run there as
//! `fsage step --json REQUEST --out RESULT` with both files in a private directory the guest is
//! given (the request in and the result out as data). Behind [`Guest`], so that tests run the
//! step with a stand-in that records what it was asked.

use crate::{Error, Ran, Reply, Step, StepObserver};
use fsage_sys::PlatformKind;
use std::path::{Path, PathBuf};

/// Where a step's file system is mounted in a guest (the guest's own tmpfs).
pub const GUEST_MNT: &str = "/tmp/fsage-cell";

/// Guest memory in MiB.
pub const GUEST_MEM_MIB: u64 = fsage_vm::DEFAULT_MEM_MIB;

/// One command in a guest.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestRun {
    /// A cached kernel release (`None`: the newest cached).
    pub kernel: Option<String>,
    /// File systems whose modules the guest loads.
    pub file_systems: Vec<String>,
    /// Block devices or images at their host paths in the guest, and whether read-only (a base
    /// image being measured must not change).
    pub disks: Vec<(PathBuf, bool)>,
    /// Host directories the guest sees (at their paths), and what of them it may write.
    pub shares: Vec<fsage_vm::Share>,
    /// Where the command starts (relative paths in the request mean the same there).
    pub cwd: PathBuf,
    pub command: Vec<String>,
}

/// How a guest command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestOutcome {
    pub exit_code: i32,
    pub platform: PlatformKind,
    /// The guest kernel's release.
    pub release: String,
    pub boot_s: f64,
    /// The end of the command's stderr (for an error message).
    pub stderr_tail: String,
}

/// Runs a command in a guest.
pub trait Guest {
    fn run(&mut self, r: &GuestRun) -> Result<GuestOutcome, Error>;
}

/// The guest of this machine: QEMU, KVM when the CPU allows it, else TCG.
pub struct QemuGuest {
    /// Copy the guest's output through as it comes (a command's own output), or keep it.
    pub echo: bool,
}

impl Guest for QemuGuest {
    fn run(&mut self, r: &GuestRun) -> Result<GuestOutcome, Error> {
        let kernel = fsage_vm::resolve_kernel(r.kernel.as_deref(), None)?;
        let out = fsage_vm::run(&fsage_vm::RunOptions {
            kernel,
            mem_mib: GUEST_MEM_MIB,
            cpus: fsage_vm::DEFAULT_CPUS,
            accel: fsage_vm::AccelRequest::Auto,
            disks: r
                .disks
                .iter()
                .map(|(p, ro)| fsage_vm::Disk {
                    path: p.clone(),
                    read_only: *ro,
                })
                .collect(),
            shares: r.shares.clone(),
            file_systems: r.file_systems.clone(),
            command: r.command.clone(),
            cwd: r.cwd.clone(),
            env: Vec::new(),
            timeout: None,
            echo: self.echo,
            // Ctrl-C stops the step in the guest as it would here (its report written, its
            // mounts gone), and its result still comes back.
            graceful_stop: true,
        })?;
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(6).collect();
        Ok(GuestOutcome {
            exit_code: out.exit_code,
            platform: PlatformKind::parse(out.accel.name()).unwrap_or(PlatformKind::Tcg),
            release: out.release,
            boot_s: out.boot.as_secs_f64(),
            stderr_tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        })
    }
}

/// fsage's own binary (what a guest runs); `fsage` on the PATH if it cannot be found.
pub fn own_exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("fsage"))
}

/// The host that runs steps in a guest under `kernel`.
pub struct InGuest<'a> {
    pub guest: &'a mut dyn Guest,
    pub kernel: Option<String>,
    /// fsage's binary, which the guest runs.
    pub exe: PathBuf,
    /// Where the guest's command starts; relative paths of the request are taken from there.
    pub cwd: PathBuf,
    /// Where the private directory of the request and result is made.
    pub channel_parent: PathBuf,
}

/// The private directory of one step's request and result, removed with it.
struct Channel(PathBuf);

impl Drop for Channel {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl InGuest<'_> {
    /// What is given to the guest for `step` (its request written in `dir`): its disks, the
    /// shares its inputs and outputs need, the channel, and fsage's own directory when a share
    /// hides it.
    pub fn guest_run(&self, step: &Step, dir: &Path) -> GuestRun {
        let io = step.io();
        let mut shares = fsage_vm::dispatch::shares_for(&io.writes, &io.reads, &self.cwd);
        shares.push(
            fsage_vm::Share::staged(dir)
                .with_file("result.json")
                .with_read("request.json"),
        );
        GuestRun {
            kernel: self.kernel.clone(),
            file_systems: step.file_systems(),
            disks: io.disks,
            shares: fsage_vm::dispatch::with_program(shares, &self.exe),
            cwd: self.cwd.clone(),
            command: vec![
                self.exe.to_string_lossy().into_owned(),
                "step".into(),
                "--json".into(),
                dir.join("request.json").to_string_lossy().into_owned(),
                "--out".into(),
                dir.join("result.json").to_string_lossy().into_owned(),
            ],
        }
    }
}

impl crate::Host for InGuest<'_> {
    fn run(&mut self, step: &Step, _obs: &mut dyn StepObserver) -> Result<Ran, Error> {
        // The guest mounts in its own tmpfs: the host's mount point may not exist there.
        let mut step = step.clone();
        step.set_mount_point(Path::new(GUEST_MNT));
        let dir = fsage_sys::safe::create_private_dir(&self.channel_parent, "fsage-step-")?;
        let _gone = Channel(dir.clone());
        let req = dir.join("request.json");
        let text = serde_json::to_vec(&step).expect("steps are plain data");
        std::fs::write(&req, text).map_err(|e| Error::io(&req, "cannot write", e))?;
        let o = self.guest.run(&self.guest_run(&step, &dir))?;
        let what = step.name();
        let reply = std::fs::read(dir.join("result.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Reply>(&b).ok());
        let in_guest = |m: &str| format!("{m} (in the guest, kernel {})", o.release);
        match reply {
            Some(Reply::Ok(result)) => Ok(Ran {
                result,
                guest: Some(crate::GuestRecord {
                    platform: o.platform,
                    release: o.release.clone(),
                    boot_s: o.boot_s,
                }),
            }),
            Some(Reply::Err { message, blame }) => Err(Error {
                message: in_guest(&message),
                blame: blame.into(),
                remedy: None,
            }),
            None if o.exit_code == 130 => Err(Error::interrupted(format!(
                "{what}: interrupted in the guest"
            ))),
            None => Err(Error::operation(format!(
                "{what}: failed in the guest with no result (exit code {}, kernel {}): {}",
                o.exit_code,
                o.release,
                o.stderr_tail.trim()
            ))),
        }
    }
}
