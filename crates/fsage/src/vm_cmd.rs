//! `fsage vm run|info|kernel`: commands in a QEMU guest (fsage-vm), for file systems the host
//! kernel lacks or under a chosen kernel.

use crate::exit::{bad_input, CmdError, CmdResult};
use clap::{Args, Subcommand};
use fsage_vm::{AccelRequest, Disk, RunOptions};

use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand, Debug)]
pub enum VmCmd {
    /// Boot a kernel in QEMU with the host's / shared read-only and run CMD there (after --);
    /// exits with CMD's exit code.
    Run(VmRunArgs),
    /// The accelerator a guest would get (KVM or TCG) and why, QEMU's version, the kernel cache.
    Info,
    /// The kernel cache: fetch a Debian kernel package (never installed on the host), list.
    #[command(subcommand)]
    Kernel(KernelCmd),
}

#[derive(Subcommand, Debug)]
pub enum KernelCmd {
    /// Download linux-image-VERSION-amd64 with apt-get and unpack it into the cache.
    Fetch {
        /// e.g. 6.1.0-56 (default: the newest 6.1.0-NN apt knows).
        version: Option<String>,
    },
    /// The cached kernels.
    List,
}

#[derive(Args, Debug)]
pub struct VmRunArgs {
    /// A cached kernel release (e.g. 6.1.0-56) or a kernel image path (then give --modules).
    /// Default: the newest cached kernel.
    #[arg(long, value_name = "VERSION|PATH")]
    pub kernel: Option<String>,
    /// The lib/modules/RELEASE directory of a kernel given by path.
    #[arg(long, value_name = "DIR")]
    pub modules: Option<PathBuf>,
    /// Guest memory (e.g. 2G, 512M).
    #[arg(long, default_value = "2G", value_parser = fsage_units::parse_size)]
    pub mem: u64,
    /// Guest CPUs.
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// An image file or block device, a virtio disk in the guest at the same path (repeat).
    #[arg(long, value_name = "IMG")]
    pub disk: Vec<PathBuf>,
    /// A host directory the guest may write, at the same path (repeat): it may create, change
    /// and remove anything in it, but what it makes there is root's, mode 0600 on the host,
    /// never setuid or a device (QEMU's mapped-xattr). The rest of / is read-only; /tmp,
    /// /dev/shm and /run are the guest's own.
    #[arg(long, value_name = "DIR")]
    pub share: Vec<PathBuf>,
    /// File systems whose modules the guest loads (comma-separated; each costs boot time under
    /// TCG; `none` for none).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ext4,xfs,btrfs,f2fs,nilfs2"
    )]
    pub fs: Vec<String>,
    /// auto: KVM when the CPU virtualises and /dev/kvm opens, TCG (emulated) otherwise.
    #[arg(long, default_value = "auto", value_name = "auto|kvm|tcg")]
    pub accel: String,
    /// Stop the guest after this long (e.g. 10m).
    #[arg(long, value_name = "DUR", value_parser = crate::util::positive_duration)]
    pub timeout: Option<Duration>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct StepArgs {
    /// The step request ([`fsage_host::Step`] as JSON).
    #[arg(long, value_name = "REQUEST")]
    pub json: PathBuf,
    /// Where its result goes (the result, or the error with its blame, as JSON).
    #[arg(long, value_name = "RESULT")]
    pub out: PathBuf,
}

/// `fsage step`: runs a step request here (in a guest, what the host handed it).
pub fn step(a: StepArgs) -> CmdResult {
    fsage_host::serve(&a.json, &a.out).map_err(Into::into)
}

pub fn run(cmd: VmCmd) -> CmdResult {
    fsage_signals::install();
    match cmd {
        VmCmd::Run(a) => run_in_vm(a),
        VmCmd::Info => {
            let i = fsage_vm::info()?;
            println!("accelerator: {} ({})", i.accel.accel.name(), i.accel.why);
            if i.accel.accel == fsage_vm::Accel::Tcg {
                println!("  timings in the guest are emulated: they compare only with each other");
            }
            println!(
                "qemu:        {}",
                i.qemu
                    .as_deref()
                    .unwrap_or("not installed (qemu-system-x86)")
            );
            println!(
                "busybox:     {}",
                i.busybox
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "not installed (busybox-static)".into())
            );
            println!("cache:       {}", i.cache.display());
            if i.kernels.is_empty() {
                println!("kernels:     none (fsage vm kernel fetch)");
            }
            for (k, fs) in &i.kernels {
                println!(
                    "kernel:      {} ({}) boots {}; mounts {}",
                    k.kernel.release,
                    k.package,
                    k.kernel.image.display(),
                    fs.join(", ")
                );
            }
            Ok(())
        }
        VmCmd::Kernel(KernelCmd::Fetch { version }) => {
            let k = fsage_vm::fetch_kernel(version.as_deref(), |m| eprintln!("fsage: {m}"))?;
            println!("{} in {}", k.kernel.release, k.dir.display());
            Ok(())
        }
        VmCmd::Kernel(KernelCmd::List) => {
            for k in fsage_vm::list_kernels()? {
                println!("{}\t{}\t{}", k.kernel.release, k.package, k.dir.display());
            }
            Ok(())
        }
    }
}

fn run_in_vm(a: VmRunArgs) -> CmdResult {
    let accel = AccelRequest::parse(&a.accel).map_err(|e| bad_input(format!("--accel: {e}")))?;
    if a.cpus == 0 {
        crate::bail_input!("--cpus: must be at least 1");
    }
    fsage_vm::check_memory(a.mem >> 20, fsage_vm::host_memory())
        .map_err(|e| bad_input(format!("--mem: {}", e.message)))?;
    fsage_vm::check_file_systems(&a.fs).map_err(|e| bad_input(format!("--fs: {}", e.message)))?;
    let kernel = fsage_vm::resolve_kernel(a.kernel.as_deref(), a.modules.as_deref())?;
    let opts = RunOptions {
        kernel,
        mem_mib: a.mem >> 20,
        cpus: a.cpus,
        accel,
        disks: a
            .disk
            .into_iter()
            .map(|path| Disk {
                path,
                read_only: false,
            })
            .collect(),
        shares: a.share.into_iter().map(fsage_vm::Share::writable).collect(),
        file_systems: a.fs,
        command: a.command,
        cwd: std::env::current_dir().unwrap_or_else(|_| "/".into()),
        env: Vec::new(),
        timeout: a.timeout,
        echo: true,
        graceful_stop: false,
    };
    let out = fsage_vm::run(&opts)?;
    eprintln!(
        "fsage: guest {} on {} ({}): booted in {:.1}s, ran {:.1}s in all; exit code {}",
        out.release,
        out.accel.name(),
        if out.accel.platform().is_emulated() {
            "emulated"
        } else {
            "virtualised"
        },
        out.boot.as_secs_f64(),
        out.total.as_secs_f64(),
        out.exit_code
    );
    match out.exit_code {
        0 => Ok(()),
        c => Err(CmdError::exact(c.clamp(1, 255) as u8)),
    }
}

/// Where a command on `kind` runs: in a guest when asked for (`--vm`), or when the running
/// kernel lacks the file system and `--no-vm` was not given; never from inside a guest. Says so
/// on stderr, with the accelerator: timings under TCG are emulated.
pub fn where_to_run(kind: fsage_lab::FsKind, vm: bool, no_vm: bool) -> fsage_host::Runs {
    let Some(why) = fsage_vm::reason_to_dispatch(kind.check_kernel(), vm, no_vm) else {
        return fsage_host::Runs::Native;
    };
    let accel = fsage_vm::choose_accel(AccelRequest::Auto).map(|c| c.accel);
    eprintln!(
        "fsage: running in a VM ({}): {why}",
        match accel {
            Ok(fsage_vm::Accel::Tcg) => "TCG, emulated",
            Ok(fsage_vm::Accel::Kvm) => "KVM",
            Err(_) => "no accelerator",
        }
    );
    fsage_host::Runs::Guest { kernel: None }
}

/// Runs `step` where `runs` says: here, or in a guest whose output is copied through.
pub fn run_step(
    runs: &fsage_host::Runs,
    step: &fsage_host::Step,
    obs: &mut dyn fsage_host::StepObserver,
) -> Result<fsage_host::Ran, CmdError> {
    use fsage_host::Host;
    Ok(match runs {
        fsage_host::Runs::Native => fsage_host::Local.run(step, obs)?,
        fsage_host::Runs::Guest { kernel } => fsage_host::InGuest {
            guest: &mut fsage_host::QemuGuest { echo: true },
            kernel: kernel.clone(),
            exe: fsage_host::guest::own_exe(),
            cwd: std::env::current_dir().unwrap_or_else(|_| "/".into()),
            channel_parent: std::env::temp_dir(),
        }
        .run(step, obs)?,
    })
}
