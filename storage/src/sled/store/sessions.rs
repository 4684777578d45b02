//! A context's session in the `sessions` tree, one chunk key per turn, but for the turns
//! that their tasks hold.
//!
//! * `m` ‖ context → the [`SessionRecord`] metadata as JSON: written when the session's
//!   first messages are (it marks that the session exists, for retention and
//!   `a2ad admin`), and by a write that writes no chunk (no message, or a limit of 0). It
//!   may be older than the newest turn's metadata, which then wins (see
//!   [`SledStore::load_session`]).
//! * `H` ‖ context ‖ first sequence (BE u64) ‖ message count (BE u32) → one turn's
//!   appended messages, with the session's metadata as it stood after them:
//!   `{"session":…,"messages":[…]}`, packed when long (`sled/packed.rs`).
//! * A **held turn** has no key here: the step that ends it writes a task whose history
//!   ends with exactly the turn's messages, and the session names that task as its latest
//!   ([`turn_in_task`]): the usual turn that ends with a task, every echo turn among them.
//!   The task's value lists the turn ([`HeldTurn`]: its first message number, its count,
//!   where its messages start in the history), and the store's in-memory index keeps every
//!   context's held turns (`task_index.rs`), built from the task values at open. The
//!   metadata after a held turn is the `m` record's with that task as the latest and the
//!   turn's end as the message count (the fields a turn changes; the agent and the working
//!   directory are bound by the first turn, which also writes `m`).
//!
//! * `P` ‖ context → the first message number of the kept history (BE u64) when the
//!   session was last pruned.
//!
//! The history limit drops whole chunks by their keys' counts, and the held turns wholly
//! before it from the index; a chunk that straddles the limit stays, and reads cut it.
//! Both are dropped every few turns, not every turn ([`PRUNE_EVERY`]), which `P` records:
//! a task value still lists a turn that pruning dropped, and the index built at open leaves
//! out the turns before `P`. A read stops at the first turn wholly before the limit.
//!
//! Why held turns (issue 35): a chunk was a second copy of a turn's messages, beside the
//! task's history written in the same step. From 2026-12-06 08:50 a chunk could reference
//! the task instead of copying it, but a sled key costs 8–20 µs and ~1 KB written whatever
//! its value (sled splits a leaf every 8 right-edge inserts and rewrites its parent): that
//! one key was ~12 % of the durable node's CPU. Now a held turn costs 16 bytes in the task
//! value that the step writes anyway. What it costs: a session read (an evicted context
//! coming back) reads the tasks its turns name, each once; and removing a task (retention,
//! a deletion, a settled reply) first writes each turn it still holds as a chunk with its
//! messages ([`SledStore::unreference`]), so a session never loses messages to a removal.
//!
//! Why chunks: with one key per message and the metadata in its own key, a turn cost five
//! sled writes (the metadata, two messages, two removals past the limit), and sled's
//! per-key cost (a node clone per delta, a split every eight appended keys) was a third
//! of the node's CPU at 64 busy contexts (BENCHMARKS.md, issue 15). A chunk is one insert
//! and, at the limit, about one removal.
//!
//! Stores written before 2026-12-03 kept one key per message; opening one rewrites those
//! as one-message chunks without metadata (`migrations.rs`). Stores of formats 5 and 6
//! may hold chunks that reference their task ([`TASK_REF`]); the migration to format 7
//! writes the messages into them ([`resolve_task_references`]).

use super::index::{self, Prefix};
use super::task_index::{Indexed, TurnIn};
use super::task_value::HeldTurn;
use super::writes::Writes;
use super::{corrupt, SledStore};
use crate::model::context_storage_key;
use crate::sled::packed;
use crate::{ContextKey, Scope, SessionRecord, SessionWrite, StoreError, TaskRecord, TaskStoreExt};
use a2ad_protocol::Message;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The first byte of a chunk that references its task's messages, in stores of format 5 or 6
/// (a chunk is otherwise JSON, `{`, or packed JSON, [`packed::LZ4`]): ‖ position (BE u32)
/// ‖ task id. The migration to format 6 resolves them ([`resolve_task_references`]).
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

/// Whether a session write of `appended` messages, ending at message `count`, keeps them
/// (as a chunk, or as a turn its task holds): it appends some, and the limit is not 0.
fn keeps_turn(count: u64, appended: usize, history_limit: usize) -> bool {
    appended > 0 && count > count.saturating_sub(history_limit as u64)
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
    /// The turn that `task`, written by the same step as `write`, holds: when the turn
    /// appends messages within the history limit and they are the end of that task's
    /// history ([`turn_in_task`]). The step's task value then lists it, and the session
    /// writes no chunk for it.
    pub(crate) fn held_turn(write: &SessionWrite<'_>, task: &TaskRecord) -> Option<HeldTurn> {
        let (session, appended) = (write.session, write.appended);
        if !keeps_turn(session.message_count, appended.len(), write.history_limit) {
            return None;
        }
        let count = u32::try_from(appended.len()).ok()?;
        let first = session.message_count.checked_sub(u64::from(count))?;
        let from = turn_in_task(session, appended, task)?;
        Some(HeldTurn { first, count, from })
    }

    /// The writes of [`crate::SledStore::put_session`]: the turn's chunk (or the metadata,
    /// when nothing is appended), and, when [`prune_due`], the removal of the chunks wholly
    /// past the last `history_limit` messages (found by reading the context's oldest chunk
    /// keys). `held`: the step's task holds the turn ([`SledStore::held_turn`]), so there
    /// is no chunk to write. A due pruning drops the context's held turns past the limit
    /// from the index at once: reads cut them anyway.
    pub(super) fn session_batch(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
        held: bool,
    ) -> Result<Writes, StoreError> {
        let context = session.key.storage_key();
        let count = session.message_count;
        let first_new = count.saturating_sub(appended.len() as u64);
        let keep_from = count.saturating_sub(history_limit as u64);
        let mut batch = Writes::default();
        // No chunk (nothing appended, or a limit of 0): the metadata has no other home.
        let chunked = keeps_turn(count, appended.len(), history_limit);
        if !chunked || first_new == 0 {
            let meta = index::key(Prefix::SessionMeta, &context);
            batch.insert(meta, serde_json::to_vec(session).map_err(corrupt)?);
        }
        if chunked && !held {
            let len = u32::try_from(appended.len()).map_err(|_| StoreError::Corrupt("a turn of 4G messages".into()))?;
            let value = packed::pack(serde_json::to_vec(&ChunkOut { session, messages: appended }).map_err(corrupt)?);
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
        self.index.drop_turns_before(&context, keep_from);
        batch.insert(index::key(Prefix::PrunedTo, &context), &keep_from.to_be_bytes());
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

    /// The session of `key` with its last `history_limit` messages: its chunks and its
    /// held turns, newest first, down to the limit (a turn wholly before it is not read,
    /// even when a gap in the message numbers left fewer messages); the metadata is the
    /// newest of the `m` record and the newest turn's (by message count).
    pub(super) fn load_session(
        &self,
        key: &ContextKey,
        history_limit: usize,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let context = key.storage_key();
        let Some(bytes) = self.sessions.get(index::key(Prefix::SessionMeta, &context))? else {
            return Ok(None);
        };
        let meta: SessionRecord =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt(format!("session record: {e}")))?;
        let mut turns = NewestFirst {
            chunks: self.sessions.scan_prefix(chunk_prefix(&context)).rev(),
            next_chunk: None,
            held: self.index.turns_of(&context),
        };
        let mut session = meta.clone();
        let mut newest_first: Vec<Vec<Message>> = Vec::new();
        let mut keep_from = None;
        let mut histories = TaskHistories::default();
        while let Some(turn) = turns.next()? {
            if keep_from.is_some_and(|keep_from| turn.end() <= keep_from) {
                break;
            }
            let (after, messages) = match turn {
                Turn::Chunk { value, .. } => decode_chunk(&value)?,
                Turn::Held(first, turn) => self.read_held_turn(&meta, &context, first, &turn, &mut histories)?,
            };
            if let Some(after) =
                after.filter(|after| keep_from.is_none() && after.message_count > session.message_count)
            {
                session = after;
            }
            keep_from.get_or_insert(session.message_count.saturating_sub(history_limit as u64));
            newest_first.push(messages);
        }
        let mut history: crate::History = newest_first.into_iter().rev().flatten().collect();
        let excess = history.len().saturating_sub(history_limit);
        history.drain(..excess);
        session.history = std::sync::Arc::new(history);
        Ok(Some(session))
    }

    /// A held turn's metadata (`meta`, the `m` record's, with the turn's task and end)
    /// and messages, read from its task's history.
    ///
    /// A task no longer stored: a removal writes the turns a task holds as chunks before
    /// it removes it ([`SledStore::unreference`]), on the log's thread, while this read may
    /// run on an actor's. So the turn's chunk is read: a removal that ran since this read
    /// took the held turns has written it. Without one, the task is lost (damage), and the
    /// turn reads as no messages.
    fn read_held_turn(
        &self,
        meta: &SessionRecord,
        context: &[u8],
        first: u64,
        turn: &TurnIn,
        histories: &mut TaskHistories,
    ) -> Result<(Option<SessionRecord>, Vec<Message>), StoreError> {
        let count = u64::from(turn.count);
        let after = session_after(meta, &turn.task_id, first + count);
        if let Some(history) = histories.of(self, &turn.task_id, &meta.key)? {
            return Ok((Some(after), referenced(history, turn.from, count, &turn.task_id)?.to_vec()));
        }
        match self.sessions.get(chunk_key(context, first, turn.count))? {
            Some(chunk) => decode_chunk(&chunk),
            None => Ok((Some(after), Vec::new())),
        }
    }

    /// Adds to `batch` (for the `sessions` tree) a chunk holding the messages of each turn
    /// that `record`, the task a removal is about to remove, still holds (`turns` are those
    /// its value lists; the pruned ones are past the history limit): so removing a task
    /// (retention, a deletion, a settled reply) never takes messages out of a session.
    pub(super) fn unreference(
        &self,
        task: &Indexed<'_>,
        record: &TaskRecord,
        turns: &[HeldTurn],
        batch: &mut Writes,
    ) -> Result<(), StoreError> {
        let held = self.index.still_held(task, turns);
        if held.is_empty() {
            return Ok(());
        }
        let context = context_storage_key(&record.owner, &record.task.context_id);
        let Some(meta) = self.sessions.get(index::key(Prefix::SessionMeta, &context))? else { return Ok(()) };
        // Damage here is left as it is, with a warning: a removal that failed on it would
        // stay at the head of the log's queue and hold back every step behind it.
        let meta: SessionRecord = match serde_json::from_slice(&meta) {
            Ok(meta) => meta,
            Err(e) => {
                tracing::warn!(task = %record.task.id, "a damaged session record: {e}");
                return Ok(());
            }
        };
        for turn in held {
            let session = session_after(&meta, &record.task.id, turn.first + u64::from(turn.count));
            match referenced(&record.task.history, turn.from, u64::from(turn.count), &record.task.id) {
                Ok(messages) => {
                    let json = serde_json::to_vec(&ChunkOut { session: &session, messages }).map_err(corrupt)?;
                    batch.insert(chunk_key(&context, turn.first, turn.count), packed::pack(json));
                }
                Err(e) => tracing::warn!("{e}"),
            }
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

    /// How many messages the stored chunks (read off their keys) and the held turns hold.
    pub(super) fn count_session_messages(&self) -> Result<u64, StoreError> {
        let mut messages = self.index.held_messages();
        for entry in self.sessions.scan_prefix([Prefix::SessionChunk as u8]) {
            messages += chunk_span(&entry?.0)?.1;
        }
        Ok(messages)
    }
}

/// One turn of a session read: a chunk's value, or a held turn.
enum Turn {
    Chunk { end: u64, value: sled::IVec },
    Held(u64, TurnIn),
}

impl Turn {
    /// The number after its last message.
    fn end(&self) -> u64 {
        match self {
            Turn::Chunk { end, .. } => *end,
            Turn::Held(first, turn) => first + u64::from(turn.count),
        }
    }
}

/// A context's chunks and held turns merged, newest first. A turn both held and written
/// as a chunk (a removal ran between the two reads) is the chunk.
struct NewestFirst<I> {
    chunks: I,
    /// The newest chunk not yet taken: its first message number, its end and its value.
    next_chunk: Option<(u64, u64, sled::IVec)>,
    /// Oldest first, taken from the end.
    held: Vec<(u64, TurnIn)>,
}

impl<I: Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>> NewestFirst<I> {
    fn next(&mut self) -> Result<Option<Turn>, StoreError> {
        if self.next_chunk.is_none() {
            if let Some(entry) = self.chunks.next() {
                let (key, value) = entry?;
                let (first, count) = chunk_span(&key)?;
                self.next_chunk = Some((first, first + count, value));
            }
        }
        let chunk_first = self.next_chunk.as_ref().map(|(first, _, _)| *first);
        let newest_held = self.held.last().map(|(first, _)| *first);
        let take_chunk = match (chunk_first, newest_held) {
            (None, None) => return Ok(None),
            (Some(chunk), Some(held)) => chunk >= held,
            (chunk, _) => chunk.is_some(),
        };
        if !take_chunk {
            return Ok(self.held.pop().map(|(first, turn)| Turn::Held(first, turn)));
        }
        if chunk_first == newest_held {
            self.held.pop();
        }
        Ok(self.next_chunk.take().map(|(_, end, value)| Turn::Chunk { end, value }))
    }
}

/// 6 → 7 (`migrations.rs`): each chunk that references its task's messages ([`TASK_REF`])
/// is rewritten holding them, with the metadata a read derived for it; one whose task is
/// gone, damaged or of another context read as no messages, and is removed. 1,000 a batch.
pub(super) fn resolve_task_references(tasks: &sled::Tree, sessions: &sled::Tree) -> Result<(), StoreError> {
    let mut from: Vec<u8> = vec![Prefix::SessionChunk as u8];
    loop {
        let mut batch = sled::Batch::default();
        let mut last = None;
        for entry in sessions.range(from.clone()..).take(1000) {
            let (key, value) = entry?;
            if key.first() != Some(&(Prefix::SessionChunk as u8)) {
                break;
            }
            if value.first() == Some(&TASK_REF) {
                match resolved(tasks, sessions, &key, &value)? {
                    Some(chunk) => batch.insert(key.clone(), chunk),
                    None => batch.remove(key.clone()),
                }
            }
            last = Some(key);
        }
        let Some(last) = last else { return Ok(()) };
        sessions.apply_batch(batch)?;
        from = last.to_vec();
        from.push(0);
    }
}

/// A referencing chunk as a chunk holding its messages; `None` when it cannot be.
fn resolved(
    tasks: &sled::Tree,
    sessions: &sled::Tree,
    key: &[u8],
    value: &[u8],
) -> Result<Option<Vec<u8>>, StoreError> {
    let (first, count) = chunk_span(key)?;
    let context = &key[1..key.len() - 12];
    let Ok((from, task_id)) = decode_ref(value) else { return Ok(None) };
    let Some(task) = tasks.get(index::key(Prefix::Task, task_id.as_bytes()))? else { return Ok(None) };
    let Some(meta) = sessions.get(index::key(Prefix::SessionMeta, context))? else { return Ok(None) };
    let (Ok(record), Ok(meta)) = (SledStore::decode_task(&task), serde_json::from_slice::<SessionRecord>(&meta)) else {
        return Ok(None);
    };
    if context_storage_key(&record.owner, &record.task.context_id) != context {
        return Ok(None);
    }
    let Ok(messages) = referenced(&record.task.history, from, count, task_id) else { return Ok(None) };
    let session = session_after(&meta, task_id, first + count);
    Ok(Some(packed::pack(serde_json::to_vec(&ChunkOut { session: &session, messages }).map_err(corrupt)?)))
}

/// Where a turn's `appended` messages are in the history of `task`, the task its step
/// writes: their position, when the session names `task` as its latest and the history
/// ends with exactly those messages, so the task holds the turn.
fn turn_in_task(session: &SessionRecord, appended: &[Message], task: &TaskRecord) -> Option<u32> {
    let id = task.task.id.as_str();
    let same_context = session.key.owner == task.owner && session.key.context_id == task.task.context_id;
    if !same_context || session.last_task_id.as_deref() != Some(id) {
        return None;
    }
    let history = &task.task.history;
    let from = history.len().checked_sub(appended.len())?;
    (history[from..] == *appended).then_some(u32::try_from(from).ok()?)
}

/// A chunk that holds its messages: its metadata (none in a migrated chunk) and messages.
fn decode_chunk(value: &[u8]) -> Result<(Option<SessionRecord>, Vec<Message>), StoreError> {
    let json = packed::unpack(value, "session chunk")?;
    let chunk: ChunkIn =
        serde_json::from_slice(&json).map_err(|e| StoreError::Corrupt(format!("session chunk: {e}")))?;
    Ok((chunk.session, chunk.messages))
}

/// The session's metadata after a held turn: the `m` record's, with the turn's task as the
/// latest and the turn's end as the message count.
fn session_after(meta: &SessionRecord, task_id: &str, message_count: u64) -> SessionRecord {
    SessionRecord { last_task_id: Some(task_id.to_owned()), message_count, history: Default::default(), ..meta.clone() }
}

/// The `count` messages from `from` of a task's history that a turn names; fewer is
/// damage, never other messages.
fn referenced<'a>(history: &'a [Message], from: u32, count: u64, task_id: &str) -> Result<&'a [Message], StoreError> {
    let (from, count) = (from as usize, count as usize);
    history.get(from..from.saturating_add(count)).ok_or_else(|| {
        StoreError::Corrupt(format!("session chunk: task {task_id} has no messages {from}..{}", from + count))
    })
}

/// The position and task id of a referencing chunk's value.
fn decode_ref(value: &[u8]) -> Result<(u32, &str), StoreError> {
    let corrupt = || StoreError::Corrupt("session chunk: a damaged task reference".into());
    let from = value.get(1..5).ok_or_else(corrupt)?;
    let task_id = std::str::from_utf8(&value[5..]).map_err(|_| corrupt())?;
    Ok((u32::from_be_bytes(from.try_into().map_err(|_| corrupt())?), task_id))
}

/// The histories of the tasks one session read's held turns name, each read once (a task
/// that ran over several turns holds each).
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
