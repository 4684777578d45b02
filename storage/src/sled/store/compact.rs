//! Offline compaction: sled has no online compaction, and a store whose tasks were removed
//! keeps its file size. [`compact`] copies every tree into a fresh database inside the
//! data dir, then swaps the files in, so that only live data takes space.
//!
//! The swap is crash-safe with two marker files: the new database is complete once
//! `.compact-new/READY` exists; the old files are all set aside once `.compact-old/DONE`
//! exists. [`recover`] (run by every [`SledStore::open`]) finishes an interrupted swap
//! forward, or drops an incomplete copy, so the store is always either the old or the new
//! one. Only sled's own files move; other files in the data dir (the push key, artifact
//! files) stay where they are.

use super::SledStore;
use crate::StoreError;
use std::path::{Path, PathBuf};

const NEW_DIR: &str = ".compact-new";
const OLD_DIR: &str = ".compact-old";
const READY: &str = "READY";
const DONE: &str = "DONE";

/// Sizes before and after a compaction, in bytes (sled's files only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactReport {
    pub before: u64,
    pub after: u64,
}

/// Compacts the store in `dir`. The node must be stopped (sled's lock refuses otherwise).
pub fn compact(dir: &Path) -> Result<CompactReport, StoreError> {
    let before = sled_files_size(dir)?;
    {
        let old = SledStore::open(dir)?;
        let new_dir = dir.join(NEW_DIR);
        remove_if_present(&new_dir)?;
        let segment_size = super::segment_size_for(dir);
        let new =
            sled::Config::new().path(&new_dir).mode(sled::Mode::HighThroughput).segment_size(segment_size).open()?;
        copy_trees(&old.db, &new)?;
        new.flush()?;
        old.db.flush()?;
        drop(new);
        std::fs::write(new_dir.join(READY), b"").map_err(|e| io("write the ready marker", &new_dir, e))?;
    }
    // sled releases its lock from a background thread once the last handle is gone.
    std::thread::sleep(std::time::Duration::from_millis(200));
    recover(dir)?;
    Ok(CompactReport { before, after: sled_files_size(dir)? })
}

/// Finishes or undoes a compaction that was interrupted. Returns whether there was one.
pub fn recover(dir: &Path) -> Result<bool, StoreError> {
    let (new_dir, old_dir) = (dir.join(NEW_DIR), dir.join(OLD_DIR));
    if !new_dir.exists() && !old_dir.exists() {
        return Ok(false);
    }
    if !new_dir.join(READY).exists() {
        // The copy never finished: the old files were not touched.
        remove_if_present(&new_dir)?;
        remove_if_present(&old_dir)?;
        return Ok(true);
    }
    if !old_dir.join(DONE).exists() {
        std::fs::create_dir_all(&old_dir).map_err(|e| io("create", &old_dir, e))?;
        for name in sled_files(dir)? {
            rename(&dir.join(&name), &old_dir.join(&name))?;
        }
        std::fs::write(old_dir.join(DONE), b"").map_err(|e| io("write the done marker", &old_dir, e))?;
    }
    for name in sled_files(&new_dir)? {
        rename(&new_dir.join(&name), &dir.join(&name))?;
    }
    remove_if_present(&new_dir)?;
    remove_if_present(&old_dir)?;
    Ok(true)
}

/// Copies every tree, the default one included, in batches.
fn copy_trees(from: &sled::Db, to: &sled::Db) -> Result<(), StoreError> {
    for name in from.tree_names() {
        let (source, target) = (from.open_tree(&name)?, to.open_tree(&name)?);
        let mut batch = sled::Batch::default();
        let mut in_batch = 0;
        for entry in source.iter() {
            let (key, value) = entry?;
            batch.insert(key, value);
            in_batch += 1;
            if in_batch == 10_000 {
                target.apply_batch(std::mem::take(&mut batch))?;
                in_batch = 0;
            }
        }
        target.apply_batch(batch)?;
    }
    Ok(())
}

/// The names of sled's files in `dir`: `conf`, `db`, `blobs`, `snap.*`.
fn sled_files(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = std::fs::read_dir(dir).map_err(|e| io("read", dir, e))?;
    let mut names = Vec::new();
    for entry in entries {
        let name = entry.map_err(|e| io("read", dir, e))?.file_name().to_string_lossy().into_owned();
        if matches!(name.as_str(), "conf" | "db" | "blobs") || name.starts_with("snap.") {
            names.push(name);
        }
    }
    Ok(names)
}

/// Bytes of sled's files in `dir`.
pub fn sled_files_size(dir: &Path) -> Result<u64, StoreError> {
    let mut total = 0;
    for name in sled_files(dir)? {
        total += tree_size(&dir.join(name));
    }
    Ok(total)
}

/// Bytes under `path` (a file or a directory, recursively).
pub fn tree_size(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            std::fs::read_dir(path).map(|entries| entries.flatten().map(|e| tree_size(&e.path())).sum()).unwrap_or(0)
        }
        Ok(meta) => meta.len(),
        Err(_) => 0,
    }
}

fn rename(from: &Path, to: &Path) -> Result<(), StoreError> {
    std::fs::rename(from, to).map_err(|e| io("move", from, e))
}

fn remove_if_present(path: &PathBuf) -> Result<(), StoreError> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", path, e)),
        _ => Ok(()),
    }
}

fn io(action: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("compaction: cannot {action} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Owner, TaskStore, TaskStoreExt};

    fn fill(store: &SledStore, n: usize) {
        for i in 0..n {
            let mut record = crate::sled::store::tests::record(
                &Owner::anonymous(),
                &format!("t{i}"),
                "c",
                a2ad_protocol::TaskState::Completed,
                1000 + i as i64,
            );
            record.agent = "x".repeat(2000);
            store.put_task(&record, &[]).unwrap();
        }
    }

    #[test]
    fn compaction_keeps_live_data_and_reclaims_removed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("push-secret.key"), b"k").unwrap();
        {
            let store = SledStore::open(dir.path()).unwrap();
            fill(&store, 3000);
            for i in 0..2990 {
                store.delete_task(&format!("t{i}")).unwrap();
            }
            store.flush().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let report = compact(dir.path()).unwrap();
        assert!(report.after < report.before, "{report:?}");
        let store = super::super::open_retrying(dir.path());
        assert!(store.get_task(crate::Scope::Node, "t2995").unwrap().is_some(), "live tasks survive");
        assert!(store.get_task(crate::Scope::Node, "t5").unwrap().is_none());
        assert!(dir.path().join("push-secret.key").exists(), "other files stay");
        assert!(!dir.path().join(NEW_DIR).exists() && !dir.path().join(OLD_DIR).exists());
    }

    #[test]
    fn an_interrupted_swap_is_finished_and_an_incomplete_copy_dropped() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = SledStore::open(dir.path()).unwrap();
            fill(&store, 5);
            store.flush().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        // An incomplete copy: dropped, the old store is untouched.
        std::fs::create_dir_all(dir.path().join(NEW_DIR).join("blobs")).unwrap();
        assert!(recover(dir.path()).unwrap());
        assert!(!dir.path().join(NEW_DIR).exists());
        {
            let store = super::super::open_retrying(dir.path());
            assert!(store.get_task(crate::Scope::Node, "t4").unwrap().is_some());
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        // A complete copy whose swap stopped half-way: set aside the old, move in the new.
        let new_dir = dir.path().join(NEW_DIR);
        for name in sled_files(dir.path()).unwrap() {
            copy_all(&dir.path().join(&name), &new_dir.join(&name));
        }
        std::fs::write(new_dir.join(READY), b"").unwrap();
        std::fs::create_dir_all(dir.path().join(OLD_DIR)).unwrap();
        std::fs::rename(dir.path().join("conf"), dir.path().join(OLD_DIR).join("conf")).unwrap();
        let store = super::super::open_retrying(dir.path());
        assert!(store.get_task(crate::Scope::Node, "t4").unwrap().is_some(), "open finished the swap");
        assert!(!new_dir.exists() && !dir.path().join(OLD_DIR).exists());
    }

    fn copy_all(from: &Path, to: &Path) {
        if from.is_dir() {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap().flatten() {
                copy_all(&entry.path(), &to.join(entry.file_name()));
            }
        } else {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(from, to).unwrap();
        }
    }
}
