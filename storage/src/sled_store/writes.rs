//! Writes to one sled tree, built in order and applied as one atomic `sled::Batch`.
//!
//! Why a type of our own: a `sled::Batch` cannot be read back, and a settle needs the same
//! writes inside a transaction ([`Writes::to_batch`]).
//!
//! Key by key was tried behind the write-ahead log and reverted. sled's `apply_batch`
//! seals and writes its log buffer before and after every batch (`PageCache::pin_log`),
//! each write waiting in a `sync_file_range`, and that is most of the storage path's CPU
//! (BENCHMARKS.md, issue 15): applying the keys one by one halved the CPU per request.
//! But sled then writes its buffers when they fill, at any key, and a step's log record
//! is only in the log writer's memory until its commit: a SIGKILL in between left a
//! prefix of an unacknowledged step in sled (a terminal task without its push job) that
//! no replay could mend, and the crash harness caught it. Doing it safely needs the step
//! applied to sled only once its record is at least written to the log file.

use sled::IVec;

/// Inserts and removals for one tree, in order.
#[derive(Debug, Default)]
pub(crate) struct Writes(Vec<(IVec, Option<IVec>)>);

impl Writes {
    pub fn insert(&mut self, key: impl Into<IVec>, value: impl Into<IVec>) {
        self.0.push((key.into(), Some(value.into())));
    }

    pub fn remove(&mut self, key: impl Into<IVec>) {
        self.0.push((key.into(), None));
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

    /// Applies the writes atomically.
    pub fn apply(self, tree: &sled::Tree) -> Result<(), sled::Error> {
        tree.apply_batch(self.to_batch())
    }
}
