//! Workspaces: the directory a command agent runs in, and the directories whose files a
//! message may name.
//!
//! A client names a working directory in `message.metadata.a2ad.cwd`. It must be an
//! absolute path to an existing directory, and once canonicalised (symlinks followed, `..`
//! resolved) it must lie inside one of the allowed roots, so a symlink cannot lead out.
//! The default roots are the node's working directory and the system temp dir;
//! `allowed-cwds` (or `A2AD_ALLOWED_CWDS`, `:`-separated) replaces them.
//!
//! The node's data dir is never part of a root, even when a root contains it (the default
//! `./a2ad-data` lies in the working directory; the systemd unit runs in the data dir):
//! otherwise a client could name the store's files, other tenants' tasks and artifacts
//! included, as a workspace or a `file://` part.
//!
//! Errors quote only what the client sent, never the canonical path or the roots.

use std::path::{Path, PathBuf};

/// Why a working directory or a file was refused. The text reaches the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("the working directory `{0}` is not an absolute path")]
    NotAbsolute(String),
    #[error("the working directory `{0}` does not exist or is not a directory")]
    NotADirectory(String),
    #[error("the working directory `{0}` is outside the allowed roots")]
    OutsideRoots(String),
    #[error("the file `{0}` does not exist or cannot be read")]
    FileMissing(String),
    #[error("the file `{0}` is outside the working directory and the allowed roots")]
    FileOutside(String),
    #[error("the file `{0}` is larger than {1} MiB")]
    FileTooLarge(String, u64),
}

/// The directories a workspace (and a `file://` part) may lie in, canonicalised.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllowedRoots {
    roots: Vec<PathBuf>,
    /// The data dir, canonical: refused even inside a root.
    excluded: Option<PathBuf>,
}

impl AllowedRoots {
    /// The configured roots, or the defaults (the node's working directory and the system
    /// temp dir) when none are configured. Roots that do not exist are left out: nothing
    /// can lie inside them. Nothing inside `data_dir` is ever allowed.
    pub fn new(configured: &[PathBuf], data_dir: &Path) -> Self {
        let defaults;
        let wanted = if configured.is_empty() {
            defaults = [std::env::current_dir().ok(), Some(std::env::temp_dir())];
            defaults.iter().flatten().cloned().collect::<Vec<_>>()
        } else {
            configured.to_vec()
        };
        let excluded = data_dir.canonicalize().or_else(|_| std::path::absolute(data_dir)).ok();
        AllowedRoots { roots: wanted.iter().filter_map(|root| root.canonicalize().ok()).collect(), excluded }
    }

    /// Whether the canonical path `path` lies in (or is) one of the roots, and not in the
    /// data dir.
    pub fn contains(&self, path: &Path) -> bool {
        let in_data_dir = self.excluded.as_ref().is_some_and(|data| path.starts_with(data));
        !in_data_dir && self.roots.iter().any(|root| path.starts_with(root))
    }

    /// The canonical working directory for `requested`, checked.
    pub fn resolve_cwd(&self, requested: &str) -> Result<PathBuf, WorkspaceError> {
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Err(WorkspaceError::NotAbsolute(requested.to_owned()));
        }
        let canonical = path.canonicalize().map_err(|_| WorkspaceError::NotADirectory(requested.to_owned()))?;
        if !canonical.is_dir() {
            return Err(WorkspaceError::NotADirectory(requested.to_owned()));
        }
        if !self.contains(&canonical) {
            return Err(WorkspaceError::OutsideRoots(requested.to_owned()));
        }
        Ok(canonical)
    }

    /// The canonical path of a file a message names (`shown` is how the client named it):
    /// it must exist and lie inside the roots and, when the context has one, inside its
    /// working directory.
    pub fn resolve_file(&self, path: &Path, cwd: Option<&Path>, shown: &str) -> Result<PathBuf, WorkspaceError> {
        let canonical = path.canonicalize().map_err(|_| WorkspaceError::FileMissing(shown.to_owned()))?;
        if !canonical.is_file() {
            return Err(WorkspaceError::FileMissing(shown.to_owned()));
        }
        let in_cwd = match cwd {
            Some(cwd) => canonical.starts_with(cwd),
            None => true,
        };
        if !in_cwd || !self.contains(&canonical) {
            return Err(WorkspaceError::FileOutside(shown.to_owned()));
        }
        Ok(canonical)
    }
}

impl AllowedRoots {
    /// The bytes of a file a message or a program names, checked like
    /// [`AllowedRoots::resolve_file`] and at most `limit` bytes long.
    ///
    /// The check and the read are one: the canonical path is opened without following a
    /// final symlink (and without blocking on a FIFO), and the path the kernel reports for
    /// the open descriptor is checked again, so a symlink swapped in between the check and
    /// the open (of the file or of a directory above it) cannot lead out of the roots. The
    /// size is taken from the open file, and the read stops past `limit` even if the file
    /// grows meanwhile. Blocking: call it on the blocking pool.
    pub fn read_file(
        &self,
        path: &Path,
        cwd: Option<&Path>,
        shown: &str,
        limit: u64,
    ) -> Result<Vec<u8>, WorkspaceError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let canonical = self.resolve_file(path, cwd, shown)?;
        let missing = || WorkspaceError::FileMissing(shown.to_owned());
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&canonical)
            .map_err(|_| missing())?;
        let opened = file.metadata().map_err(|_| missing())?;
        if !opened.is_file() {
            return Err(missing());
        }
        if !self.still_inside(&file, &canonical, cwd) {
            return Err(WorkspaceError::FileOutside(shown.to_owned()));
        }
        let too_large = || WorkspaceError::FileTooLarge(shown.to_owned(), limit >> 20);
        if opened.len() > limit {
            return Err(too_large());
        }
        let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|_| missing())?;
        if bytes.len() as u64 > limit {
            return Err(too_large());
        }
        Ok(bytes)
    }

    /// Whether the open `file` is still the file at `canonical` inside the roots (and the
    /// working directory): by the kernel's path of the descriptor where `/proc` has one,
    /// else by device and inode.
    fn still_inside(&self, file: &std::fs::File, canonical: &Path, cwd: Option<&Path>) -> bool {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        match std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            Ok(real) => self.contains(&real) && cwd.is_none_or(|cwd| real.starts_with(cwd)),
            Err(_) => match (file.metadata(), std::fs::symlink_metadata(canonical)) {
                (Ok(open), Ok(named)) => (open.dev(), open.ino()) == (named.dev(), named.ino()),
                _ => false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_out_of_a_root_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let inside = root.path().join("work");
        std::fs::create_dir(&inside).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
        let roots = AllowedRoots::new(&[root.path().to_owned()], &root.path().join("data"));
        assert!(roots.resolve_cwd(inside.to_str().unwrap()).is_ok());
        let escape = root.path().join("escape");
        assert!(matches!(roots.resolve_cwd(escape.to_str().unwrap()), Err(WorkspaceError::OutsideRoots(_))));
        let dotdot = format!("{}/work/../..", root.path().display());
        assert!(matches!(roots.resolve_cwd(&dotdot), Err(WorkspaceError::OutsideRoots(_))));
        assert!(matches!(roots.resolve_cwd("work"), Err(WorkspaceError::NotAbsolute(_))));
    }

    #[test]
    fn the_data_dir_is_never_a_workspace_nor_a_readable_file() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("a2ad-data");
        std::fs::create_dir_all(data.join("artifacts")).unwrap();
        std::fs::write(data.join("db"), "store").unwrap();
        std::fs::write(root.path().join("notes.txt"), "fine").unwrap();
        let roots = AllowedRoots::new(&[root.path().to_owned()], &data);
        assert!(roots.resolve_cwd(root.path().to_str().unwrap()).is_ok(), "the root that holds it still is");
        let inside = data.join("artifacts");
        assert!(matches!(roots.resolve_cwd(inside.to_str().unwrap()), Err(WorkspaceError::OutsideRoots(_))));
        assert!(matches!(roots.resolve_cwd(data.to_str().unwrap()), Err(WorkspaceError::OutsideRoots(_))));
        let db = roots.resolve_file(&data.join("db"), Some(root.path()), "db");
        assert!(matches!(db, Err(WorkspaceError::FileOutside(_))), "{db:?}");
        assert!(roots.resolve_file(&root.path().join("notes.txt"), None, "notes").is_ok());
        // Through a symlink too.
        std::os::unix::fs::symlink(&data, root.path().join("link")).unwrap();
        let via_link = root.path().join("link/db");
        assert!(matches!(roots.resolve_file(&via_link, None, "x"), Err(WorkspaceError::FileOutside(_))));
    }

    #[test]
    fn a_file_is_read_within_its_limit_and_checked_again_once_open() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let roots = AllowedRoots::new(&[root.path().to_owned()], &root.path().join("data"));
        let notes = root.path().join("notes.txt");
        std::fs::write(&notes, "0123456789").unwrap();
        assert_eq!(roots.read_file(&notes, None, "notes", 10).unwrap(), b"0123456789");
        let too_large = roots.read_file(&notes, None, "notes", 9);
        assert_eq!(too_large, Err(WorkspaceError::FileTooLarge("notes".into(), 0)));
        let fifo = root.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert!(matches!(roots.read_file(&fifo, None, "fifo", 10), Err(WorkspaceError::FileMissing(_))));
        // What a symlink swapped in after the path check leads to: the descriptor's real
        // path is outside, so the open file is refused although its name was fine.
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "secret").unwrap();
        let swapped = std::fs::File::open(&secret).unwrap();
        assert!(!roots.still_inside(&swapped, &notes, None));
        let fine = std::fs::File::open(&notes).unwrap();
        assert!(roots.still_inside(&fine, &notes.canonicalize().unwrap(), None));
        let elsewhere = root.path().join("sub");
        std::fs::create_dir(&elsewhere).unwrap();
        assert!(!roots.still_inside(&fine, &notes, Some(&elsewhere.canonicalize().unwrap())));
    }
}
