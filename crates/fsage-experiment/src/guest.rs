//! Cells that need another kernel: the `[[fs]]` names one (`kernel = "6.1.0-56"`), or the host's
//! kernel lacks the file system (f2fs, nilfs2 here). What needs no kernel stays on the host
//! (mkfs, the copy of the base image, the slow device and its model); what needs one (aging,
//! mounting, the workload, the layout) is a step ([`fsage_host::Step`]) that the lab hands to
//! the host the plan chose for the cell ([`crate::spec::runs_of`]): the same request whether it
//! runs here or in a guest, and the same result back. This module holds what is the
//! experiment's own about guests: the plan's boot allowance, the checks before a run, and how a
//! guest's result is recorded.

use crate::Error;

pub use fsage_host::guest::{own_exe, GUEST_MEM_MIB};

/// What the plan adds per cell that runs in a VM (a plan's data, so fsage-results').
pub use fsage_results::experiment::BOOT_ALLOWANCE_S;

/// What a cell the plan put in a guest ([`crate::spec::runs_of`]) needs on this machine: QEMU,
/// a binary the guest can see, and the kernel (cached: `fsage vm kernel fetch`). Nothing for a
/// cell that runs natively. `what` names the cell or file system in the message.
pub fn check_runs(runs: &fsage_host::Runs, what: &str) -> Result<(), Error> {
    let fsage_host::Runs::Guest { kernel } = runs else {
        return Ok(());
    };
    if fsage_sys::find_cmd("qemu-system-x86_64").is_none() {
        return Err(Error::input(format!(
            "{what} runs in a VM{}, and qemu-system-x86_64 is not installed",
            kernel
                .as_ref()
                .map_or(String::new(), |k| format!(" under kernel {k}"))
        )));
    }
    fsage_vm::check_visible(&own_exe())?;
    fsage_vm::resolve_kernel(kernel.as_deref(), None).map_err(|e| Error {
        message: format!("{what}: {}", e.message),
        ..e
    })?;
    Ok(())
}

/// A cell's record when its workload ran in a guest: the guest's kernel, CPUs and platform, the
/// host's kernel and the boot; the sample's file system label says "emulated (TCG)" (or "KVM"),
/// so that no analysis puts it beside a native cell of the same file system.
pub fn in_guest(
    env: &mut crate::Environment,
    sample: &mut crate::Sample,
    r: &fsage_workload::BenchResult,
    o: &fsage_host::GuestRecord,
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

/// How a platform is named beside a file system (fsage-results': the report names it too).
pub use fsage_results::experiment::result::platform_label;

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_sys::PlatformKind;

    #[test]
    fn a_guests_result_records_its_kernel_and_platform_and_labels_the_sample() {
        let json = include_str!("../tests/data/bench-tcg.json");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bench.json");
        std::fs::write(&f, json).unwrap();
        let r: fsage_workload::BenchResult =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
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
        let o = fsage_host::GuestRecord {
            platform: PlatformKind::Tcg,
            release: "6.1.0-56-amd64".into(),
            boot_s: 4.5,
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
