//! One cell on its working copy: the slow device of its model, the workload step where the plan
//! put it, and the record of what ran and where.

use crate::analysis::{FlashCounters, FlowopLatency};
use crate::guest;
use crate::result::Environment;
use crate::runner::{CellRun, Event, RunObserver};
use crate::spec::{Cell, WorkloadSource};
use crate::{Error, Sample};
use fsage_host::{BenchStep, Mount, Step, StepResult, WorkloadText};
use fsage_lab::sparse::{copy_image, CopyOptions, Holes};
use fsage_slowdev::{Backing, DeviceMount, DeviceSpec};
use std::path::{Path, PathBuf};

use super::drive::DriveStart;
use super::{io_at, mount_options, step, BaseImage, LabExecutor};

impl LabExecutor {
    pub(super) fn cell_inner(
        &mut self,
        cell: &Cell,
        base: &BaseImage,
        start: DriveStart,
        work: &Path,
        mnt: &Path,
        obs: &mut dyn RunObserver,
    ) -> Result<CellRun, Error> {
        let (drive, placed) = match start {
            DriveStart::Restored(d) => (d, None),
            DriveStart::Placed(p) => (None, Some(p)),
        };
        // A placed image is on its drive already (copied through a device of its own).
        if placed.is_none() {
            copy_image(
                &base.image,
                work,
                CopyOptions {
                    force: false,
                    holes: Holes::Skip,
                    verify: false,
                },
            )
            .map_err(step("restoring the base image"))?;
        }
        std::fs::create_dir_all(mnt).map_err(io_at(mnt.display()))?;
        let mut device: Option<DeviceMount> = None;
        // The device's model (a latency is the fixed model, which the daemon serves on its fast
        // path) on the working copy, so the model is built for the image's size (the experiment
        // file was refused if the model could not hold it).
        let spec = cell
            .device
            .as_ref()
            .map(|m| DeviceSpec::with_model(Backing::Image(work.to_path_buf()), m.clone()));
        let block: PathBuf = match spec {
            Some(mut spec) => {
                // The drive state copied beside the working copy (see `drive_of`), or an erased
                // drive; what the device saves at the end goes with the copy.
                spec.fresh_state = drive.is_none() && placed.is_none();
                spec.registry = self.registry.root().to_path_buf();
                let d = device.insert(DeviceMount::create(&spec).map_err(step("slow device"))?);
                d.path().to_path_buf()
            }
            None => work.to_path_buf(),
        };
        // The workload where the plan put the cell: one step that mounts the device (or the
        // working copy), runs the workload and unmounts, here or in a guest.
        let runs = crate::spec::runs_of(cell);
        let bench = Step::Bench(Box::new(BenchStep {
            mount: Mount {
                device: block.clone(),
                fs: cell.fs.kind.clone(),
                options: mount_options(cell),
                point: mnt.to_path_buf(),
            },
            workload: match &cell.workload.source {
                WorkloadSource::Builtin { name } => WorkloadText::Builtin { name: name.clone() },
                WorkloadSource::File { path, text } => WorkloadText::File {
                    origin: path.display().to_string(),
                    text: text.clone(),
                },
            },
            set: cell.workload.set.clone(),
            duration_s: cell.duration_s,
            warmup_s: cell.warmup_s,
            seed: cell.seed,
            cache_ratio: cell.cache_ratio,
            sample_s: cell.sample_s,
            lock_stats: cell.lock_stats,
            data: cell.workload.data,
        }));
        if runs.is_guest() {
            obs.event(&Event::Note(&format!(
                "{}: mounting and running {} in a VM{}",
                cell.fs.label,
                cell.workload.label,
                cell.fs
                    .kernel
                    .as_ref()
                    .map_or(String::new(), |k| format!(" under kernel {k}"))
            )));
        }
        let ran = self.run_step(&runs, &bench, obs);
        // A file system the step could not unmount is still on the device (here; a guest's
        // mounts end with it).
        let still_mounted = fsage_sys::mountinfo::is_mount_point(mnt);
        let stats = device.as_ref().and_then(|d| d.device().stats().ok());
        let dev_json = device.as_ref().and_then(|d| {
            let mut v = serde_json::to_value(d.device().record()).ok()?;
            if let (Some(o), Some(st)) = (v.as_object_mut(), &stats) {
                o.insert("stats".into(), serde_json::to_value(st).ok()?);
            }
            Some(v)
        });
        // An SSD's counters over the cell (fileset creation and warm-up included).
        let flash = stats
            .as_ref()
            .and_then(|st| st.model.as_ref()?.stats.as_ref()?.ssd())
            .map(FlashCounters::from);
        let destroyed = match device {
            // Stopping the daemon under a file system that is still mounted would fail its I/O:
            // the device stays for the next run's clean-up.
            Some(d) if still_mounted => {
                std::mem::forget(d);
                Ok(())
            }
            Some(d) => d.finish().map_err(step("slow device")),
            None => Ok(()),
        };
        let ran = ran?;
        destroyed?;
        let vm = ran.guest;
        let StepResult::Bench(r) = ran.result else {
            return Err(Error::operation("workload: the host answered another step"));
        };
        let Some(rep) = r.reps.first() else {
            return Err(Error::operation("workload: no repetition was measured"));
        };
        let sample = Sample {
            fs: cell.fs.label.clone(),
            state: cell.analysis_state(),
            workload: cell.workload.label.clone(),
            latency_us: cell.latency_us(),
            device_model: cell.device_label(),
            rep: cell.rep,
            ops_per_s: rep.overall.ops_per_sec,
            flowops: rep
                .flowops
                .iter()
                .filter_map(|f| {
                    Some(FlowopLatency {
                        flowop: f.name.clone(),
                        p99_us: f.stats.p99_us?,
                        max_us: f.stats.max_us?,
                    })
                })
                .collect(),
            flash,
            platform: Default::default(),
        };
        if rep.overall.ops == 0 && !r.interrupted {
            return Err(Error::operation(
                "workload: no operation completed in the measured time",
            ));
        }
        let (drive, placement) = match placed {
            Some(p) => (p.drive_state, Some(p.record)),
            None => (drive, None),
        };
        let mut env = Environment {
            drive_state: drive,
            placement,
            storage: Some(self.storage.clone()),
            ..environment(cell, base, &r.workload_text, dev_json)
        };
        let mut sample = sample;
        if let Some(o) = &vm {
            guest::in_guest(&mut env, &mut sample, &r, o);
        }
        let r = *r;
        Ok(CellRun {
            samples: vec![sample],
            environment: Some(env),
            workload_report: serde_json::to_value(&r).ok(),
            interrupted: r.interrupted,
            base_seconds: None,
        })
    }
}

fn environment(
    cell: &Cell,
    base: &BaseImage,
    workload_text: &str,
    device: Option<serde_json::Value>,
) -> Environment {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024);
    Environment {
        fsage_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: fsage_sys::kernel_release(),
        hostname: read("/proc/sys/kernel/hostname"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        memory_bytes,
        fs_kind: cell.fs.kind.clone(),
        mkfs_opts: cell.fs.mkfs_opts.clone(),
        image_sha256: Some(base.sha256.clone()),
        seed: cell.seed,
        workload_text: workload_text.to_string(),
        device,
        drive_state: None,
        placement: None,
        platform: Default::default(),
        vm: None,
        cpu_model: cpu_model(),
        slurm_job: slurm_job(),
        storage: None,
    }
}

/// The CPU's model name (`/proc/cpuinfo`), what tells two nodes' hardware apart.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The Slurm job (`ARRAYJOB_TASK`, or the job id) this process runs in, when it runs in one.
pub fn slurm_job() -> Option<String> {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    match (var("SLURM_ARRAY_JOB_ID"), var("SLURM_ARRAY_TASK_ID")) {
        (Some(a), Some(t)) => Some(format!("{a}_{t}")),
        _ => var("SLURM_JOB_ID"),
    }
}
