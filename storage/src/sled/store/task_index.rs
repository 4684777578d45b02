//! The sled store's task indexes and counters: held in memory, built from the task values
//! when the store opens, never written to sled.
//!
//! Why in memory (issue 35): each key a step inserts into sled costs 8–20 µs and 0.6–1.5 KB
//! written, whatever its value, because sled 0.34 splits a leaf every 8 right-edge inserts
//! and rewrites the parent index node whole. With an entry in a by-time and a by-context
//! index, an echo turn inserted three tree keys beside its task value, and the durable node
//! spent ~20 µs of its ~93 a request on the two index entries (BENCHMARKS.md, issue 35).
//!
//! Nothing here is a fact of its own: every task value starts with its stamp (status time,
//! state), and its record names its owner, id and context. So [`TaskIndex::build`] makes
//! the whole index from one scan of the `t` keys, and each write and removal of a task
//! keeps it in step under one lock. A crash loses nothing: the next open builds it again
//! from the values, and the write-ahead log's replay, which runs after, moves it as the
//! live writes did. The same goes
//! for the counters behind `totalSize` (per owner, per owner and state, per owner and
//! context), which used to be sled keys written back at each flush, and for the session
//! turns that task values hold ([`HeldTurn`], `sessions.rs`), which used to be a sled key
//! each.
//!
//! The price: memory and start-up time in proportion to the tasks stored, one read of
//! every task value at open (docs/operating.md, "Start-up time and memory", has the
//! figures).

use super::index::{self, decode_owner, Prefix, Stamp};
use super::task_value::{self, HeldTurn};
use crate::model::{context_storage_key, push_segment};
use crate::{Cursor, Owner, StoreError, TaskEntry, TaskQuery, TaskRecord};
use a2ad_protocol::TaskState;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// What the index knows of one task.
#[derive(Debug, Clone, Copy)]
pub(super) struct Indexed<'a> {
    pub owner: &'a Owner,
    pub context_id: &'a str,
    pub task_id: &'a str,
    pub stamp: Stamp,
}

impl<'a> Indexed<'a> {
    /// `record` as stored under `stamp`.
    pub fn of(record: &'a TaskRecord, stamp: Stamp) -> Self {
        Indexed { owner: &record.owner, context_id: &record.task.context_id, task_id: &record.task.id, stamp }
    }
}

/// The task indexes and counters of a sled store (see the module docs).
#[derive(Default)]
pub(super) struct TaskIndex(RwLock<Entries>);

#[derive(Default)]
struct Entries {
    /// owner ‖ status ms (BE) ‖ task id → state: an owner's tasks in `ListTasks` order.
    by_time: BTreeMap<Box<[u8]>, u8>,
    /// owner ‖ context id ‖ status ms ‖ task id → state: the same, for one context.
    by_context: BTreeMap<Box<[u8]>, u8>,
    /// The tasks in a state that start-up recovery resumes or fails.
    active: HashSet<Box<str>>,
    /// [`counter_key`] → tasks; a counter at 0 is removed.
    counts: HashMap<Box<[u8]>, u64>,
    /// Context (its storage key) → the session turns that its tasks hold, by the number of
    /// each turn's first message. A context's turns wholly before its kept history are
    /// dropped when its session is pruned, and at open (`sessions.rs`).
    turns: HashMap<Box<[u8]>, BTreeMap<u64, TurnIn>>,
}

/// A session turn that a task holds, as the index keeps it (see [`HeldTurn`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TurnIn {
    pub count: u32,
    pub from: u32,
    pub task_id: Arc<str>,
}

/// One page of ids, newest first, and where the next page starts.
pub(super) struct Page {
    pub ids: Vec<String>,
    pub next_cursor: Option<Cursor>,
}

/// How many entries a visit copies out per hold of the lock.
const VISIT_BATCH: usize = 1024;

impl TaskIndex {
    /// The index of every task in `tasks`, with the turns they hold but those before their
    /// session's last pruning (its `P` key in `sessions`). A value that cannot be read is
    /// left out, with a warning: reading that task answers that it is corrupt, as before.
    pub fn build(tasks: &sled::Tree, sessions: &sled::Tree) -> Result<TaskIndex, StoreError> {
        let mut entries = Entries::default();
        let mut unreadable = 0u64;
        for entry in tasks.scan_prefix([Prefix::Task as u8]) {
            let (_, value) = entry?;
            match indexed_fields(&value) {
                Some((stamp, fields, turns)) => {
                    let (owner, task) = (&fields.owner, &fields.task);
                    let indexed = Indexed { owner, context_id: &task.context_id, task_id: &task.id, stamp };
                    entries.put(&indexed, None);
                    entries.hold_turns(&indexed, &turns);
                }
                None => unreadable += 1,
            }
        }
        if unreadable > 0 {
            tracing::warn!(unreadable, "task values that could not be read are left out of ListTasks");
        }
        let index = TaskIndex(RwLock::new(entries));
        let contexts: Vec<Box<[u8]>> = index.read().turns.keys().cloned().collect();
        for context in contexts {
            let pruned_to = sessions.get(index::key(Prefix::PrunedTo, &context))?;
            if let Some(keep_from) = pruned_to.and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok()) {
                index.drop_turns_before(&context, u64::from_be_bytes(keep_from));
            }
        }
        Ok(index)
    }

    fn read(&self) -> RwLockReadGuard<'_, Entries> {
        // A writer that panicked left whole entries: each change is made under the lock.
        self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Entries> {
        self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A task written under `task.stamp`, which was stored under `old` before (`None`: a
    /// new task), and holding `turn` from now on if its step holds one. Even under the same
    /// stamp the entries are looked up, since a value that was unreadable at open has none
    /// yet.
    pub fn put(&self, task: &Indexed<'_>, old: Option<Stamp>, turn: Option<HeldTurn>) {
        let mut entries = self.write();
        entries.put(task, old);
        entries.hold_turns(task, turn.as_slice());
    }

    /// A task removed, which was stored under `task.stamp` holding `turns`.
    pub fn remove(&self, task: &Indexed<'_>, turns: &[HeldTurn]) {
        let mut entries = self.write();
        entries.remove(task);
        entries.release_turns(task, turns);
    }

    /// A session turn that `task` holds from now on (tests: a write holds its turn through
    /// [`TaskIndex::put`]).
    #[cfg(test)]
    pub fn hold_turn(&self, task: &Indexed<'_>, turn: HeldTurn) {
        self.write().hold_turns(task, &[turn]);
    }

    /// The turns the tasks of `context` (its storage key) hold, oldest first.
    pub fn turns_of(&self, context: &[u8]) -> Vec<(u64, TurnIn)> {
        let entries = self.read();
        let turns = entries.turns.get(context).into_iter().flatten();
        turns.map(|(first, turn)| (*first, turn.clone())).collect()
    }

    /// Which of `turns`, the turns `task` holds, the index still has (those a pruning has
    /// not dropped).
    pub fn still_held(&self, task: &Indexed<'_>, turns: &[HeldTurn]) -> Vec<HeldTurn> {
        let entries = self.read();
        let Some(held) = entries.turns.get(&context_of(task)[..]) else { return Vec::new() };
        turns.iter().filter(|turn| holds(held, turn, task)).copied().collect()
    }

    /// Drops the turns of `context` that end at or before message `keep_from`: the start of
    /// its kept history.
    pub fn drop_turns_before(&self, context: &[u8], keep_from: u64) {
        let mut entries = self.write();
        let Some(turns) = entries.turns.get_mut(context) else { return };
        while let Some(oldest) = turns.first_entry() {
            if oldest.key() + u64::from(oldest.get().count) > keep_from {
                break;
            }
            oldest.remove();
        }
        if turns.is_empty() {
            entries.turns.remove(context);
        }
    }

    /// How many messages the held turns hold, all contexts together.
    pub fn held_messages(&self) -> u64 {
        self.read().turns.values().flat_map(|turns| turns.values()).map(|turn| u64::from(turn.count)).sum()
    }

    /// The ids of the tasks in an active state (start-up recovery).
    pub fn active_ids(&self) -> Vec<String> {
        self.read().active.iter().map(|id| id.to_string()).collect()
    }

    /// Whether `owner` has a task in `context_id`.
    pub fn has_tasks_in(&self, owner: &Owner, context_id: &str) -> bool {
        self.read().counts.contains_key(&counter_key(owner, Counter::Context(context_id))[..])
    }

    /// The page after the query's cursor: a reverse range scan that starts right after the
    /// cursor (a seek, not a walk from the newest) and stops once the page is full and one
    /// more match shows there is a next page.
    pub fn page(&self, query: &TaskQuery) -> Page {
        let entries = self.read();
        let (map, prefix) = entries.scope(query);
        let end = match &query.cursor {
            Some(cursor) => {
                let mut end = prefix.clone();
                push_time_and_id(&mut end, cursor.ts, &cursor.id);
                end
            }
            None => prefix_end(&prefix),
        };
        let mut out = Page { ids: Vec::new(), next_cursor: None };
        let mut last_in_page: Option<Cursor> = None;
        for (key, state) in map.range::<[u8], _>((Bound::Included(&prefix[..]), Bound::Excluded(&end[..]))).rev() {
            let position = match judge(&key[prefix.len()..], *state, query) {
                Judged::Matches(position) => position,
                Judged::Filtered => continue,
                Judged::TooOld => break,
            };
            if out.ids.len() == query.page_size {
                out.next_cursor = last_in_page;
                break;
            }
            out.ids.push(position.id.clone());
            last_in_page = Some(position);
        }
        out
    }

    /// How many tasks match the query's filters, cursor aside: a counter's value when one
    /// answers it, else a count of the scope's entries (a status-time bound stops it early;
    /// a context and a state together walk one context).
    pub fn total(&self, query: &TaskQuery) -> usize {
        let entries = self.read();
        if let Some(counter) = counter_for(query) {
            return entries.counts.get(&counter[..]).map_or(0, |n| usize::try_from(*n).unwrap_or(usize::MAX));
        }
        let (map, prefix) = entries.scope(query);
        let mut total = 0;
        let end = prefix_end(&prefix);
        for (key, state) in map.range::<[u8], _>((Bound::Included(&prefix[..]), Bound::Excluded(&end[..]))).rev() {
            match judge(&key[prefix.len()..], *state, query) {
                Judged::Matches(_) => total += 1,
                Judged::Filtered => {}
                Judged::TooOld => break,
            }
        }
        total
    }

    /// Visits every task (owner, id, status time, state), owner by owner, oldest first.
    /// The lock is held only while a batch is copied out, so `visit` may write the store.
    pub fn visit(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        let mut after: Option<Box<[u8]>> = None;
        loop {
            let batch: Vec<(Box<[u8]>, u8)> = {
                let entries = self.read();
                let from = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                let range = entries.by_time.range::<[u8], _>((from, Bound::Unbounded));
                range.take(VISIT_BATCH).map(|(key, state)| (key.clone(), *state)).collect()
            };
            let Some((last, _)) = batch.last() else { return Ok(()) };
            after = Some(last.clone());
            for (key, state) in &batch {
                visit(time_entry(key, *state)?);
            }
        }
    }
}

impl Entries {
    fn put(&mut self, task: &Indexed<'_>, old: Option<Stamp>) {
        let state = task.stamp.state;
        // A stored value that was unreadable at open has no entries: it counts as new.
        let replaced = old.filter(|old| self.by_time.remove(&time_key(task, old.millis)[..]).is_some());
        match replaced {
            Some(old) => {
                self.by_context.remove(&context_key(task, old.millis)[..]);
                if old.state != state {
                    self.count(counter_key(task.owner, Counter::State(old.state)), false);
                    self.count(counter_key(task.owner, Counter::State(state)), true);
                }
            }
            None => {
                self.count(counter_key(task.owner, Counter::Owner), true);
                self.count(counter_key(task.owner, Counter::State(state)), true);
                self.count(counter_key(task.owner, Counter::Context(task.context_id)), true);
            }
        }
        self.by_time.insert(time_key(task, task.stamp.millis).into(), state);
        self.by_context.insert(context_key(task, task.stamp.millis).into(), state);
        if is_active(state) {
            self.active.insert(task.task_id.into());
        } else {
            self.active.remove(task.task_id);
        }
    }

    fn remove(&mut self, task: &Indexed<'_>) {
        let millis = task.stamp.millis;
        if self.by_time.remove(&time_key(task, millis)[..]).is_none() {
            return;
        }
        self.by_context.remove(&context_key(task, millis)[..]);
        self.active.remove(task.task_id);
        self.count(counter_key(task.owner, Counter::Owner), false);
        self.count(counter_key(task.owner, Counter::State(task.stamp.state)), false);
        self.count(counter_key(task.owner, Counter::Context(task.context_id)), false);
    }

    fn hold_turns(&mut self, task: &Indexed<'_>, turns: &[HeldTurn]) {
        if turns.is_empty() {
            return;
        }
        let held = self.turns.entry(context_of(task).into()).or_default();
        let task_id: Arc<str> = task.task_id.into();
        for turn in turns {
            held.insert(turn.first, TurnIn { count: turn.count, from: turn.from, task_id: Arc::clone(&task_id) });
        }
    }

    /// Drops the turns of `turns` that the index has for `task` ([`holds`]).
    fn release_turns(&mut self, task: &Indexed<'_>, turns: &[HeldTurn]) {
        let context = context_of(task);
        let Some(held) = self.turns.get_mut(&context[..]) else { return };
        for turn in turns {
            if holds(held, turn, task) {
                held.remove(&turn.first);
            }
        }
        if held.is_empty() {
            self.turns.remove(&context[..]);
        }
    }

    /// One more (`up`) or one fewer task under `key`.
    fn count(&mut self, key: Vec<u8>, up: bool) {
        if up {
            *self.counts.entry(key.into()).or_default() += 1;
        } else if let Some(n) = self.counts.get_mut(&key[..]) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.counts.remove(&key[..]);
            }
        }
    }

    /// The index a query reads, and the prefix of its entries there.
    fn scope(&self, query: &TaskQuery) -> (&BTreeMap<Box<[u8]>, u8>, Vec<u8>) {
        let mut prefix = query.owner.key_prefix();
        match &query.context_id {
            Some(context) => {
                push_segment(&mut prefix, context);
                (&self.by_context, prefix)
            }
            None => (&self.by_time, prefix),
        }
    }
}

/// Whether the index has `turn` as `task`'s (not another task's, which a later turn at the
/// same number would be).
fn holds(held: &BTreeMap<u64, TurnIn>, turn: &HeldTurn, task: &Indexed<'_>) -> bool {
    held.get(&turn.first).is_some_and(|t| *t.task_id == *task.task_id)
}

fn is_active(state: u8) -> bool {
    TaskState::from_number(i64::from(state)).is_some_and(|state| state.is_active())
}

/// The fields of a stored record that the index needs, decoded without the rest.
#[derive(serde::Deserialize)]
struct IndexedFields {
    owner: Owner,
    task: IndexedTask,
}

#[derive(serde::Deserialize)]
struct IndexedTask {
    id: String,
    #[serde(rename = "contextId", alias = "context_id")]
    context_id: String,
}

fn indexed_fields(value: &[u8]) -> Option<(Stamp, IndexedFields, Vec<HeldTurn>)> {
    let parsed = task_value::parse(value).ok()?;
    let fields: IndexedFields = serde_json::from_slice(parsed.record_json()).ok()?;
    let stamp = Stamp::decode(value)?;
    Some((stamp, fields, parsed.turns().to_vec()))
}

/// The task's context's storage key ([`crate::ContextKey`]), which the by-context entries
/// start with and the held turns are kept under.
fn context_of(task: &Indexed<'_>) -> Vec<u8> {
    context_storage_key(task.owner, task.context_id)
}

/// One counter of an owner.
#[derive(Debug, Clone, Copy)]
enum Counter<'a> {
    Owner,
    State(u8),
    Context(&'a str),
}

/// owner ‖ kind ‖ …
fn counter_key(owner: &Owner, counter: Counter<'_>) -> Vec<u8> {
    let mut key = owner.key_prefix();
    match counter {
        Counter::Owner => key.push(b'*'),
        Counter::State(state) => key.extend_from_slice(&[b's', state]),
        Counter::Context(context) => {
            key.push(b'c');
            push_segment(&mut key, context);
        }
    }
    key
}

/// The counter that answers `query`'s total, if one does.
fn counter_for(query: &TaskQuery) -> Option<Vec<u8>> {
    if query.status_after_millis.is_some() {
        return None;
    }
    let counter = match (&query.context_id, query.state) {
        (None, None) => Counter::Owner,
        (None, Some(state)) => Counter::State(u8::try_from(state.number()).ok()?),
        (Some(context), None) => Counter::Context(context),
        (Some(_), Some(_)) => return None,
    };
    Some(counter_key(&query.owner, counter))
}

fn time_key(task: &Indexed<'_>, millis: i64) -> Vec<u8> {
    let mut key = task.owner.key_prefix();
    push_time_and_id(&mut key, millis, task.task_id);
    key
}

fn context_key(task: &Indexed<'_>, millis: i64) -> Vec<u8> {
    let mut key = context_of(task);
    push_time_and_id(&mut key, millis, task.task_id);
    key
}

fn push_time_and_id(key: &mut Vec<u8>, millis: i64, id: &str) {
    // Timestamps before 1970 do not occur; clamping keeps the big-endian order total.
    key.extend_from_slice(&u64::try_from(millis).unwrap_or(0).to_be_bytes());
    key.extend_from_slice(id.as_bytes());
}

/// What the filters make of one index entry.
enum Judged {
    Matches(Cursor),
    /// Another state than the one asked for.
    Filtered,
    /// Older than the status-time bound: in descending order, so is everything after it.
    TooOld,
}

/// `time_and_id` is an entry's key after its scope's prefix.
fn judge(time_and_id: &[u8], state: u8, query: &TaskQuery) -> Judged {
    let (millis, id) = split_time_and_id(time_and_id);
    if query.status_after_millis.is_some_and(|after| millis < after) {
        return Judged::TooOld;
    }
    if query.state.is_some_and(|wanted| TaskState::from_number(i64::from(state)) != Some(wanted)) {
        return Judged::Filtered;
    }
    Judged::Matches(Cursor { ts: millis, id })
}

/// An entry's status time and task id (the index writes both, so they are whole).
fn split_time_and_id(rest: &[u8]) -> (i64, String) {
    let (ts, id) = rest.split_at(rest.len().min(8));
    let millis = ts.try_into().map(u64::from_be_bytes).unwrap_or(0);
    (i64::try_from(millis).unwrap_or(i64::MAX), String::from_utf8_lossy(id).into_owned())
}

/// A by-time entry as a visit reports it.
fn time_entry(key: &[u8], state: u8) -> Result<TaskEntry, StoreError> {
    let (owner, rest) = decode_owner(key)?;
    let (status_millis, task_id) = split_time_and_id(rest);
    let state = TaskState::from_number(i64::from(state))
        .ok_or_else(|| StoreError::Corrupt("a task value's stamp names no state".into()))?;
    Ok(TaskEntry { owner, task_id, status_millis, state })
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
