//! Writes to one sled tree: applied as one atomic `sled::Batch`, or key by key behind
//! the write-ahead log.
//!
//! Why two ways: sled's `apply_batch` seals and writes its log buffer before and after
//! every batch (`PageCache::pin_log`, "rolling the io buffer before AND after"), and each
//! of those writes waits in a `sync_file_range`. With a batch per store write, that was
//! three or four waits on the disk per request, most of the storage path's CPU (on a
//! virtual disk, each is a trip to the host), and half-empty buffers written twice.
//!
//! Behind the log ([`super::SledStore::open_behind_log`]) a step is atomic by its log
//! record, and reaches sled only once that record is durable (`sled/journal/applier.rs`):
//! sled writes its buffers when they fill, at any key, so a step applied before its
//! record was durable could leave a prefix that no replay knows of (the crash harness
//! caught exactly that once). A crash that cuts a durable step's keys short is mended by
//! replaying the record, and every key of a step is a blind write of what the record says
//! (the task indexes and counters, which are not, live in memory: `task_index.rs`). So
//! there the keys are applied one by one, in the order given, and sled's buffers fill before they are written. Without the log (admin
//! commands on a stopped node, tests) a batch stays one atomic `sled::Batch`.

use sled::IVec;

/// How a store applies its [`Writes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Atomicity {
    /// One `sled::Batch`: all or nothing after a crash.
    Batch,
    /// Key by key: the write-ahead log makes the step atomic.
    Log,
}

/// Inserts and removals for one tree, in order (the `sled::Batch` API, which cannot be
/// read back).
#[derive(Debug, Default)]
pub(crate) struct Writes(Vec<(IVec, Option<IVec>)>);

impl Writes {
    pub fn insert(&mut self, key: impl Into<IVec>, value: impl Into<IVec>) {
        self.0.push((key.into(), Some(value.into())));
    }

    pub fn remove(&mut self, key: impl Into<IVec>) {
        self.0.push((key.into(), None));
    }

    /// A step too large to pay off key by key: many keys, or large values (a fire-hose
    /// stream's step of thousands of events, a task carrying a long artifact). Key by key,
    /// sled rewrote the node holding a large value (a blob file of its own, hundreds of KB)
    /// again and again within one step: one fire-hose stream ran at 2,340 events/s instead
    /// of 57,000 (BENCHMARKS.md, issue 15). Two log-buffer writes are nothing beside that.
    fn is_large(&self) -> bool {
        const KEYS: usize = 64;
        const BYTES: usize = 64 << 10;
        self.0.len() > KEYS
            || self.0.iter().map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.len())).sum::<usize>() > BYTES
    }

    /// The same writes as a `sled::Batch` (for a transaction).
    pub fn to_batch(&self) -> sled::Batch {
        let mut batch = sled::Batch::default();
        for (key, value) in &self.0 {
            match value {
                Some(value) => batch.insert(key.clone(), value.clone()),
                None => batch.remove(key.clone()),
            }
        }
        batch
    }

    pub fn apply(self, tree: &sled::Tree, atomicity: Atomicity) -> Result<(), sled::Error> {
        if atomicity == Atomicity::Batch || self.is_large() {
            return tree.apply_batch(self.to_batch());
        }
        for (key, value) in self.0 {
            match value {
                Some(value) => tree.insert(key, value).map(drop)?,
                None => tree.remove(key).map(drop)?,
            }
        }
        Ok(())
    }
}
