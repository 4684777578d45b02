//! A context's session in the `sessions` tree: one chunk key per turn.
//!
//! * `m` ‖ context → the [`SessionRecord`] metadata as JSON: written when the session's
//!   first messages are (it marks that the session exists, for retention and
//!   `a2ad admin`), and by a write that writes no chunk (no message, or a limit of 0). It may be older than the
//!   newest chunk's metadata, which then wins (see [`SledStore::load_session`]).
//! * `H` ‖ context ‖ first sequence (BE u64) ‖ message count (BE u32) → one turn's
//!   appended messages, with the session's metadata as it stood after them:
//!   `{"session":…,"messages":[…]}`, packed when long (`sled/packed.rs`). The key's
//!   count says where the chunk ends, so the history limit drops whole chunks without
//!   decoding them; a chunk that straddles the limit stays, and reads cut it. Chunks past
//!   the limit are dropped every few turns, not every turn ([`PRUNE_EVERY`]).
//!
//! Why chunks: with one key per message and the metadata in its own key, a turn cost five
//! sled writes (the metadata, two messages, two removals past the limit), and sled's
//! per-key cost (a node clone per delta, a split every eight appended keys) was a third
//! of the node's CPU at 64 busy contexts (BENCHMARKS.md, issue 15). A chunk is one insert
//! and, at the limit, about one removal.
//!
//! Stores written before 2026-12-03 kept one key per message; opening one rewrites those
//! as one-message chunks without metadata (`migrations.rs`).

use super::index::{self, Prefix};
use super::writes::Writes;
use super::{corrupt, SledStore};
use crate::sled::packed;
use crate::{ContextKey, SessionRecord, StoreError};
use a2ad_protocol::Message;
use serde::{Deserialize, Serialize};

/// What a chunk holds, as written.
#[derive(Serialize)]
struct ChunkOut<'a> {
    session: &'a SessionRecord,
    messages: &'a [Message],
}

/// What a chunk holds, as read (a migrated chunk has no metadata).
#[derive(Deserialize)]
struct ChunkIn {
    #[serde(default)]
    session: Option<SessionRecord>,
    messages: Vec<Message>,
}

/// `H` ‖ context: the prefix of one context's chunks.
fn chunk_prefix(context: &[u8]) -> Vec<u8> {
    index::key(Prefix::SessionChunk, context)
}

pub(super) fn chunk_key(context: &[u8], first: u64, count: u32) -> Vec<u8> {
    let mut key = chunk_prefix(context);
    key.extend_from_slice(&first.to_be_bytes());
    key.extend_from_slice(&count.to_be_bytes());
    key
}

/// The first sequence number and message count a chunk key names.
fn chunk_span(key: &[u8]) -> Result<(u64, u64), StoreError> {
    let tail = key.len().checked_sub(12).map(|at| &key[at..]).ok_or_else(corrupt_key)?;
    let first = u64::from_be_bytes(tail[..8].try_into().map_err(|_| corrupt_key())?);
    let count = u32::from_be_bytes(tail[8..].try_into().map_err(|_| corrupt_key())?);
    Ok((first, u64::from(count)))
}

fn corrupt_key() -> StoreError {
    StoreError::Corrupt("session chunk key".into())
}

/// Past its history limit, a context's oldest chunks are removed once every
/// `history_limit / PRUNE_EVERY` messages (at least every message): so a session keeps at
/// most about an eighth more than its limit in the store, and reads cut it to the limit.
const PRUNE_EVERY: u64 = 8;

/// Whether the turn that appended messages `first_new..count` prunes: when it moves the
/// start of the kept history across a multiple of the pruning step.
fn prune_due(first_new: u64, count: u64, history_limit: u64) -> bool {
    let step = (history_limit / PRUNE_EVERY).max(1);
    let kept_before = first_new.saturating_sub(history_limit);
    let keep_from = count.saturating_sub(history_limit);
    keep_from / step != kept_before / step
}

impl SledStore {
    /// The writes of [`crate::SledStore::put_session`]: the turn's chunk (or the metadata,
    /// when nothing is appended), and, when [`prune_due`], the removal of the chunks wholly
    /// past the last `history_limit` messages (found by reading the context's oldest chunk
    /// keys).
    pub(super) fn session_batch(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Writes, StoreError> {
        let context = session.key.storage_key();
        let count = session.message_count;
        let first_new = count.saturating_sub(appended.len() as u64);
        let keep_from = count.saturating_sub(history_limit as u64);
        let mut batch = Writes::default();
        // No chunk (nothing appended, or a limit of 0): the metadata has no other home.
        let chunked = !appended.is_empty() && count > keep_from;
        if !chunked || first_new == 0 {
            let meta = index::key(Prefix::SessionMeta, &context);
            batch.insert(meta, serde_json::to_vec(session).map_err(corrupt)?);
        }
        if chunked {
            let chunk = ChunkOut { session, messages: appended };
            let len = u32::try_from(appended.len()).map_err(|_| StoreError::Corrupt("a turn of 4G messages".into()))?;
            let json = serde_json::to_vec(&chunk).map_err(corrupt)?;
            batch.insert(chunk_key(&context, first_new, len), packed::pack(json));
        }
        if keep_from == 0 || !prune_due(first_new, count, history_limit as u64) {
            // Every chunk holds at least one message, so none lies wholly before 0: a
            // context within its limit (most of them) opens no sled iterator, which costs
            // a tree descent and a node clone. Past the limit, the scan runs once per
            // [`PRUNE_EVERY`]th of the limit, not every turn (it was 5-6 % of the node's
            // CPU under the core load, whose 64 contexts are all past the limit).
            return Ok(batch);
        }
        for entry in self.sessions.scan_prefix(chunk_prefix(&context)) {
            let (key, _) = entry?;
            let (first, len) = chunk_span(&key)?;
            if first + len > keep_from || first >= first_new {
                break;
            }
            batch.remove(key);
        }
        Ok(batch)
    }

    /// The session of `key` with its last `history_limit` messages: the metadata is the
    /// newest of the `m` record and the newest chunk's (by message count).
    pub(super) fn load_session(
        &self,
        key: &ContextKey,
        history_limit: usize,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let context = key.storage_key();
        let Some(bytes) = self.sessions.get(index::key(Prefix::SessionMeta, &context))? else {
            return Ok(None);
        };
        let mut session: SessionRecord =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt(format!("session record: {e}")))?;
        let mut newest_first: Vec<Vec<Message>> = Vec::new();
        let (mut held, mut newest) = (0, true);
        for entry in self.sessions.scan_prefix(chunk_prefix(&context)).rev() {
            if held >= history_limit && !newest {
                break;
            }
            let (_, value) = entry?;
            let json = packed::unpack(&value, "session chunk")?;
            let chunk: ChunkIn =
                serde_json::from_slice(&json).map_err(|e| StoreError::Corrupt(format!("session chunk: {e}")))?;
            if let Some(meta) = chunk.session.filter(|m| newest && m.message_count > session.message_count) {
                session = meta;
            }
            newest = false;
            held += chunk.messages.len();
            newest_first.push(chunk.messages);
        }
        let mut history: crate::History = newest_first.into_iter().rev().flatten().collect();
        let excess = history.len().saturating_sub(history_limit);
        history.drain(..excess);
        session.history = std::sync::Arc::new(history);
        Ok(Some(session))
    }

    /// The removals of every chunk of a context (with its metadata: a forgotten session).
    pub(super) fn remove_chunks(&self, context: &[u8], batch: &mut Writes) -> Result<(), StoreError> {
        for entry in self.sessions.scan_prefix(chunk_prefix(context)) {
            batch.remove(entry?.0);
        }
        Ok(())
    }

    /// How many messages the stored chunks hold (read off their keys).
    pub(super) fn count_session_messages(&self) -> Result<u64, StoreError> {
        let mut messages = 0;
        for entry in self.sessions.scan_prefix([Prefix::SessionChunk as u8]) {
            messages += chunk_span(&entry?.0)?.1;
        }
        Ok(messages)
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
