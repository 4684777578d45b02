//! The write-ahead log in front of the task store: one compact record per step.
//!
//! [`WalStore`] wraps the sled store (any [`TaskStore`]) and the local push queue (the
//! local-file queue, or the outbox in front of Redis Streams). Every write (a task with its
//! events and push jobs, a session, a removal, a reply settlement)
//! is appended to the [`Wal`] as one record (`step.rs`) and queued; the log's flusher makes a whole batch
//! of records durable with one `fdatasync`, then applies their steps to the store without
//! a flush (`applier.rs`, the log's [`crate::sled::wal::AfterSync`] hook), and only then
//! resolves the batch's commits ([`crate::GroupCommit::over_log`]). So the store, and
//! every reader of it, holds durable steps only: the push worker and the forwarder find a
//! job in the queue only once its step is durable, and a read never sees what a crash
//! could take back. A write not committed by its caller is committed by the
//! [`Checkpointer`] within [`checkpointer::LOOK_EVERY`].
//!
//! The [`Checkpointer`] reads the LSN up to which every step is applied
//! ([`Wal::settled_lsn`]), flushes the store durably ([`TaskStore::flush`]) and declares
//! that LSN checkpointed, which drops the log segments behind it.
//!
//! At open, the records after the checkpoint are applied again ([`WalStore::open`]).
//! Every operation is idempotent (a put writes the same record and event keys again, a
//! removal of a removed task does nothing), so a record the store already held, in whole
//! or in part, is harmless (the sled store's task indexes and counters are built from its
//! task values at open, before the replay, and each replayed step moves them as it would
//! have). A step whose apply
//! fails fails its commit with [`StoreError::Unavailable`], stays queued, and is applied
//! again by the next commit (and replayed after a restart); a write the log could not make
//! durable is answered `STORE_UNAVAILABLE` and is retried by the log until the disk heals.
//!
//! A log record of a retired kind (tag 6, the event-id reservations nodes before
//! 2026-12-02 wrote) stops the open with [`StoreError::Retired`], which says to replay
//! the log with an older a2ad first: dropping it could give two events one id.
//!
//! Not logged (durable at the next checkpoint, at most a second later): push config
//! writes (their commit flushes the store directly), the push worker's acks, retries and
//! dead letters, and the forwarder's removals from the Redis outbox (a crash before the
//! checkpoint delivers, or forwards, a job again: at least once).

mod applier;
mod checkpointer;
mod step;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_apply;

pub use checkpointer::Checkpointer;

use crate::sled::wal::{Lsn, Wal, WalOptions};
use crate::{
    ContextKey, LoggedEvent, PushJob, PushQueue, SessionRecord, SessionWrite, StoreCounts, StoreError, TaskEntry,
    TaskPage, TaskQuery, TaskRecord, TaskStore, TaskStoreExt,
};
use a2ad_protocol::{Message, TaskState};
use applier::Applier;
use std::sync::Arc;
use step::{SessionStep, Step};

/// The log directory inside a data dir. sled locks the data dir, so one process at a time
/// opens the log too.
pub const WAL_DIR: &str = "wal";

/// The task store behind the write-ahead log.
pub struct WalStore {
    applier: Arc<Applier>,
    wal: Wal,
    /// Told of each task's change of state, as its write is queued.
    states: crate::Observer,
}

/// What [`WalStore::open`] found in the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Records applied again.
    pub replayed: usize,
    /// The checkpoint they followed.
    pub checkpoint: u64,
    /// Bytes of a torn last record dropped (a crash mid-write), if any.
    pub torn_tail_bytes: Option<u64>,
}

impl WalStore {
    /// Opens the log in `dir`, applies its tail to `inner` (and `queue`), makes `inner`
    /// durable and checkpoints the log, before any request can read the store. A record
    /// that does not decode stops here with [`StoreError::Corrupt`]; a damaged log with
    /// durable records after the damage stops with the log's `Corrupt` error, whose text
    /// names `a2ad admin repair`; a retired record stops it with [`StoreError::Retired`].
    /// Blocks.
    pub fn open(
        inner: Arc<crate::SledStore>,
        queue: Option<PushQueue>,
        dir: &std::path::Path,
        options: WalOptions,
    ) -> Result<(WalStore, ReplayReport), StoreError> {
        let (wal, replay) = Wal::open(dir, options)?;
        let mut report = ReplayReport {
            checkpoint: replay.checkpoint().0,
            torn_tail_bytes: replay.torn_tail().map(|cut| cut.dropped_bytes),
            ..ReplayReport::default()
        };
        let applier = Arc::new(Applier::new(inner, queue));
        let store = WalStore { applier, wal, states: crate::Observer::default() };
        for record in replay {
            let step = step::decode(&record.payload).map_err(|e| match e {
                StoreError::Corrupt(_) => StoreError::Corrupt(format!("write-ahead log record {}: {e}", record.lsn)),
                other => other,
            })?;
            store.applier.apply(&step)?;
            report.replayed += 1;
        }
        if report.replayed > 0 {
            store.checkpoint()?;
        }
        store.wal.set_after_sync(Arc::clone(&store.applier) as Arc<dyn crate::sled::wal::AfterSync>);
        Ok((store, report))
    }

    /// Tells `observer` of every change of a task's state from now on, as each write is
    /// queued in the log (the node's per-state counts).
    pub fn with_state_changes(mut self, observer: Arc<dyn crate::StateChanges>) -> Self {
        self.states = crate::Observer::new(observer);
        self
    }

    /// The generation (`last_event_seq`) and state of a task, the newest queued or
    /// stored, with no owner check: what a writer compares its new version with.
    pub fn task_version(&self, task_id: &str) -> Result<Option<(u64, TaskState)>, StoreError> {
        self.applier.lock().task_version(self.applier.inner.as_ref(), task_id)
    }

    /// Tells `listener` of every task step from now on, once it is durable and in the
    /// store (the node's live feed).
    pub fn on_durable(&self, listener: Arc<dyn crate::DurableSteps>) {
        self.applier.listen(listener);
    }

    /// The log (for the group commit, readiness and stats).
    pub fn wal(&self) -> &Wal {
        &self.wal
    }

    /// Flushes the store durably and checkpoints the log at the last LSN whose step is
    /// applied. Returns the checkpoint. Blocks on `fsync`s: a blocking thread only.
    pub fn checkpoint(&self) -> Result<Lsn, StoreError> {
        self.checkpoint_flushing(false)
    }

    /// Makes the writes that bypass the log (push configs) durable: flushes the store
    /// even when the log has nothing new to checkpoint, which [`WalStore::checkpoint`]
    /// skips. Blocks like it.
    pub fn flush_unlogged(&self) -> Result<(), StoreError> {
        self.checkpoint_flushing(true).map(drop)
    }

    fn checkpoint_flushing(&self, always: bool) -> Result<Lsn, StoreError> {
        let lsn = self.wal.settled_lsn();
        let behind = lsn > self.wal.checkpoint_lsn();
        if !behind && !always {
            return Ok(lsn);
        }
        self.applier.inner.flush()?;
        if behind {
            self.wal.checkpoint(lsn)?;
        }
        Ok(lsn)
    }

    /// Commits what was appended and not committed by its writer (so that its step
    /// reaches the store); the checkpointer calls it. Blocks on the sync.
    pub fn settle_pending(&self) -> Result<(), StoreError> {
        let last = self.wal.last_lsn();
        match last > self.wal.settled_lsn() {
            true => Ok(self.wal.commit_blocking(last)?),
            false => Ok(()),
        }
    }

    /// Queues a task write (with the session write of the same commit, when it ends a
    /// turn), after checking its generation against the newest queued or stored one.
    /// Returns the state the task had.
    fn put(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
        session: Option<SessionWrite<'_>>,
    ) -> Result<Option<TaskState>, StoreError> {
        crate::refuse_jobs_without_queue(self.applier.queue.is_some(), &jobs)?;
        let record_json = step::record_json(record)?;
        let payload = step::encode_put_task(record, &record_json, events, &jobs, session)?;
        let record = Arc::new(record.clone());
        let session = session.map(SessionStep::of);
        let contexts = applier::contexts_of(&record, session.as_ref());
        let mut unapplied = self.applier.lock();
        let previous = unapplied.task_version(self.applier.inner.as_ref(), &record.task.id)?;
        if let Some((stored, _)) = previous.filter(|(stored, _)| *stored > record.last_event_seq) {
            let (task_id, offered) = (record.task.id.clone(), record.last_event_seq);
            return Err(StoreError::Conflict { task_id, stored, offered });
        }
        let task = (record.task.id.as_str(), Some(Arc::clone(&record)));
        let step = Step::PutTask { record: Arc::clone(&record), record_json, events: events.to_vec(), jobs, session };
        unapplied.append(&self.wal, &payload, step, Some(task), contexts)?;
        drop(unapplied);
        let previous = previous.map(|(_, state)| state);
        self.states.stepped(previous, record.state());
        Ok(previous)
    }

    /// Queues the removal of a task (alone, or settling a reply with its session write)
    /// and returns the record it removes: the newest queued or stored one.
    fn remove(&self, task_id: &str, payload: &[u8], step: Step) -> Result<Option<TaskRecord>, StoreError> {
        let mut unapplied = self.applier.lock();
        let removed = unapplied.task(self.applier.inner.as_ref(), task_id)?;
        let mut contexts: Vec<Vec<u8>> =
            removed.iter().map(|r| applier::contexts_of(r, None)).collect::<Vec<_>>().concat();
        if let Step::SettleReply { session, .. } = &step {
            contexts.push(session.key.storage_key());
        }
        unapplied.append(&self.wal, payload, step, Some((task_id, None)), contexts)?;
        drop(unapplied);
        self.states.removed(removed.as_ref());
        Ok(removed)
    }
}

impl WalStore {
    /// Writes a session's metadata and appends `appended` (the messages that end at
    /// `session.message_count`) to its stored history, dropping stored messages older
    /// than the last `history_limit`. Not the node's write of a session (that is a
    /// step's, [`crate::Step::session`], or [`crate::TaskStore::settle_reply`]'s): what
    /// the tests write (logged as a record of its own).
    #[cfg(test)]
    pub(crate) fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError> {
        let payload = step::encode_session(None, session, appended, history_limit)?;
        let step = Step::PutSession { session: session.clone(), appended: appended.to_vec(), history_limit };
        let contexts = vec![session.key.storage_key()];
        self.applier.lock().append(&self.wal, &payload, step, None, contexts)?;
        Ok(())
    }

    /// The store's events above `after`, then the log's steps not yet applied.
    fn events_with_unapplied(
        &self,
        scope: crate::Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        // Under the queue's lock, so no step moves from the queue to the store between
        // the two reads (a step leaves the queue once it is applied).
        let unapplied = self.applier.lock();
        let mut events = self.applier.inner.events_after(scope, task_id, after, limit)?;
        let stored_up_to = events.last().map_or(after, |e| e.seq);
        events.extend(unapplied.events_after(scope, task_id, stored_up_to));
        events.dedup_by_key(|e| e.seq);
        events.truncate(limit);
        Ok(events)
    }
}

impl TaskStore for WalStore {
    /// One record for the task's step, its push jobs (into the local queue: the
    /// local-file queue or the Redis outbox; without one, jobs are refused) and the
    /// session: replay applies them all. Answered once it is in the log's memory: the
    /// caller's group commit makes it durable.
    fn commit(&self, step: crate::Step<'_>) -> crate::StoreFuture<crate::Replaced> {
        crate::ready(self.put(step.record, step.events, step.jobs, step.session))
    }

    fn read_events(
        &self,
        scope: crate::Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> crate::StoreFuture<Vec<LoggedEvent>> {
        crate::ready(self.events_with_unapplied(scope, task_id, after, limit))
    }

    fn read_task(&self, scope: crate::Scope<'_>, task_id: &str) -> crate::StoreFuture<Option<TaskRecord>> {
        self.applier.inner.read_task(scope, task_id)
    }

    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.applier.inner.list_tasks(query)
    }

    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        self.applier.inner.tasks_in_states(states)
    }

    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError> {
        self.applier.inner.get_session(key, history_limit)
    }

    /// Everything appended so far made durable in the log and applied to the store (the
    /// store itself is flushed by checkpoints). Blocks: never call it from async code.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(self.wal.commit_blocking(self.wal.last_lsn())?)
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.applier.inner.size_on_disk()
    }

    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        self.applier.inner.visit_tasks(visit)
    }

    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let step = Step::DeleteTask { task_id: task_id.to_owned() };
        self.remove(task_id, &step::encode_delete_task(task_id), step)
    }

    /// Decided on what is stored and queued: a context with a queued step is in use
    /// (retention asks again later); else the session goes when no task is left in it.
    fn forget_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        let mut unapplied = self.applier.lock();
        if unapplied.context_busy(key) {
            return Ok(false);
        }
        let inner = self.applier.inner.as_ref();
        let query = TaskQuery {
            owner: key.owner.clone(),
            context_id: Some(key.context_id.clone()),
            state: None,
            status_after_millis: None,
            page_size: 1,
            cursor: None,
        };
        if !inner.list_tasks(&query)?.records.is_empty() {
            return Ok(false);
        }
        let had_session = inner.get_session(key, 0)?.is_some();
        let step = Step::ForgetSession { key: key.clone() };
        let contexts = vec![key.storage_key()];
        unapplied.append(&self.wal, &step::encode_forget_session(key)?, step, None, contexts)?;
        Ok(had_session)
    }

    fn counts(&self) -> Result<StoreCounts, StoreError> {
        self.applier.inner.counts()
    }

    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let payload = step::encode_session(Some(task_id), session, appended, history_limit)?;
        let step = Step::SettleReply {
            task_id: task_id.to_owned(),
            session: session.clone(),
            appended: appended.to_vec(),
            history_limit,
        };
        self.remove(task_id, &payload, step)
    }
}
