//! An OS error in the operator's words, for the one-line start-up failures
//! (`listen 127.0.0.1:8080: address in use`): a leaf module, shared by start-up and the
//! transports that bind.

use std::io::{self, ErrorKind};

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
}
