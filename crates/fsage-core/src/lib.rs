//! fsage's porcelain as a library (as `gitoxide-core` is to `gix`): what a command does between
//! parsing its flags and printing, so that the experiment runner and Git aging do exactly what
//! the command line does. It sits above the planner, the executor, measurement, profiles and the
//! lab's primitives (`fsage-lab`), and composes them.
//!
//! # API
//!
//! Aging ([`age`]): [`age::age(request, observer)`](age::age) is the whole of `fsage age`:
//! resolve the profile, the capacity and the target (or a saved run), check memory, inodes and
//! output paths before anything is made, make and mount an image or format a device when asked
//! ([`age::NewFs`]), run with checkpoints, write the report, unmount. An [`age::AgeRequest`] says
//! what to do; an [`age::AgeObserver`] hears notices and progress; an [`age::AgeOutcome`] says
//! what came of it; an [`age::AgeError`]'s `blame` ([`fsage_sys::Blamed`]) says who is to act on
//! a failure. The planning checks a run makes are public for `profile show`: [`age::plan_at`],
//! [`age::plan`], [`age::check_fullness`], [`age::check_block_size`]; [`age::merge_stop`] is how
//! a resumed run keeps its stopping conditions.
//!
//! How far from fresh ([`against`]): [`against::measure_against_fresh(mount, options,
//! notice)`](against::measure_against_fresh) measures a mounted file system and a fresh twin of
//! it and compares them (`fsage frag --against-fresh`); [`against::against_fresh`] compares two
//! reports measured already, into an [`against::AgainstFresh`] (figures, ratios, a
//! [`against::Verdict`]).
//!
//! Snapshots ([`image`]): [`image::Library`] (`open`, `save`, `list`, `load`, `verify`,
//! `restore`) keeps aged images zstd-compressed, sparse-aware, with a manifest
//! ([`image::Manifest`], the schema documented on the type) and SHA-256 checksums;
//! [`image::sha256_image`] hashes a whole image as `sha256sum` would, reading only its data.
//!
//! Rollback of an image after a benchmark is a primitive (loop devices, tracing, sparse copy, no
//! planning or measuring) and stays in `fsage-lab` (`fsage_lab::rollback`).
//!
//! Errors: aging returns an [`age::AgeError`]; the rest returns the lab's [`fsage_lab::Error`],
//! which names the path, flag or device at fault and who is to act.

pub mod against;
pub mod age;
pub mod image;
