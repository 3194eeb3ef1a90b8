//! A temporary file or directory that goes away unless it is kept: images and snapshots are made
//! beside their final name and renamed onto it, so a failure or a signal leaves nothing half made.

use crate::Error;
use std::fs;
use std::path::{Path, PathBuf};

/// Removes a temporary file (or directory) when dropped, unless [`TempPath::persist`] renamed it.
pub struct TempPath(Option<PathBuf>);

impl TempPath {
    pub fn new(p: PathBuf) -> TempPath {
        TempPath(Some(p))
    }
    /// A guard on a sibling temporary path of `path` ([`crate::temp_sibling`]), refusing a path
    /// with no file name (`/`, `..`) instead of inventing one.
    pub fn beside(path: &Path) -> Result<TempPath, Error> {
        if path.file_name().is_none() {
            return Err(Error::input(format!("{}: not a file name", path.display())));
        }
        Ok(TempPath::new(crate::temp_sibling(path)))
    }
    pub fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }
    /// Renames it onto `dest` and disarms the guard.
    pub fn persist(mut self, dest: &Path) -> Result<(), Error> {
        let p = self.0.take().unwrap_or_default();
        fs::rename(&p, dest).map_err(|e| {
            let _ = fs::remove_file(&p);
            Error::io(dest, &format!("rename from {}", p.display()), e)
        })
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            if p.is_dir() {
                let _ = fs::remove_dir_all(&p);
            } else {
                let _ = fs::remove_file(&p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_temp_path_is_removed_and_a_persisted_one_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("image");
        let t = TempPath::beside(&dest).unwrap();
        fs::write(t.path(), b"x").unwrap();
        let first = t.path().to_path_buf();
        drop(t);
        assert!(!first.exists());
        let t = TempPath::beside(&dest).unwrap();
        fs::write(t.path(), b"y").unwrap();
        t.persist(&dest).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"y");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let e = TempPath::beside(Path::new("/")).err().unwrap();
        assert!(e.message.contains("not a file name"), "{}", e.message);
    }
}
