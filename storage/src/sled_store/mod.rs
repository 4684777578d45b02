//! The embedded sled store.
//!
//! Trees:
//! * `tasks`: task id → [`TaskRecord`] as JSON.
//! * `tasks_by_time`: owner ‖ status ms (BE) ‖ task id → state number. The `ListTasks`
//!   order is a reverse scan of an owner's prefix, and the state in the value lets status
//!   filters and `totalSize` be answered without reading the tasks.
//! * `tasks_by_context`: owner ‖ context id ‖ status ms ‖ task id → state number, the same
//!   layout for `ListTasks` with a `contextId` filter.
//! * `tasks_active`: task id → (), the tasks in SUBMITTED or WORKING, so that start-up
//!   recovery does not scan every task.
//! * `sessions`: owner ‖ context id → [`SessionRecord`] metadata as JSON.
//! * `session_history`: owner ‖ context id ‖ sequence (BE) → one message as JSON; only the
//!   last `history_limit` are kept.
//!
//! Every task write updates all task trees in one transaction, so an index never points at
//! a state the task is not in, even after a crash.

mod index;

use crate::{ContextKey, SessionRecord, StoreError, TaskPage, TaskQuery, TaskRecord, TaskStore};
use a2ad_protocol::{Message, TaskState};
use sled::transaction::{ConflictableTransactionError, TransactionalTree};
use sled::Transactional;
use std::path::Path;
use std::sync::Arc;

/// The sled-backed [`TaskStore`].
pub struct SledStore {
    db: sled::Db,
    tasks: sled::Tree,
    by_time: sled::Tree,
    by_context: sled::Tree,
    active: sled::Tree,
    sessions: sled::Tree,
    session_history: sled::Tree,
}

impl SledStore {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(128 * 1024 * 1024)
            .flush_every_ms(Some(1000))
            .open()?;
        Ok(SledStore {
            tasks: db.open_tree("tasks")?,
            by_time: db.open_tree("tasks_by_time")?,
            by_context: db.open_tree("tasks_by_context")?,
            active: db.open_tree("tasks_active")?,
            sessions: db.open_tree("sessions")?,
            session_history: db.open_tree("session_history")?,
            db,
        })
    }

    fn decode_task(bytes: &[u8]) -> Result<TaskRecord, StoreError> {
        serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(format!("task record: {e}")))
    }
}

/// Replaces the index entries of `old` (if any) with those of `new`, inside a transaction.
fn reindex(
    trees: (&TransactionalTree, &TransactionalTree, &TransactionalTree),
    old: Option<&TaskRecord>,
    new: &TaskRecord,
) -> Result<(), ConflictableTransactionError<StoreError>> {
    let (by_time, by_context, active) = trees;
    if let Some(old) = old {
        by_time.remove(index::time_key(old))?;
        by_context.remove(index::context_key(old))?;
    }
    let state = [u8::try_from(new.state().number()).unwrap_or(0)];
    by_time.insert(index::time_key(new), &state)?;
    by_context.insert(index::context_key(new), &state)?;
    if new.state().is_active() {
        active.insert(new.task.id.as_bytes(), &[])?;
    } else {
        active.remove(new.task.id.as_bytes())?;
    }
    Ok(())
}

impl TaskStore for SledStore {
    fn put_task(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let encoded = serde_json::to_vec(record).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let trees = (&self.tasks, &self.by_time, &self.by_context, &self.active);
        trees.transaction(|(tasks, by_time, by_context, active)| {
            let old = match tasks.insert(record.task.id.as_bytes(), encoded.as_slice())? {
                Some(bytes) => Some(Self::decode_task(&bytes).map_err(ConflictableTransactionError::Abort)?),
                None => None,
            };
            reindex((by_time, by_context, active), old.as_ref(), record)
        })?;
        Ok(())
    }

    fn get_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.tasks.get(task_id.as_bytes())?.map(|b| Self::decode_task(&b)).transpose()
    }

    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let (tree, prefix) = match &query.context_id {
            Some(ctx) => (&self.by_context, index::context_prefix(&query.owner, ctx)),
            None => (&self.by_time, query.owner.key_prefix()),
        };
        let scan = index::scan(tree, &prefix, query)?;
        let mut records = Vec::with_capacity(scan.ids.len());
        for id in &scan.ids {
            // A task removed between the index scan and this read is simply skipped.
            if let Some(record) = self.get_task(id)? {
                records.push(record);
            }
        }
        Ok(TaskPage { records, next_cursor: scan.next_cursor, total: scan.total })
    }

    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        let mut out = Vec::new();
        for entry in self.active.iter() {
            let (id, _) = entry?;
            let id = String::from_utf8_lossy(&id).into_owned();
            if let Some(record) = self.get_task(&id)? {
                if states.contains(&record.state()) {
                    out.push(record);
                }
            }
        }
        Ok(out)
    }

    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError> {
        let prefix = key.storage_key();
        let Some(bytes) = self.sessions.get(&prefix)? else {
            return Ok(None);
        };
        let mut session: SessionRecord =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt(format!("session record: {e}")))?;
        let mut history = Vec::with_capacity(history_limit.min(64));
        for entry in self.session_history.scan_prefix(&prefix).rev().take(history_limit) {
            let (_, value) = entry?;
            history.push(
                serde_json::from_slice(&value).map_err(|e| StoreError::Corrupt(format!("session message: {e}")))?,
            );
        }
        history.reverse();
        session.history = Arc::new(history);
        Ok(Some(session))
    }

    fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError> {
        let prefix = session.key.storage_key();
        let meta = serde_json::to_vec(session).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let encoded = appended
            .iter()
            .map(|m| serde_json::to_vec(m).map_err(|e| StoreError::Corrupt(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let count = session.message_count;
        let first_new = count.saturating_sub(appended.len() as u64);
        let limit = history_limit as u64;
        (&self.sessions, &self.session_history).transaction(|(sessions, history)| {
            sessions.insert(prefix.as_slice(), meta.as_slice())?;
            for (seq, message) in (first_new..).zip(&encoded) {
                history.insert(index::sequence_key(&prefix, seq), message.as_slice())?;
            }
            for seq in first_new.saturating_sub(limit)..count.saturating_sub(limit) {
                history.remove(index::sequence_key(&prefix, seq))?;
            }
            Ok::<(), ConflictableTransactionError<StoreError>>(())
        })?;
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        Ok(self.db.size_on_disk()?)
    }
}

#[cfg(test)]
mod tests;
