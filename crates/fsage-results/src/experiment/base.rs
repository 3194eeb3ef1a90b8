//! What an experiment's output directory records of each base image it made (`KEY.base.json`).

use super::spec::{FsSpec, StateSpec};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What is known of a finished base image (`KEY.base.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaseImage {
    pub key: String,
    pub image: PathBuf,
    pub fs: FsSpec,
    pub state: StateSpec,
    pub size: u64,
    /// SHA-256 of the whole image (holes as zeros).
    pub sha256: String,
    /// Seconds it took to make (aging included).
    pub seconds: f64,
    /// SHA-256 of the drive state its aging left (`KEY.img.ftl`), for a base aged on an SSD
    /// model; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_sha256: Option<String>,
}
