//! Where the push configs' records live: bytes by (task id, config id), kept in a sled
//! tree of the node's own store ([`SledRows`]), or in the shared Redis store
//! (`redis/push_rows.rs`), so that every node reads every task's configs.
//! [`super::PushConfigStore`] seals and scopes; this only keeps bytes.

use super::{key_task_id, record_key, task_prefix};
use crate::StoreError;

/// A store of push config records.
pub(crate) trait ConfigRows: Send + Sync {
    fn put(&self, task_id: &str, id: &str, value: Vec<u8>) -> Result<(), StoreError>;

    fn get(&self, task_id: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// A task's (config id, record) rows, in id order.
    fn list(&self, task_id: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError>;

    /// Removes the row only if it still holds `current` (a concurrent write wins).
    fn remove_if(&self, task_id: &str, id: &str, current: Vec<u8>) -> Result<bool, StoreError>;

    /// Removes the row, whatever it holds.
    fn remove(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        match self.get(task_id, id)? {
            Some(current) => self.remove_if(task_id, id, current),
            None => Ok(false),
        }
    }

    /// Removes every row of a task; returns how many there were.
    fn remove_task(&self, task_id: &str) -> Result<usize, StoreError>;

    /// The ids of the tasks that have rows, each once.
    fn task_ids(&self) -> Result<Vec<String>, StoreError>;
}

/// The rows in a tree of the node's sled database.
pub(crate) struct SledRows(pub sled::Tree);

pub(crate) fn too_long() -> StoreError {
    StoreError::Corrupt(format!("refusing to store a push config: the task id is over {} bytes", u16::MAX))
}

impl ConfigRows for SledRows {
    fn put(&self, task_id: &str, id: &str, value: Vec<u8>) -> Result<(), StoreError> {
        self.0.insert(record_key(task_id, id).ok_or_else(too_long)?, value)?;
        Ok(())
    }

    fn get(&self, task_id: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match record_key(task_id, id) {
            Some(key) => Ok(self.0.get(key)?.map(|v| v.to_vec())),
            None => Ok(None),
        }
    }

    fn list(&self, task_id: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let Some(prefix) = task_prefix(task_id) else { return Ok(Vec::new()) };
        let mut rows = Vec::new();
        for entry in self.0.scan_prefix(&prefix) {
            let (key, value) = entry?;
            let id = std::str::from_utf8(&key[prefix.len()..])
                .map_err(|_| StoreError::Corrupt(format!("push config key of task {task_id} is not UTF-8")))?;
            rows.push((id.to_owned(), value.to_vec()));
        }
        Ok(rows)
    }

    fn remove(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        match record_key(task_id, id) {
            Some(key) => Ok(self.0.remove(key)?.is_some()),
            None => Ok(false),
        }
    }

    fn remove_if(&self, task_id: &str, id: &str, current: Vec<u8>) -> Result<bool, StoreError> {
        let Some(key) = record_key(task_id, id) else { return Ok(false) };
        Ok(self.0.compare_and_swap(key, Some(current), None::<&[u8]>)?.is_ok())
    }

    fn remove_task(&self, task_id: &str) -> Result<usize, StoreError> {
        let Some(prefix) = task_prefix(task_id) else { return Ok(0) };
        let mut batch = sled::Batch::default();
        let mut count = 0;
        for entry in self.0.scan_prefix(&prefix) {
            batch.remove(entry?.0);
            count += 1;
        }
        if count > 0 {
            self.0.apply_batch(batch)?;
        }
        Ok(count)
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = Vec::new();
        for entry in self.0.iter().keys() {
            let key = entry?;
            let task_id = key_task_id(&key)
                .ok_or_else(|| StoreError::Corrupt("a push config key has no task id segment".into()))?;
            if ids.last().map(String::as_str) != Some(task_id) {
                ids.push(task_id.to_owned());
            }
        }
        Ok(ids)
    }
}
