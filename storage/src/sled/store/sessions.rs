//! A context's session in the `sessions` tree: one chunk key per turn.
//!
//! * `m` ‖ context → the [`SessionRecord`] metadata as JSON: written when the session's
//!   first messages are (it marks that the session exists, for retention and
//!   `a2ad admin`), and by a write that writes no chunk (no message, or a limit of 0). It may be older than the
//!   newest chunk's metadata, which then wins (see [`SledStore::load_session`]).
//! * `H` ‖ context ‖ first sequence (BE u64) ‖ message count (BE u32) → one turn's
//!   appended messages, in one of two forms:
//!   * the messages, with the session's metadata as it stood after them:
//!     `{"session":…,"messages":[…]}`, packed when long (`sled/packed.rs`);
//!   * a reference, [`TASK_REF`] ‖ position (BE u32) ‖ task id: the turn's messages are
//!     the task's history from that position on, and the metadata after them is the `m`
//!     record's with this task as the latest and the key's end as the message count
//!     (the fields a turn changes; the agent and the working directory are bound by the
//!     first turn, whose chunk also writes `m`). Written when the step that ends the turn
//!     writes that task with those very messages at the end of its history
//!     ([`turn_in_task`]): the usual turn that ends with a task, every echo turn among
//!     them. Any other turn keeps a chunk of the first form.
//!
//!   The key's count says where the chunk ends, so the history limit drops whole chunks
//!   without decoding them; a chunk that straddles the limit stays, and reads cut it.
//!   Chunks past the limit are dropped every few turns, not every turn ([`PRUNE_EVERY`]).
//!
//! Why references (issue 35): a chunk was the second copy of a turn's messages, beside
//! the task's history written in the same step, and sled's bytes follow its values'
//! sizes (each insert, then the leaf's rewrites at splits). An echo turn's chunk of
//! ~300 packed bytes cost ~2.7 KB written and the reference ~1 KB
//! (`cargo bench -p a2ad-storage --bench apply`). What it costs: a session read (an
//! evicted context coming back) reads the tasks its chunks name, each once; and removing
//! a task (retention, a deletion, a settled reply) first rewrites the chunks that
//! reference it as chunks holding its messages ([`SledStore::unreference`]), so a
//! session never loses messages to a removal.
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
use crate::{ContextKey, Scope, SessionRecord, StoreError, TaskRecord, TaskStoreExt};
use a2ad_protocol::Message;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The first byte of a chunk that references its task's messages: a chunk is otherwise
/// JSON (`{`) or packed JSON ([`packed::LZ4`]).
const TASK_REF: u8 = 3;

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
    /// keys). `task` is the task the same step writes, if any: the chunk references its
    /// messages when it can ([`turn_in_task`]).
    pub(super) fn session_batch(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
        task: Option<&TaskRecord>,
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
            let len = u32::try_from(appended.len()).map_err(|_| StoreError::Corrupt("a turn of 4G messages".into()))?;
            let value = match task.and_then(|task| turn_in_task(session, appended, task)) {
                Some((from, task_id)) => encode_ref(from, task_id),
                None => packed::pack(serde_json::to_vec(&ChunkOut { session, messages: appended }).map_err(corrupt)?),
            };
            batch.insert(chunk_key(&context, first_new, len), value);
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
        let mut histories = TaskHistories::default();
        for entry in self.sessions.scan_prefix(chunk_prefix(&context)).rev() {
            if held >= history_limit && !newest {
                break;
            }
            let (key, value) = entry?;
            let (meta, messages) = match value.first() {
                Some(&TASK_REF) => self.referenced_turn(&session, &key, &value, &mut histories)?,
                _ => decode_chunk(&value)?,
            };
            if let Some(meta) = meta.filter(|m| newest && m.message_count > session.message_count) {
                session = meta;
            }
            newest = false;
            held += messages.len();
            newest_first.push(messages);
        }
        let mut history: crate::History = newest_first.into_iter().rev().flatten().collect();
        let excess = history.len().saturating_sub(history_limit);
        history.drain(..excess);
        session.history = std::sync::Arc::new(history);
        Ok(Some(session))
    }

    /// A referencing chunk's metadata (`meta`, the `m` record's, with the chunk's task
    /// and count) and messages, read from its task's history.
    ///
    /// A task no longer stored: a removal rewrites the chunks that reference a task before
    /// it removes it ([`SledStore::unreference`]), on the log's thread, while this read may
    /// run on an actor's. So the chunk is read again: a removal that ran since this read
    /// began has left it holding the messages. Still a reference, it is damage, and the
    /// turn reads as no messages.
    fn referenced_turn(
        &self,
        meta: &SessionRecord,
        key: &[u8],
        value: &[u8],
        histories: &mut TaskHistories,
    ) -> Result<(Option<SessionRecord>, Vec<Message>), StoreError> {
        let (first, count) = chunk_span(key)?;
        let (from, task_id) = decode_ref(value)?;
        let after = session_after(meta, task_id, first + count);
        if let Some(history) = histories.of(self, task_id, &meta.key)? {
            return Ok((Some(after), referenced(history, from, count, task_id)?.to_vec()));
        }
        match self.sessions.get(key)? {
            Some(again) if again.first() != Some(&TASK_REF) => decode_chunk(&again),
            _ => Ok((Some(after), Vec::new())),
        }
    }

    /// Adds to `batch` (for the `sessions` tree) the rewrite of every chunk that
    /// references `record`, the task a removal is about to remove, into a chunk that
    /// holds its messages: so removing a task (retention, a deletion, a settled reply)
    /// never takes messages out of a session, as before chunks referenced tasks. Scans
    /// the context's chunks (at most about the history limit's worth of turns).
    pub(super) fn unreference(&self, record: &TaskRecord, batch: &mut Writes) -> Result<(), StoreError> {
        if record.task.history.is_empty() {
            return Ok(());
        }
        let context = ContextKey::new(record.owner.clone(), record.task.context_id.clone()).storage_key();
        let mut referencing = Vec::new();
        for entry in self.sessions.scan_prefix(chunk_prefix(&context)) {
            let (key, value) = entry?;
            let reference = (value.first() == Some(&TASK_REF)).then(|| decode_ref(&value).ok()).flatten();
            if let Some((from, _)) = reference.filter(|(_, task_id)| *task_id == record.task.id) {
                referencing.push((key, from));
            }
        }
        let meta = match referencing.is_empty() {
            true => None,
            false => self.sessions.get(index::key(Prefix::SessionMeta, &context))?,
        };
        let Some(meta) = meta else { return Ok(()) };
        // Damage here is left as it is, with a warning: a removal that failed on it would
        // stay at the head of the log's queue and hold back every step behind it.
        let meta: SessionRecord = match serde_json::from_slice(&meta) {
            Ok(meta) => meta,
            Err(e) => {
                tracing::warn!(task = %record.task.id, "a damaged session record: {e}");
                return Ok(());
            }
        };
        for (key, from) in referencing {
            let (first, count) = chunk_span(&key)?;
            let session = session_after(&meta, &record.task.id, first + count);
            let messages = match referenced(&record.task.history, from, count, &record.task.id) {
                Ok(messages) => messages,
                Err(e) => {
                    tracing::warn!("{e}");
                    continue;
                }
            };
            let json = serde_json::to_vec(&ChunkOut { session: &session, messages }).map_err(corrupt)?;
            batch.insert(key, packed::pack(json));
        }
        Ok(())
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

/// Where a turn's `appended` messages are in the history of `task`, the task its step
/// writes: `(position, task id)` when the session names `task` as its latest and the
/// history ends with exactly those messages, so a chunk may reference them.
fn turn_in_task<'a>(session: &SessionRecord, appended: &[Message], task: &'a TaskRecord) -> Option<(u32, &'a str)> {
    let id = task.task.id.as_str();
    let same_context = session.key.owner == task.owner && session.key.context_id == task.task.context_id;
    if !same_context || session.last_task_id.as_deref() != Some(id) {
        return None;
    }
    let history = &task.task.history;
    let from = history.len().checked_sub(appended.len())?;
    (history[from..] == *appended).then_some((u32::try_from(from).ok()?, id))
}

/// A chunk that holds its messages: its metadata (none in a migrated chunk) and messages.
fn decode_chunk(value: &[u8]) -> Result<(Option<SessionRecord>, Vec<Message>), StoreError> {
    let json = packed::unpack(value, "session chunk")?;
    let chunk: ChunkIn =
        serde_json::from_slice(&json).map_err(|e| StoreError::Corrupt(format!("session chunk: {e}")))?;
    Ok((chunk.session, chunk.messages))
}

/// The session's metadata after a referencing chunk: the `m` record's, with the chunk's
/// task as the latest and the chunk's end as the message count.
fn session_after(meta: &SessionRecord, task_id: &str, message_count: u64) -> SessionRecord {
    SessionRecord { last_task_id: Some(task_id.to_owned()), message_count, history: Default::default(), ..meta.clone() }
}

/// The `count` messages from `from` of a task's history that a chunk references; fewer
/// is damage, never other messages.
fn referenced<'a>(history: &'a [Message], from: u32, count: u64, task_id: &str) -> Result<&'a [Message], StoreError> {
    let (from, count) = (from as usize, count as usize);
    history.get(from..from.saturating_add(count)).ok_or_else(|| {
        StoreError::Corrupt(format!("session chunk: task {task_id} has no messages {from}..{}", from + count))
    })
}

/// A referencing chunk's value: [`TASK_REF`] ‖ position (BE u32) ‖ task id.
fn encode_ref(from: u32, task_id: &str) -> Vec<u8> {
    let mut value = Vec::with_capacity(5 + task_id.len());
    value.push(TASK_REF);
    value.extend_from_slice(&from.to_be_bytes());
    value.extend_from_slice(task_id.as_bytes());
    value
}

/// The position and task id of a referencing chunk's value.
fn decode_ref(value: &[u8]) -> Result<(u32, &str), StoreError> {
    let corrupt = || StoreError::Corrupt("session chunk: a damaged task reference".into());
    let from = value.get(1..5).ok_or_else(corrupt)?;
    let task_id = std::str::from_utf8(&value[5..]).map_err(|_| corrupt())?;
    Ok((u32::from_be_bytes(from.try_into().map_err(|_| corrupt())?), task_id))
}

/// The histories of the tasks one session read's chunks reference, each read once (a
/// task that ran over several turns has a chunk for each).
#[derive(Default)]
struct TaskHistories(HashMap<String, Option<Vec<Message>>>);

impl TaskHistories {
    /// The history of `task_id`: none when it is no longer stored, or is not a task of
    /// `context` (damage: another context's messages are never read as this one's). Read
    /// in the context's owner's scope, the store's one check of who may read a task.
    fn of(&mut self, store: &SledStore, task_id: &str, context: &ContextKey) -> Result<Option<&[Message]>, StoreError> {
        if !self.0.contains_key(task_id) {
            let record = store.get_task(Scope::Owner(&context.owner), task_id)?;
            let record = record.filter(|r| r.task.context_id == context.context_id);
            self.0.insert(task_id.to_owned(), record.map(|r| r.task.history));
        }
        Ok(self.0.get(task_id).and_then(|history| history.as_deref()))
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
