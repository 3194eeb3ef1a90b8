//! Experiments: the comparisons aging is for.
//!
//! - [`spec`]: the experiment file (TOML, documented in `FORMAT/EXPERIMENT.md`), its validation
//!   with `file:line` errors, and its expansion into the matrix of [`spec::Cell`]s, each with a
//!   stable id and an estimated duration ([`spec::Plan`]).
//! - [`result`]: what a runner writes for each cell ([`result::CellResult`], one JSON file per
//!   cell), and reading a directory of them back.
//! - [`analysis`]: pure functions on [`analysis::Sample`]s: aged against fresh, latency sweeps
//!   against the slippery-slope model, classes and inversions.
//!
//! - [`runner`]: goes through a plan's cells, skipping the finished ones, writing each result the
//!   moment it ends, and reads an output directory back ([`runner::status`]); the cells' work is
//!   behind [`runner::Executor`].
//! - [`slurm`]: the same cells as Slurm jobs (`submit`, `run-cell`, Slurm-aware `status`,
//!   `cancel`), through the same runner loop and executor.
//! - [`lab`]: the executor of this machine: base images (fresh, aged, from the library), a sparse
//!   copy per cell, the slow device, the workload engine.
//! - [`storage`]: where each cell's working copy lives (`--scratch`), and the record of it.

pub mod analysis;
pub mod guest;
pub mod lab;
pub mod result;
pub mod runner;
pub mod slurm;
pub mod spec;
pub mod storage;

pub use analysis::{analyze, Analysis, AnalysisOptions, Sample, State};
pub use result::{CellResult, CellStatus, Environment};
pub use spec::{Cell, ExperimentSpec, Plan};

/// An error of this crate: a bad experiment file (with its file and line) or an unreadable result.
pub use fsage_sys::Error;

/// Lowercase hex of `bytes`: the hash parts of cell ids, base image names and scratch directories.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `fsage experiment plan`: the cells of `file` and their estimate, with a warning for each
/// library image a state names that the default library does not hold (a run would refuse it);
/// refused when an `[[fs]]` names a kernel the cache lacks.
pub fn plan_file(file: &std::path::Path) -> Result<Plan, Error> {
    let spec = spec::load(file)?;
    check_kernels(&spec)?;
    let mut plan = spec.plan();
    plan.warnings = spec.missing_images(&fsage_core::image::default_library_dir());
    if plan.vm_cells > 0 {
        plan.vm_accel = Some(match fsage_vm::choose_accel(fsage_vm::AccelRequest::Auto) {
            Ok(c) => format!("{}: {}", guest_accel_name(c.accel), c.why),
            Err(e) => format!("no guest can run here: {e}"),
        });
    }
    Ok(plan)
}

/// Every kernel an `[[fs]]` names must be in the kernel cache: the plan refuses one that is not
/// (as the run would, at its start), with the releases the cache has and how to fetch it.
fn check_kernels(spec: &ExperimentSpec) -> Result<(), Error> {
    for f in &spec.file_systems {
        if let Some(k) = &f.kernel {
            fsage_vm::resolve_kernel(Some(k), None).map_err(|e| {
                Error::input(format!(
                    "{}: [[fs]] {}: {}",
                    spec.origin, f.label, e.message
                ))
            })?;
        }
    }
    Ok(())
}

/// `KVM` or `TCG (emulated)`.
fn guest_accel_name(a: fsage_vm::Accel) -> &'static str {
    match a {
        fsage_vm::Accel::Kvm => "KVM",
        fsage_vm::Accel::Tcg => "TCG (emulated)",
    }
}

/// `fsage experiment run`: loads `file`, checks that this machine can run it (file system tools,
/// library images), takes the output directory's lock and runs every cell not done yet on this
/// machine ([`lab::LabExecutor`]), base images in `images` (default `out/images`).
pub fn run_file(
    file: &std::path::Path,
    out: &std::path::Path,
    images: Option<&std::path::Path>,
    scratch: &storage::Scratch,
    opts: &runner::RunOptions,
    obs: &mut dyn runner::RunObserver,
) -> Result<runner::RunSummary, Error> {
    let (spec, text) = spec::load_with_text(file)?;
    let plan = spec.plan();
    // Before the preflight, whose message for a missing image names `fsage image list` twice.
    if let Some(missing) = spec
        .missing_images(&fsage_core::image::default_library_dir())
        .into_iter()
        .next()
    {
        return Err(Error::input(missing));
    }
    lab::preflight(&spec, &plan)?;
    let images = images.map_or_else(|| out.join("images"), std::path::Path::to_path_buf);
    // Before anything is written: a refused image directory leaves no output directory behind.
    lab::check_images_dir(&images)?;
    scratch.root(&images)?;
    if !out.exists() {
        std::fs::create_dir_all(out).map_err(|e| {
            Error::input(format!("{}: cannot make the directory: {e}", out.display()))
        })?;
    }
    let _lock = fsage_exec::preflight::lock_run(&out.join("plan.json")).map_err(|e| {
        let msg = format!("{}: {e}", out.display());
        match fsage_sys::Blamed::blame(&e) {
            fsage_sys::Blame::Input => Error::input(msg),
            _ => Error::operation(msg),
        }
    })?;
    runner::prepare_out(out, &plan, &text)?;
    let mut ex = lab::LabExecutor::new(out, &images, scratch)?;
    runner::run(&plan, &text, out, opts, &mut ex, obs)
}

/// `fsage experiment status`: the cell files of `out`, and where it has Slurm submissions, the
/// jobs that hold the cells not done yet (queued or running).
pub fn status(out: &std::path::Path) -> Result<runner::Status, Error> {
    slurm::annotate(runner::status(out)?, out)
}

#[cfg(test)]
mod tests {
    /// A run whose library image is missing stops before anything is written, and its message
    /// names `fsage image list` once (the preflight's own message named it twice).
    #[test]
    fn a_missing_library_image_stops_the_run_with_one_hint() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("x.toml");
        std::fs::write(
            &file,
            "name = \"x\"\nduration = \"1s\"\nimage_size = \"64MiB\"\n[[fs]]\nkind = \"ext4\"\n\
             [[state]]\nkind = \"image\"\nname = \"fsage-test-never-saved-7f3a\"\nfs = \"ext4\"\n\
             [[workload]]\nname = \"varmail\"\n",
        )
        .unwrap();
        let out = d.path().join("out");
        let e = super::run_file(
            &file,
            &out,
            None,
            &Default::default(),
            &Default::default(),
            &mut super::runner::Quiet,
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("state image \"fsage-test-never-saved-7f3a\""),
            "{e}"
        );
        assert_eq!(e.message.matches("image list").count(), 1, "{e}");
        assert!(!out.exists());
        let plan = super::plan_file(&file).unwrap();
        assert_eq!(plan.warnings.len(), 1);
    }

    /// A kernel the cache lacks is refused by the plan (as by the run, at its start), naming the
    /// file, the file system and how to fetch it; the plan said nothing before.
    #[test]
    fn a_plan_refuses_a_kernel_the_cache_lacks() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("x.toml");
        std::fs::write(
            &file,
            "name = \"x\"\nduration = \"1s\"\nimage_size = \"64MiB\"\nkernel = \"9.9.9\"\n\
             [[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n\
             [[workload]]\nname = \"varmail\"\n",
        )
        .unwrap();
        let e = super::plan_file(&file).unwrap_err();
        assert_eq!(e.blame, fsage_sys::Blame::Input);
        assert!(
            e.message
                .contains("x.toml: [[fs]] ext4: kernel 9.9.9: not in the cache"),
            "{e}"
        );
        assert!(e.message.contains("fsage vm kernel fetch 9.9.9"), "{e}");
    }
}
