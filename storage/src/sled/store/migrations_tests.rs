//! The format version: stamped on a new store, reached by migrating an older one, and a
//! newer one refused. (The migrations' effects on the data are tested with their
//! subjects: `sessions_tests.rs`, `task_index_tests.rs`.)

use super::{version, FORMAT_KEY, FORMAT_VERSION};
use crate::sled::store::tests::record;
use crate::sled::store::SledStore;
use crate::{Owner, StoreError, TaskStoreExt};
use a2ad_protocol::TaskState;
use std::path::Path;

/// The version `store` holds.
pub(in crate::sled::store) fn stored_version(store: &SledStore) -> u32 {
    version(&store.db).unwrap()
}

/// Opens the store in `dir`, retrying while sled still holds the lock of a handle just
/// dropped (sled releases it from a background thread).
fn open(dir: &Path) -> Result<SledStore, StoreError> {
    for _ in 0..250 {
        match SledStore::open(dir) {
            Err(StoreError::Locked) | Err(StoreError::Engine(_)) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other,
        }
    }
    SledStore::open(dir)
}

/// sled itself on `dir`, retrying like [`open`].
fn raw_open(dir: &Path) -> sled::Db {
    for _ in 0..250 {
        if let Ok(db) = sled::open(dir) {
            return db;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    sled::open(dir).unwrap()
}

/// A store as a2ad wrote it before the format version: no `format` key, the counters
/// marker, and an event-id reservation tree holding `reservations`.
fn unversioned_store(dir: &Path, reservations: &[(&str, u64)]) {
    let db = sled::open(dir).unwrap();
    db.open_tree("tasks").unwrap().insert(b"vcounters-v1", &[]).unwrap();
    let tree = db.open_tree("event_reservations").unwrap();
    for (task, seq) in reservations {
        tree.insert(task, &seq.to_be_bytes()).unwrap();
    }
    db.flush().unwrap();
}

#[test]
fn a_new_store_is_written_at_the_current_version_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path()).unwrap();
        assert_eq!(stored_version(&store), FORMAT_VERSION);
        store.put_task(&record(&Owner::anonymous(), "t1", "c1", TaskState::Working, 1), &[]).unwrap();
    }
    let store = open(dir.path()).unwrap();
    assert_eq!(stored_version(&store), FORMAT_VERSION);
    assert!(store.get_task(crate::Scope::Node, "t1").unwrap().is_some());
}

#[test]
fn a_store_from_before_the_version_is_migrated_and_stamped() {
    let dir = tempfile::tempdir().unwrap();
    unversioned_store(dir.path(), &[]);
    let store = open(dir.path()).unwrap();
    assert_eq!(stored_version(&store), FORMAT_VERSION);
    assert!(!store.tasks.contains_key(b"vcounters-v1").unwrap(), "the version replaces the marker");
    assert!(!store.db.tree_names().iter().any(|name| name == b"event_reservations"), "the empty tree is gone");
}

#[test]
fn a_store_holding_reservations_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    unversioned_store(dir.path(), &[("t1", 70)]);
    let error = open(dir.path()).err().expect("refused");
    assert!(matches!(error, StoreError::Retired { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("event-id reservations") && text.contains("before 2026-12-06"), "{text}");
    let db = raw_open(dir.path());
    assert_eq!(db.open_tree("event_reservations").unwrap().len(), 1, "nothing dropped");
    assert!(db.get(FORMAT_KEY).unwrap().is_none(), "nor stamped");
    assert!(db.open_tree("tasks").unwrap().contains_key(b"vcounters-v1").unwrap(), "nor migrated");
}

#[test]
fn a_store_of_a_newer_version_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()).unwrap());
    {
        let db = raw_open(dir.path());
        db.insert(FORMAT_KEY, &(FORMAT_VERSION + 1).to_be_bytes()).unwrap();
        db.flush().unwrap();
    }
    let error = open(dir.path()).err().expect("refused");
    let text = error.to_string();
    assert_eq!(
        text,
        format!(
            "the store is in format version {}; this a2ad knows versions up to {FORMAT_VERSION}: run a newer a2ad on it",
            FORMAT_VERSION + 1
        )
    );
    assert!(!text.contains(&dir.path().display().to_string()), "no path in the message");
}
