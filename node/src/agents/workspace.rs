//! Workspaces: the directory a command agent runs in, and the directories whose files a
//! message may name, for one caller (its roots: [`super::roots::WorkspacePolicy::for_owner`]).
//!
//! A client names a working directory in `message.metadata.a2ad.cwd`. It must be an
//! absolute path to an existing directory inside one of the caller's roots. The path is
//! judged by its text first (`.` and `..` resolved lexically), before the file system is
//! asked anything; only a path inside a root is then canonicalised (symlinks followed) and
//! judged again, so a symlink cannot lead out. Every refusal of a path reads the same
//! whether the path exists or not, inside the roots or outside: a client learns nothing
//! about the node's files it may not read (not even that `/proc/self/environ` exists).
//!
//! The node's data dir is never part of a root, even when a root contains it (the default
//! `./a2ad-data` lies in the working directory; the systemd unit runs in the data dir):
//! otherwise a client could name the store's files, other tenants' tasks and artifacts
//! included, as a workspace or a `file://` part.
//!
//! Errors quote only what the client sent, never the canonical path or the roots.

use std::path::{Component, Path, PathBuf};

/// Why a working directory or a file was refused. The text reaches the client: it names
/// the path as the client (or the program) gave it and the config key that would allow
/// it, never the canonical path or the roots.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("the working directory `{0}` is not an absolute path: `metadata.a2ad.cwd` takes an absolute path inside the node's `allowed-cwds`")]
    NotAbsolute(String),
    /// Missing, not a directory, outside the roots, or in the data dir: one text for all.
    #[error("the working directory `{0}` is not available: it must be an existing directory inside the allowed roots (the node's `allowed-cwds`)")]
    CwdUnavailable(String),
    /// Missing, not a regular file, outside the workspace or the roots: one text for all.
    #[error(
        "the file `{0}` is not available: it must be an existing file inside the working directory and the allowed roots (the node's `allowed-cwds`)"
    )]
    FileUnavailable(String),
    #[error("the file `{0}` is larger than {1} MiB")]
    FileTooLarge(String, u64),
    /// A working directory on a node where workspaces are off.
    #[error(
        "the working directory `{0}` is refused: authentication is on and no `allowed-cwds` is configured. To allow it, the operator adds a root that holds it to `allowed-cwds` (for example `/srv/a2ad/{{tenant}}`); without a `cwd`, a command agent runs in a private directory of its own"
    )]
    CwdOff(String),
    /// A `file://` part on a node where workspaces are off.
    #[error(
        "the file `{0}` is refused: authentication is on and no `allowed-cwds` is configured. To allow it, the operator adds a root that holds it to `allowed-cwds` (for example `/srv/a2ad/{{tenant}}`)"
    )]
    FileOff(String),
}

/// One root: as configured (normalized), and canonical when it exists.
#[derive(Debug, Clone, PartialEq)]
struct Root {
    named: PathBuf,
    canonical: Option<PathBuf>,
}

/// The directories one caller's workspace (and its `file://` parts) may lie in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllowedRoots {
    roots: Vec<Root>,
    /// The data dir, as configured and canonical: refused even inside a root.
    excluded: Vec<PathBuf>,
    /// The turn's private working directory (canonical), which lies in the data dir but
    /// is the program's own: allowed although `excluded` holds it.
    private: Option<PathBuf>,
    /// Workspaces are off: every path is refused with [`WorkspaceError::CwdOff`] or
    /// [`WorkspaceError::FileOff`].
    off: bool,
}

impl AllowedRoots {
    /// `roots` (absolute, expanded), canonicalised where they exist; nothing in any of
    /// the `excluded` paths is ever allowed.
    pub fn new(roots: Vec<PathBuf>, excluded: Vec<PathBuf>) -> Self {
        let roots = roots
            .into_iter()
            .map(|named| Root { canonical: named.canonicalize().ok(), named: normalize(&named) })
            .collect();
        AllowedRoots { roots, excluded, private: None, off: false }
    }

    /// No roots at all: workspaces are off on this node.
    pub fn off(excluded: Vec<PathBuf>) -> Self {
        AllowedRoots { roots: Vec::new(), excluded, private: None, off: true }
    }

    /// These roots and `dir` (canonical) too: for the files a program writes in the
    /// directory it runs in, which the operator or the caller's roots chose.
    pub fn with_root(mut self, dir: &Path) -> Self {
        self.roots.push(Root { named: dir.to_owned(), canonical: Some(dir.to_owned()) });
        self.off = false;
        self
    }

    /// These roots and the turn's private working directory `dir` (canonical, under
    /// the data dir, see [`a2ad_actors::workdirs`]): for the files a program writes there.
    pub fn with_private_dir(mut self, dir: &Path) -> Self {
        self.private = Some(dir.to_owned());
        self.with_root(dir)
    }

    fn in_data_dir(&self, path: &Path) -> bool {
        let private = self.private.as_ref().is_some_and(|dir| path.starts_with(dir));
        !private && self.excluded.iter().any(|data| path.starts_with(data))
    }

    /// Whether `path`, by its text alone, lies inside a root (as named or canonical) and
    /// not in the data dir: the check made before the file system is touched.
    fn lexically_inside(&self, path: &Path) -> bool {
        let path = normalize(path);
        !self.in_data_dir(&path)
            && self.roots.iter().any(|root| {
                path.starts_with(&root.named) || root.canonical.as_ref().is_some_and(|c| path.starts_with(c))
            })
    }

    /// Whether the canonical path `path` lies in (or is) one of the roots, and not in the
    /// data dir.
    pub fn contains(&self, path: &Path) -> bool {
        !self.in_data_dir(path)
            && self.roots.iter().any(|root| root.canonical.as_ref().is_some_and(|c| path.starts_with(c)))
    }

    /// The canonical working directory for `requested`, checked.
    pub fn resolve_cwd(&self, requested: &str) -> Result<PathBuf, WorkspaceError> {
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Err(WorkspaceError::NotAbsolute(requested.to_owned()));
        }
        if self.off {
            return Err(WorkspaceError::CwdOff(requested.to_owned()));
        }
        let refused = || WorkspaceError::CwdUnavailable(requested.to_owned());
        if !self.lexically_inside(path) {
            return Err(refused());
        }
        let canonical = path.canonicalize().map_err(|_| refused())?;
        if !canonical.is_dir() || !self.contains(&canonical) {
            return Err(refused());
        }
        Ok(canonical)
    }

    /// The canonical path of a file a message names (`shown` is how the client named it):
    /// it must exist and lie inside the roots and, when the context has one, inside its
    /// working directory.
    pub fn resolve_file(&self, path: &Path, cwd: Option<&Path>, shown: &str) -> Result<PathBuf, WorkspaceError> {
        if self.off {
            return Err(WorkspaceError::FileOff(shown.to_owned()));
        }
        let refused = || WorkspaceError::FileUnavailable(shown.to_owned());
        if !path.is_absolute() || !self.lexically_inside(path) {
            return Err(refused());
        }
        let canonical = path.canonicalize().map_err(|_| refused())?;
        let in_cwd = cwd.is_none_or(|cwd| canonical.starts_with(cwd));
        if !canonical.is_file() || !in_cwd || !self.contains(&canonical) {
            return Err(refused());
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
        let missing = || WorkspaceError::FileUnavailable(shown.to_owned());
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
            return Err(missing());
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

/// `path` with `.` and `..` resolved by its text alone (`..` of the root is the root), so
/// that it can be judged against the roots before the file system is asked anything.
pub fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The roots of a node configured with `root` alone, its data dir `data_dir`.
    fn only(root: &Path, data_dir: &Path) -> AllowedRoots {
        let excluded = [Some(data_dir.to_owned()), data_dir.canonicalize().ok()].into_iter().flatten().collect();
        AllowedRoots::new(vec![root.to_owned()], excluded)
    }

    #[test]
    fn paths_are_normalized_by_their_text() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../../etc")), PathBuf::from("/etc"));
    }

    #[test]
    fn symlinks_out_of_a_root_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let inside = root.path().join("work");
        std::fs::create_dir(&inside).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
        let roots = only(root.path(), &root.path().join("data"));
        assert!(roots.resolve_cwd(inside.to_str().unwrap()).is_ok());
        let escape = root.path().join("escape");
        assert!(matches!(roots.resolve_cwd(escape.to_str().unwrap()), Err(WorkspaceError::CwdUnavailable(_))));
        let dotdot = format!("{}/work/../..", root.path().display());
        assert!(matches!(roots.resolve_cwd(&dotdot), Err(WorkspaceError::CwdUnavailable(_))));
        assert!(matches!(roots.resolve_cwd("work"), Err(WorkspaceError::NotAbsolute(_))));
    }

    #[test]
    fn the_data_dir_is_never_a_workspace_nor_a_readable_file() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("a2ad-data");
        std::fs::create_dir_all(data.join("artifacts")).unwrap();
        std::fs::write(data.join("db"), "store").unwrap();
        std::fs::write(root.path().join("notes.txt"), "fine").unwrap();
        let roots = only(root.path(), &data);
        assert!(roots.resolve_cwd(root.path().to_str().unwrap()).is_ok(), "the root that holds it still is");
        let inside = data.join("artifacts");
        assert!(matches!(roots.resolve_cwd(inside.to_str().unwrap()), Err(WorkspaceError::CwdUnavailable(_))));
        assert!(matches!(roots.resolve_cwd(data.to_str().unwrap()), Err(WorkspaceError::CwdUnavailable(_))));
        let db = roots.resolve_file(&data.join("db"), Some(root.path()), "db");
        assert!(matches!(db, Err(WorkspaceError::FileUnavailable(_))), "{db:?}");
        assert!(roots.resolve_file(&root.path().join("notes.txt"), None, "notes").is_ok());
        // Through a symlink too.
        std::os::unix::fs::symlink(&data, root.path().join("link")).unwrap();
        let via_link = root.path().join("link/db");
        assert!(matches!(roots.resolve_file(&via_link, None, "x"), Err(WorkspaceError::FileUnavailable(_))));
        // A turn's private directory in the data dir is the program's own; the rest of
        // the data dir stays out of reach.
        let private = data.join("workdirs/acme+ci/t1");
        std::fs::create_dir_all(&private).unwrap();
        std::fs::write(private.join("out.txt"), "mine").unwrap();
        let private = private.canonicalize().unwrap();
        let roots = AllowedRoots::off(vec![data.canonicalize().unwrap()]).with_private_dir(&private);
        assert!(roots.resolve_file(&private.join("out.txt"), None, "out.txt").is_ok());
        let db = roots.resolve_file(&data.join("db"), None, "db");
        assert!(matches!(db, Err(WorkspaceError::FileUnavailable(_))), "{db:?}");
    }

    #[test]
    fn a_file_is_read_within_its_limit_and_checked_again_once_open() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let roots = only(root.path(), &root.path().join("data"));
        let notes = root.path().join("notes.txt");
        std::fs::write(&notes, "0123456789").unwrap();
        assert_eq!(roots.read_file(&notes, None, "notes", 10).unwrap(), b"0123456789");
        let too_large = roots.read_file(&notes, None, "notes", 9);
        assert_eq!(too_large, Err(WorkspaceError::FileTooLarge("notes".into(), 0)));
        let fifo = root.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert!(matches!(roots.read_file(&fifo, None, "fifo", 10), Err(WorkspaceError::FileUnavailable(_))));
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

    #[test]
    fn a_refusal_reads_the_same_whether_the_path_exists_or_not() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("there.txt"), "x").unwrap();
        let roots = only(root.path(), &root.path().join("data"));
        let file = |path: &str| roots.resolve_file(Path::new(path), None, "p").unwrap_err().to_string();
        let cwd = |path: &str| roots.resolve_cwd(path).unwrap_err().to_string().replace(path, "p");
        let missing_inside = format!("{}/missing.txt", root.path().display());
        let a_dir_inside = root.path().display().to_string();
        let answers =
            [file("/proc/self/environ"), file("/proc/self/no-such"), file(&missing_inside), file(&a_dir_inside)];
        assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
        let there = format!("{}/there.txt", root.path().display());
        let answers = [cwd("/proc/self"), cwd("/proc/no-such"), cwd(&missing_inside), cwd(&there)];
        assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
        let off = AllowedRoots::off(Vec::new());
        assert_eq!(off.resolve_cwd("/tmp"), Err(WorkspaceError::CwdOff("/tmp".into())));
        let refusal = off.resolve_file(Path::new("/tmp/x"), None, "file:///tmp/x").unwrap_err().to_string();
        assert!(refusal.contains("`file:///tmp/x`") && refusal.contains("`allowed-cwds`"), "{refusal}");
    }
}
