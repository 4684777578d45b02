//! Group commit: many writers, one `fdatasync`.
//!
//! A request that must be durable before it is answered awaits [`GroupCommit::commit`]
//! after its write. Over the write-ahead log ([`GroupCommit::over_log`], a sled node) that
//! is [`crate::sled::wal::Wal::commit`] of the last record appended: the log's own thread
//! takes every waiter queued so far, syncs once, and wakes them all; callers that arrive
//! during a sync ride the next one. Under load the cost of a sync is shared by a whole
//! batch, and no actor or HTTP worker thread ever blocks on the disk. A store whose writes
//! are done once they return (Redis, memory) commits at once ([`GroupCommit::immediate`]).
//! These two are the only commit paths, and the tests take them too.

use crate::{StoreError, TaskStore, WalStore};
use std::sync::Arc;

/// Counters of the log's group commit, for metrics and benchmarks (all 0 on a store that
/// commits at once).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Syncs of the log done.
    pub flushes: u64,
    /// Commit calls served (so `waiters_served / flushes` is the mean batch).
    pub waiters_served: u64,
    /// Time spent inside syncs, in microseconds.
    pub flush_micros: u64,
}

/// How a node's writes become durable. Cloning is cheap.
#[derive(Clone)]
pub struct GroupCommit(Mode);

#[derive(Clone)]
enum Mode {
    /// Through the write-ahead log of a sled node.
    Wal(Arc<WalStore>),
    /// A store whose every write is as durable as it gets once it returns (the Redis
    /// store: its commit script ran, under Redis's own persistence).
    Immediate(Arc<dyn TaskStore>),
}

impl GroupCommit {
    /// Commits through the log of `store`: everything written through it before the call
    /// is durable once a commit resolves.
    pub fn over_log(store: Arc<WalStore>) -> Self {
        GroupCommit(Mode::Wal(store))
    }

    /// Commits of a store whose writes are done once they return (Redis, memory): a
    /// commit resolves at once; the node is failing while the store's cluster side says
    /// Redis did not answer its last health check.
    pub fn immediate(store: Arc<dyn TaskStore>) -> Self {
        GroupCommit(Mode::Immediate(store))
    }

    /// [`GroupCommit::commit`] for writes that bypass the log (push configs, which live in
    /// a tree of the same database): over a log, a checkpoint on a blocking thread, which
    /// flushes the whole store durably (milliseconds, so only for rare writes).
    pub async fn commit_unlogged(&self) -> Result<(), StoreError> {
        let store = match &self.0 {
            Mode::Wal(store) => store,
            Mode::Immediate(_) => return Ok(()),
        };
        let store = Arc::clone(store);
        match tokio::task::spawn_blocking(move || store.flush_unlogged()).await {
            Ok(result) => result,
            Err(_) => Err(StoreError::Closed),
        }
    }

    /// Resolves once everything written before the call is durable. A write the disk
    /// refused is [`StoreError::Unavailable`]: nothing was lost, a later commit retries.
    pub async fn commit(&self) -> Result<(), StoreError> {
        match &self.0 {
            Mode::Wal(store) => Ok(store.wal().commit(store.wal().last_lsn()).await?),
            Mode::Immediate(_) => Ok(()),
        }
    }

    /// Whether the last attempt to make writes durable failed (the disk refuses them);
    /// readiness reports the node unready meanwhile.
    pub fn is_failing(&self) -> bool {
        match &self.0 {
            Mode::Wal(store) => store.wal().is_failing(),
            Mode::Immediate(store) => store.cluster().is_some_and(|c| !c.reachable()),
        }
    }

    /// The flusher's counters so far (the log's syncs, over a log).
    pub fn stats(&self) -> CommitStats {
        match &self.0 {
            Mode::Wal(store) => {
                let stats = store.wal().stats();
                CommitStats {
                    flushes: stats.syncs,
                    waiters_served: stats.waiters_served,
                    flush_micros: stats.sync_micros,
                }
            }
            Mode::Immediate(_) => CommitStats::default(),
        }
    }

    /// Flushes what is queued, stops the thread (the log's flusher) and waits for it,
    /// which releases its hold on the store. Later commits fail with `Closed`. Blocks.
    pub fn close(&self) {
        match &self.0 {
            Mode::Wal(store) => store.wal().close(),
            Mode::Immediate(_) => {}
        }
    }
}
