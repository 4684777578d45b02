//! The embedded store (`store: sled`, the default): sled under a write-ahead log.
//!
//! * [`store`]: the sled store itself, tasks, indexes, events and sessions in two trees;
//! * [`wal`]: the write-ahead log, one compact record per step, segments on disk;
//! * [`journal`]: [`crate::WalStore`], the store the node runs: each step is a log
//!   record first, applied to sled without a flush, and a [`crate::Checkpointer`]
//!   flushes sled in the background and truncates the log behind it;
//! * [`group_commit`]: many writers, one `fdatasync` of the log per batch, which is
//!   what "durable before the answer" costs.

pub(crate) mod group_commit;
pub(crate) mod journal;
pub(crate) mod packed;
pub(crate) mod store;
pub mod wal;
