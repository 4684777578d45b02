//! # a2ad-storage
//!
//! Where tasks and sessions live, one folder per backend: [`SledStore`] (`sled/`) is the
//! embedded default; [`RedisStore`] (`redis/`) is the shared store of a cluster of nodes
//! (`store: redis`); [`MemoryStore`] (`memory/`) keeps everything in memory, for tests,
//! embedding and `store: memory`; `push/` holds the job queue trait, the local queue and
//! the sealed push configs.
//!
//! [`TaskStore`] is the trait the rest of a2ad codes against, and holds only what a
//! backend must implement (14 methods). The request path reaches a store through its
//! asynchronous seam (`seam.rs`: [`TaskStore::commit`], [`TaskStore::read_task`],
//! [`TaskStore::read_events`], [`Cluster::begin_turn`]), whose futures are ready at once
//! on a node's own store and are Redis's pipelined answers on the shared one; the seam's
//! blocking shapes (`put_task`, `get_task`, `events_after`, ...) are [`TaskStoreExt`]'s,
//! derived for every store. The memory store, the log ([`WalStore`], in front of sled)
//! and the Redis store tell [`DurableSteps`] listeners of each step once it is durable
//! (the node's live feed), and a [`StateChanges`] observer, given once when the store is
//! built, of each task's change of state as its write is answered (the node's
//! tasks-per-state metrics), so nothing wraps a store to count.
//!
//! [`WalStore`] puts a write-ahead log in front of sled: every write is one
//! compact log record, applied to sled without a flush; [`GroupCommit`] makes the records
//! durable, batching every caller that is waiting into one `fdatasync` of the log, so
//! that "durable before the response" costs one sequential sync per batch rather than
//! page rewrites per request; a [`Checkpointer`] flushes sled in the background.

mod cluster;
mod error;
mod memory;
mod model;
mod page_token;
mod push;
mod redis;
mod seam;
mod sled;
mod store;
#[cfg(test)]
pub(crate) mod test_skip;
mod thread_owner;

pub use self::sled::wal;

pub use self::redis::keys::MAX_SHARDS;
pub use self::redis::link::{redact_url, Topology};
pub use self::redis::push_queue::{
    Forwarder, ForwarderSettings, QueueKeys, RedisQueue, RedisQueueOptions, PUSH_OUTBOX_TREE,
};
pub use self::redis::store::{RedisStore, RedisStoreOptions};
pub use self::sled::group_commit::{CommitStats, GroupCommit};
pub use self::sled::journal::{Checkpointer, ReplayReport, WalStore, WAL_DIR};
pub use self::sled::store::{compact, sled_files_size, tree_size, CompactReport, SledStore, DEFAULT_CACHE_BYTES};
pub use cluster::{CancelHandler, CancelRequest, Cluster, EventSink};
pub use error::{RedisFailure, StoreError};
pub use memory::MemoryStore;
pub use model::{
    ContextKey, History, LoggedEvent, Owner, Scope, SessionRecord, StoreCounts, TaskEntry, TaskPage, TaskQuery,
    TaskRecord,
};
pub use page_token::{decode_page_token, encode_page_token, Cursor};
pub use push::configs::{PushConfigStore, StoredPushConfig};
pub use push::keyring::{SecretKey, KEY_FILE, KEY_LEN};
pub use push::queue::{DeadJob, JobQueue, PushJob, PushQueue, PUSH_QUEUE_TREE};
pub use seam::{block_on_store, ready, Replaced, SessionWrite, Step, StoreFuture, TurnLease, Written};
pub(crate) use store::{refuse_jobs_without_queue, Observer};
pub use store::{DurableSteps, StateChanges, TaskStore, TaskStoreExt, DEFAULT_EVENT_RETENTION};

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
