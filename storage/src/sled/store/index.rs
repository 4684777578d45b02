//! Key layout of the two trees, and the ordered scans of the task indexes.

use crate::model::push_segment;
use crate::{Cursor, Owner, StoreError, TaskQuery, TaskRecord};
use a2ad_protocol::TaskState;

/// The key spaces (first byte of every key).
#[derive(Clone, Copy)]
#[repr(u8)]
pub(super) enum Prefix {
    Task = b't',
    ByTime = b's',
    ByContext = b'c',
    Active = b'a',
    Event = b'e',
    SessionMeta = b'm',
    /// One message a key: stores before 2026-12-03 only (migrated at open, `migrations.rs`).
    SessionMessage = b'h',
    /// One turn's messages a key (`sessions.rs`).
    SessionChunk = b'H',
    /// Task counters (see `counters.rs`).
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

/// `s` ‖ owner: the prefix of one owner's tasks in status-time order.
pub(super) fn time_prefix(owner: &Owner) -> Vec<u8> {
    key(Prefix::ByTime, &owner.key_prefix())
}

/// `c` ‖ owner ‖ context: the prefix of one context's tasks.
pub(super) fn context_prefix(owner: &Owner, context_id: &str) -> Vec<u8> {
    let mut k = key(Prefix::ByContext, &owner.key_prefix());
    push_segment(&mut k, context_id);
    k
}

pub(super) fn time_key(record: &TaskRecord, millis: i64) -> Vec<u8> {
    let mut k = time_prefix(&record.owner);
    push_time_and_id(&mut k, millis, &record.task.id);
    k
}

pub(super) fn context_key(record: &TaskRecord, millis: i64) -> Vec<u8> {
    let mut k = context_prefix(&record.owner, &record.task.context_id);
    push_time_and_id(&mut k, millis, &record.task.id);
    k
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

fn push_time_and_id(key: &mut Vec<u8>, millis: i64, id: &str) {
    // Timestamps before 1970 do not occur; clamping keeps the big-endian order total.
    key.extend_from_slice(&u64::try_from(millis).unwrap_or(0).to_be_bytes());
    key.extend_from_slice(id.as_bytes());
}

/// One page of ids, newest first, and where the next page starts.
pub(super) struct Page {
    pub ids: Vec<String>,
    pub next_cursor: Option<Cursor>,
}

/// The page after the query's cursor: a reverse range scan that starts right after the
/// cursor (a seek, not a walk from the newest) and stops once the page is full and one
/// more match shows there is a next page. Reads only index entries.
pub(super) fn page(tree: &sled::Tree, prefix: &[u8], query: &TaskQuery) -> Result<Page, StoreError> {
    let end = match &query.cursor {
        Some(cursor) => {
            let mut end = prefix.to_vec();
            push_time_and_id(&mut end, cursor.ts, &cursor.id);
            end
        }
        None => prefix_end(prefix),
    };
    let mut out = Page { ids: Vec::new(), next_cursor: None };
    let mut last_in_page: Option<Cursor> = None;
    for entry in tree.range(prefix.to_vec()..end).rev() {
        let (key, value) = entry?;
        let position = match judge(prefix, &key, &value, query)? {
            Entry::Matches(position) => position,
            Entry::Filtered => continue,
            Entry::TooOld => break,
        };
        if out.ids.len() == query.page_size {
            out.next_cursor = last_in_page;
            break;
        }
        out.ids.push(position.id.clone());
        last_in_page = Some(position);
    }
    Ok(out)
}

/// Counts the entries under `prefix` that pass the filters: for the filter combinations
/// no counter answers (see `counters.rs`).
pub(super) fn count(tree: &sled::Tree, prefix: &[u8], query: &TaskQuery) -> Result<usize, StoreError> {
    let mut total = 0;
    for entry in tree.scan_prefix(prefix).rev() {
        let (key, value) = entry?;
        match judge(prefix, &key, &value, query)? {
            Entry::Matches(_) => total += 1,
            Entry::Filtered => {}
            Entry::TooOld => break,
        }
    }
    Ok(total)
}

/// What the filters make of one index entry.
enum Entry {
    Matches(Cursor),
    /// Another state than the one asked for.
    Filtered,
    /// Older than the status-time bound: in descending order, so is everything after it.
    TooOld,
}

fn judge(prefix: &[u8], key: &[u8], value: &[u8], query: &TaskQuery) -> Result<Entry, StoreError> {
    let (millis, id) = split_time_and_id(&key[prefix.len()..])?;
    if query.status_after_millis.is_some_and(|after| millis < after) {
        return Ok(Entry::TooOld);
    }
    let state = value.first().and_then(|n| TaskState::from_number(i64::from(*n)));
    if query.state.is_some_and(|wanted| state != Some(wanted)) {
        return Ok(Entry::Filtered);
    }
    Ok(Entry::Matches(Cursor { ts: millis, id }))
}

/// The smallest key after every key that starts with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![u8::MAX; prefix.len() + 1]
}

fn split_time_and_id(rest: &[u8]) -> Result<(i64, String), StoreError> {
    if rest.len() < 8 {
        return Err(StoreError::Corrupt("short index key".into()));
    }
    let (ts, id) = rest.split_at(8);
    let millis = u64::from_be_bytes(ts.try_into().expect("8 bytes"));
    let id = String::from_utf8(id.to_vec()).map_err(|_| StoreError::Corrupt("index key is not UTF-8".into()))?;
    Ok((i64::try_from(millis).unwrap_or(i64::MAX), id))
}

/// The owner at the start of an index key (after the prefix byte), and what follows it.
pub(super) fn decode_owner(rest: &[u8]) -> Result<(Owner, &[u8]), StoreError> {
    let corrupt = || StoreError::Corrupt("index key without an owner".into());
    let (tenant, rest) = split_segment(rest).ok_or_else(corrupt)?;
    let (principal, rest) = split_segment(rest).ok_or_else(corrupt)?;
    Ok((Owner { tenant, principal }, rest))
}

/// A `u16`-length-prefixed segment and what follows it.
pub(super) fn split_segment(bytes: &[u8]) -> Option<(String, &[u8])> {
    let len = usize::from(u16::from_be_bytes(bytes.get(..2)?.try_into().ok()?));
    let segment = bytes.get(2..2 + len)?;
    Some((String::from_utf8(segment.to_vec()).ok()?, &bytes[2 + len..]))
}
