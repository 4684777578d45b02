//! A write-ahead log: compact binary commit records, group-committed with `fdatasync`.
//!
//! The log sits in front of an embedded store (sled) so that a request pays one shared
//! sequential append + `fdatasync` instead of the store's page rewrites: the caller
//! [`Wal::append`]s a record, applies the change to the store without flushing it, and
//! awaits [`Wal::commit`] before it answers. The store is flushed in the background;
//! once that flush is durable, [`Wal::checkpoint`] declares the records up to it applied,
//! and the segments wholly behind it are deleted. At start-up [`Wal::open`] hands back
//! the records after the checkpoint ([`Replay`]) for the caller to apply again, so they
//! must be idempotent (a replayed record may already be in the store).
//!
//! # On disk
//!
//! A directory of segment files `<first LSN, 20 digits>.wal`, each at most
//! [`WalOptions::segment_size`] bytes (default 64 MiB; a record never spans two), plus a
//! `checkpoint` file (8 bytes LSN + CRC32, replaced by write-temp, `fsync`, rename,
//! `fsync` dir). Records are `len u32 | crc32 u32 | lsn u64 | payload` in little-endian;
//! see `record.rs` for the sync-unit bit in `len`.
//!
//! # Crashes and damage
//!
//! Open walks every segment. A bad end of the last segment (garbage, a half-written
//! record, a zero-filled block) is the write a crash interrupted: it is dropped with a
//! warning and the file truncated there ([`Replay::torn_tail`]). A bad record with durable
//! records after it is [`WalError::Corrupt`]: start-up stops, and [`Wal::repair`] (behind
//! `a2ad admin repair`) cuts the log at the first bad record.
//!
//! Linux/Unix only (positional writes, directory `fsync`). One process at a time: the
//! directory is not locked here, so keep it inside a data directory that is (sled locks
//! its own).

mod disk;
mod error;
mod record;
mod scan;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_damage;
mod writer;

pub use error::WalError;

use disk::{io_error, load_checkpoint, store_checkpoint, Disk, OsDisk};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread;
use tokio::sync::oneshot;
use writer::{Active, Counters, Queue, Shared, Writer};

/// A log sequence number: records are numbered 1, 2, 3, … with no gaps. `Lsn(0)` is
/// "nothing" (no record yet, no checkpoint yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How to open a log.
#[derive(Clone)]
pub struct WalOptions {
    segment_size: u64,
    disk: Arc<dyn Disk>,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions { segment_size: 64 << 20, disk: Arc::new(OsDisk) }
    }
}

impl fmt::Debug for WalOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WalOptions").field("segment_size", &self.segment_size).finish_non_exhaustive()
    }
}

impl WalOptions {
    /// The most bytes a segment file grows to (at least 64) before the next record goes
    /// to a new one. A payload may be up to this minus the 16-byte header.
    pub fn segment_size(mut self, bytes: u64) -> Self {
        self.segment_size = bytes.max(64);
        self
    }

    /// Fault injection for tests of a full disk: while `switch` is on, every segment
    /// write fails with ENOSPC (after writing half its bytes, as a real full disk may).
    pub fn full_disk_switch(self, switch: &FullDiskSwitch) -> Self {
        self.disk(Arc::new(disk::SwitchedDisk { full: Arc::clone(&switch.0) }))
    }

    /// Routes file operations through `disk` (tests inject failures with it).
    pub(crate) fn disk(mut self, disk: Arc<dyn Disk>) -> Self {
        self.disk = disk;
        self
    }

    fn max_payload(&self) -> usize {
        let room = usize::try_from(self.segment_size).unwrap_or(usize::MAX) - record::HEADER;
        room.min(record::MAX_PAYLOAD)
    }
}

/// Work the flusher thread does after every batch, between making records durable and
/// resolving their commits: so a commit that resolves has had it done for its record.
/// The store behind the log applies its steps here, since a step may reach the store only
/// once its record is durable (a crash could otherwise leave in the store part of a step
/// that no replay knows of).
pub trait AfterSync: Send + Sync + 'static {
    /// Runs for every record up to `durable` not yet handed to it, in LSN order. On a
    /// failure it returns the first LSN it could not settle; that one and every later one
    /// is handed to it again after the next batch.
    fn after_sync(&self, durable: Lsn) -> Result<(), (Lsn, String)>;
}

/// Turns a log's disk "full" and back ([`WalOptions::full_disk_switch`]); for tests.
#[derive(Debug, Clone, Default)]
pub struct FullDiskSwitch(Arc<std::sync::atomic::AtomicBool>);

impl FullDiskSwitch {
    /// Makes every later segment write fail (`true`) or succeed again (`false`).
    pub fn set_full(&self, full: bool) {
        self.0.store(full, Ordering::SeqCst);
    }
}

/// One record handed back at open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub lsn: Lsn,
    pub payload: Vec<u8>,
}

/// Where the log was cut, and why: the torn tail open dropped, or the cut of a repair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub segment: PathBuf,
    /// The byte offset in `segment` the file was truncated to.
    pub offset: u64,
    /// Bytes dropped from `segment` (later segments a repair removed are not counted).
    pub dropped_bytes: u64,
    pub reason: &'static str,
}

/// The records after the checkpoint, in LSN order: apply them again at start-up.
#[derive(Debug)]
pub struct Replay {
    records: std::vec::IntoIter<Record>,
    checkpoint: Lsn,
    torn_tail: Option<Cut>,
}

impl Replay {
    /// The checkpoint the replay starts after.
    pub fn checkpoint(&self) -> Lsn {
        self.checkpoint
    }

    /// The torn tail open dropped, if the last run ended in a crash mid-write.
    pub fn torn_tail(&self) -> Option<&Cut> {
        self.torn_tail.as_ref()
    }
}

impl Iterator for Replay {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        self.records.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

impl ExactSizeIterator for Replay {}

/// What [`Wal::repair`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Where the log was cut; `None` when it was sound and nothing was changed.
    pub cut: Option<Cut>,
    /// Whole segments removed (those after the cut, and the cut one if it was left empty).
    pub removed_segments: Vec<PathBuf>,
    /// Every byte dropped, in the cut segment and in the removed ones.
    pub dropped_bytes: u64,
    /// The last LSN the log (or its checkpoint) still holds.
    pub last_lsn: Lsn,
}

/// Counters of the flusher, for metrics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Rounds of the flusher that wrote something (each answers every waiter it took).
    pub batches: u64,
    /// `fdatasync`s done (one per batch, two when a batch rolls over to a new segment).
    pub syncs: u64,
    /// Commit calls served (so `waiters_served / batches` is the mean batch).
    pub waiters_served: u64,
    pub records_written: u64,
    /// Bytes written to segments (headers included; rewrites after failures too).
    pub bytes_written: u64,
    /// Time spent writing and syncing, in microseconds.
    pub sync_micros: u64,
    /// Batches that failed (their waiters got the error; the records were retried).
    pub failed_batches: u64,
}

/// A handle to an open log. Cloning is cheap; the flusher thread stops when the last
/// handle is dropped or [`Wal::close`] is called, after writing what is pending.
#[derive(Clone)]
pub struct Wal {
    shared: Arc<Shared>,
    _owner: Arc<crate::thread_owner::ThreadOwner>,
}

impl Wal {
    /// Opens (or creates) the log in `dir` and returns it with the records to replay.
    /// Blocks on reads and `fsync`s. Fails with [`WalError::Corrupt`] when a bad record
    /// has durable records after it. Every segment is read whole and checked (one at a
    /// time); the records after the checkpoint are held in memory, so checkpoint often
    /// enough that the tail stays small.
    pub fn open(dir: impl AsRef<Path>, options: WalOptions) -> Result<(Wal, Replay), WalError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        let checkpoint = load_checkpoint(&dir)?;
        scan::remove_segments(&dir, &scan::behind(&disk::list_segments(&dir)?, checkpoint))?;
        let mut records = Vec::new();
        let walk = scan::walk(&dir, checkpoint, |lsn, payload| {
            if lsn > checkpoint {
                records.push(Record { lsn: Lsn(lsn), payload: payload.to_vec() });
            }
        })?;
        let torn_tail = scan::settle_tail(&dir, &walk)?;
        let next_lsn = walk.last_lsn.max(checkpoint) + 1;
        let shared = Arc::new(Shared {
            dir,
            max_payload: options.max_payload(),
            queue: Mutex::new(Queue { next_lsn, ..Queue::default() }),
            wake: Condvar::new(),
            durable: AtomicU64::new(next_lsn - 1),
            settled: AtomicU64::new(next_lsn - 1),
            after_sync: OnceLock::new(),
            checkpoint: AtomicU64::new(checkpoint),
            segments: Mutex::new(walk.firsts.clone()),
            checkpointing: Mutex::new(()),
            counters: Counters::default(),
        });
        let active = Self::active_segment(&shared, options.disk.as_ref(), &walk, next_lsn)?;
        let writer = Writer {
            disk: options.disk,
            segment_size: options.segment_size,
            active,
            unsynced: Default::default(),
            dirty: false,
        };
        let wal = Self::start(shared, writer)?;
        let replay = Replay { records: records.into_iter(), checkpoint: Lsn(checkpoint), torn_tail };
        Ok((wal, replay))
    }

    /// The last segment when appends can go on there, else a new one named `next_lsn`
    /// (a new log, or a checkpoint ahead of the last record).
    fn active_segment(shared: &Shared, disk: &dyn Disk, walk: &scan::Walk, next_lsn: u64) -> Result<Active, WalError> {
        match walk.firsts.last() {
            Some(&first) if walk.tail_next == next_lsn => {
                let path = disk::segment_path(&shared.dir, first);
                let file = disk.open(&path).map_err(io_error("open", &path))?;
                Ok(Active { path, file, len: walk.tail_len })
            }
            _ => writer::create_segment(disk, shared, next_lsn),
        }
    }

    fn start(shared: Arc<Shared>, writer: Writer) -> Result<Wal, WalError> {
        let thread_shared = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("a2ad-wal".into())
            .spawn(move || writer::run(&thread_shared, writer))
            .map_err(io_error("spawn the flusher for", &shared.dir))?;
        let closing = Arc::clone(&shared);
        let owner = crate::thread_owner::ThreadOwner::new(thread, move || {
            closing.lock_queue().closed = true;
            closing.wake.notify_one();
        });
        Ok(Wal { shared, _owner: Arc::new(owner) })
    }

    /// Appends a record and returns its LSN. The record is only in memory until a
    /// [`Wal::commit`] at or after its LSN resolves. Never blocks on the disk.
    pub fn append(&self, payload: &[u8]) -> Result<Lsn, WalError> {
        if payload.len() > self.shared.max_payload {
            return Err(WalError::TooLarge { len: payload.len(), max: self.shared.max_payload });
        }
        let mut queue = self.shared.lock_queue();
        if queue.closed {
            return Err(WalError::Closed);
        }
        let lsn = queue.next_lsn;
        queue.next_lsn += 1;
        queue.pending.push(lsn, payload);
        Ok(Lsn(lsn))
    }

    /// Resolves once every record up to `lsn` is on stable storage (written and
    /// `fdatasync`ed), and the [`AfterSync`] hook has run over it, sharing the sync with
    /// every other commit queued meanwhile. On a write failure it returns the error; the
    /// record is then neither durable nor lost: it stays queued and the next commit writes
    /// it again. A hook that failed at or before `lsn` is [`WalError::Apply`], and the
    /// next commit runs it again.
    pub async fn commit(&self, lsn: Lsn) -> Result<(), WalError> {
        match self.wait_for(lsn)? {
            Some(rx) => rx.await.unwrap_or(Err(WalError::Closed)),
            None => Ok(()),
        }
    }

    /// Queues a waiter for `lsn` and wakes the flusher; `None` when `lsn` is durable.
    fn wait_for(&self, lsn: Lsn) -> Result<Option<oneshot::Receiver<Result<(), WalError>>>, WalError> {
        if lsn.0 <= self.shared.settled.load(Ordering::Acquire) {
            return Ok(None);
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut queue = self.shared.lock_queue();
            if lsn.0 >= queue.next_lsn {
                return Err(WalError::BeyondLog { lsn: lsn.0, last: queue.next_lsn - 1 });
            }
            if queue.closed {
                return Err(WalError::Closed);
            }
            queue.waiters.push((lsn.0, tx));
        }
        self.shared.wake.notify_one();
        Ok(Some(rx))
    }

    /// [`Wal::commit`] for a blocking thread: the same shared batch, waited for without
    /// an async runtime. Must not be called from async code (it would block a worker).
    pub fn commit_blocking(&self, lsn: Lsn) -> Result<(), WalError> {
        match self.wait_for(lsn)? {
            Some(rx) => rx.blocking_recv().unwrap_or(Err(WalError::Closed)),
            None => Ok(()),
        }
    }

    /// Whether the last write batch failed with none succeeding since: the disk refuses
    /// writes (full, gone, read-only), and commits fail until it heals.
    pub fn is_failing(&self) -> bool {
        self.shared.counters.failing.load(Ordering::Acquire)
    }

    /// Installs the work the flusher does once records are durable and before their
    /// commits resolve (the store behind the log applies its steps there). Only the first
    /// hook installed is kept; install it before the first commit.
    pub fn set_after_sync(&self, hook: Arc<dyn AfterSync>) {
        let _ = self.shared.after_sync.set(hook);
    }

    /// The highest LSN that is durable and that the [`AfterSync`] hook has run over: a
    /// commit up to it resolves at once.
    pub fn settled_lsn(&self) -> Lsn {
        Lsn(self.shared.settled.load(Ordering::Acquire))
    }

    /// The highest LSN on stable storage.
    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.shared.durable.load(Ordering::Acquire))
    }

    /// The LSN of the last record appended (durable or not).
    pub fn last_lsn(&self) -> Lsn {
        Lsn(self.shared.lock_queue().next_lsn - 1)
    }

    /// The last checkpoint.
    pub fn checkpoint_lsn(&self) -> Lsn {
        Lsn(self.shared.checkpoint.load(Ordering::Acquire))
    }

    /// Declares every record up to `lsn` applied and durable elsewhere: stores `lsn` in
    /// the checkpoint file (durably), then deletes the segments wholly behind it. Returns
    /// how many segments it deleted. An `lsn` at or below the last checkpoint does
    /// nothing. Blocks on `fsync`s: call it from a blocking thread.
    pub fn checkpoint(&self, lsn: Lsn) -> Result<usize, WalError> {
        let durable = self.shared.durable.load(Ordering::Acquire);
        if lsn.0 > durable {
            return Err(WalError::NotDurable { lsn: lsn.0, durable });
        }
        let _one_at_a_time = self.shared.checkpointing.lock().unwrap_or_else(|p| p.into_inner());
        if lsn.0 <= self.shared.checkpoint.load(Ordering::Acquire) {
            return Ok(0);
        }
        store_checkpoint(&self.shared.dir, lsn.0)?;
        self.shared.checkpoint.store(lsn.0, Ordering::Release);
        let doomed = scan::behind(&self.shared.lock_segments(), lsn.0);
        scan::remove_segments(&self.shared.dir, &doomed)?;
        self.shared.lock_segments().retain(|first| !doomed.contains(first));
        Ok(doomed.len())
    }

    /// The flusher's counters so far.
    pub fn stats(&self) -> WalStats {
        let c = &self.shared.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        WalStats {
            batches: load(&c.batches),
            syncs: load(&c.syncs),
            waiters_served: load(&c.waiters_served),
            records_written: load(&c.records_written),
            bytes_written: load(&c.bytes_written),
            sync_micros: load(&c.sync_micros),
            failed_batches: load(&c.failed_batches),
        }
    }

    /// Writes what is pending, stops the flusher and waits for it. Later appends and
    /// commits fail with [`WalError::Closed`]. Blocks.
    pub fn close(&self) {
        self._owner.close_and_join();
    }

    /// Cuts the log in `dir` at its first bad record, removing what follows; the way out
    /// of [`WalError::Corrupt`]. A sound log is left alone. Run it only while the log is
    /// not open.
    pub fn repair(dir: impl AsRef<Path>) -> Result<RepairReport, WalError> {
        scan::repair(dir.as_ref())
    }
}
