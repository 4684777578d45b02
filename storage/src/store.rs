//! The [`TaskStore`] trait every store implements, and what every store shares: the
//! listeners of durable steps and the default event retention.

use crate::{
    block_on_store, Cluster, ContextKey, LoggedEvent, PushJob, Replaced, Scope, SessionRecord, SessionWrite, Step,
    StoreCounts, StoreError, StoreFuture, TaskEntry, TaskPage, TaskQuery, TaskRecord,
};
use a2ad_protocol::{Message, TaskState};

/// The task store: what each backend must implement, and nothing derivable from it (the
/// blocking shapes of the seam are [`TaskStoreExt`]'s; counting tasks per state is the
/// store's [`StateChanges`] observer's). Implementations are shared between threads. The
/// seam's methods ([`TaskStore::commit`], [`TaskStore::read_task`],
/// [`TaskStore::read_events`]) return at once with a future, and are what actors and
/// HTTP workers call; every other method may block on I/O (a Redis round trip,
/// [`TaskStore::flush`]'s `fsync`), so it is called from a blocking thread only
/// (ARCHITECTURE.md, "What may block").
pub trait TaskStore: Send + Sync + 'static {
    /// Writes one step ([`Step`]), atomically, answered with a future (the seam:
    /// `seam.rs`): creates or replaces the task, appends its events to the task's log
    /// (which keeps the last `event_retention`), queues its push jobs and, for the step
    /// that ends a turn, writes the context's session, keeping every index in step. The
    /// one write of a step every store implements; its blocking shapes are
    /// [`TaskStoreExt`]'s. Steps are written in the order of the calls, whatever order
    /// their answers come in. A node's own store writes now and answers at once (a sled
    /// write is durable once the group commit awaited after it is); Redis answers once
    /// its script ran.
    ///
    /// Answers the state the task had before (`None` for a new task), which the store
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
    fn commit(&self, step: Step<'_>) -> StoreFuture<Replaced>;

    /// Reads a task by id if it is in `scope`, answered with a future (the request path's
    /// read: on a node's own store ready at once, on Redis the pipe's answer). With
    /// [`Scope::Owner`], another owner's task is `None`, as an unknown id is, and is not
    /// decoded (see [`Scope`]).
    fn read_task(&self, scope: Scope<'_>, task_id: &str) -> StoreFuture<Option<TaskRecord>>;

    /// A task's logged events with a sequence number above `after`, oldest first, at most
    /// `limit`, answered with a future; none when the task is not in `scope` (another
    /// owner's reads as unknown).
    fn read_events(&self, scope: Scope<'_>, task_id: &str, after: u64, limit: usize) -> StoreFuture<Vec<LoggedEvent>>;

    /// One page of an owner's tasks, newest status first.
    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError>;

    /// Every task in one of `states`, across owners (start-up recovery).
    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError>;

    /// Reads a context's session with its last `history_limit` messages.
    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError>;

    /// Makes everything written so far durable. Blocks.
    fn flush(&self) -> Result<(), StoreError>;

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

    /// Settles a Message-only reply in ONE atomic write: stores the session as a step's
    /// session write does ([`crate::SessionWrite`]) and removes the reply's task as
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

/// The seam's blocking shapes, for callers off the request path (a blocking thread,
/// start-up, the offline commands, tests): each is a [`TaskStore`] call waited for with
/// [`block_on_store`]. Derived, so no store implements them and no wrapper forwards them;
/// every `T: TaskStore` (a `dyn TaskStore` too) has them once this trait is imported.
pub trait TaskStoreExt: TaskStore {
    /// [`TaskStore::commit`], waited for on this thread.
    fn write_step(&self, step: Step<'_>) -> Result<Replaced, StoreError> {
        block_on_store(self.commit(step))
    }

    /// [`TaskStore::commit`] of a task and its events alone, waited for.
    fn put_task(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Replaced, StoreError> {
        self.write_step(Step { record, events, jobs: Vec::new(), session: None })
    }

    /// [`TaskStore::commit`] of a task, its events and their push jobs, waited for.
    fn put_step(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
    ) -> Result<Replaced, StoreError> {
        self.write_step(Step { record, events, jobs, session: None })
    }

    /// [`TaskStore::commit`] of the step that ends a turn, with the session, waited for.
    fn put_step_with_session(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
        session: SessionWrite<'_>,
    ) -> Result<Replaced, StoreError> {
        self.write_step(Step { record, events, jobs, session: Some(session) })
    }

    /// [`TaskStore::read_task`], waited for on this thread.
    fn get_task(&self, scope: Scope<'_>, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        block_on_store(self.read_task(scope, task_id))
    }

    /// [`TaskStore::read_events`], waited for on this thread.
    fn events_after(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        block_on_store(self.read_events(scope, task_id, after, limit))
    }
}

impl<T: TaskStore + ?Sized> TaskStoreExt for T {}

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

/// Told of every change of a task's state a store writes, as the write is answered (a
/// step committed, a task removed): the node's per-state task counts. Given to a store
/// once, when it is built (`with_state_changes`), so that counting is the store's own
/// hook on its writes, not a wrapper that forwards every method. Called on the writer's
/// thread (or where a Redis answer resolves): it must not block.
pub trait StateChanges: Send + Sync {
    /// A task went from `from` (`None`: it is new) to `to` (`None`: it was removed).
    /// Called for every write, also one that leaves the state as it was.
    fn moved(&self, from: Option<TaskState>, to: Option<TaskState>);
}

/// A store's [`StateChanges`] observer, if it was given one.
#[derive(Clone, Default)]
pub(crate) struct Observer(Option<std::sync::Arc<dyn StateChanges>>);

impl Observer {
    pub(crate) fn new(observer: std::sync::Arc<dyn StateChanges>) -> Self {
        Observer(Some(observer))
    }

    /// A step of a task now in `to` was written over `from`.
    pub(crate) fn stepped(&self, from: Replaced, to: TaskState) {
        if let Some(observer) = &self.0 {
            observer.moved(from, Some(to));
        }
    }

    /// `removed` (if there was such a task) was removed.
    pub(crate) fn removed(&self, removed: Option<&TaskRecord>) {
        if let (Some(observer), Some(record)) = (&self.0, removed) {
            observer.moved(Some(record.state()), None);
        }
    }

    /// `answer`, telling the observer of the step once it resolves well.
    pub(crate) fn on_commit(&self, answer: StoreFuture<Replaced>, to: TaskState) -> StoreFuture<Replaced> {
        let Some(observer) = self.0.clone() else { return answer };
        Box::pin(async move {
            let from = answer.await?;
            observer.moved(from, Some(to));
            Ok(from)
        })
    }
}

/// A [`StateChanges`] observer that keeps what it was told (for the stores' tests).
#[cfg(test)]
#[derive(Default)]
pub(crate) struct RecordedMoves(std::sync::Mutex<Vec<(Option<TaskState>, Option<TaskState>)>>);

#[cfg(test)]
impl RecordedMoves {
    /// What it was told since the last call.
    pub(crate) fn take(&self) -> Vec<(Option<TaskState>, Option<TaskState>)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[cfg(test)]
impl StateChanges for RecordedMoves {
    fn moved(&self, from: Option<TaskState>, to: Option<TaskState>) {
        self.0.lock().unwrap().push((from, to));
    }
}
