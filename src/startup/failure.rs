//! Start-up failures in the operator's words (the store's causes; the OS's are
//! [`crate::os_error`]), and nothing left behind.

use crate::os_error::io_cause;
use a2ad_storage::StoreError;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The cause of a store that would not open: held by another node, or the OS's reason
/// (read-only, permission) when the engine failed on a file, or the engine's message.
pub(crate) fn store_cause(e: &StoreError) -> String {
    match e.io_error().filter(|io| io.raw_os_error().is_some()) {
        Some(io) => io_cause(io),
        None => e.to_string(),
    }
}

/// The part of the data dir's path that did not exist before start-up: removed again when
/// start-up fails, so that a failed start leaves no empty store behind.
pub(crate) struct NewDirs(Option<PathBuf>);

impl NewDirs {
    /// Finds the outermost missing directory of `dir`, before anything creates it.
    pub(crate) fn before_creating(dir: &Path) -> NewDirs {
        let missing = |p: &&Path| {
            !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == ErrorKind::NotFound)
        };
        NewDirs(dir.ancestors().take_while(missing).last().map(Path::to_owned))
    }

    /// Removes what this start created (nothing when the dir was there before).
    pub(crate) fn remove(self) {
        if let Some(dir) = self.0 {
            match std::fs::remove_dir_all(&dir) {
                // Start-up failed before creating it.
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(error = %e, dir = %dir.display(), "cannot remove the data dir of a failed start")
                }
                Ok(()) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_without_an_os_code_keeps_its_message() {
        assert_eq!(store_cause(&StoreError::Locked), "locked by another process");
        assert_eq!(store_cause(&StoreError::Corrupt("bad record".into())), "a stored record is unreadable: bad record");
    }

    /// Only what did not exist goes; a dir that was there stays.
    #[test]
    fn only_the_directories_a_failed_start_created_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let new = NewDirs::before_creating(&dir.path().join("a/b/data"));
        std::fs::create_dir_all(dir.path().join("a/b/data")).unwrap();
        new.remove();
        assert!(!dir.path().join("a").exists());
        assert!(dir.path().exists());
        let existing = NewDirs::before_creating(dir.path());
        existing.remove();
        assert!(dir.path().exists());
    }
}
