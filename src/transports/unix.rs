//! HTTP on a Unix domain socket (`listen-unix: PATH`): the same App, every route, bound
//! once more on a socket file, for local clients that should not go through TCP.
//!
//! Access is by file permissions: `listen-unix-mode` (default `0660`) is applied after the
//! bind and before the socket listens, so no client connects under the umask's mode. A socket file left by a node that crashed is replaced; a socket that
//! still answers (another node) or a file that is not a socket stops start-up with an
//! error naming `listen-unix`. A clean shutdown removes the file, if it is still ours.

use crate::os_error::io_cause;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Why the socket could not be set up. Shown to the operator: paths are fine here.
#[derive(Debug, thiserror::Error)]
pub enum UnixSocketError {
    #[error("listen-unix: {path} exists and is not a socket (remove it or choose another path)")]
    NotASocket { path: String },
    #[error("listen-unix: another process is listening on {path}")]
    InUse { path: String },
    /// The cause is in the message, not chained (it would be printed twice at start-up).
    #[error("listen-unix {path}: {cause}")]
    Bind { path: String, cause: String },
    #[error("listen-unix-mode: cannot set the mode of {path}: {cause}")]
    Mode { path: String, cause: String },
}

/// The bound socket file; [`SocketFile::remove`] deletes it at a clean shutdown.
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    /// Device and inode, to remove only our own file.
    identity: (u64, u64),
}

impl SocketFile {
    /// Where the socket is bound: named in the start-up line and in a bind error, and
    /// removed when start-up fails.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file, unless another has taken its place since.
    pub fn remove(self) {
        let ours = std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.identity);
        if ours {
            if let Err(e) = std::fs::remove_file(&self.path) {
                tracing::warn!(error = %e, "cannot remove the unix socket file");
            }
        }
    }
}

/// Binds `path` (replacing a stale socket file) and gives it `mode`.
pub fn bind(path: &Path, mode: u32) -> Result<(UnixListener, SocketFile), UnixSocketError> {
    let shown = || path.display().to_string();
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(UnixSocketError::InUse { path: shown() });
            }
            std::fs::remove_file(path).map_err(|e| UnixSocketError::Bind { path: shown(), cause: io_cause(&e) })?;
            tracing::warn!(path = %shown(), "replaced a stale unix socket file (a node that did not stop cleanly)");
        }
        Ok(_) => return Err(UnixSocketError::NotASocket { path: shown() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(UnixSocketError::Bind { path: shown(), cause: io_cause(&e) }),
    }
    let bind_error = |e: std::io::Error| UnixSocketError::Bind { path: shown(), cause: io_cause(&e) };
    let socket = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).map_err(bind_error)?;
    socket.bind(&socket2::SockAddr::unix(path).map_err(bind_error)?).map_err(bind_error)?;
    let file = std::fs::symlink_metadata(path)
        .map(|m| SocketFile { path: path.to_owned(), identity: (m.dev(), m.ino()) })
        .map_err(bind_error)?;
    // The mode is set before the socket listens: until then no one can connect, whatever
    // the mode the umask gave the file at the bind.
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        file.remove();
        return Err(UnixSocketError::Mode { path: shown(), cause: io_cause(&e) });
    }
    if let Err(source) = socket.listen(1024) {
        file.remove();
        return Err(bind_error(source));
    }
    Ok((UnixListener::from(std::os::fd::OwnedFd::from(socket)), file))
}
