//! Artifact directories and push configs whose task is gone.
//!
//! A task's record goes first and its artifact directory after it (retention, and a
//! Message-only reply's settling write), so a crash in between leaves a directory no task
//! owns. Start-up sweeps them once, in the background: a directory under
//! `<data-dir>/artifacts/` whose name is a task id the store does not know is removed.
//! A task is stored before any of its artifact files are written, so the directory of a
//! live task always has its record, and a new task never looks like an orphan.
//!
//! Push configs live in a tree of their own and go after the task too (retention, and
//! the settling write of a Message-only reply), so a crash in between leaves configs no
//! task owns. [`remove_orphan_push_configs`] removes them, also once per start, but
//! before the node takes requests: a new task's inline config is stored just before its
//! record (so that its first event is pushed), and a sweep running alongside requests
//! could take that config for an orphan.

use a2ad_storage::TaskStoreExt;
use a2ad_storage::{artifact_dir, PushConfigStore, Scope, StoreError, TaskStore};
use std::path::Path;

/// Removes every artifact directory whose task the store does not hold; returns how
/// many. Entries that are not directories, or whose names could not be task ids, are
/// left alone. A directory that cannot be removed is logged and skipped. Blocking.
pub fn remove_orphan_artifact_dirs(store: &dyn TaskStore, data_dir: &Path) -> Result<usize, StoreError> {
    let root = data_dir.join("artifacts");
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StoreError::Io(format!("cannot list {}: {e}", root.display()))),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Ok(task_id) = entry.file_name().into_string() else { continue };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let Some(dir) = artifact_dir(data_dir, &task_id).filter(|_| is_dir) else { continue };
        if store.get_task(Scope::Node, &task_id)?.is_some() {
            continue;
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {} // Removed meanwhile.
            Err(e) => tracing::warn!(task_id, error = %e, "could not remove an orphaned artifact dir"),
        }
    }
    Ok(removed)
}

/// Removes every private working directory (`<data-dir>/workdirs/<owner>/<task-id>/`, see
/// [`a2ad_actors::workdirs`]) whose task the store does not hold; returns how many. Like
/// an artifact directory, a private one is made only once its task is stored. Blocking.
pub fn remove_orphan_workdirs(store: &dyn TaskStore, data_dir: &Path) -> Result<usize, StoreError> {
    let root = data_dir.join(a2ad_actors::workdirs::WORKDIRS);
    let owners = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StoreError::Io(format!("cannot list {}: {e}", root.display()))),
    };
    let mut removed = 0;
    for owner in owners.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
        let Ok(tasks) = std::fs::read_dir(owner.path()) else { continue };
        for entry in tasks.flatten() {
            let Ok(task_id) = entry.file_name().into_string() else { continue };
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir || artifact_dir(data_dir, &task_id).is_none() {
                continue;
            }
            if store.get_task(Scope::Node, &task_id)?.is_some() {
                continue;
            }
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(task_id, error = %e, "could not remove an orphaned private working directory"),
            }
        }
    }
    Ok(removed)
}

/// Removes every push config whose task the store does not hold; returns how many.
/// Blocking; run it before the node takes requests (see the module docs).
pub fn remove_orphan_push_configs(store: &dyn TaskStore, configs: &PushConfigStore) -> Result<usize, StoreError> {
    let mut removed = 0;
    for task_id in configs.task_ids()? {
        if store.get_task(Scope::Node, &task_id)?.is_none() {
            removed += configs.delete_task(&task_id)?;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2ad_protocol::{Task, TaskState, TaskStatus};
    use a2ad_storage::{Owner, SledStore, TaskRecord};

    /// Stores a completed task `id`.
    fn store_task(store: &SledStore, id: &str) {
        let task = Task {
            id: id.into(),
            context_id: "c".into(),
            status: TaskStatus::now(TaskState::Completed, None),
            artifacts: vec![],
            history: vec![],
            metadata: None,
        };
        let record = TaskRecord { owner: Owner::anonymous(), agent: "echo".into(), task, last_event_seq: 0 };
        store.put_task(&record, &[]).unwrap();
    }

    #[test]
    fn only_push_configs_of_unknown_tasks_are_removed() {
        let data = tempfile::tempdir().unwrap();
        let store = SledStore::open(&data.path().join("store")).unwrap();
        let key = a2ad_storage::SecretKey::load_or_create(data.path()).unwrap();
        let configs = PushConfigStore::new(store.tree("push_configs").unwrap(), key);
        store_task(&store, "kept-1");
        for (task, id) in [("kept-1", "a"), ("gone-1", "a"), ("gone-1", "b"), ("gone-10", "a")] {
            let config = a2ad_protocol::TaskPushNotificationConfig {
                task_id: Some(task.into()),
                id: Some(id.into()),
                url: "https://hooks.example/a2a".into(),
                token: Some("tok".into()),
                tenant: None,
                authentication: None,
            };
            configs.put(&Owner::anonymous(), &config).unwrap();
        }

        assert_eq!(remove_orphan_push_configs(&store, &configs).unwrap(), 3);
        assert_eq!(configs.task_ids().unwrap(), ["kept-1"], "a stored task keeps its config");
        assert_eq!(configs.list(Scope::Node, "kept-1").unwrap()[0].config.token.as_deref(), Some("tok"), "intact");
        assert_eq!(remove_orphan_push_configs(&store, &configs).unwrap(), 0, "idempotent");
    }

    #[test]
    fn only_directories_of_unknown_tasks_are_removed() {
        let data = tempfile::tempdir().unwrap();
        let store = SledStore::open(&data.path().join("store")).unwrap();
        store_task(&store, "kept-1");
        let artifacts = data.path().join("artifacts");
        for dir in ["kept-1", "gone-1", "gone-2/nested"] {
            std::fs::create_dir_all(artifacts.join(dir)).unwrap();
            std::fs::write(artifacts.join(dir).join("out.txt"), "x").unwrap();
        }
        std::fs::write(artifacts.join("stray-file"), "not a task's dir").unwrap();

        assert_eq!(remove_orphan_artifact_dirs(&store, data.path()).unwrap(), 2);
        assert!(artifacts.join("kept-1/out.txt").exists(), "a stored task keeps its files");
        assert!(!artifacts.join("gone-1").exists() && !artifacts.join("gone-2").exists());
        assert!(artifacts.join("stray-file").exists(), "only directories are task dirs");
        assert_eq!(remove_orphan_artifact_dirs(&store, data.path()).unwrap(), 0, "idempotent");
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(remove_orphan_artifact_dirs(&store, empty.path()).unwrap(), 0, "no artifacts dir yet");
        let workdirs = data.path().join("workdirs/acme+ci");
        for dir in ["kept-1", "gone-3"] {
            std::fs::create_dir_all(workdirs.join(dir)).unwrap();
            std::fs::write(workdirs.join(dir).join("scratch"), "x").unwrap();
        }
        assert_eq!(remove_orphan_workdirs(&store, data.path()).unwrap(), 1);
        assert!(workdirs.join("kept-1/scratch").exists() && !workdirs.join("gone-3").exists());
        assert_eq!(remove_orphan_workdirs(&store, empty.path()).unwrap(), 0, "no workdirs yet");
    }
}
