//! What can go wrong in the write-ahead log.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// A write-ahead log failure. `Clone`, because one failed `fdatasync` fails every waiter
/// of its batch with the same error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WalError {
    /// A file operation failed (the disk is full, gone, or read-only). Writes are retried
    /// by the next commit, from the last durable offset.
    #[error("write-ahead log: {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<io::Error>,
    },
    /// A bad record with durable records after it: the log lost data it had acknowledged,
    /// so start-up stops rather than silently skip it.
    #[error(
        "write-ahead log segment {segment} is corrupt at byte {offset} ({reason}), and records \
         follow it; run `a2ad admin repair` to cut the log there (the records from that point \
         on are lost), or restore the data directory from a backup",
        segment = segment.display()
    )]
    Corrupt { segment: PathBuf, offset: u64, reason: &'static str },
    /// The checkpoint file is unreadable. It is replaced atomically, so this is damage,
    /// not a crash.
    #[error("write-ahead log checkpoint {path} is unreadable; restore the data directory from a backup", path = path.display())]
    BadCheckpoint { path: PathBuf },
    /// A payload larger than a segment can hold.
    #[error("write-ahead log record of {len} bytes is larger than the limit of {max}")]
    TooLarge { len: usize, max: usize },
    /// `commit` of an LSN that was never appended.
    #[error("write-ahead log has no record {lsn} (the last is {last})")]
    BeyondLog { lsn: u64, last: u64 },
    /// `checkpoint` of an LSN the log has not made durable yet.
    #[error("write-ahead log checkpoint at {lsn} is ahead of the durable end {durable}")]
    NotDurable { lsn: u64, durable: u64 },
    /// The record is durable, but the work after its sync ([`super::AfterSync`], the
    /// store's apply of the step) failed; the next commit tries it again, and a restart
    /// replays the record.
    #[error("write-ahead log record {lsn} is durable but could not be applied: {message}")]
    Apply { lsn: u64, message: String },
    /// The log was closed.
    #[error("write-ahead log is closed")]
    Closed,
}

impl From<WalError> for crate::StoreError {
    /// A file failure is [`StoreError::Unavailable`] (the log heals with the disk); a
    /// closed log is [`StoreError::Closed`]; anything else is damage or a bug.
    fn from(e: WalError) -> Self {
        match e {
            WalError::Io { .. } | WalError::Apply { .. } => crate::StoreError::Unavailable(e.to_string()),
            WalError::Closed => crate::StoreError::Closed,
            other => crate::StoreError::Corrupt(other.to_string()),
        }
    }
}
