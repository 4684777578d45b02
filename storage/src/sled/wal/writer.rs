//! The flusher thread: one `write` + one `fdatasync` for every commit waiting.
//!
//! Appends only encode into [`Queue::pending`] under a short lock. [`super::Wal::commit`]
//! queues a oneshot waiter and wakes the thread, which takes every pending record and
//! every waiter at once, writes them at the end of the active segment, `fdatasync`s, and
//! answers the whole batch. Callers that arrive meanwhile ride the next batch, so under
//! load one sync serves many commits (the style of `crate::group_commit`).
//!
//! A failed write or sync fails every waiter of the batch that is not durable, and keeps
//! its records: the next batch first truncates the segment back to the last durable
//! offset (so no half-written bytes stay in the file), then rewrites them from memory,
//! never trusting pages the kernel may have dropped after a failed sync. So the log heals
//! by itself once the disk does (space freed after ENOSPC), without a restart.

use super::disk::{io_error, segment_path, Disk, SegmentFile};
use super::record::Batch;
use super::{AfterSync, Lsn, WalError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;
use tokio::sync::oneshot;

pub(crate) type Waiter = oneshot::Sender<Result<(), WalError>>;

/// What appenders and committers hand the thread, under one lock so that the thread takes
/// records and waiters together: every waiter it takes has its record in the same take,
/// or in an earlier one.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub pending: Batch,
    /// The LSN the next append gets.
    pub next_lsn: u64,
    /// `(lsn, waiter)`: answered once `lsn` is durable, or with the batch's error.
    pub waiters: Vec<(u64, Waiter)>,
    pub closed: bool,
}

/// Counters, read by [`super::Wal::stats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub batches: AtomicU64,
    pub syncs: AtomicU64,
    pub waiters_served: AtomicU64,
    pub records_written: AtomicU64,
    pub bytes_written: AtomicU64,
    pub sync_micros: AtomicU64,
    pub failed_batches: AtomicU64,
    /// The last batch failed and none has succeeded since (readiness probes read it).
    pub failing: AtomicBool,
}

/// State shared by the handles and the thread.
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub max_payload: usize,
    pub queue: Mutex<Queue>,
    pub wake: Condvar,
    /// The highest LSN on stable storage.
    pub durable: AtomicU64,
    /// The highest LSN durable and handed to `after_sync` without a failure: commits up
    /// to it resolve at once.
    pub settled: AtomicU64,
    pub after_sync: OnceLock<Arc<dyn AfterSync>>,
    /// The highest LSN declared applied elsewhere (stored in the checkpoint file).
    pub checkpoint: AtomicU64,
    /// First LSNs of the segments on disk, in order; the last one is the active segment.
    pub segments: Mutex<Vec<u64>>,
    /// Serializes checkpoints (each writes the checkpoint file and removes segments).
    pub checkpointing: Mutex<()>,
    pub counters: Counters,
}

impl Shared {
    pub fn lock_queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn lock_segments(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.segments.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The segment appends go to.
pub(crate) struct Active {
    pub path: PathBuf,
    pub file: Box<dyn SegmentFile>,
    /// Bytes known durable; everything past it is scratch until the next sync succeeds.
    pub len: u64,
}

/// The thread's own state: the active segment and the records not yet durable.
pub(crate) struct Writer {
    pub disk: Arc<dyn Disk>,
    pub segment_size: u64,
    pub active: Active,
    /// Records taken from the queue and not yet durable (a failed batch's stay here).
    pub unsynced: Batch,
    /// A write failed: the active segment may hold bytes past `active.len`.
    pub dirty: bool,
}

/// Creates the segment whose first record is `first` and makes its name durable.
pub(crate) fn create_segment(disk: &dyn Disk, shared: &Shared, first: u64) -> Result<Active, WalError> {
    let path = segment_path(&shared.dir, first);
    let file = disk.create(&path).map_err(io_error("create", &path))?;
    disk.sync_dir(&shared.dir).map_err(io_error("fsync", &shared.dir))?;
    shared.lock_segments().push(first);
    Ok(Active { path, file, len: 0 })
}

/// The thread's loop: wait for a waiter (or close), take everything, write, answer.
/// On close it writes what is pending once more and stops.
pub(crate) fn run(shared: &Shared, mut writer: Writer) {
    loop {
        let (taken, waiters, closed) = {
            let mut queue = shared.lock_queue();
            while queue.waiters.is_empty() && !queue.closed {
                queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            (std::mem::take(&mut queue.pending), std::mem::take(&mut queue.waiters), queue.closed)
        };
        writer.unsynced.extend(taken);
        let result = writer.flush(shared);
        let settled = settle(shared);
        answer(shared, waiters, &result, settled.as_ref().err());
        if closed {
            return;
        }
    }
}

/// Runs the after-sync hook over what is durable, and moves `settled` to where it got.
fn settle(shared: &Shared) -> Result<(), WalError> {
    let durable = shared.durable.load(Ordering::Acquire);
    let Some(hook) = shared.after_sync.get() else {
        shared.settled.store(durable, Ordering::Release);
        return Ok(());
    };
    match hook.after_sync(Lsn(durable)) {
        Ok(()) => {
            shared.settled.store(durable, Ordering::Release);
            Ok(())
        }
        Err((Lsn(lsn), message)) => {
            shared.settled.store(lsn.saturating_sub(1), Ordering::Release);
            tracing::error!(lsn, error = %message, "a durable log record could not be applied; the next commit retries it");
            Err(WalError::Apply { lsn, message })
        }
    }
}

/// Answers a batch: a waiter whose record is durable and settled succeeds even when a
/// later part of the batch failed.
fn answer(shared: &Shared, waiters: Vec<(u64, Waiter)>, result: &Result<(), WalError>, unsettled: Option<&WalError>) {
    let durable = shared.durable.load(Ordering::Acquire);
    let settled = shared.settled.load(Ordering::Acquire);
    shared.counters.waiters_served.fetch_add(waiters.len() as u64, Ordering::Relaxed);
    for (lsn, waiter) in waiters {
        let outcome = match (result, unsettled) {
            (Err(e), _) if lsn > durable => Err(e.clone()),
            (_, Some(e)) if lsn > settled => Err(e.clone()),
            _ => Ok(()),
        };
        let _ = waiter.send(outcome);
    }
}

impl Writer {
    /// Makes every unsynced record durable, or fails leaving them for the next batch.
    fn flush(&mut self, shared: &Shared) -> Result<(), WalError> {
        if self.unsynced.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        let result = self.write_units(shared);
        let counters = &shared.counters;
        counters.batches.fetch_add(1, Ordering::Relaxed);
        counters.sync_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        counters.failing.store(result.is_err(), Ordering::Release);
        if let Err(e) = &result {
            counters.failed_batches.fetch_add(1, Ordering::Relaxed);
            tracing::error!(error = %e, "write-ahead log: batch failed; the next commit retries it");
        }
        result
    }

    fn write_units(&mut self, shared: &Shared) -> Result<(), WalError> {
        if self.dirty {
            let active = &mut self.active;
            active.file.set_len(active.len).map_err(io_error("truncate", &active.path))?;
            self.dirty = false;
        }
        while !self.unsynced.is_empty() {
            if let Err(e) = self.write_unit(shared) {
                self.dirty = true;
                return Err(e);
            }
        }
        Ok(())
    }

    /// One sync unit: the records that fit in the active segment (rolling over to a new
    /// one first if not even the first fits), one positional write, one `fdatasync`.
    /// The old segment is whole and synced when the new one is created, so a torn write
    /// can only ever be at the end of the last segment.
    fn write_unit(&mut self, shared: &Shared) -> Result<(), WalError> {
        let first_size = self.unsynced.prefix_size(1) as u64;
        if self.active.len > 0 && self.active.len + first_size > self.segment_size {
            self.active = create_segment(self.disk.as_ref(), shared, self.unsynced.lsn(0))?;
        }
        let count = self.unsynced.fitting(self.segment_size.saturating_sub(self.active.len));
        self.unsynced.mark_unit_start();
        let bytes = self.unsynced.prefix(count);
        let active = &mut self.active;
        active.file.write_all_at(bytes, active.len).map_err(io_error("write", &active.path))?;
        active.file.sync_data().map_err(io_error("fdatasync", &active.path))?;
        active.len += bytes.len() as u64;
        let counters = &shared.counters;
        counters.syncs.fetch_add(1, Ordering::Relaxed);
        counters.records_written.fetch_add(count as u64, Ordering::Relaxed);
        counters.bytes_written.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let last = self.unsynced.lsn(count - 1);
        self.unsynced.drain_front(count);
        shared.durable.store(last, Ordering::Release);
        Ok(())
    }
}
