//! An in-memory [`TaskStore`]: every method of the trait, with the sled store's
//! semantics (ordering, pagination, filters, totals, event retention, session history
//! limits, the atomic reply settle), and nothing on disk.
//!
//! It exists so that the actor runtime can be tested without a data directory (and
//! embedded where nothing needs to outlive the process). One mutex guards all of it:
//! every method is one short critical section, which is also what makes
//! [`TaskStore::settle_reply`] atomic. [`TaskStore::flush`] has nothing to do, so a
//! [`crate::GroupCommit`] over this store resolves at once. With push, the store is given
//! the queue a step's jobs go into ([`MemoryStore::with_push_queue`]).

use crate::{
    ContextKey, Cursor, JobQueue, LoggedEvent, Observer, Scope, SessionRecord, StateChanges, StoreCounts, StoreError,
    TaskEntry, TaskPage, TaskQuery, TaskRecord, TaskStore, DEFAULT_EVENT_RETENTION,
};
use a2ad_protocol::{Message, TaskState};
use std::collections::{btree_map, BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many tasks [`TaskStore::visit_tasks`] copies per hold of the lock.
const VISIT_BATCH: usize = 1024;

/// The in-memory [`TaskStore`].
pub struct MemoryStore {
    state: Mutex<State>,
    event_retention: u64,
    /// Where a step's push jobs go ([`TaskStore::commit`]), when push is on.
    push_queue: Option<Arc<dyn JobQueue>>,
    /// Told of each step once it is stored (in memory, as durable as it gets).
    listeners: Vec<Arc<dyn crate::DurableSteps>>,
    /// Told of each task's change of state.
    states: Observer,
}

#[derive(Default)]
struct State {
    /// By task id: the order in which the sled store's recovery index yields them.
    tasks: BTreeMap<String, StoredTask>,
    sessions: HashMap<ContextKey, StoredSession>,
}

/// A task and its event log, under one key: a step finds both with one lookup.
struct StoredTask {
    record: TaskRecord,
    /// The events kept, by ascending sequence number.
    events: VecDeque<(u64, Arc<str>)>,
}

impl StoredTask {
    /// Puts `seq` into the log (replacing an event of the same number), and removes the
    /// event `retention` numbers older, as the sled store does.
    fn log(&mut self, seq: u64, json: &Arc<str>, retention: u64) {
        match self.events.binary_search_by_key(&seq, |(s, _)| *s) {
            Ok(at) => self.events[at].1 = Arc::clone(json),
            Err(at) => self.events.insert(at, (seq, Arc::clone(json))),
        }
        let expired = seq.checked_sub(retention).map(|old| self.events.binary_search_by_key(&old, |(s, _)| *s));
        if let Some(Ok(at)) = expired {
            self.events.remove(at);
        }
    }
}

/// A session as stored: the metadata (its `history` left empty) and the messages kept,
/// the oldest first: `messages[i]` is the context's message number `first_seq + i`. A
/// ring, not a map by number: a turn pushes its few messages at the back and drops as
/// many at the front, with no tree node to allocate or free per message.
struct StoredSession {
    meta: SessionRecord,
    first_seq: u64,
    messages: VecDeque<Message>,
}

impl StoredSession {
    /// Puts `appended` at numbers `first_new..`, replacing any kept from `first_new` on
    /// (a rewrite of the same turn; one that starts before the kept run replaces all of
    /// it). A write past a gap keeps the run and follows it, renumbered to end where the
    /// write starts: the node leaves such a gap when a turn's step failed after its actor
    /// counted the turn's messages, and a read then returns the messages kept before the
    /// gap and after it, as a map by number did.
    fn put(&mut self, first_new: u64, appended: &[Message]) {
        let kept = self.messages.len() as u64;
        if first_new > self.first_seq + kept {
            self.first_seq = first_new - kept;
        } else if first_new < self.first_seq {
            self.messages.clear();
            self.first_seq = first_new;
        }
        self.messages.truncate((first_new - self.first_seq) as usize);
        self.messages.extend(appended.iter().cloned());
    }

    /// Takes `session`'s metadata into the stored one in place (`clone_from` reuses the
    /// strings' buffers: a turn changes only the count and the last task). Each field by
    /// name, so that a field added to [`SessionRecord`] is not forgotten here.
    fn update_meta(&mut self, session: &SessionRecord) {
        let SessionRecord { key: _, agent, last_task_id, message_count, cwd, history: _ } = session;
        self.meta.agent.clone_from(agent);
        self.meta.last_task_id.clone_from(last_task_id);
        self.meta.message_count = *message_count;
        self.meta.cwd.clone_from(cwd);
    }

    /// Drops the messages numbered below `keep_from`.
    fn drop_before(&mut self, keep_from: u64) {
        let excess = keep_from.saturating_sub(self.first_seq).min(self.messages.len() as u64);
        self.messages.drain(..excess as usize);
        self.first_seq += excess;
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store keeping [`DEFAULT_EVENT_RETENTION`] events per task.
    pub fn new() -> Self {
        MemoryStore {
            state: Mutex::default(),
            event_retention: DEFAULT_EVENT_RETENTION as u64,
            push_queue: None,
            listeners: Vec::new(),
            states: Observer::default(),
        }
    }

    /// Tells `observer` of every change of a task's state from now on (the node's
    /// per-state counts).
    pub fn with_state_changes(mut self, observer: Arc<dyn StateChanges>) -> Self {
        self.states = Observer::new(observer);
        self
    }

    /// Tells `listener` of every task step from now on, once it is stored (the node's
    /// live feed).
    pub fn with_listener(mut self, listener: Arc<dyn crate::DurableSteps>) -> Self {
        self.listeners.push(listener);
        self
    }

    /// Queues every step's push jobs in `queue`, right after the step is stored (nothing
    /// here survives a crash, so there is no crash to separate them).
    pub fn with_push_queue(mut self, queue: Arc<dyn JobQueue>) -> Self {
        self.push_queue = Some(queue);
        self
    }

    /// Keeps the last `events` events of each task (at least 1).
    pub fn with_event_retention(mut self, events: usize) -> Self {
        self.event_retention = events.max(1) as u64;
        self
    }

    /// A poisoned lock still holds consistent data: every write below is applied whole
    /// before anything can panic.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A task's position in `ListTasks` order, as the sled index keys it: status time
/// (clamped at 0, as the big-endian key is) and id.
fn position(record: &TaskRecord) -> (i64, &str) {
    (record.status_millis().max(0), record.task.id.as_str())
}

/// Whether `record` passes the query's owner, context, state and status-time filters.
fn matches(record: &TaskRecord, query: &TaskQuery) -> bool {
    record.owner == query.owner
        && query.context_id.as_ref().is_none_or(|ctx| *ctx == record.task.context_id)
        && query.state.is_none_or(|state| state == record.state())
        && query.status_after_millis.is_none_or(|after| position(record).0 >= after)
}

impl State {
    fn put_session(&mut self, session: &SessionRecord, appended: &[Message], history_limit: usize) {
        let count = session.message_count;
        let first_new = count.saturating_sub(appended.len() as u64);
        let stored = match self.sessions.get_mut(&session.key) {
            Some(stored) => {
                stored.update_meta(session);
                stored
            }
            None => {
                let meta = SessionRecord { history: Arc::default(), ..session.clone() };
                let fresh = StoredSession { meta, first_seq: first_new, messages: VecDeque::new() };
                self.sessions.entry(session.key.clone()).or_insert(fresh)
            }
        };
        stored.put(first_new, appended);
        stored.drop_before(count.saturating_sub(history_limit as u64));
    }

    fn delete_task(&mut self, task_id: &str) -> Option<TaskRecord> {
        self.tasks.remove(task_id).map(|stored| stored.record)
    }
}

impl MemoryStore {
    /// A task's events above `after` (at most `limit`), if the task is in `scope`.
    fn events_of(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let state = self.state();
        let Some(stored) = state.tasks.get(task_id) else { return Ok(Vec::new()) };
        if scope != Scope::Node && !scope.admits(&stored.record.owner) {
            return Ok(Vec::new());
        }
        let from = stored.events.partition_point(|(seq, _)| *seq <= after);
        let events = stored.events.range(from..).take(limit);
        Ok(events.map(|(seq, json)| LoggedEvent { seq: *seq, json: Arc::clone(json) }).collect())
    }

    /// The task and its events, in the maps.
    fn put_record(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Option<TaskState>, StoreError> {
        let mut state = self.state();
        let (stored, old) = match state.tasks.entry(record.task.id.clone()) {
            btree_map::Entry::Occupied(entry) => {
                let stored = entry.into_mut();
                let old = std::mem::replace(&mut stored.record, record.clone());
                (stored, Some(old.state()))
            }
            btree_map::Entry::Vacant(entry) => {
                (entry.insert(StoredTask { record: record.clone(), events: VecDeque::new() }), None)
            }
        };
        for event in events {
            stored.log(event.seq, &event.json, self.event_retention);
        }
        Ok(old)
    }
}

impl MemoryStore {
    /// Writes a session's metadata and appends `appended` (the messages that end at
    /// `session.message_count`) to its stored history, dropping stored messages older
    /// than the last `history_limit`. Not the node's write of a session (that is a
    /// step's, [`crate::Step::session`], or [`crate::TaskStore::settle_reply`]'s): what
    /// the tests write, to compare the stores.
    pub fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<(), StoreError> {
        self.state().put_session(session, appended, history_limit);
        Ok(())
    }

    /// A step, in one critical section for the task and one for the session.
    fn write(&self, step: crate::Step<'_>) -> Result<crate::Replaced, StoreError> {
        crate::refuse_jobs_without_queue(self.push_queue.is_some(), &step.jobs)?;
        let previous = self.put_record(step.record, step.events)?;
        if let (Some(queue), false) = (&self.push_queue, step.jobs.is_empty()) {
            queue.enqueue(&step.jobs)?;
        }
        if let Some(write) = step.session {
            self.put_session(write.session, write.appended, write.history_limit)?;
        }
        for listener in self.listeners.iter().filter(|l| l.listening()) {
            listener.durable(step.record, step.events);
        }
        self.states.stepped(previous, step.record.state());
        Ok(previous)
    }
}

impl TaskStore for MemoryStore {
    fn commit(&self, step: crate::Step<'_>) -> crate::StoreFuture<crate::Replaced> {
        crate::ready(self.write(step))
    }

    fn read_events(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> crate::StoreFuture<Vec<LoggedEvent>> {
        crate::ready(self.events_of(scope, task_id, after, limit))
    }

    fn read_task(&self, scope: Scope<'_>, task_id: &str) -> crate::StoreFuture<Option<TaskRecord>> {
        let state = self.state();
        crate::ready(Ok(state.tasks.get(task_id).map(|t| &t.record).filter(|r| scope.admits(&r.owner)).cloned()))
    }

    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let state = self.state();
        let mut matching: Vec<&TaskRecord> =
            state.tasks.values().map(|t| &t.record).filter(|r| matches(r, query)).collect();
        matching.sort_by(|a, b| position(b).cmp(&position(a)));
        let total = matching.len();
        let start = query.cursor.as_ref().map(|c| (c.ts.max(0), c.id.as_str()));
        let after_cursor = matching.into_iter().skip_while(|r| start.is_some_and(|start| position(r) >= start));
        let mut records: Vec<TaskRecord> = after_cursor.take(query.page_size.saturating_add(1)).cloned().collect();
        let next_cursor = if records.len() > query.page_size {
            records.truncate(query.page_size);
            records.last().map(|r| Cursor { ts: position(r).0, id: r.task.id.clone() })
        } else {
            None
        };
        Ok(TaskPage { records, next_cursor, total })
    }

    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        let state = self.state();
        Ok(state.tasks.values().map(|t| &t.record).filter(|r| states.contains(&r.state())).cloned().collect())
    }

    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError> {
        let state = self.state();
        let Some(stored) = state.sessions.get(key) else { return Ok(None) };
        let skip = stored.messages.len().saturating_sub(history_limit);
        let history: crate::History = stored.messages.iter().skip(skip).cloned().collect();
        Ok(Some(SessionRecord { history: Arc::new(history), ..stored.meta.clone() }))
    }

    /// Nothing to make durable.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Nothing is on disk.
    fn size_on_disk(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// In batches of [`VISIT_BATCH`], each read under the lock and visited without it: a
    /// visitor may call back into the store, and a sweep of a million tasks must not hold
    /// every request up while it copies them all.
    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        let mut after: Option<String> = None;
        loop {
            let batch: Vec<TaskEntry> = {
                let state = self.state();
                let from = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                let entry = |r: &TaskRecord| TaskEntry {
                    owner: r.owner.clone(),
                    task_id: r.task.id.clone(),
                    status_millis: position(r).0,
                    state: r.state(),
                };
                state
                    .tasks
                    .range::<str, _>((from, Bound::Unbounded))
                    .take(VISIT_BATCH)
                    .map(|(_, t)| entry(&t.record))
                    .collect()
            };
            let last_batch = batch.len() < VISIT_BATCH;
            after = batch.last().map(|e| e.task_id.clone());
            batch.into_iter().for_each(&mut *visit);
            if last_batch {
                return Ok(());
            }
        }
    }

    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let removed = self.state().delete_task(task_id);
        self.states.removed(removed.as_ref());
        Ok(removed)
    }

    fn forget_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        let mut state = self.state();
        let mut records = state.tasks.values().map(|t| &t.record);
        let tasks_left = records.any(|r| r.owner == key.owner && r.task.context_id == key.context_id);
        Ok(!tasks_left && state.sessions.remove(key).is_some())
    }

    fn counts(&self) -> Result<StoreCounts, StoreError> {
        let state = self.state();
        Ok(StoreCounts {
            events: state.tasks.values().map(|t| t.events.len() as u64).sum(),
            sessions: state.sessions.len() as u64,
            session_messages: state.sessions.values().map(|s| s.messages.len() as u64).sum(),
        })
    }

    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
        history_limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let removed = {
            let mut state = self.state();
            state.put_session(session, appended, history_limit);
            state.delete_task(task_id)
        };
        self.states.removed(removed.as_ref());
        Ok(removed)
    }
}

#[cfg(test)]
mod tests;
