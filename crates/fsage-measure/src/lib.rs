//! Measuring a real file system: how fragmented its free space is (GETFSMAP on ext4 and xfs, the
//! extent tree on btrfs, segment validity on f2fs and nilfs2), how its files are laid out (FIEMAP: extents, layout score, dynamic
//! layout score in recursive-read order, a probe file), and extracting an aging profile from a
//! directory tree. Everything reads; only the probe writes (one file, deleted again).

pub mod btrfs;
mod error;
pub use error::Error;
pub mod freesp;
pub mod hist;
pub mod sys;

pub use freesp::free_space;
pub use hist::{FreeBin, FreeSpace};
pub mod layout;
pub mod walk;

pub use layout::{probe, scan_files, FileStats, Probe, ScanOptions};
pub mod report;
pub mod segments;
pub use segments::Segments;

pub use report::{
    frag, load_report, load_reports, measure, FragComparison, FragOptions, FragReport, FRAG_FORMAT,
};
pub mod extract;

pub use extract::{extract, extract_profile, AgeFrom, ExtractOptions, ExtractStats, Extracted};
