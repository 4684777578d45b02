//! Private working directories: where a command agent runs when neither the client
//! (`metadata.a2ad.cwd`) nor the operator (the agent's `cwd`) named a directory.
//!
//! Each task gets `<data-dir>/workdirs/<owner>/<task-id>/`, made on its first turn and
//! kept for its later turns, and removed with the task (retention, a Message-only reply's
//! settling write, or, for a directory a crash left behind, the start-up sweep of
//! orphans). It is never the node's own working directory, which every tenant would share.
//!
//! The `<owner>` level keeps tenants apart: a program that lists `..` sees its owner's
//! task directories only, never another tenant's. Its name is the tenant and the principal,
//! each escaped to `[A-Za-z0-9_-]` (`%XX` for any other byte; `%` alone for an empty
//! name), joined by `+`: two owners never share a name, and no name steps out of
//! `workdirs/`.

use a2ad_storage::Owner;
use std::path::{Path, PathBuf};

/// The directory under the data dir that holds every private working directory.
pub const WORKDIRS: &str = "workdirs";

/// The longest owner directory name (a path component may hold 255 bytes).
const MAX_NAME: usize = 255;

/// `<data-dir>/workdirs/<owner>/`: the directory of one owner's private working
/// directories. `None` when the owner's names escape to more than one path component can
/// hold.
pub fn owner_dir(data_dir: &Path, owner: &Owner) -> Option<PathBuf> {
    let name = format!("{}+{}", escape(&owner.tenant), escape(&owner.principal));
    (name.len() <= MAX_NAME).then(|| data_dir.join(WORKDIRS).join(name))
}

/// `<data-dir>/workdirs/<owner>/<task-id>/`; `None` for a task id that could step outside
/// it (ids are minted by the node) or an owner whose name is too long.
pub fn private_dir(data_dir: &Path, owner: &Owner, task_id: &str) -> Option<PathBuf> {
    let dir = a2ad_storage::artifact_dir(Path::new(""), task_id)?;
    let task = dir.file_name()?;
    Some(owner_dir(data_dir, owner)?.join(task))
}

/// Removes a task's private working directory, if it has one. Blocking. A directory that
/// cannot be removed is logged, not an error: the task itself is gone.
pub fn remove_private_dir(data_dir: &Path, owner: &Owner, task_id: &str) {
    let Some(dir) = private_dir(data_dir, owner, task_id) else { return };
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(task_id, error = %e, "could not remove a task's private working directory"),
    }
}

/// `name` with every byte outside `[A-Za-z0-9_-]` as `%XX`; an empty name is `%`.
fn escape(name: &str) -> String {
    if name.is_empty() {
        return "%".into();
    }
    let mut escaped = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("%{byte:02X}"));
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(tenant: &str, principal: &str) -> Owner {
        Owner { tenant: tenant.into(), principal: principal.into() }
    }

    #[test]
    fn owners_never_share_a_directory_and_none_steps_out() {
        let data = Path::new("/data");
        let dir = |t: &str, p: &str| owner_dir(data, &owner(t, p)).unwrap();
        assert_eq!(dir("acme", "ci"), Path::new("/data/workdirs/acme+ci"));
        assert_eq!(dir("", ""), Path::new("/data/workdirs/%+%"));
        assert_ne!(dir("a+b", "c"), dir("a", "b+c"));
        assert_ne!(dir("", "x"), dir("%", "x"));
        assert_eq!(dir("..", "/"), Path::new("/data/workdirs/%2E%2E+%2F"));
        assert!(owner_dir(data, &owner(&"x".repeat(300), "p")).is_none());
        let task = private_dir(data, &owner("acme", "ci"), "0193-abc").unwrap();
        assert_eq!(task, Path::new("/data/workdirs/acme+ci/0193-abc"));
        for bad in ["", "..", "a/b"] {
            assert!(private_dir(data, &owner("acme", "ci"), bad).is_none(), "{bad}");
        }
    }
}
