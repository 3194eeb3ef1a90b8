use super::*;
use fsage_host::{GuestOutcome, GuestRun};

/// The disks each guest run was given, and whether read-only.
type Given = std::sync::Arc<std::sync::Mutex<Vec<Vec<(PathBuf, bool)>>>>;

/// A guest whose command fails, and that keeps what it was given.
struct FailingGuest(Given);
impl Guest for FailingGuest {
    fn run(&mut self, r: &GuestRun) -> Result<GuestOutcome, Error> {
        self.0.lock().unwrap().push(r.disks.clone());
        Ok(GuestOutcome {
            exit_code: 1,
            platform: fsage_sys::PlatformKind::Tcg,
            release: "6.1.0-56-amd64".into(),
            boot_s: 0.1,
            stderr_tail: "fsage: error: the stand-in guest fails".into(),
        })
    }
}

/// Aging on an SSD drive in a guest that fails: the base is refused with the guest's
/// message, the drive keeps no state (a base made again starts from an erased drive), and
/// the loop device and the trace the host made for the guest are gone.
#[test]
fn a_guest_that_fails_to_age_on_a_drive_leaves_no_drive_state_loop_device_or_trace() {
    let test = "a_guest_that_fails_to_age_on_a_drive";
    if let Err(e) = fsage_testkit::need_root_and(&["mkfs.f2fs", "losetup"]) {
        return fsage_testkit::skip(test, e);
    }
    let dir = fsage_testkit::shm_tmp("fsage-lab-guestfail-");
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/experiments/geriatrix-ssd/ssd-92.toml"),
    )
    .unwrap()
    .replace("\"1113MiB\"", "\"140MiB\"");
    std::fs::write(dir.path().join("ssd.toml"), model).unwrap();
    let text = "name = \"t\"\nduration = \"1s\"\nimage_size = \"128MiB\"\n\
                    [devices]\nlatencies = [\"ssd.toml\"]\n\
                    [[fs]]\nkind = \"f2fs\"\nkernel = \"6.1.0-56\"\n\
                    [[state]]\nkind = \"aged\"\nprofile = \"meyer\"\nmax_ops = 100\n\
                    [[workload]]\nname = \"varmail\"\n";
    let plan = crate::spec::parse(text, "t.toml", dir.path())
        .unwrap()
        .plan();
    let cell = &plan.cells[0];
    assert!(drive_model(cell).is_some() && crate::spec::runs_of(cell).is_guest());
    let seen: Given = Default::default();
    let images = dir.path().join("images");
    let mut ex = LabExecutor::new(&dir.path().join("out"), &images, &Default::default())
        .unwrap()
        .with_guest(Box::new(FailingGuest(seen.clone())));
    let e = ex
        .make_base_of(cell, &mut crate::runner::Quiet)
        .unwrap_err();
    assert!(
        e.message.contains("aging: failed in the guest")
            && e.message.contains("the stand-in guest fails"),
        "{e}"
    );
    // The guest was given one writable loop device; it is detached now.
    let given = seen.lock().unwrap().clone();
    assert_eq!(given.len(), 1, "{given:?}");
    let disks = &given[0];
    assert!(!disks[0].1);
    let name = disks[0]
        .0
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("loop"), "{disks:?}");
    let backing =
        std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).unwrap_or_default();
    assert!(
        !backing.contains(&*images.to_string_lossy()),
        "{name} still holds {backing}"
    );
    // No drive state beside any image, and no trace instance of this process left.
    for e in std::fs::read_dir(&images).unwrap() {
        let p = e.unwrap().path();
        assert!(p.extension().is_none_or(|x| x != "ftl"), "{}", p.display());
    }
    let own = format!("fsage-{}-", std::process::id());
    if let Ok(rd) = std::fs::read_dir("/sys/kernel/tracing/instances") {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            assert!(!n.starts_with(&own), "trace instance {n} left");
        }
    }
}

/// The steps a host or a stand-in guest was asked to run, as data.
type Asked = std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>;

/// This process's host, recording each step it runs.
struct RecordingLocal(Asked);
impl Host for RecordingLocal {
    fn run(&mut self, step: &Step, obs: &mut dyn fsage_host::StepObserver) -> Result<Ran, Error> {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_value(step).unwrap());
        fsage_host::Local.run(step, obs)
    }
}

/// A guest that is this process: it reads the request it is handed (`fsage step --json REQ
/// --out RES`), records it, and serves it here, mounting in a private directory of its own
/// instead of the guest's tmpfs.
struct StandInGuest {
    asked: Asked,
    mnt: PathBuf,
}
impl Guest for StandInGuest {
    fn run(&mut self, r: &GuestRun) -> Result<GuestOutcome, Error> {
        assert_eq!(r.command[1..3], ["step", "--json"], "{:?}", r.command);
        assert_eq!(r.command[4], "--out");
        let (req, res) = (PathBuf::from(&r.command[3]), PathBuf::from(&r.command[5]));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&req).unwrap()).unwrap();
        self.asked.lock().unwrap().push(v);
        let mut step: Step = serde_json::from_slice(&std::fs::read(&req).unwrap()).unwrap();
        step.set_mount_point(&self.mnt);
        std::fs::write(&req, serde_json::to_vec(&step).unwrap()).unwrap();
        let code = match fsage_host::serve(&req, &res) {
            Ok(()) => 0,
            Err(_) => 1,
        };
        Ok(GuestOutcome {
            exit_code: code,
            platform: fsage_sys::PlatformKind::Tcg,
            release: "stand-in".into(),
            boot_s: 0.0,
            stderr_tail: String::new(),
        })
    }
}

/// A step with the paths that differ between two runs (images, working copies, mount
/// points) left out.
fn without_paths(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(m) = v.get_mut("mount").and_then(|m| m.as_object_mut()) {
        m.remove("device");
        m.remove("point");
    }
    v
}

/// The native and the guest path of one experiment cell go through the same host: the same
/// steps (the base's layout, the workload), the same requests, and a result from each.
#[test]
fn a_cell_runs_the_same_steps_natively_and_in_a_guest() {
    let test = "a_cell_runs_the_same_steps_natively_and_in_a_guest";
    if let Err(e) = fsage_testkit::need_root_and(&["mkfs.ext4", "losetup"]) {
        return fsage_testkit::skip(test, e);
    }
    let dir = fsage_testkit::shm_tmp("fsage-lab-host-");
    let text = "name = \"t\"\nduration = \"1s\"\nwarmup = \"0s\"\nimage_size = \"64MiB\"\n\
                    [[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n\
                    [[workload]]\nname = \"varmail\"\nset = { nfiles = 20, filesize = \"4k\" }\n";
    let plan = crate::spec::parse(text, "t.toml", dir.path())
        .unwrap()
        .plan();
    let native = plan.cells[0].clone();
    assert_eq!(native.runs, Some(Runs::Native), "decided at plan time");
    let mut in_guest = native.clone();
    in_guest.runs = Some(Runs::Guest { kernel: None });
    let here: Asked = Default::default();
    let there: Asked = Default::default();
    let mnt = dir.path().join("guest-mnt");
    let run = |cell: &Cell, name: &str| {
        let mut ex = LabExecutor::new(
            &dir.path().join(format!("out-{name}")),
            &dir.path().join(format!("images-{name}")),
            &Default::default(),
        )
        .unwrap()
        .with_local_host(Box::new(RecordingLocal(here.clone())))
        .with_guest(Box::new(StandInGuest {
            asked: there.clone(),
            mnt: mnt.clone(),
        }));
        ex.run_cell(cell, &mut crate::runner::Quiet).unwrap()
    };
    let a = run(&native, "native");
    let native_steps: Vec<serde_json::Value> = std::mem::take(&mut *here.lock().unwrap());
    assert!(
        there.lock().unwrap().is_empty(),
        "a native cell asked the guest"
    );
    let b = run(&in_guest, "guest");
    assert!(
        here.lock().unwrap().is_empty(),
        "a guest cell ran a step here"
    );
    let guest_steps: Vec<serde_json::Value> = there.lock().unwrap().clone();
    let kinds = |v: &[serde_json::Value]| -> Vec<String> {
        v.iter()
            .map(|s| s["step"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(&native_steps), ["frag", "bench"]);
    assert_eq!(kinds(&guest_steps), ["frag", "bench"]);
    for (n, g) in native_steps.iter().zip(&guest_steps) {
        assert_eq!(without_paths(n.clone()), without_paths(g.clone()));
    }
    // The guest mounts in its own directory, not the host's.
    assert_eq!(
        guest_steps[1]["mount"]["point"],
        fsage_host::guest::GUEST_MNT
    );
    // Both measured; the guest's cell says where it ran.
    assert!(a.samples[0].ops_per_s > 0.0 && b.samples[0].ops_per_s > 0.0);
    // (The stand-in's result says it ran natively, as it did: the platform label is the
    // result's own.)
    let env = b.environment.unwrap();
    assert_eq!(env.vm.unwrap().boot_s, 0.0);
    assert!(a.environment.unwrap().vm.is_none());
}

#[test]
fn the_probe_is_a_32nd_of_the_image_at_most_32_mib_and_fits() {
    const MIB: u64 = 1 << 20;
    assert_eq!(probe_bytes(4 << 30, 2 << 30), 32 * MIB);
    assert_eq!(probe_bytes(256 * MIB, 200 * MIB), 8 * MIB);
    // Too full for 8 MiB: half of what is available.
    assert_eq!(probe_bytes(256 * MIB, 10 * MIB), 5 * MIB);
    assert_eq!(probe_bytes(64 * MIB, 0), MIB);
}
