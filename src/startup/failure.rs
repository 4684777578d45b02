//! Start-up failures in the operator's words: the config key, the value and the cause on
//! one line (`listen 127.0.0.1:8080: address in use`), and nothing left behind.

use a2ad_storage::StoreError;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// The cause of a failed bind, create or open: the cases an operator can act on by name,
/// the rest as the operating system words it.
pub(crate) fn io_cause(e: &io::Error) -> String {
    // By errno where the std kind is newer than the supported Rust (read-only, not a dir).
    match (e.kind(), e.raw_os_error()) {
        (_, Some(libc::EROFS)) => "read-only file system".into(),
        (_, Some(libc::ENOTDIR)) | (ErrorKind::AlreadyExists, _) => "a file is in the way (not a directory)".into(),
        (ErrorKind::AddrInUse, _) => "address in use".into(),
        (ErrorKind::AddrNotAvailable, _) => "address not available on this machine".into(),
        (ErrorKind::PermissionDenied, _) => "permission denied".into(),
        _ => e.to_string(),
    }
}

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

    /// The causes an operator acts on are named from the kind or code the OS reports.
    #[test]
    fn io_errors_are_named_by_their_kind() {
        let os = io::Error::from_raw_os_error;
        assert_eq!(io_cause(&os(libc::EADDRINUSE)), "address in use");
        assert_eq!(io_cause(&os(libc::EADDRNOTAVAIL)), "address not available on this machine");
        assert_eq!(io_cause(&os(libc::EACCES)), "permission denied");
        assert_eq!(io_cause(&os(libc::EPERM)), "permission denied");
        assert_eq!(io_cause(&os(libc::EROFS)), "read-only file system");
        assert_eq!(io_cause(&os(libc::EEXIST)), "a file is in the way (not a directory)");
        assert_eq!(io_cause(&os(libc::ENOTDIR)), "a file is in the way (not a directory)");
        assert_eq!(io_cause(&os(libc::ENOSPC)), os(libc::ENOSPC).to_string(), "the rest as the OS says it");
    }

    /// A real bind on a taken port and a real create under a file give those kinds.
    #[test]
    fn real_failures_are_classified() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let again = std::net::TcpListener::bind(taken.local_addr().unwrap()).unwrap_err();
        assert_eq!(io_cause(&again), "address in use");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(io_cause(&std::fs::create_dir_all(&file).unwrap_err()), "a file is in the way (not a directory)");
        let under = std::fs::create_dir_all(file.join("data")).unwrap_err();
        assert_eq!(io_cause(&under), "a file is in the way (not a directory)");
    }

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
