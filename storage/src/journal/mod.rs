//! The write-ahead log in front of the task store: one compact record per step.
//!
//! [`WalStore`] wraps the sled store (any [`TaskStore`]) and the local push queue (the
//! local-file queue, or the outbox in front of Redis Streams). Every
//! write that callers make durable with [`crate::GroupCommit`] (task + events + push
//! jobs, session, removal, reply settlement) is appended to the [`Wal`] as one record
//! (`step.rs`), then applied to the store without a flush. The group commit is then one
//! `fdatasync` of the log for a whole batch of callers ([`crate::GroupCommit::over_wal`]).
//!
//! Order: append, then apply, both under a shared gate. So a write visible in the store
//! always has its record in the log (the push worker relies on it: a job it sees is
//! durable once the log is synced up to [`Wal::last_lsn`], see [`DurableQueue`]), and the
//! [`Checkpointer`], taking the gate exclusively for an instant, reads an LSN that every
//! applied write is at or below. It then syncs the log to that LSN, flushes the store
//! durably ([`TaskStore::flush`]) and declares the LSN checkpointed, which drops the log
//! segments behind it.
//!
//! At open, the records after the checkpoint are applied again ([`WalStore::open`]).
//! Every operation is idempotent (a put writes the same record and event keys again, a
//! removal of a removed task does nothing), so a record the store already held is
//! harmless. A write whose record was appended but whose apply failed is answered with the
//! error, and still replays after a restart; a write the log could not make durable is
//! answered `STORE_UNAVAILABLE` and is retried by the log until the disk heals.
//!
//! Event-id reservations (`reserve_event_seq`, a small tree of their own): a running
//! turn sends its progress events to streams before it stores them, so a stream first
//! reserves the ids it is about to send (ahead, in steps) in a logged record and commits
//! it; recovery's FAILED event is numbered above the reservation.
//!
//! Not logged (durable at the next checkpoint, at most a second later): push config
//! writes (their commit flushes the store directly), the push worker's acks, retries and
//! dead letters, and the forwarder's removals from the Redis outbox (a crash before the
//! checkpoint delivers, or forwards, a job again: at least once).

mod checkpointer;
mod step;
#[cfg(test)]
mod tests;

pub use checkpointer::Checkpointer;

use crate::wal::{Lsn, Wal, WalOptions};
use crate::{
    ContextKey, JobQueue, LoggedEvent, PushJob, PushQueue, SessionRecord, SessionWrite, StoreCounts, StoreError,
    TaskEntry, TaskPage, TaskQuery, TaskRecord, TaskStore,
};
use a2ad_protocol::{Message, TaskState};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use step::Step;

/// The log directory inside a data dir. sled locks the data dir, so one process at a time
/// opens the log too.
pub const WAL_DIR: &str = "wal";

/// The task store behind the write-ahead log.
pub struct WalStore {
    inner: Arc<dyn TaskStore>,
    /// The node's local push queue, when push is on: the local-file queue itself, or the
    /// outbox the [`crate::Forwarder`] empties into Redis Streams. A step's jobs go in
    /// with the step, in its log record.
    queue: Option<PushQueue>,
    wal: Wal,
    /// Shared by writers from append to apply; taken exclusively by checkpoints.
    gate: RwLock<()>,
    /// Event-id reservations (task id → seq, BE), when kept: see `reserve_event_seq`.
    reservations: Option<sled::Tree>,
    /// The reservations made since start, so a stream reserves with a map lookup, and a
    /// task that ends drops its key.
    reserved: Mutex<HashMap<String, u64>>,
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
    /// names `a2ad admin repair`. Blocks.
    /// `reservations` is the tree event-id reservations live in (without one, streams
    /// reserve nothing).
    pub fn open(
        inner: Arc<dyn TaskStore>,
        queue: Option<PushQueue>,
        reservations: Option<sled::Tree>,
        dir: &Path,
        options: WalOptions,
    ) -> Result<(WalStore, ReplayReport), StoreError> {
        let (wal, replay) = Wal::open(dir, options)?;
        let mut report = ReplayReport {
            checkpoint: replay.checkpoint().0,
            torn_tail_bytes: replay.torn_tail().map(|cut| cut.dropped_bytes),
            ..ReplayReport::default()
        };
        let store =
            WalStore { inner, queue, wal, gate: RwLock::new(()), reservations, reserved: Mutex::new(HashMap::new()) };
        for record in replay {
            let step = step::decode(&record.payload)
                .map_err(|e| StoreError::Corrupt(format!("write-ahead log record {}: {e}", record.lsn)))?;
            store.apply(step)?;
            report.replayed += 1;
        }
        if report.replayed > 0 {
            store.checkpoint()?;
        }
        Ok((store, report))
    }

    /// The log (for the group commit, readiness and stats).
    pub fn wal(&self) -> &Wal {
        &self.wal
    }

    /// Syncs the log up to everything applied, flushes the store durably and checkpoints
    /// there. Returns the checkpoint. Blocks on `fsync`s: a blocking thread only.
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
        let lsn = {
            let _exclusive = self.gate.write().unwrap_or_else(|p| p.into_inner());
            self.wal.last_lsn()
        };
        let behind = lsn > self.wal.checkpoint_lsn();
        if !behind && !always {
            return Ok(lsn);
        }
        self.wal.commit_blocking(lsn)?;
        self.inner.flush()?;
        if behind {
            self.wal.checkpoint(lsn)?;
        }
        Ok(lsn)
    }

    /// Appends `payload`, then runs `apply`, under the shared gate.
    fn logged<T>(&self, payload: &[u8], apply: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let _shared = self.gate.read().unwrap_or_else(|p| p.into_inner());
        self.wal.append(payload)?;
        apply()
    }

    /// A replayed step, applied as the live write did.
    fn apply(&self, step: Step) -> Result<(), StoreError> {
        match step {
            Step::PutTask { record, events, jobs, session } => {
                match self.apply_put(&record, &events, jobs) {
                    // The store holds a newer write of the task already (flushed after
                    // this record): nothing to redo.
                    Err(StoreError::Conflict { .. }) | Ok(_) => {}
                    Err(e) => return Err(e),
                }
                match session {
                    Some(step) => self.apply_session(step.as_write()),
                    None => Ok(()),
                }
            }
            Step::PutSession { session, appended, history_limit } => {
                self.inner.put_session(&session, &appended, history_limit)
            }
            Step::DeleteTask { task_id } => self.apply_delete(&task_id).map(drop),
            Step::Reserve { task_id, seq } => self.apply_reserve(&task_id, seq),
            Step::ForgetSession { key } => self.inner.forget_session_if_unused(&key).map(drop),
            Step::SettleReply { task_id, session, appended, history_limit } => {
                self.apply_settle(&task_id, &session, &appended, history_limit).map(drop)
            }
        }
    }

    fn apply_session(&self, write: SessionWrite<'_>) -> Result<(), StoreError> {
        self.inner.put_session(write.session, write.appended, write.history_limit)
    }

    fn apply_delete(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let removed = self.inner.delete_task(task_id)?;
        self.drop_reservation(task_id, true)?;
        Ok(removed)
    }

    fn apply_settle(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let removed = self.inner.settle_reply(task_id, session, appended, history_limit)?;
        self.drop_reservation(task_id, true)?;
        Ok(removed)
    }

    /// Keeps the higher of the stored reservation and `seq`.
    fn apply_reserve(&self, task_id: &str, seq: u64) -> Result<(), StoreError> {
        let Some(tree) = &self.reservations else { return Ok(()) };
        let stored = read_seq(tree.get(task_id)?.as_deref());
        if seq > stored {
            tree.insert(task_id, &seq.to_be_bytes())?;
        }
        Ok(())
    }

    /// Forgets a task's reservation: always on removal, else only one made since start
    /// (so that a put costs no tree write unless the task streamed).
    fn drop_reservation(&self, task_id: &str, always: bool) -> Result<(), StoreError> {
        let Some(tree) = &self.reservations else { return Ok(()) };
        let known = self.reserved.lock().unwrap_or_else(|p| p.into_inner()).remove(task_id).is_some();
        if known || always {
            tree.remove(task_id)?;
        }
        Ok(())
    }

    fn apply_put(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
    ) -> Result<Option<TaskState>, StoreError> {
        let previous = self.inner.put_task(record, events)?;
        if let (Some(queue), false) = (&self.queue, jobs.is_empty()) {
            queue.enqueue(&jobs)?;
        }
        if record.state().is_terminal() {
            // Recovery never looks at a terminal task: its reservation is garbage now.
            self.drop_reservation(&record.task.id, false)?;
        }
        Ok(previous)
    }
}

impl TaskStore for WalStore {
    fn put_task(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Option<TaskState>, StoreError> {
        self.put_step(record, events, Vec::new())
    }

    /// Takes the jobs into the step's record and, with it, into the local queue (the
    /// local-file queue or the Redis outbox); without one, jobs are refused.
    fn put_step(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
    ) -> Result<Option<TaskState>, StoreError> {
        crate::refuse_jobs_without_queue(self.queue.is_some(), &jobs)?;
        let payload = step::encode_put_task(record, events, &jobs, None)?;
        self.logged(&payload, || self.apply_put(record, events, jobs))
    }

    /// One record for the task's step and the session: replay applies both.
    fn put_step_with_session(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
        session: SessionWrite<'_>,
    ) -> Result<Option<TaskState>, StoreError> {
        crate::refuse_jobs_without_queue(self.queue.is_some(), &jobs)?;
        let payload = step::encode_put_task(record, events, &jobs, Some(session))?;
        self.logged(&payload, || {
            let previous = self.apply_put(record, events, jobs)?;
            self.apply_session(session)?;
            Ok(previous)
        })
    }

    fn events_after(
        &self,
        scope: crate::Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.inner.events_after(scope, task_id, after, limit)
    }

    fn reserve_event_seq(&self, task_id: &str, seq: u64) -> Result<bool, StoreError> {
        if self.reservations.is_none() {
            return Ok(false);
        }
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        if reserved.get(task_id).is_some_and(|&have| have >= seq) {
            return Ok(false);
        }
        reserved.insert(task_id.to_owned(), seq);
        drop(reserved);
        self.logged(&step::encode_reserve(task_id, seq), || self.apply_reserve(task_id, seq))?;
        Ok(true)
    }

    fn reserved_event_seq(&self, task_id: &str) -> Result<u64, StoreError> {
        let Some(tree) = &self.reservations else { return Ok(0) };
        Ok(read_seq(tree.get(task_id)?.as_deref()))
    }

    fn get_task(&self, scope: crate::Scope<'_>, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get_task(scope, task_id)
    }

    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(query)
    }

    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.tasks_in_states(states)
    }

    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError> {
        self.inner.get_session(key, history_limit)
    }

    fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError> {
        let payload = step::encode_session(None, session, appended, history_limit)?;
        self.logged(&payload, || self.inner.put_session(session, appended, history_limit))
    }

    /// Everything appended so far made durable in the log (the store itself is flushed
    /// by checkpoints). Blocks: never call it from async code.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(self.wal.commit_blocking(self.wal.last_lsn())?)
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.inner.size_on_disk()
    }

    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        self.inner.visit_tasks(visit)
    }

    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.logged(&step::encode_delete_task(task_id), || self.apply_delete(task_id))
    }

    fn forget_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        self.logged(&step::encode_forget_session(key)?, || self.inner.forget_session_if_unused(key))
    }

    fn counts(&self) -> Result<StoreCounts, StoreError> {
        self.inner.counts()
    }

    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let payload = step::encode_session(Some(task_id), session, appended, history_limit)?;
        self.logged(&payload, || self.apply_settle(task_id, session, appended, history_limit))
    }
}

/// A stored reservation (8 bytes BE; anything else is none).
fn read_seq(value: Option<&[u8]>) -> u64 {
    value.and_then(|v| <[u8; 8]>::try_from(v).ok()).map_or(0, u64::from_be_bytes)
}

/// The local push queue (or the Redis outbox) as the delivery worker (or the forwarder)
/// sees it: [`JobQueue::due`] answers only jobs whose step is durable. Jobs are applied
/// to the queue right after their record is appended, before the group commit syncs it;
/// without this, a push could leave the node for an event a crash then loses, and
/// recovery would give that event id to another one. The barrier syncs the log up to
/// [`Wal::last_lsn`] read AFTER the scan, which covers every job the scan saw (append
/// precedes apply).
pub struct DurableQueue {
    inner: Arc<dyn JobQueue>,
    wal: Wal,
}

impl DurableQueue {
    pub fn new(inner: Arc<dyn JobQueue>, wal: Wal) -> Self {
        DurableQueue { inner, wal }
    }
}

impl JobQueue for DurableQueue {
    fn enqueue(&self, jobs: &[PushJob]) -> Result<(), StoreError> {
        self.inner.enqueue(jobs)
    }

    /// Blocks on the log's sync (the worker calls it on a blocking thread).
    fn due(&self, now_ms: i64, max: usize, in_flight: &HashSet<String>) -> Result<Vec<PushJob>, StoreError> {
        let jobs = self.inner.due(now_ms, max, in_flight)?;
        if !jobs.is_empty() {
            self.wal.commit_blocking(self.wal.last_lsn())?;
        }
        Ok(jobs)
    }

    fn ack(&self, job: &PushJob) -> Result<(), StoreError> {
        self.inner.ack(job)
    }

    fn reschedule(&self, job: &PushJob, next: &PushJob) -> Result<(), StoreError> {
        self.inner.reschedule(job, next)
    }

    fn bury(&self, job: &PushJob, reason: &str, now_ms: i64) -> Result<(), StoreError> {
        self.inner.bury(job, reason, now_ms)
    }

    fn dead(&self) -> Result<Vec<crate::DeadJob>, StoreError> {
        self.inner.dead()
    }

    fn revive(&self, id: Option<&str>, now_ms: i64) -> Result<usize, StoreError> {
        self.inner.revive(id, now_ms)
    }

    fn purge(&self, id: Option<&str>) -> Result<usize, StoreError> {
        self.inner.purge(id)
    }

    fn depth(&self) -> Result<usize, StoreError> {
        self.inner.depth()
    }
}
