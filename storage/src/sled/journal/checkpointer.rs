//! The background checkpointer: flushes the store behind the log and moves the log's
//! checkpoint, so that the log stays short and start-up replays little.

use super::WalStore;
use crate::thread_owner::{StopSignal, ThreadOwner};
use crate::StoreError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the thread looks at the log's growth between timed checkpoints, and commits
/// what writers appended without committing (so that it reaches the store).
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(100);

/// A thread that checkpoints a [`WalStore`] every `every`, or sooner once `max_bytes` of
/// log were written since the last one. A failed checkpoint (the disk is full) is logged
/// and tried again next time; the log keeps every record meanwhile.
pub struct Checkpointer {
    owner: ThreadOwner,
}

impl Checkpointer {
    /// Starts the thread.
    pub fn start(store: Arc<WalStore>, every: Duration, max_bytes: u64) -> Result<Checkpointer, StoreError> {
        let owner = ThreadOwner::spawn_stoppable("a2ad-checkpoint", "checkpointer", move |stop| {
            run(&store, stop, every, max_bytes)
        })?;
        Ok(Checkpointer { owner })
    }

    /// Stops the thread after one last checkpoint, and waits for it (also when dropped).
    /// Blocks.
    pub fn stop(&self) {
        self.owner.close_and_join();
    }
}

fn run(store: &WalStore, stop: &StopSignal, every: Duration, max_bytes: u64) {
    let mut last = Instant::now();
    let mut bytes_at_last = store.wal().stats().bytes_written;
    loop {
        let stopping = stop.wait(LOOK_EVERY);
        if let Err(e) = store.settle_pending() {
            tracing::error!(error = %e, "could not commit what writers left uncommitted; tried again shortly");
        }
        let written = store.wal().stats().bytes_written;
        let due = last.elapsed() >= every || written.saturating_sub(bytes_at_last) >= max_bytes;
        if due || stopping {
            if let Err(e) = store.checkpoint() {
                tracing::error!(error = %e, "checkpoint failed; the log keeps its records and it is tried again");
            }
            last = Instant::now();
            bytes_at_last = written;
        }
        if stopping {
            return;
        }
    }
}
