//! Group commit: many writers, one `fsync`.
//!
//! Over a write-ahead log ([`GroupCommit::over_log`], what the node runs), a commit is
//! [`crate::sled::wal::Wal::commit`] of the last record appended: one `fdatasync` of the log per batch.
//! The flusher below ([`GroupCommit::start`]) is the older form without a log, which
//! flushes the whole store per batch; tests use it around stores without a log.
//!
//! A request that must be durable before it is answered calls [`GroupCommit::commit`]
//! after its write. The call parks the caller (asynchronously) and wakes a dedicated
//! flusher thread. The flusher takes every waiter queued so far, flushes once, and wakes
//! them all; callers that arrive during a flush ride the next one. Under load the cost of
//! a flush is shared by a whole batch, and no actor or HTTP worker thread ever blocks on
//! the disk.

use crate::thread_owner::ThreadOwner;
use crate::{StoreError, TaskStore, WalStore};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Instant;
use tokio::sync::oneshot;

type Waiter = oneshot::Sender<Result<(), String>>;

#[derive(Default)]
struct Queue {
    waiters: Vec<Waiter>,
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    flushes: AtomicU64,
    waiters_served: AtomicU64,
    flush_micros: AtomicU64,
    /// The last flush failed.
    failing: AtomicBool,
}

/// Counters of the flusher, for metrics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Flushes done.
    pub flushes: u64,
    /// Commit calls served (so `waiters_served / flushes` is the mean batch).
    pub waiters_served: u64,
    /// Time spent inside flushes, in microseconds.
    pub flush_micros: u64,
}

/// A handle to the flusher thread. Cloning is cheap; the thread stops when the last handle
/// is dropped or [`GroupCommit::close`] is called, after serving every queued waiter.
#[derive(Clone)]
pub struct GroupCommit(Mode);

#[derive(Clone)]
enum Mode {
    Flusher {
        shared: Arc<Shared>,
        _owner: Arc<ThreadOwner>,
    },
    Wal(Arc<WalStore>),
    /// A store whose every write is as durable as it gets once it returns (the Redis
    /// store: its commit script ran, under Redis's own persistence).
    Immediate(Arc<dyn TaskStore>),
}

impl GroupCommit {
    /// Starts the flusher thread for `store`.
    pub fn start(store: Arc<dyn TaskStore>) -> Result<Self, StoreError> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            flushes: AtomicU64::new(0),
            waiters_served: AtomicU64::new(0),
            flush_micros: AtomicU64::new(0),
            failing: AtomicBool::new(false),
        });
        let thread_shared = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("a2ad-flusher".into())
            .spawn(move || flusher_loop(&thread_shared, store))
            .map_err(|_| StoreError::Closed)?;
        let closing = Arc::clone(&shared);
        let owner = ThreadOwner::new(thread, move || {
            closing.queue.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
            closing.wake.notify_one();
        });
        Ok(GroupCommit(Mode::Flusher { shared, _owner: Arc::new(owner) }))
    }

    /// Commits through the log of `store`: everything written through it before the call
    /// is durable once a commit resolves.
    pub fn over_log(store: Arc<WalStore>) -> Self {
        GroupCommit(Mode::Wal(store))
    }

    /// Commits of a store whose writes are done once they return (the Redis store): a
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
            Mode::Flusher { .. } => return self.commit().await,
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
        let shared = match &self.0 {
            Mode::Wal(store) => return Ok(store.wal().commit(store.wal().last_lsn()).await?),
            Mode::Immediate(_) => return Ok(()),
            Mode::Flusher { shared, .. } => shared,
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            if queue.closed {
                return Err(StoreError::Closed);
            }
            queue.waiters.push(tx);
        }
        shared.wake.notify_one();
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(msg)) => Err(StoreError::Unavailable(msg)),
            Err(_) => Err(StoreError::Closed),
        }
    }

    /// Whether the last attempt to make writes durable failed (the disk refuses them);
    /// readiness reports the node unready meanwhile.
    pub fn is_failing(&self) -> bool {
        match &self.0 {
            Mode::Wal(store) => store.wal().is_failing(),
            Mode::Immediate(store) => store.cluster().is_some_and(|c| !c.reachable()),
            Mode::Flusher { shared, .. } => shared.failing.load(Ordering::Acquire),
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
            Mode::Flusher { shared, .. } => CommitStats {
                flushes: shared.flushes.load(Ordering::Relaxed),
                waiters_served: shared.waiters_served.load(Ordering::Relaxed),
                flush_micros: shared.flush_micros.load(Ordering::Relaxed),
            },
        }
    }

    /// Flushes what is queued, stops the thread (the log's flusher) and waits for it,
    /// which releases its hold on the store. Later commits fail with `Closed`. Blocks.
    pub fn close(&self) {
        match &self.0 {
            Mode::Wal(store) => store.wal().close(),
            Mode::Immediate(_) => {}
            Mode::Flusher { _owner, .. } => _owner.close_and_join(),
        }
    }
}

fn flusher_loop(shared: &Shared, store: Arc<dyn TaskStore>) {
    loop {
        let (batch, closed) = {
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            while queue.waiters.is_empty() && !queue.closed {
                queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            (std::mem::take(&mut queue.waiters), queue.closed)
        };
        let started = Instant::now();
        let result = store.flush().map_err(|e| {
            tracing::error!(error = %e, "flush failed");
            "flush failed".to_owned()
        });
        shared.failing.store(result.is_err(), Ordering::Release);
        shared.flushes.fetch_add(1, Ordering::Relaxed);
        shared.waiters_served.fetch_add(batch.len() as u64, Ordering::Relaxed);
        shared.flush_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        for waiter in batch {
            let _ = waiter.send(result.clone());
        }
        if closed {
            return;
        }
    }
}
