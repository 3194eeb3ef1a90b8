//! A temporary file or directory that goes away unless it is kept: images and snapshots are made
//! beside their final name and renamed onto it, so a failure or a signal leaves nothing half made.
//! Their names are random and made exclusively ([`crate::safe`]): nobody can plant one.

use crate::Error;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// Removes a temporary file (or directory) when dropped, unless [`TempPath::persist`] renamed it.
pub struct TempPath(Option<PathBuf>);

impl TempPath {
    pub fn new(p: PathBuf) -> TempPath {
        TempPath(Some(p))
    }
    /// A new, empty file beside `path` (`.NAME.fsage-tmp-RANDOM`, created exclusively with
    /// `mode`) and its guard, refusing a path with no file name (`/`, `..`) instead of inventing
    /// one. An error names `path` (what the user asked for) and `what` it is.
    pub fn create_beside(path: &Path, what: &str, mode: u32) -> Result<(TempPath, File), Error> {
        if path.file_name().is_none() {
            return Err(Error::input(format!("{}: not a file name", path.display())));
        }
        let (p, f) = crate::safe::create_temp_beside(path, mode)
            .map_err(|e| Error::io(path, &format!("cannot create {what}"), e))?;
        Ok((TempPath::new(p), f))
    }
    /// A new directory `PARENT/PREFIXRANDOM` of mode 0700 and its guard.
    pub fn dir_in(parent: &Path, prefix: &str) -> Result<TempPath, Error> {
        crate::safe::create_private_dir(parent, prefix).map(TempPath::new)
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
            // lstat: a link put in its place is removed, never what it points to.
            if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
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
        let (t, _) = TempPath::create_beside(&dest, "the image", 0o644).unwrap();
        fs::write(t.path(), b"x").unwrap();
        let first = t.path().to_path_buf();
        drop(t);
        assert!(!first.exists());
        let (t, _) = TempPath::create_beside(&dest, "the image", 0o644).unwrap();
        fs::write(t.path(), b"y").unwrap();
        t.persist(&dest).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"y");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let e = TempPath::create_beside(Path::new("/"), "x", 0o644)
            .err()
            .unwrap();
        assert!(e.message.contains("not a file name"), "{}", e.message);
        // A missing directory is named by the path asked for, not the temporary name.
        let dir = tempfile::tempdir().unwrap();
        let want = dir.path().join("nope/x.img");
        let e = TempPath::create_beside(&want, "the image", 0o644)
            .err()
            .unwrap();
        assert!(
            e.message
                .starts_with(&format!("{}: cannot create the image", want.display()))
                && !e.message.contains("fsage-tmp"),
            "{}",
            e.message
        );
    }
}
