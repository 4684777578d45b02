//! Steps waiting for their sync, and their apply to the store once it is done.
//!
//! A write through [`super::WalStore`] appends its record and queues its step here; it
//! reaches the store (sled) only when the log's flusher has made the record durable, from
//! the flusher's [`AfterSync`] hook, before the batch's commits resolve. That order is
//! what lets the sled store take a step key by key, with no sled batch (whose two log
//! buffer writes per call were most of the storage path's cost, `sled/store/writes.rs`):
//! whatever part of a step a crash leaves in sled, its record is durable and replay
//! applies it again. A store that saw a step before its record was durable could keep a
//! prefix of it (a terminal task without its push job) that no replay knows of.
//!
//! So the store shows durable steps only: a read never sees a write that a crash could
//! still take back. (One exception, [`Unapplied::events_after`]: a stream that resumes
//! also gets a task's queued events, as its live subscribers do; a stream's forwarder
//! sends each only once its commit is durable.)
//! Writers that must answer from the newest state see the queued steps through
//! [`Unapplied`]: a task's generation and state (for the generation check and the
//! metrics), the record a removal removes, and whether a context has work queued (a
//! session is not forgotten under it).

use super::step::{SessionStep, Step};
use crate::sled::wal::{AfterSync, Lsn, Wal};
use crate::{ContextKey, PushQueue, SledStore, StoreError, TaskRecord, TaskStore, TaskStoreExt};
use a2ad_protocol::TaskState;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// The store behind the log, and what is queued for it.
pub(super) struct Applier {
    pub inner: Arc<crate::SledStore>,
    /// The node's local push queue (or the Redis outbox), when push is on.
    pub queue: Option<PushQueue>,
    unapplied: Mutex<Unapplied>,
    /// Told of each task step once it is applied ([`DurableSteps`]).
    listeners: std::sync::RwLock<Vec<Arc<dyn crate::DurableSteps>>>,
}

/// Steps appended and not yet applied, in LSN order, with what writers look up in them.
#[derive(Default)]
pub(super) struct Unapplied {
    steps: VecDeque<Queued>,
    /// The newest queued write of each task: its record, or `None` for a removal.
    tasks: HashMap<String, QueuedTask>,
    /// Queued steps per context (storage key), so a session is not forgotten under them.
    contexts: HashMap<Vec<u8>, usize>,
}

struct Queued {
    lsn: u64,
    /// Shared with the hook while it applies it: a step leaves the queue only once it is
    /// in the store, so a reader of both never misses it.
    step: Arc<Step>,
    /// The contexts the step touches (counted in [`Unapplied::contexts`]).
    contexts: Vec<Vec<u8>>,
}

struct QueuedTask {
    lsn: u64,
    record: Option<Arc<TaskRecord>>,
}

impl Unapplied {
    /// The newest version of a task, queued or stored: `(generation, state)`.
    pub fn task_version(
        &self,
        inner: &crate::SledStore,
        task_id: &str,
    ) -> Result<Option<(u64, TaskState)>, StoreError> {
        match self.tasks.get(task_id) {
            Some(queued) => Ok(queued.record.as_ref().map(|r| (r.last_event_seq, r.state()))),
            None => inner.task_version(task_id),
        }
    }

    /// The newest record of a task, queued or stored.
    pub fn task(&self, inner: &crate::SledStore, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        match self.tasks.get(task_id) {
            Some(queued) => Ok(queued.record.as_deref().cloned()),
            None => inner.get_task(crate::Scope::Node, task_id),
        }
    }

    /// The events of a task's queued steps after `after`, in order (for a stream that
    /// resumes: the actor hands it the turn's unwritten events, the store the applied
    /// ones, and these lie between).
    pub fn events_after(&self, scope: crate::Scope<'_>, task_id: &str, after: u64) -> Vec<crate::LoggedEvent> {
        let mut events = Vec::new();
        for queued in &self.steps {
            if let Step::PutTask { record, events: logged, .. } = queued.step.as_ref() {
                if record.task.id == task_id && scope.admits(&record.owner) {
                    events.extend(logged.iter().filter(|e| e.seq > after).cloned());
                }
            }
        }
        events
    }

    /// Whether a queued step touches the context.
    pub fn context_busy(&self, key: &ContextKey) -> bool {
        self.contexts.get(&key.storage_key()).is_some_and(|&n| n > 0)
    }

    /// Appends `payload` to the log and queues `step` under its LSN; `task` is the
    /// newest version of the task the step writes (`Some(None)`: removes).
    pub fn append(
        &mut self,
        wal: &Wal,
        payload: &[u8],
        step: Step,
        task: Option<(&str, Option<Arc<TaskRecord>>)>,
        contexts: Vec<Vec<u8>>,
    ) -> Result<Lsn, StoreError> {
        let lsn = wal.append(payload)?;
        if let Some((task_id, record)) = task {
            self.tasks.insert(task_id.to_owned(), QueuedTask { lsn: lsn.0, record });
        }
        for key in &contexts {
            *self.contexts.entry(key.clone()).or_default() += 1;
        }
        self.steps.push_back(Queued { lsn: lsn.0, step: Arc::new(step), contexts });
        Ok(lsn)
    }

    /// Forgets what `applied` queued (a newer write of the same task stays).
    fn settle(&mut self, applied: &[Queued]) {
        for queued in applied {
            if let Some(task_id) = queued.step.task_id() {
                if self.tasks.get(task_id).is_some_and(|t| t.lsn == queued.lsn) {
                    self.tasks.remove(task_id);
                }
            }
            for key in &queued.contexts {
                if let Some(n) = self.contexts.get_mut(key) {
                    *n -= 1;
                    if *n == 0 {
                        self.contexts.remove(key);
                    }
                }
            }
        }
    }
}

impl Applier {
    pub fn new(inner: Arc<crate::SledStore>, queue: Option<PushQueue>) -> Self {
        Applier { inner, queue, unapplied: Mutex::new(Unapplied::default()), listeners: Default::default() }
    }

    /// Tells `listener` of every task step from now on, once it is durable.
    pub fn listen(&self, listener: Arc<dyn crate::DurableSteps>) {
        self.listeners.write().unwrap_or_else(|p| p.into_inner()).push(listener);
    }

    /// Tells the listeners of a step just applied.
    fn tell(&self, step: &Step) {
        if let Step::PutTask { record, events, .. } = step {
            for listener in self.listeners.read().unwrap_or_else(|p| p.into_inner()).iter() {
                listener.durable(record, events);
            }
        }
    }

    /// The queue of steps; writers hold it from their look-up to their append, so the
    /// two cannot interleave with another writer's.
    pub fn lock(&self) -> MutexGuard<'_, Unapplied> {
        self.unapplied.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one step as the live write meant it (also what replay runs).
    pub fn apply(&self, step: &Step) -> Result<(), StoreError> {
        match step {
            Step::PutTask { record, record_json, events, jobs, session } => {
                let held = session.as_ref().and_then(|step| SledStore::held_turn(&step.as_write(), record));
                match self.apply_put(record, record_json, events, jobs, held) {
                    // The store holds a newer write of the task already (flushed after
                    // this record), which holds this turn too: nothing to redo.
                    Err(StoreError::Conflict { .. }) | Ok(()) => {}
                    Err(e) => return Err(e),
                }
                match session {
                    Some(step) => self.inner.put_turn_session(step.as_write(), held),
                    None => Ok(()),
                }
            }
            Step::PutSession { session, appended, history_limit } => {
                self.inner.put_session(session, appended, *history_limit)
            }
            Step::DeleteTask { task_id } => self.inner.delete_task(task_id).map(drop),
            Step::ForgetSession { key } => self.inner.forget_session_if_unused(key).map(drop),
            Step::SettleReply { task_id, session, appended, history_limit } => {
                self.inner.settle_reply(task_id, session, appended, *history_limit).map(drop)
            }
        }
    }

    fn apply_put(
        &self,
        record: &TaskRecord,
        record_json: &[u8],
        events: &[crate::LoggedEvent],
        jobs: &[crate::PushJob],
        held: Option<crate::sled::store::HeldTurn>,
    ) -> Result<(), StoreError> {
        self.inner.put_task_json(record, record_json, events, held)?;
        if let (Some(queue), false) = (&self.queue, jobs.is_empty()) {
            crate::JobQueue::enqueue(queue, jobs)?;
        }
        Ok(())
    }
}

impl AfterSync for Applier {
    /// Applies the queued steps up to `durable`, in order; stops at the first that fails,
    /// which stays queued with every later one for the next batch.
    fn after_sync(&self, durable: Lsn) -> Result<(), (Lsn, String)> {
        let due: Vec<(u64, Arc<Step>)> = {
            let unapplied = self.lock();
            unapplied.steps.iter().take_while(|q| q.lsn <= durable.0).map(|q| (q.lsn, Arc::clone(&q.step))).collect()
        };
        let mut failure = None;
        let mut applied = 0;
        for (lsn, step) in &due {
            match self.apply(step) {
                Ok(()) => {
                    self.tell(step);
                    applied += 1;
                }
                Err(e) => {
                    failure = Some((Lsn(*lsn), e.to_string()));
                    break;
                }
            }
        }
        let mut unapplied = self.lock();
        let done: Vec<Queued> = unapplied.steps.drain(..applied).collect();
        unapplied.settle(&done);
        failure.map_or(Ok(()), Err)
    }
}

/// The context keys a task step touches: the task's, and its session's.
pub(super) fn contexts_of(record: &TaskRecord, session: Option<&SessionStep>) -> Vec<Vec<u8>> {
    let key = crate::model::context_storage_key(&record.owner, &record.task.context_id);
    match session.map(|s| s.session.key.storage_key()).filter(|s| *s != key) {
        Some(other) => vec![key, other],
        None => vec![key],
    }
}
