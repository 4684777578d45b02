//! Key layout of the two trees. The task indexes are not in them: they are held in
//! memory (`task_index.rs`).

use crate::model::push_segment;
use crate::{Owner, StoreError, TaskRecord};

/// The key spaces (first byte of every key).
#[derive(Clone, Copy)]
#[repr(u8)]
pub(super) enum Prefix {
    Task = b't',
    /// The by-time index, the by-context index and the active tasks: stores before format
    /// 6 only, whose migration removes them (the indexes are in memory now).
    ByTime = b's',
    ByContext = b'c',
    Active = b'a',
    Event = b'e',
    SessionMeta = b'm',
    /// One message a key: stores before 2026-12-03 only (migrated at open, `migrations.rs`).
    SessionMessage = b'h',
    /// One turn's messages a key (`sessions.rs`).
    SessionChunk = b'H',
    /// Where a context's session was last pruned: its held turns before it are dropped
    /// when the store opens (`sessions.rs`).
    PrunedTo = b'P',
    /// Task counters: stores before format 6 only (removed as the indexes are).
    Counter = b'n',
    /// Facts about the store itself: only the `counters-v1` marker of stores from before
    /// the format version, which `migrations.rs` removes.
    Meta = b'v',
}

/// What the indexes of a task depend on: its status time and state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    pub millis: i64,
    pub state: u8,
}

impl Stamp {
    pub const LEN: usize = 9;

    pub fn of(record: &TaskRecord) -> Stamp {
        Stamp { millis: record.status_millis(), state: u8::try_from(record.state().number()).unwrap_or(0) }
    }

    pub fn encode(self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[..8].copy_from_slice(&u64::try_from(self.millis).unwrap_or(0).to_be_bytes());
        out[8] = self.state;
        out
    }

    pub fn decode(value: &[u8]) -> Option<Stamp> {
        let millis = u64::from_be_bytes(value.get(..8)?.try_into().ok()?);
        Some(Stamp { millis: i64::try_from(millis).ok()?, state: *value.get(8)? })
    }
}

/// prefix ‖ rest.
pub(super) fn key(prefix: Prefix, rest: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + rest.len());
    key.push(prefix as u8);
    key.extend_from_slice(rest);
    key
}

/// `e` ‖ task id: the prefix of one task's event log.
pub(super) fn event_prefix(task_id: &str) -> Vec<u8> {
    let mut k = vec![Prefix::Event as u8];
    push_segment(&mut k, task_id);
    k
}

/// `e` ‖ task id ‖ sequence number (big-endian).
pub(super) fn event_key(task_id: &str, seq: u64) -> Vec<u8> {
    let mut k = event_prefix(task_id);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// The owner at the start of a key (after its prefix byte, if any), and what follows it.
pub(super) fn decode_owner(rest: &[u8]) -> Result<(Owner, &[u8]), StoreError> {
    let corrupt = || StoreError::Corrupt("index key without an owner".into());
    let (tenant, rest) = split_segment(rest).ok_or_else(corrupt)?;
    let (principal, rest) = split_segment(rest).ok_or_else(corrupt)?;
    Ok((Owner { tenant, principal }, rest))
}

/// A `u16`-length-prefixed segment and what follows it.
fn split_segment(bytes: &[u8]) -> Option<(String, &[u8])> {
    let len = usize::from(u16::from_be_bytes(bytes.get(..2)?.try_into().ok()?));
    let segment = bytes.get(2..2 + len)?;
    Some((String::from_utf8(segment.to_vec()).ok()?, &bytes[2 + len..]))
}
