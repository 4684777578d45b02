//! The [`TaskStore`] trait every store implements, and what every store shares: the
//! listeners of durable steps and the default event retention.

use crate::{
    block_on_store, ready, Cluster, ContextKey, LoggedEvent, PushJob, Replaced, Scope, SessionRecord, SessionWrite,
    Step, StoreCounts, StoreError, StoreFuture, TaskEntry, TaskPage, TaskQuery, TaskRecord,
};
use a2ad_protocol::{Message, TaskState};

/// The task store. Implementations are shared between threads. The seam's methods
/// ([`TaskStore::commit`], [`TaskStore::read_task`], [`TaskStore::read_events`]) return
/// at once with a future, and are what actors and HTTP workers call; every other method
/// may block on I/O (a Redis round trip, [`TaskStore::flush`]'s `fsync`), so it is called
/// from a blocking thread only (ARCHITECTURE.md, "What may block").
pub trait TaskStore: Send + Sync + 'static {
    /// Writes one step ([`Step`]), atomically: creates or replaces the task, appends its
    /// events to the task's log (which keeps the last `event_retention`), queues its push
    /// jobs and, for the step that ends a turn, writes the context's session, keeping every
    /// index in step. The one write of a step every store implements; the methods below
    /// are its shapes, and [`TaskStore::commit`] its answer as a future.
    ///
    /// Returns the state the task had before (`None` for a new task), which the store
    /// knows anyway and counters need. The task's generation is its `last_event_seq`: a
    /// write below the stored one fails with [`StoreError::Conflict`] and changes nothing
    /// (an equal one is a write without new events, and is fine).
    ///
    /// Jobs: a store that holds the node's local push queue (the local-file queue, or the
    /// outbox in front of Redis Streams: [`crate::Forwarder`]) queues them in the SAME
    /// write, so that the commit that makes the event durable makes its jobs durable, and
    /// no crash keeps an event and loses its push job. This is the only way a job enters a
    /// node's queues. A store without a queue refuses jobs with
    /// [`StoreError::NoPushQueue`] rather than drop them. The session: after a crash the
    /// task's end and the session messages it adds are both there or both gone.
    fn write_step(&self, step: Step<'_>) -> Result<Replaced, StoreError>;

    /// [`TaskStore::write_step`] of a task and its events alone.
    fn put_task(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Option<TaskState>, StoreError> {
        self.write_step(Step { record, events, jobs: Vec::new(), session: None })
    }

    /// [`TaskStore::write_step`] of a task, its events and their push jobs.
    fn put_step(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
    ) -> Result<Option<TaskState>, StoreError> {
        self.write_step(Step { record, events, jobs, session: None })
    }

    /// [`TaskStore::write_step`] of the step that ends a turn, with the session.
    fn put_step_with_session(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
        session: SessionWrite<'_>,
    ) -> Result<Option<TaskState>, StoreError> {
        self.write_step(Step { record, events, jobs, session: Some(session) })
    }

    /// The request path's write of a step ([`Step`]), answered with a future (the seam:
    /// `seam.rs`). Steps are written in the order of the calls, whatever order their
    /// answers come in. The default writes now and answers at once (a node's own store);
    /// durability still comes from the group commit awaited after it.
    fn commit(&self, step: Step<'_>) -> StoreFuture<Replaced> {
        ready(self.write_step(step))
    }

    /// Reads a task by id if it is in `scope`, answered with a future (the request path's
    /// read: on a node's own store ready at once, on Redis the pipe's answer). With
    /// [`Scope::Owner`], another owner's task is `None`, as an unknown id is, and is not
    /// decoded (see [`Scope`]).
    fn read_task(&self, scope: Scope<'_>, task_id: &str) -> StoreFuture<Option<TaskRecord>>;

    /// A task's logged events with a sequence number above `after`, oldest first, at most
    /// `limit`, answered with a future; none when the task is not in `scope` (another
    /// owner's reads as unknown).
    fn read_events(&self, scope: Scope<'_>, task_id: &str, after: u64, limit: usize) -> StoreFuture<Vec<LoggedEvent>>;

    /// [`TaskStore::read_task`], waited for on this thread (off the request path only:
    /// [`block_on_store`]).
    fn get_task(&self, scope: Scope<'_>, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        block_on_store(self.read_task(scope, task_id))
    }

    /// [`TaskStore::read_events`], waited for on this thread (off the request path only).
    fn events_after(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        block_on_store(self.read_events(scope, task_id, after, limit))
    }

    /// The highest event seq reserved for `task_id` (0: none). Nodes before 2026-12-02
    /// sent a running turn's events to streams before they were durable, and reserved
    /// their ids first, durably; a store kept from such a node may still hold
    /// reservations of tasks a crash interrupted, and recovery numbers its FAILED event
    /// above them. Streams now send only durable events (nothing is reserved any more).
    fn reserved_event_seq(&self, task_id: &str) -> Result<u64, StoreError> {
        let _ = task_id;
        Ok(0)
    }

    /// One page of an owner's tasks, newest status first.
    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError>;

    /// Every task in one of `states`, across owners (start-up recovery).
    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError>;

    /// Reads a context's session with its last `history_limit` messages.
    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError>;

    /// Writes a session's metadata and appends `appended` (the messages that end at
    /// `session.message_count`) to its stored history, dropping stored messages older
    /// than the last `history_limit`.
    fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError>;

    /// Makes everything written so far durable. Blocks.
    fn flush(&self) -> Result<(), StoreError>;

    /// The generation (`last_event_seq`) and state of a task, with no owner check: what a
    /// writer compares its new version with. The default decodes the whole record.
    fn task_version(&self, task_id: &str) -> Result<Option<(u64, TaskState)>, StoreError> {
        Ok(self.get_task(Scope::Node, task_id)?.map(|r| (r.last_event_seq, r.state())))
    }

    /// Called once the write-ahead log replayed its tail into this store at open, before
    /// anyone reads it: a store that applies a step's keys one by one mends what is not
    /// idempotent there (the sled store rebuilds its counters). The default does nothing.
    fn after_replay(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The cluster side of a store shared by several nodes (`store: redis`); `None` for a
    /// node's own store, where one process owns every context.
    fn cluster(&self) -> Option<&dyn Cluster> {
        None
    }

    /// Bytes the store occupies on disk.
    fn size_on_disk(&self) -> Result<u64, StoreError>;

    /// Visits every task as its index knows it (owner, id, status time, state), across
    /// owners, without reading the tasks: retention sweeps and state counts use it.
    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError>;

    /// Removes a task with every index entry and its whole event log, atomically.
    /// Returns the removed record; `None` when there was no such task (deleting twice is
    /// not an error). Sessions are kept: see [`TaskStore::forget_session_if_unused`].
    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Removes a context's session (metadata and messages) when the context has no task
    /// left. Returns whether it did. Callers serialize this with the context's writes
    /// (the context actor runs it), so that no turn starts in between.
    fn forget_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError>;

    /// How many events and session records the store holds (a full index scan).
    fn counts(&self) -> Result<StoreCounts, StoreError>;

    /// Settles a Message-only reply in ONE atomic write: stores the session as
    /// [`TaskStore::put_session`] does and removes the reply's task as
    /// [`TaskStore::delete_task`] does. After a crash either both happened or neither,
    /// so a reply the session holds never leaves its task behind for recovery to fail.
    /// Returns the removed record (`None` if there was no such task; the session is
    /// written anyway).
    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError>;
}

/// [`StoreError::NoPushQueue`] when a store without a push queue (`has_queue` false) is
/// offered jobs: refused, never dropped.
pub(crate) fn refuse_jobs_without_queue(has_queue: bool, jobs: &[PushJob]) -> Result<(), StoreError> {
    match has_queue || jobs.is_empty() {
        true => Ok(()),
        false => Err(StoreError::NoPushQueue(jobs.len())),
    }
}

/// How many events a task's log keeps unless configured otherwise.
pub const DEFAULT_EVENT_RETENTION: usize = 1000;

/// Told of each task step once it is durable, in log order, on the log's flusher thread
/// (before the commits of its batch resolve): the node's live feed is one. It must not
/// block: the next batch's sync waits for it.
pub trait DurableSteps: Send + Sync {
    fn durable(&self, record: &TaskRecord, events: &[crate::LoggedEvent]);

    /// Whether [`DurableSteps::durable`] would do anything now: a store whose commits end
    /// later (Redis's, on the request path) copies a step for its listeners only then.
    fn listening(&self) -> bool {
        true
    }
}
