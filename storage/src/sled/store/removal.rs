//! Removing tasks and sessions, and counting what the store holds: what retention and
//! `a2ad admin stats` need from the sled store.

use super::index::{self, Prefix, Stamp};
use super::task_index::Indexed;
use super::task_value::{self, HeldTurn};
use super::writes::Writes;
use super::SledStore;
use crate::{ContextKey, StoreCounts, StoreError, TaskRecord};

/// A prepared task removal: apply `batch` (and `sessions` first), then
/// [`Removal::unindex`] it; [`Removal::apply`] does all three.
pub(super) struct Removal {
    pub record: TaskRecord,
    pub batch: Writes,
    /// For the `sessions` tree, applied first: the chunks that referenced the task now
    /// hold its messages (`sessions.rs`, [`SledStore::unreference`]).
    pub sessions: Writes,
    /// The stamp the record was stored under, which its index entries hold.
    stamp: Stamp,
    /// The session turns its value held.
    turns: Vec<HeldTurn>,
}

impl Removal {
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
        std::mem::take(&mut self.batch).apply(&store.tasks, store.atomicity)?;
        Ok(self.unindex(store))
    }

    /// Takes the removed task out of the store's indexes and counters, once its keys are
    /// gone; returns its record.
    pub fn unindex(self, store: &SledStore) -> TaskRecord {
        store.index.remove(&Indexed::of(&self.record, self.stamp), &self.turns);
        self.record
    }
}

impl SledStore {
    pub(super) fn remove_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let Some(removal) = self.removal_batch(task_id)? else {
            return Ok(None);
        };
        removal.apply(self).map(Some)
    }

    /// The `tasks`-tree batch that removes a task with its event log, the `sessions`-tree
    /// writes that keep its messages in its session, and the record it removes; `None`
    /// when there is no such task. Both
    /// [`Self::remove_task`] and [`super::SledStore::settle_reply`] apply it, so whatever
    /// a removal must also update belongs here.
    pub(super) fn removal_batch(&self, task_id: &str) -> Result<Option<Removal>, StoreError> {
        let task_key = index::key(Prefix::Task, task_id.as_bytes());
        let Some(bytes) = self.tasks.get(&task_key)? else {
            return Ok(None);
        };
        let value = task_value::parse(&bytes)?;
        let record = Self::decode_record(&value)?;
        // The index entries hold the stamp the record was stored under.
        let stamp = Stamp::decode(&bytes).unwrap_or_else(|| Stamp::of(&record));
        let turns = value.turns().to_vec();
        let mut sessions = Writes::default();
        self.unreference(&Indexed::of(&record, stamp), &record, &turns, &mut sessions)?;
        // The record goes last, as in `put_task`: a removal a crash cut short is found
        // again by its replay, which removes the rest.
        let mut batch = Writes::default();
        for entry in self.tasks.scan_prefix(index::event_prefix(task_id)) {
            let (key, _) = entry?;
            batch.remove(key);
        }
        batch.remove(task_key);
        Ok(Some(Removal { record, batch, sessions, stamp, turns }))
    }

    pub(super) fn remove_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        if self.index.has_tasks_in(&key.owner, &key.context_id) {
            return Ok(false);
        }
        let context = key.storage_key();
        let meta = index::key(Prefix::SessionMeta, &context);
        let had_session = self.sessions.contains_key(&meta)?;
        let mut batch = Writes::default();
        self.remove_chunks(&context, &mut batch)?;
        batch.remove(index::key(Prefix::PrunedTo, &context));
        batch.remove(meta);
        batch.apply(&self.sessions, self.atomicity)?;
        // None are left with no task; but a turn the index holds that no task lists any
        // more must not outlive the session.
        self.index.drop_turns_before(&context, u64::MAX);
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
