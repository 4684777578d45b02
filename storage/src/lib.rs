//! # a2ad-storage
//!
//! Where tasks and sessions live. [`TaskStore`] is the trait the rest of a2ad codes
//! against; [`SledStore`] is the embedded default (a Redis store can implement the same
//! trait later); [`MemoryStore`] keeps everything in memory, for tests and embedding.
//! [`WalStore`] puts a write-ahead log in front of sled: every write is one
//! compact log record, applied to sled without a flush; [`GroupCommit`] makes the records
//! durable, batching every caller that is waiting into one `fdatasync` of the log, so
//! that "durable before the response" costs one sequential sync per batch rather than
//! page rewrites per request; a [`Checkpointer`] flushes sled in the background.

mod cluster;
mod error;
mod group_commit;
mod journal;
mod keyring;
mod memory;
mod model;
mod page_token;
mod push_configs;
mod push_queue;
mod push_queue_redis;
mod redis_keys;
mod redis_link;
mod redis_store;
mod sled_store;
#[cfg(test)]
mod test_redis;
#[cfg(test)]
mod test_redis_cluster;
mod thread_owner;
pub mod wal;

pub use cluster::{CancelHandler, CancelRequest, Cluster, EventSink};
pub use error::{RedisFailure, StoreError};
pub use group_commit::{CommitStats, GroupCommit};
pub use journal::{Checkpointer, DurableSteps, ReplayReport, WalStore, WAL_DIR};
pub use keyring::{SecretKey, KEY_FILE, KEY_LEN};
pub use memory::MemoryStore;
pub use model::{
    ContextKey, History, LoggedEvent, Owner, Scope, SessionRecord, StoreCounts, TaskEntry, TaskPage, TaskQuery,
    TaskRecord,
};
pub use page_token::{decode_page_token, encode_page_token, Cursor};
pub use push_configs::{PushConfigStore, StoredPushConfig};
pub use push_queue::{DeadJob, JobQueue, PushJob, PushQueue, PUSH_QUEUE_TREE};
pub use push_queue_redis::{
    redact_url, Forwarder, ForwarderSettings, QueueKeys, RedisQueue, RedisQueueOptions, PUSH_OUTBOX_TREE,
};
pub use redis_keys::MAX_SHARDS;
pub use redis_link::Topology;
pub use redis_store::{RedisStore, RedisStoreOptions};
pub use sled_store::{
    compact, sled_files_size, tree_size, CompactReport, SledStore, DEFAULT_CACHE_BYTES, DEFAULT_EVENT_RETENTION,
};

use a2ad_protocol::{Message, TaskState};

/// The task store. Implementations are shared between threads; every method may block
/// briefly on I/O, and [`TaskStore::flush`] may block for an `fsync`, so async callers
/// run them on a blocking thread (see [`GroupCommit`]).
pub trait TaskStore: Send + Sync + 'static {
    /// Creates or replaces a task and appends `events` to its event log, keeping every
    /// index in step, atomically. The log keeps the task's last `event_retention` events.
    /// Returns the state the task had before (`None` for a new task), which the store
    /// knows anyway and counters need. The task's generation is its `last_event_seq`:
    /// a write below the stored one fails with [`StoreError::Conflict`] and changes
    /// nothing (an equal one is a write without new events, and is fine).
    fn put_task(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Option<TaskState>, StoreError>;

    /// [`TaskStore::put_task`] with `record_json`, the record as `serde_json` writes it
    /// (the bytes the write-ahead log's record already holds). A store that keeps the JSON
    /// (sled) takes it instead of serializing the record again: on the log's writer
    /// thread that was one serialization of every task per step (BENCHMARKS.md, issue 15).
    fn put_task_json(
        &self,
        record: &TaskRecord,
        record_json: &[u8],
        events: &[LoggedEvent],
    ) -> Result<Option<TaskState>, StoreError> {
        let _ = record_json;
        self.put_task(record, events)
    }

    /// One step of a task: [`TaskStore::put_task`] plus the push `jobs` its `events`
    /// caused (each job is for one of `events`, of this task). A store that holds the
    /// node's local push queue (the local-file queue, or the outbox in front of Redis
    /// Streams: [`Forwarder`]) queues them in the SAME write, so that the commit that makes
    /// the event durable makes its jobs durable, and no crash keeps an event and loses its
    /// push job. This is the only way a job enters a node's queues. A store without a
    /// queue (the default) refuses jobs with [`StoreError::NoPushQueue`] rather than drop
    /// them.
    fn put_step(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
    ) -> Result<Option<TaskState>, StoreError> {
        refuse_jobs_without_queue(false, &jobs)?;
        self.put_task(record, events)
    }

    /// The step that ends a turn: [`TaskStore::put_step`] and the context's session
    /// ([`TaskStore::put_session`]) as ONE commit, so that after a crash the task's end and
    /// the session messages it adds are both there or both gone. The default writes them
    /// one after the other (an in-memory store has no crash to survive).
    fn put_step_with_session(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        jobs: Vec<PushJob>,
        session: SessionWrite<'_>,
    ) -> Result<Option<TaskState>, StoreError> {
        let previous = self.put_step(record, events, jobs)?;
        self.put_session(session.session, session.appended, session.history_limit)?;
        Ok(previous)
    }

    /// A task's logged events with a sequence number above `after`, oldest first, at most
    /// `limit`; none when the task is not in `scope` (another owner's reads as unknown).
    fn events_after(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError>;

    /// The highest event seq reserved for `task_id` (0: none). Nodes before 2026-12-02
    /// sent a running turn's events to streams before they were durable, and reserved
    /// their ids first, durably; a store kept from such a node may still hold
    /// reservations of tasks a crash interrupted, and recovery numbers its FAILED event
    /// above them. Streams now send only durable events (nothing is reserved any more).
    fn reserved_event_seq(&self, task_id: &str) -> Result<u64, StoreError> {
        let _ = task_id;
        Ok(0)
    }

    /// Reads a task by id if it is in `scope`: with [`Scope::Owner`], another owner's task
    /// is `None`, as an unknown id is, and is not decoded (see [`Scope`]).
    fn get_task(&self, scope: Scope<'_>, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

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

/// A session write, as [`TaskStore::put_session`] takes it: the session's metadata, the
/// messages appended since the last write, and how many messages the stored history keeps.
#[derive(Debug, Clone, Copy)]
pub struct SessionWrite<'a> {
    pub session: &'a SessionRecord,
    pub appended: &'a [Message],
    pub history_limit: usize,
}

/// Where a task's artifact files live: `<data-dir>/artifacts/<task-id>/`. None for an id
/// that could step outside that directory (ids are minted by the node, so such an id is
/// never one we wrote files for).
pub fn artifact_dir(data_dir: &std::path::Path, task_id: &str) -> Option<std::path::PathBuf> {
    let safe = !task_id.is_empty()
        && task_id != "."
        && task_id != ".."
        && task_id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    safe.then(|| data_dir.join("artifacts").join(task_id))
}
