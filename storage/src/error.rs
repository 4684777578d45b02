//! Storage failures, and how they reach a caller.

use a2ad_protocol::A2aError;

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage engine error: {0}")]
    Engine(#[from] sled::Error),
    /// The store's directory is held by another process (sled's exclusive lock on its
    /// files): most often a second node started on the same data dir.
    #[error("locked by another process")]
    Locked,
    #[error("a stored record is unreadable: {0}")]
    Corrupt(String),
    #[error("the store is shutting down")]
    Closed,
    /// The push-secret key, or a value sealed with it (never carries key or secret material).
    #[error("push secret key: {0}")]
    Key(String),
    /// A file operation on the data dir (compaction); the message names the file.
    #[error("{0}")]
    Io(String),
    /// A Redis server behind a store (the push queue) failed or could not be reached. The
    /// message names the server (password blanked) and what was attempted; `kind` lets a
    /// caller tell an outage it can wait out from a bad setting.
    #[error("{message}")]
    Redis { kind: RedisFailure, message: String },
    /// A task write whose generation (`last_event_seq`) is below the stored one: a stale
    /// writer, refused rather than silently overwriting newer events' task.
    #[error("task {task_id} is at generation {stored}; a write of generation {offered} is stale")]
    Conflict { task_id: String, stored: u64, offered: u64 },
    /// A step of a context whose lease another node holds (cluster mode): this node lost
    /// the lease (it expired while the node was stalled), and the other node's turn wins.
    #[error("context {context_id} is leased by another node; this node's write is stale")]
    LeaseLost { context_id: String },
    /// A write could not be made durable (the write-ahead log's disk is full or failing).
    /// Transient: the log retries, and commits succeed again once the disk heals.
    #[error("the store cannot make writes durable: {0}")]
    Unavailable(String),
    /// The shared store's data was laid out with another shard count than this node's.
    #[error("the shared store under this prefix was made with redis.shards {stored}; this node has {configured} (every node of a store must use the same)")]
    ShardCount { stored: u16, configured: u16 },
    /// Push jobs offered to a store that holds no push queue (a wiring bug: push is on but
    /// the store was opened without its queue). Refused, never dropped.
    #[error("{0} push job(s) for a store without a push queue")]
    NoPushQueue(usize),
    /// The sled store was written by a newer a2ad, in a format this one does not know
    /// (`sled/store/migrations.rs`): refused at open rather than misread.
    #[error("the store is in format version {found}; this a2ad knows versions up to {known}: run a newer a2ad on it")]
    FormatTooNew { found: u32, known: u32 },
    /// The data dir holds something only a2ad before 2026-12-06 read: `what` names it
    /// (event-id reservations, in the write-ahead log or the store). Refused rather than
    /// dropped, since they say how to number a crashed task's last event.
    #[error("the data dir holds {what}, which this a2ad no longer reads: start the last a2ad from before 2026-12-06 on it once and stop it (it replays the log and recovers the interrupted tasks), then start this one")]
    Retired { what: &'static str },
}

impl StoreError {
    /// The operating system's error under an engine failure, when there is one: start-up
    /// tells a read-only disk or a permission problem from a damaged store by its kind.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            StoreError::Engine(sled::Error::Io(e)) => Some(e),
            _ => None,
        }
    }
}

/// What kind of Redis failure a [`StoreError::Redis`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisFailure {
    /// The URL in the config is not a Redis URL.
    InvalidUrl,
    /// The server refused the connection (not running, wrong port).
    Refused,
    /// The server did not answer in time.
    TimedOut,
    /// The connection dropped mid-command.
    Dropped,
    /// The server answered with an error, or another failure.
    Command,
}

/// Callers see a generic internal error: the details (paths, engine messages) go to the
/// log, never into a response.
/// A store that refuses writes is [`a2ad_protocol::ErrorCode::StoreUnavailable`] (503,
/// `Retry-After`), with the detail logged only.
impl From<StoreError> for A2aError {
    fn from(e: StoreError) -> Self {
        if let StoreError::Unavailable(detail) = &e {
            tracing::warn!(error = %detail, "a write could not be made durable");
            return A2aError::store_unavailable();
        }
        // The shared store's Redis is down or unreachable: an outage to wait out.
        if let StoreError::Redis {
            kind: RedisFailure::Refused | RedisFailure::TimedOut | RedisFailure::Dropped,
            message,
        } = &e
        {
            tracing::warn!(error = %message, "the shared store cannot be reached");
            return A2aError::store_unavailable();
        }
        A2aError::internal(format!("task store failure: {e}"))
    }
}
