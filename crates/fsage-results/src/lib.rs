//! fsage's result types as plain serde data, apart from the code that produces them, so that
//! the report (and anything else that only reads results) builds without the engine, the lab or
//! the slow device. The producing crates re-export these types where they always were
//! (`fsage_workload::BenchResult` is `fsage_results::bench::BenchResult`); the JSON they read
//! and write is unchanged.

pub mod against;
pub mod analysis;
pub mod bench;
pub mod experiment;
pub mod git;
pub mod image;
pub mod locks;
pub mod repro;
pub mod slowdev;
