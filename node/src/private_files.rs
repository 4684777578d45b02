//! The data dir holds every tenant's messages, artifacts and the push key: it is created
//! `0700` and every file the node writes in it is `0600`, whatever umask the node was
//! started with.
//!
//! sled, the write-ahead log and the artifact store create their files with the default
//! mode (`0666` less the umask), and sled gives no hook to pick one; so the node sets its
//! own umask to `077` before it opens the store ([`make_files_private`]). The umask is
//! the process's, and inherited by the programs the command agents start: those get back
//! the umask the node was started with ([`inherited_umask`]), since the files they write
//! in a workspace are theirs, not the node's.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::sync::OnceLock;

/// The umask the node runs with once [`make_files_private`] ran: no bits for group and
/// others.
const PRIVATE_UMASK: libc::mode_t = 0o077;

/// The umask the process had before [`make_files_private`] first ran.
static INHERITED: OnceLock<libc::mode_t> = OnceLock::new();

/// Sets the process umask to `077`, remembering the one it replaces (the first time: a
/// second node in the same process must not record `077` as inherited).
pub fn make_files_private() {
    INHERITED.get_or_init(|| {
        // SAFETY: umask only swaps the process's file mode mask; it cannot fail.
        unsafe { libc::umask(PRIVATE_UMASK) }
    });
    // SAFETY: as above; also right after a caller changed the mask again.
    unsafe { libc::umask(PRIVATE_UMASK) };
}

/// The umask to give a program the node starts, if [`make_files_private`] changed it.
pub fn inherited_umask() -> Option<libc::mode_t> {
    INHERITED.get().copied()
}

/// Creates `dir` (and its missing parents) `0700`; an existing one is left as it is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// The mode of an existing `dir` when group or other users may read or enter it (`None`
/// when it is private, or cannot be read: opening it reports that).
pub fn exposed_mode(dir: &Path) -> Option<u32> {
    let mode = std::fs::metadata(dir).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

/// Warns once at start-up when the data dir other users can read was there before.
pub fn warn_if_exposed(dir: &Path) {
    if let Some(mode) = exposed_mode(dir) {
        tracing::warn!(
            data_dir = %dir.display(),
            mode = format!("{mode:04o}"),
            "the data dir can be read by other users: every tenant's tasks are in it (chmod 700 it)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_dir_is_private_and_an_open_one_is_seen() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/data");
        create_private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(exposed_mode(&dir), None);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(exposed_mode(&dir), Some(0o755));
    }
}
