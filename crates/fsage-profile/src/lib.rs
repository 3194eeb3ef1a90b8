//! Aging profiles: what an aged file system looks like from the outside.
//!
//! A [`Profile`] holds a default fullness and three histograms (file size, directory depth with the
//! number of subdirectories, relative age). Weights are relative; only their proportions matter.
//! Profiles are read from our TOML format ([`parse`], [`load`]; described in [`toml_format`] and
//! `FORMAT.md`), imported from the original Geriatrix three-file format ([`import_geriatrix`]), or
//! taken from the eight built-ins ([`builtin`]). [`resolve`] does whichever a command-line argument
//! asks for.
//!
//! ```
//! let profile = fsage_profile::resolve("dabre").unwrap();
//! assert_eq!(profile.fullness.get(), 0.8);
//! let text = fsage_profile::to_toml(&profile);
//! assert_eq!(fsage_profile::parse(&text, "dabre.toml"), Ok(profile));
//!
//! let bad = text.replacen("125594", "-2", 1);
//! let err = fsage_profile::parse(&bad, "dabre.toml").unwrap_err();
//! assert_eq!(err.to_string(), "dabre.toml:11: size bin 1: weight -2 is negative");
//! ```

mod builtin;
mod check;
mod error;
mod geriatrix;
mod model;
mod render;
pub mod toml_format;
pub mod units;

pub use builtin::{builtin, builtin_names, resolve};
pub use check::{MAX_BINS, MAX_DEPTH, MAX_DIRS, MAX_INT};
pub use error::ProfileError;
pub use geriatrix::{import_geriatrix, import_geriatrix_files, IMPORT_FULLNESS};
pub use model::{fractions, AgeBin, DepthBin, Fullness, Profile, SizeBin};
pub use render::render_tables;
pub use toml_format::{load, parse, to_toml};
pub use units::{human_bytes, human_duration, parse_size, percent};
