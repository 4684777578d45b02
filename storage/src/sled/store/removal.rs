//! Removing tasks and sessions, and walking every task's index entry: what retention and
//! `a2ad admin stats` need from the sled store.

use super::index::{self, Prefix, Stamp};
use super::writes::Writes;
use super::{counters, SledStore};
use crate::{ContextKey, Owner, StoreCounts, StoreError, TaskEntry, TaskRecord};
use a2ad_protocol::TaskState;

/// A prepared task removal: apply `batch` while holding it (it holds the owner's counter
/// lock), then drop it; behind the log, [`Removal::apply`] does both and moves the held
/// counters.
pub(super) struct Removal<'a> {
    pub record: TaskRecord,
    pub batch: Writes,
    /// For the `sessions` tree, applied first: the chunks that referenced the task now
    /// hold its messages (`sessions.rs`, [`SledStore::unreference`]).
    pub sessions: Writes,
    deltas: Vec<(Vec<u8>, i64)>,
    _counting: std::sync::MutexGuard<'a, ()>,
}

impl Removal<'_> {
    /// Applies the rewrites of the chunks that referenced the task, ahead of the rest
    /// (which [`Removal::apply`] then does without them).
    pub fn apply_sessions(&mut self, store: &SledStore) -> Result<(), StoreError> {
        std::mem::take(&mut self.sessions).apply(&store.sessions, store.atomicity)?;
        Ok(())
    }

    /// Applies the removal to `store`'s trees, the sessions first; returns the removed
    /// record.
    pub fn apply(mut self, store: &SledStore) -> Result<TaskRecord, StoreError> {
        self.apply_sessions(store)?;
        self.batch.apply(&store.tasks, store.atomicity)?;
        store.counters.hold(&store.tasks, &self.deltas)?;
        Ok(self.record)
    }
}

impl SledStore {
    pub(super) fn visit_index(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        for entry in self.tasks.scan_prefix([Prefix::ByTime as u8]) {
            let (key, value) = entry?;
            let (owner, status_millis, task_id) = decode_time_key(&key[1..])?;
            let state = value
                .first()
                .and_then(|n| TaskState::from_number(i64::from(*n)))
                .ok_or_else(|| StoreError::Corrupt("index entry without a state".into()))?;
            visit(TaskEntry { owner, task_id, status_millis, state });
        }
        Ok(())
    }

    pub(super) fn remove_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let Some(removal) = self.removal_batch(task_id)? else {
            return Ok(None);
        };
        removal.apply(self).map(Some)
    }

    /// The `tasks`-tree batch that removes a task with every index entry, its event log
    /// and its counts, the `sessions`-tree writes that keep its messages in its session,
    /// and the record it removes; `None` when there is no such task. Both
    /// [`Self::remove_task`] and [`super::SledStore::settle_reply`] apply it, so whatever
    /// a removal must also update belongs here.
    pub(super) fn removal_batch(&self, task_id: &str) -> Result<Option<Removal<'_>>, StoreError> {
        let task_key = index::key(Prefix::Task, task_id.as_bytes());
        let Some(bytes) = self.tasks.get(&task_key)? else {
            return Ok(None);
        };
        let record = Self::decode_task(&bytes)?;
        let mut sessions = Writes::default();
        self.unreference(&record, &mut sessions)?;
        // The index keys and counters hold the stamp the record was stored under.
        let stamp = Stamp::decode(&bytes).unwrap_or_else(|| Stamp::of(&record));
        let millis = stamp.millis;
        // The record goes last, as in `put_task`: a removal a crash cut short is found
        // again by its replay, which removes the rest.
        let mut batch = Writes::default();
        batch.remove(index::time_key(&record, millis));
        batch.remove(index::context_key(&record, millis));
        batch.remove(index::key(Prefix::Active, task_id.as_bytes()));
        for entry in self.tasks.scan_prefix(index::event_prefix(task_id)) {
            let (key, _) = entry?;
            batch.remove(key);
        }
        // The counters are read and rewritten in the batch: the owner's lock is held until
        // the caller has applied it, so that concurrent writers of that owner lose no count.
        let counting = self.counters.lock(&record.owner);
        let deltas = counters::removal(&record, stamp);
        self.counters.add_to_batch(&self.tasks, &mut batch, &deltas)?;
        batch.remove(task_key);
        Ok(Some(Removal { record, batch, sessions, deltas, _counting: counting }))
    }

    pub(super) fn remove_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        let tasks_left = self.tasks.scan_prefix(index::context_prefix(&key.owner, &key.context_id)).next().is_some();
        if tasks_left {
            return Ok(false);
        }
        let context = key.storage_key();
        let meta = index::key(Prefix::SessionMeta, &context);
        let had_session = self.sessions.contains_key(&meta)?;
        let mut batch = Writes::default();
        self.remove_chunks(&context, &mut batch)?;
        batch.remove(meta);
        batch.apply(&self.sessions, self.atomicity)?;
        Ok(had_session)
    }

    pub(super) fn count_entries(&self) -> Result<StoreCounts, StoreError> {
        let count = |tree: &sled::Tree, prefix: Prefix| -> Result<u64, StoreError> {
            let mut n = 0;
            for entry in tree.scan_prefix([prefix as u8]) {
                entry?;
                n += 1;
            }
            Ok(n)
        };
        Ok(StoreCounts {
            events: count(&self.tasks, Prefix::Event)? + self.carried_event_count()?,
            sessions: count(&self.sessions, Prefix::SessionMeta)?,
            session_messages: self.count_session_messages()?,
        })
    }
}

/// owner ‖ status ms ‖ task id, as the by-time index writes it.
fn decode_time_key(rest: &[u8]) -> Result<(Owner, i64, String), StoreError> {
    let corrupt = || StoreError::Corrupt("by-time index key".into());
    let (owner, rest) = index::decode_owner(rest)?;
    if rest.len() < 8 {
        return Err(corrupt());
    }
    let (millis, id) = rest.split_at(8);
    let millis = u64::from_be_bytes(millis.try_into().map_err(|_| corrupt())?);
    let id = String::from_utf8(id.to_vec()).map_err(|_| corrupt())?;
    Ok((owner, i64::try_from(millis).unwrap_or(i64::MAX), id))
}
