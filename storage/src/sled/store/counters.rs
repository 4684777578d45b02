//! Task counters, so that `ListTasks` answers `totalSize` without scanning an owner's
//! index: per owner, per owner and state, per owner and context.
//!
//! Keys in the `tasks` tree (`n` ‖ owner ‖ kind ‖ …, value: u64 BE):
//! * `n` ‖ owner ‖ `*` → the owner's tasks;
//! * `n` ‖ owner ‖ `s` ‖ state number → the owner's tasks in that state;
//! * `n` ‖ owner ‖ `c` ‖ context id → the owner's tasks in that context.
//!
//! A counter that drops to 0 is removed. Without a log in front, counters change in the
//! same batch as the index entries they count ([`SledStore::commit`](crate::TaskStore::commit),
//! [`SledStore::delete_task`](crate::TaskStore::delete_task)). Several contexts of one
//! owner write at once, each from its own actor, so the read-modify-write of an owner's
//! counters holds that owner's stripe lock until the batch is applied.
//!
//! Behind the write-ahead log, counters are *held*: the changed values live in memory
//! ([`Counters::read`] answers from there first) and go to the tree in one batch when the
//! store is flushed ([`Counters::write_back`], before the checkpoint's `fsync`s). Every
//! write moved three or four counters that every other write of the owner moved too (the
//! owner's, its state's): read and rewritten per request, they were a quarter of the
//! store's keys. A crash loses held values, which is harmless: the log then has records
//! after its checkpoint, and their replay ends by rebuilding every counter from the
//! indexes ([`crate::SledStore::after_replay`]); with no record after the checkpoint,
//! nothing was applied since the flush that wrote them back.
//!
//! A store written before counters existed gets them built from the indexes at open
//! (`migrations.rs`). Filters that no counter answers (a status-time bound, or a context and a state
//! together) keep counting by scan; both are narrow scans (the first stops at the bound,
//! the second walks one context).

use super::index::{self, Prefix, Stamp};
use crate::model::push_segment;
use crate::{Owner, StoreError, TaskQuery, TaskRecord};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

/// How many locks the owners are spread over.
const STRIPES: usize = 16;

/// One counter of an owner.
#[derive(Debug, Clone, Copy)]
pub(super) enum Counter<'a> {
    Owner,
    State(u8),
    Context(&'a str),
}

/// `n` ‖ owner ‖ kind ‖ …
pub(super) fn counter_key(owner: &Owner, counter: Counter<'_>) -> Vec<u8> {
    let mut key = index::key(Prefix::Counter, &owner.key_prefix());
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

fn decode(value: &[u8]) -> u64 {
    value.try_into().map(u64::from_be_bytes).unwrap_or(0)
}

/// The store's counters: the stripe locks that order an owner's updates, and, behind
/// the log, the values changed since the last flush (see the module docs).
pub(super) struct Counters {
    stripes: [Mutex<()>; STRIPES],
    /// Counter key → current value, for the counters changed since the last write-back;
    /// `None` without a log (counters go in each write's batch).
    held: Option<Mutex<HashMap<Vec<u8>, u64>>>,
}

impl Counters {
    /// Counters written with each batch, or held until the flush (`behind_log`).
    pub fn new(behind_log: bool) -> Self {
        Counters { stripes: std::array::from_fn(|_| Mutex::new(())), held: behind_log.then(Default::default) }
    }

    /// The owner's stripe; held until the batch with its counter changes is applied.
    pub fn lock(&self, owner: &Owner) -> MutexGuard<'_, ()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        owner.hash(&mut hasher);
        let stripe = usize::try_from(hasher.finish() % STRIPES as u64).unwrap_or(0);
        self.stripes[stripe].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn held(&self) -> Option<MutexGuard<'_, HashMap<Vec<u8>, u64>>> {
        self.held.as_ref().map(|held| held.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Without a log, adds each (counter key, delta) to `batch`, reading the current
    /// values from `tree` (the caller holds the owner's stripe lock until the batch is
    /// applied). Behind the log it does nothing: [`Counters::hold`] follows the write.
    pub fn add_to_batch(
        &self,
        tree: &sled::Tree,
        batch: &mut super::writes::Writes,
        deltas: &[(Vec<u8>, i64)],
    ) -> Result<(), StoreError> {
        if self.held.is_some() {
            return Ok(());
        }
        for (key, delta) in deltas {
            let current = tree.get(key)?.map_or(0, |v| decode(&v));
            let next = current.saturating_add_signed(*delta);
            if next == 0 {
                batch.remove(key.as_slice());
            } else {
                batch.insert(key.as_slice(), &next.to_be_bytes());
            }
        }
        Ok(())
    }

    /// Behind the log, applies each (counter key, delta) to the held values, once the
    /// write they count is applied (a write that fails, and is applied again, moves no
    /// counter twice). Without a log it does nothing ([`Counters::add_to_batch`] did it).
    pub fn hold(&self, tree: &sled::Tree, deltas: &[(Vec<u8>, i64)]) -> Result<(), StoreError> {
        let Some(mut held) = self.held() else { return Ok(()) };
        for (key, delta) in deltas {
            let current = match held.get(key) {
                Some(value) => *value,
                None => tree.get(key)?.map_or(0, |v| decode(&v)),
            };
            held.insert(key.clone(), current.saturating_add_signed(*delta));
        }
        Ok(())
    }

    /// Reads a counter (0 when absent): the held value, else the stored one.
    pub fn read(&self, tree: &sled::Tree, key: &[u8]) -> Result<usize, StoreError> {
        let value = match self.held().and_then(|held| held.get(key).copied()) {
            Some(value) => value,
            None => tree.get(key)?.map_or(0, |v| decode(&v)),
        };
        Ok(usize::try_from(value).unwrap_or(usize::MAX))
    }

    /// Writes the held values to `tree` in one batch (a counter at 0 is removed) and
    /// forgets them; the caller flushes the tree next. Readers and writers wait for it.
    pub fn write_back(&self, tree: &sled::Tree) -> Result<(), StoreError> {
        let Some(mut held) = self.held() else { return Ok(()) };
        if held.is_empty() {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        for (key, value) in held.iter() {
            match value {
                0 => batch.remove(key.as_slice()),
                _ => batch.insert(key.as_slice(), &value.to_be_bytes()),
            }
        }
        tree.apply_batch(batch)?;
        held.clear();
        Ok(())
    }

    /// Rebuilds every counter from the indexes (after a log replay), dropping held ones.
    pub fn rebuild(&self, tree: &sled::Tree) -> Result<(), StoreError> {
        let mut held = self.held();
        rebuild_from_indexes(tree)?;
        if let Some(held) = held.as_mut() {
            held.clear();
        }
        Ok(())
    }
}

/// The counter changes of writing `record` over a task stored with `old` (`None`: new).
pub(super) fn on_write(record: &TaskRecord, old: Option<Stamp>, new: Stamp) -> Vec<(Vec<u8>, i64)> {
    let owner = &record.owner;
    match old {
        None => vec![
            (counter_key(owner, Counter::Owner), 1),
            (counter_key(owner, Counter::State(new.state)), 1),
            (counter_key(owner, Counter::Context(&record.task.context_id)), 1),
        ],
        Some(old) if old.state != new.state => vec![
            (counter_key(owner, Counter::State(old.state)), -1),
            (counter_key(owner, Counter::State(new.state)), 1),
        ],
        Some(_) => Vec::new(),
    }
}

/// The counter changes of removing `record`, stored under `stamp`.
pub(super) fn removal(record: &TaskRecord, stamp: Stamp) -> Vec<(Vec<u8>, i64)> {
    let owner = &record.owner;
    vec![
        (counter_key(owner, Counter::Owner), -1),
        (counter_key(owner, Counter::State(stamp.state)), -1),
        (counter_key(owner, Counter::Context(&record.task.context_id)), -1),
    ]
}

/// The counter that answers `query`'s total, if one does.
pub(super) fn counter_for(query: &TaskQuery) -> Option<Vec<u8>> {
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

/// Builds every counter from the indexes, replacing what is there: when a store from
/// before counters is migrated (`migrations.rs`), and after a write-ahead log replay (a step applied key by key that
/// a crash cut short may have moved a counter that its replay then moves again).
pub(super) fn rebuild_from_indexes(tree: &sled::Tree) -> Result<(), StoreError> {
    let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
    for entry in tree.scan_prefix([Prefix::ByTime as u8]) {
        let (key, value) = entry?;
        let owner = index::decode_owner(&key[1..])?.0;
        let state = *value.first().ok_or_else(|| StoreError::Corrupt("index entry without a state".into()))?;
        *counts.entry(counter_key(&owner, Counter::Owner)).or_default() += 1;
        *counts.entry(counter_key(&owner, Counter::State(state))).or_default() += 1;
    }
    for entry in tree.scan_prefix([Prefix::ByContext as u8]) {
        let (key, _) = entry?;
        let (owner, rest) = index::decode_owner(&key[1..])?;
        let (context, _) =
            index::split_segment(rest).ok_or_else(|| StoreError::Corrupt("by-context index key".into()))?;
        *counts.entry(counter_key(&owner, Counter::Context(&context))).or_default() += 1;
    }
    let mut batch = sled::Batch::default();
    for entry in tree.scan_prefix([Prefix::Counter as u8]) {
        batch.remove(entry?.0);
    }
    for (key, count) in counts {
        batch.insert(key, &count.to_be_bytes());
    }
    tree.apply_batch(batch)?;
    Ok(())
}
