//! Cells that need another kernel: the `[[fs]]` names one (`kernel = "6.1.0-56"`), or the host's
//! kernel lacks the file system (f2fs, nilfs2 here). What needs no kernel stays on the host
//! (mkfs, the copy of the base image, the slow device and its model); what needs one (aging,
//! mounting, the workload) is fsage's own command line run in a QEMU guest ([`fsage_vm`]), whose
//! results come back as JSON files in a shared directory and are read back into the same
//! [`crate::runner::CellRun`] as a native cell's.
//!
//! The guest is behind [`Guest`] so that the command lines and the mapping of results are tested
//! without QEMU.

use crate::spec::{Cell, FsSpec, WorkloadSource};
use crate::Error;
use fsage_sys::PlatformKind;
use std::path::{Path, PathBuf};

/// Seconds a guest takes to boot under TCG on this machine (BENCHMARKS.md: 3-8 s, more under
/// load): what the plan adds per cell that runs in a VM.
pub const BOOT_ALLOWANCE_S: f64 = 10.0;

/// Whether cells of `fs` run in a VM: it names a kernel, or this kernel cannot mount it.
pub fn needs_vm(fs: &FsSpec) -> bool {
    fs.kernel.is_some()
        || fsage_lab::FsKind::parse(&fs.kind).is_ok_and(|k| k.check_kernel().is_err())
}

/// What cells of `fs` need on this machine when they run in a VM: QEMU and the kernel (cached:
/// `fsage vm kernel fetch`). Nothing when they run natively.
pub fn check_guest(fs: &FsSpec) -> Result<(), Error> {
    if !needs_vm(fs) {
        return Ok(());
    }
    if fsage_sys::find_cmd("qemu-system-x86_64").is_none() {
        return Err(Error::input(format!(
            "{} runs in a VM{}, and qemu-system-x86_64 is not installed",
            fs.label,
            fs.kernel
                .as_ref()
                .map_or(String::new(), |k| format!(" under kernel {k}"))
        )));
    }
    let exe = own_exe();
    fsage_vm::check_visible(&exe)?;
    fsage_vm::resolve_kernel(fs.kernel.as_deref(), None).map_err(|e| Error {
        message: format!("{}: {}", fs.label, e.message),
        ..e
    })?;
    Ok(())
}

/// fsage's own binary (what a guest runs); `fsage` on the PATH if it cannot be found.
pub fn own_exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("fsage"))
}

/// One command in a guest.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestRun {
    /// A cached kernel release (`None`: the newest cached).
    pub kernel: Option<String>,
    /// File systems whose modules the guest loads.
    pub file_systems: Vec<String>,
    /// Block devices or images, at their host paths in the guest.
    pub disks: Vec<PathBuf>,
    /// The disks are given read-only (a base image being measured must not change).
    pub read_only: bool,
    /// Host directories the guest sees (at their paths), and what of them it may write.
    pub shares: Vec<fsage_vm::Share>,
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
pub struct QemuGuest;

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
                .map(|p| fsage_vm::Disk {
                    path: p.clone(),
                    read_only: r.read_only,
                })
                .collect(),
            shares: r.shares.clone(),
            file_systems: r.file_systems.clone(),
            command: r.command.clone(),
            cwd: "/".into(),
            env: Vec::new(),
            timeout: None,
            echo: false,
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

/// Where the cell's file system is mounted in the guest (the guest's own tmpfs).
pub const GUEST_MNT: &str = "/tmp/fsage-cell";

/// `sh -c` script quoting.
fn q(s: &str) -> String {
    fsage_vm::run::shell_quote(s)
}

fn ms(s: f64) -> String {
    format!("{}ms", (s * 1000.0).round() as u64)
}

/// ` -o OPTIONS` of a working copy of the cell's file system (xfs's `nouuid`), as natively.
fn copy_mount_opts(cell: &Cell) -> String {
    match fsage_lab::FsKind::by_name(&cell.fs.kind).map(|k| k.copy_mount_options()) {
        Some(o) if !o.is_empty() => format!(" -o {o}"),
        _ => String::new(),
    }
}

/// The guest command of a cell: mount `dev` (xfs with `nouuid`, as natively), run the cell's
/// workload with its settings into `json`, unmount; exits with the workload's code (3: the
/// mount failed; 4: only the unmount did). `workload_file`: where a workload given as a file
/// was written for the guest (its text as planned).
pub fn bench_command(
    exe: &Path,
    cell: &Cell,
    dev: &Path,
    workload_file: Option<&Path>,
    json: &Path,
) -> Vec<String> {
    let exe = q(&exe.to_string_lossy());
    let mnt = q(GUEST_MNT);
    let bench = q(&format!("{GUEST_MNT}/bench"));
    let opts = copy_mount_opts(cell);
    let w = match (&cell.workload.source, workload_file) {
        (_, Some(f)) => f.to_string_lossy().into_owned(),
        (WorkloadSource::Builtin { name }, None) => name.clone(),
        (WorkloadSource::File { path, .. }, None) => path.to_string_lossy().into_owned(),
    };
    let mut run = format!(
        "{exe} bench run {} {bench} --duration {} --warmup {} --seed {} --drop-caches -q --json {}",
        q(&w),
        ms(cell.duration_s),
        ms(cell.warmup_s),
        cell.seed,
        q(&json.to_string_lossy())
    );
    if let Some(r) = cell.cache_ratio {
        run += &format!(" --cache-ratio {r}");
    }
    if let Some(s) = cell.sample_s {
        run += &format!(" --sample {}", ms(s));
    }
    for (k, v) in &cell.workload.set {
        run += &format!(" --set {}", q(&format!("{k}={v}")));
    }
    if let Some(d) = cell.workload.data {
        run += &format!(" --data {}", q(&d.name()));
    }
    let script = format!(
        "mkdir -p {mnt} && {exe} fs mount{opts} {dev} {mnt} || exit 3\n\
         mkdir {bench} || exit 3\n\
         {run}\n\
         rc=$?\n\
         {exe} fs umount {mnt} || {{ [ $rc = 0 ] && rc=4; }}\n\
         exit $rc\n",
        dev = q(&dev.to_string_lossy()),
    );
    vec!["sh".into(), "-c".into(), script]
}

/// The guest command that measures a base image's layout: mounted read-only (the base is
/// never written), `fsage frag --json`, unmounted; the probe (a write) is left out.
pub fn frag_command(exe: &Path, image: &Path, json: &Path) -> Vec<String> {
    let exe = q(&exe.to_string_lossy());
    let mnt = q(GUEST_MNT);
    let script = format!(
        "mkdir -p {mnt} && {exe} fs mount -o ro {img} {mnt} || exit 3\n\
         {exe} frag {mnt} --json {json} >/dev/null\n\
         rc=$?\n\
         {exe} fs umount {mnt} || {{ [ $rc = 0 ] && rc=4; }}\n\
         exit $rc\n",
        img = q(&image.to_string_lossy()),
        json = q(&json.to_string_lossy()),
    );
    vec!["sh".into(), "-c".into(), script]
}

/// What a guest's exit code means for the cell (`what`: the step).
pub fn check_exit(what: &str, o: &GuestOutcome) -> Result<(), Error> {
    let why = match o.exit_code {
        0 => return Ok(()),
        3 => "mounting in the guest failed",
        4 => "it ran, but unmounting in the guest failed",
        130 => {
            return Err(Error::interrupted(format!(
                "{what}: interrupted in the guest"
            )))
        }
        _ => "failed in the guest",
    };
    Err(Error::operation(format!(
        "{what}: {why} (exit code {}, kernel {}): {}",
        o.exit_code,
        o.release,
        o.stderr_tail.trim()
    )))
}

/// An aged state's settings as `fsage age` options (the profile as the guest reads it).
pub struct AgeArgs<'a> {
    pub profile: &'a str,
    pub fullness: Option<f64>,
    pub seed: Option<u64>,
    pub max_ops: Option<u64>,
    pub max_time_s: Option<f64>,
    /// Where the aging report goes.
    pub json: &'a Path,
}

impl AgeArgs<'_> {
    fn options(&self) -> Vec<String> {
        let mut c: Vec<String> = vec![
            "--profile".into(),
            self.profile.into(),
            "--checkpoint-interval".into(),
            "1h".into(),
            "--quiet".into(),
            "--json".into(),
            self.json.to_string_lossy().into_owned(),
        ];
        if let Some(s) = self.seed {
            c.extend(["--seed".into(), s.to_string()]);
        }
        if let Some(f) = self.fullness {
            c.extend(["--fullness".into(), f.to_string()]);
        }
        if let Some(n) = self.max_ops {
            c.extend(["--max-ops".into(), n.to_string()]);
        }
        if let Some(s) = self.max_time_s {
            c.extend(["--max-time".into(), ms(s)]);
        }
        c
    }
}

/// The guest command that ages a new image `image` of the cell's file system as `fsage age
/// --fs` does natively (the guest makes and loop-mounts it).
pub fn age_command(exe: &Path, cell: &Cell, a: &AgeArgs, image: &Path) -> Vec<String> {
    let mut c: Vec<String> = vec![
        exe.to_string_lossy().into_owned(),
        "age".into(),
        "--fs".into(),
        cell.fs.kind.clone(),
        "--size".into(),
        format!("{}B", cell.image_size),
    ];
    c.extend(a.options());
    if let Some(o) = &cell.fs.mkfs_opts {
        c.push(format!("--mkfs-opts={o}"));
    }
    c.push(image.to_string_lossy().into_owned());
    c
}

/// The guest command that ages the file system already made on `dev`, a host loop device whose
/// requests the host traces for the drive's model: mounted as a cell's is, aged at its root as
/// `fsage age --fs` ages a new image, writing data (which the drive must see; fallocate would
/// leave it nearly erased), unmounted. Exit codes as [`bench_command`]'s.
pub fn age_mounted_command(exe: &Path, cell: &Cell, a: &AgeArgs, dev: &Path) -> Vec<String> {
    let exe = q(&exe.to_string_lossy());
    let mnt = q(GUEST_MNT);
    let opts = copy_mount_opts(cell);
    let options: Vec<String> = a.options().iter().map(|o| q(o)).collect();
    let script = format!(
        "mkdir -p {mnt} && {exe} fs mount{opts} {dev} {mnt} || exit 3\n\
         {exe} age {} --write-mode write --force --state /tmp/fsage-age.state {mnt}\n\
         rc=$?\n\
         {exe} fs umount {mnt} || {{ [ $rc = 0 ] && rc=4; }}\n\
         exit $rc\n",
        options.join(" "),
        dev = q(&dev.to_string_lossy()),
    );
    vec!["sh".into(), "-c".into(), script]
}

/// Reads the bench result the guest wrote.
pub fn read_bench(json: &Path) -> Result<fsage_workload::BenchResult, Error> {
    let text = std::fs::read_to_string(json).map_err(|e| {
        Error::operation(format!(
            "{}: the guest wrote no benchmark result: {e}",
            json.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| Error::operation(format!("{}: not a benchmark result: {e}", json.display())))
}

/// A cell's record when its workload ran in a guest: the guest's kernel, CPUs and platform, the
/// host's kernel and the boot; the sample's file system label says "emulated (TCG)" (or "KVM"),
/// so that no analysis puts it beside a native cell of the same file system.
pub fn in_guest(
    env: &mut crate::Environment,
    sample: &mut crate::Sample,
    r: &fsage_workload::BenchResult,
    o: &GuestOutcome,
) {
    env.vm = Some(crate::result::VmRun {
        host_kernel: std::mem::replace(&mut env.kernel, r.environment.kernel.clone()),
        boot_s: o.boot_s,
    });
    env.cpus = r.environment.cpus as u32;
    env.memory_bytes = GUEST_MEM_MIB << 20;
    env.platform = r.environment.platform;
    sample.platform = env.platform;
    if let Some(l) = platform_label(env.platform) {
        sample.fs = format!("{}, {l}", sample.fs);
    }
}

/// Guest memory in MiB.
pub const GUEST_MEM_MIB: u64 = fsage_vm::DEFAULT_MEM_MIB;

/// How a platform is named beside a file system: `None` for native.
pub fn platform_label(p: PlatformKind) -> Option<&'static str> {
    match p {
        PlatformKind::Native => None,
        PlatformKind::Kvm => Some("VM (KVM)"),
        PlatformKind::Tcg => Some("emulated (TCG)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_sys::Blamed;

    fn cell(extra: &str) -> Cell {
        let spec = crate::spec::parse(
            &format!(
                "name = \"t\"\nduration = \"4s\"\nwarmup = \"1s\"\nsample = \"1s\"\n\
                 image_size = \"300MiB\"\nkernel = \"6.1.0-56\"\n{extra}\
                 [[fs]]\nkind = \"xfs\"\n[[state]]\nkind = \"fresh\"\n\
                 [[workload]]\nname = \"varmail\"\nset = {{ nfiles = 50, filesize = \"8k\" }}\n"
            ),
            "t.toml",
            Path::new("."),
        )
        .unwrap();
        spec.plan().cells.remove(0)
    }

    #[test]
    fn the_bench_command_mounts_runs_the_cells_settings_and_unmounts() {
        let c = cell("");
        assert!(needs_vm(&c.fs));
        let cmd = bench_command(
            Path::new("/x/fsage"),
            &c,
            Path::new("/dev/loop7"),
            None,
            Path::new("/s/it's/bench.json"),
        );
        assert_eq!(cmd[..2], ["sh", "-c"]);
        let s = &cmd[2];
        assert!(
            s.starts_with(
                "mkdir -p '/tmp/fsage-cell' && '/x/fsage' fs mount -o nouuid '/dev/loop7' \
                 '/tmp/fsage-cell' || exit 3\n"
            ),
            "{s}"
        );
        assert!(
            s.contains(
                "'/x/fsage' bench run 'varmail' '/tmp/fsage-cell/bench' --duration 4000ms \
                 --warmup 1000ms --seed 1 --drop-caches -q --json '/s/it'\\''s/bench.json' \
                 --sample 1000ms"
            ),
            "{s}"
        );
        assert!(s.contains("--set 'filesize=8k'"), "{s}");
        assert!(s.contains("--set 'nfiles=50'"), "{s}");
        assert!(s.ends_with(
            "rc=$?\n'/x/fsage' fs umount '/tmp/fsage-cell' || { [ $rc = 0 ] && rc=4; }\nexit $rc\n"
        ));
        // A workload file is run from where it was written for the guest.
        let cmd = bench_command(
            Path::new("/x/fsage"),
            &c,
            Path::new("/d"),
            Some(Path::new("/s/workload.f")),
            Path::new("/s/b.json"),
        );
        assert!(cmd[2].contains("bench run '/s/workload.f' "), "{}", cmd[2]);
    }

    #[test]
    fn the_age_command_is_fsage_age_fs_with_the_states_settings() {
        let c = cell("");
        let a = AgeArgs {
            profile: "agrawal",
            fullness: Some(0.5),
            seed: Some(3),
            max_ops: Some(1000),
            max_time_s: None,
            json: Path::new("/o/aging/b.json"),
        };
        let cmd = age_command(Path::new("/x/fsage"), &c, &a, Path::new("/i/b.img"));
        assert_eq!(
            cmd.join(" "),
            "/x/fsage age --fs xfs --size 314572800B --profile agrawal \
             --checkpoint-interval 1h --quiet --json /o/aging/b.json --seed 3 --fullness 0.5 \
             --max-ops 1000 /i/b.img"
        );
        // On a drive: the file system is made on the host; the guest mounts the device, ages
        // its root writing data, and unmounts.
        let cmd = age_mounted_command(Path::new("/x/fsage"), &c, &a, Path::new("/dev/loop9"));
        assert_eq!(
            cmd[2],
            "mkdir -p '/tmp/fsage-cell' && '/x/fsage' fs mount -o nouuid '/dev/loop9' \
             '/tmp/fsage-cell' || exit 3\n\
             '/x/fsage' age '--profile' 'agrawal' '--checkpoint-interval' '1h' '--quiet' \
             '--json' '/o/aging/b.json' '--seed' '3' '--fullness' '0.5' '--max-ops' '1000' \
             --write-mode write --force --state /tmp/fsage-age.state '/tmp/fsage-cell'\n\
             rc=$?\n'/x/fsage' fs umount '/tmp/fsage-cell' || { [ $rc = 0 ] && rc=4; }\n\
             exit $rc\n"
        );
    }

    #[test]
    fn the_frag_command_measures_the_base_read_only() {
        let c = frag_command(
            Path::new("/x/fsage"),
            Path::new("/i/b.img"),
            Path::new("/o/f.json"),
        );
        assert!(c[2].starts_with(
            "mkdir -p '/tmp/fsage-cell' && '/x/fsage' fs mount -o ro '/i/b.img' '/tmp/fsage-cell' || exit 3\n'/x/fsage' frag '/tmp/fsage-cell' --json '/o/f.json' >/dev/null\n"
        ), "{}", c[2]);
    }

    #[test]
    fn exit_codes_name_the_step_and_keep_the_guests_words() {
        let o = |code| GuestOutcome {
            exit_code: code,
            platform: PlatformKind::Tcg,
            release: "6.1.0-56-amd64".into(),
            boot_s: 4.0,
            stderr_tail: "fsage: error: mount: bad superblock\n".into(),
        };
        assert!(check_exit("workload", &o(0)).is_ok());
        let e = check_exit("workload", &o(3)).unwrap_err();
        assert!(e.message.contains("mounting in the guest failed"), "{e}");
        assert!(e.message.contains("bad superblock"), "{e}");
        assert!(e.message.contains("6.1.0-56-amd64"), "{e}");
        assert_eq!(e.blame(), fsage_sys::Blame::Operation);
        let e = check_exit("workload", &o(130)).unwrap_err();
        assert_eq!(e.blame(), fsage_sys::Blame::Interrupted);
    }

    #[test]
    fn a_guests_result_records_its_kernel_and_platform_and_labels_the_sample() {
        let json = include_str!("../tests/data/bench-tcg.json");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bench.json");
        std::fs::write(&f, json).unwrap();
        let r = read_bench(&f).unwrap();
        let mut env = crate::Environment {
            fsage_version: "x".into(),
            kernel: "6.18.0-host".into(),
            hostname: "h".into(),
            cpus: 2,
            memory_bytes: 24 << 30,
            fs_kind: "f2fs".into(),
            mkfs_opts: None,
            image_sha256: None,
            seed: 1,
            workload_text: String::new(),
            device: None,
            drive_state: None,
            placement: None,
            cpu_model: None,
            slurm_job: None,
            storage: None,
            platform: PlatformKind::Native,
            vm: None,
        };
        let mut sample = crate::Sample {
            fs: "f2fs".into(),
            state: crate::State::Fresh,
            workload: "varmail".into(),
            latency_us: Some(1000.0),
            device_model: None,
            rep: 0,
            ops_per_s: 1.0,
            flowops: Vec::new(),
            flash: None,
            platform: PlatformKind::Native,
        };
        let o = GuestOutcome {
            exit_code: 0,
            platform: PlatformKind::Tcg,
            release: "6.1.0-56-amd64".into(),
            boot_s: 4.5,
            stderr_tail: String::new(),
        };
        in_guest(&mut env, &mut sample, &r, &o);
        assert_eq!(env.kernel, r.environment.kernel);
        assert_eq!(env.platform, PlatformKind::Tcg);
        let vm = env.vm.as_ref().unwrap();
        assert_eq!(vm.host_kernel, "6.18.0-host");
        assert_eq!(vm.boot_s, 4.5);
        assert_eq!(env.memory_bytes, GUEST_MEM_MIB << 20);
        assert_eq!(sample.fs, "f2fs, emulated (TCG)");
        assert_eq!(sample.platform, PlatformKind::Tcg);
        let v = serde_json::to_value(&env).unwrap();
        assert_eq!(v["platform"], "tcg");
        assert!(v.get("platform").is_some());
    }
}
