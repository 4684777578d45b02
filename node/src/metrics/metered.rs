//! The wrappers that count as the node writes: [`MeteredStore`] (tasks per state, and
//! the states entered) around the task store, [`MeteredQueue`] (retries, dead letters)
//! around the push queue.

use super::{Metrics, STATES};
use a2ad_protocol::TaskState;
use a2ad_storage::{
    ContextKey, DeadJob, JobQueue, LoggedEvent, PushJob, Scope, SessionRecord, StoreCounts, StoreError, TaskEntry,
    TaskPage, TaskQuery, TaskRecord, TaskStore,
};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The task store, counting tasks per state as they are written.
pub struct MeteredStore {
    inner: Arc<dyn TaskStore>,
    metrics: Arc<Metrics>,
}

impl MeteredStore {
    /// Wraps `inner`, seeding the per-state counts from its by-time index (once; the
    /// index holds every task's state, terminal ones included).
    pub fn new(inner: Arc<dyn TaskStore>, metrics: Arc<Metrics>) -> Result<Self, StoreError> {
        let mut counts = [0i64; STATES.len()];
        inner.visit_tasks(&mut |entry| {
            if let Some(i) = STATES.iter().position(|s| *s == entry.state) {
                counts[i] += 1;
            }
        })?;
        for (gauge, n) in metrics.tasks.iter().zip(counts) {
            gauge.store(n, Ordering::Relaxed);
        }
        Ok(MeteredStore { inner, metrics })
    }
}

impl MeteredStore {
    /// Takes a removed task out of its state's count.
    fn uncount(&self, removed: Option<&TaskRecord>) {
        if let Some(i) = removed.and_then(|r| STATES.iter().position(|s| *s == r.state())) {
            self.metrics.tasks[i].fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl TaskStore for MeteredStore {
    fn commit(&self, step: a2ad_storage::Step<'_>) -> a2ad_storage::StoreFuture<a2ad_storage::Replaced> {
        let state = step.record.task.status.state;
        let (answer, metrics) = (self.inner.commit(step), Arc::clone(&self.metrics));
        Box::pin(async move {
            let before = answer.await?;
            metrics.move_task(before, state);
            Ok(before)
        })
    }
    fn read_task(&self, scope: Scope<'_>, task_id: &str) -> a2ad_storage::StoreFuture<Option<TaskRecord>> {
        self.inner.read_task(scope, task_id)
    }
    fn read_events(
        &self,
        scope: Scope<'_>,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> a2ad_storage::StoreFuture<Vec<LoggedEvent>> {
        self.inner.read_events(scope, task_id, after, limit)
    }
    fn write_step(&self, step: a2ad_storage::Step<'_>) -> Result<a2ad_storage::Replaced, StoreError> {
        let state = step.record.task.status.state;
        let before = self.inner.write_step(step)?;
        self.metrics.move_task(before, state);
        Ok(before)
    }
    fn task_version(&self, task_id: &str) -> Result<Option<(u64, TaskState)>, StoreError> {
        self.inner.task_version(task_id)
    }
    fn cluster(&self) -> Option<&dyn a2ad_storage::Cluster> {
        self.inner.cluster()
    }
    fn reserved_event_seq(&self, task_id: &str) -> Result<u64, StoreError> {
        self.inner.reserved_event_seq(task_id)
    }
    fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(query)
    }
    fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.tasks_in_states(states)
    }
    fn get_session(&self, key: &ContextKey, history_limit: usize) -> Result<Option<SessionRecord>, StoreError> {
        self.inner.get_session(key, history_limit)
    }
    fn put_session(
        &self,
        session: &SessionRecord,
        appended: &[a2ad_protocol::Message],
        limit: usize,
    ) -> Result<(), StoreError> {
        self.inner.put_session(session, appended, limit)
    }
    fn flush(&self) -> Result<(), StoreError> {
        self.inner.flush()
    }
    fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.inner.size_on_disk()
    }
    fn visit_tasks(&self, visit: &mut dyn FnMut(TaskEntry)) -> Result<(), StoreError> {
        self.inner.visit_tasks(visit)
    }
    fn delete_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let removed = self.inner.delete_task(task_id)?;
        self.uncount(removed.as_ref());
        Ok(removed)
    }
    fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[a2ad_protocol::Message],
        limit: usize,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let removed = self.inner.settle_reply(task_id, session, appended, limit)?;
        self.uncount(removed.as_ref());
        Ok(removed)
    }
    fn forget_session_if_unused(&self, key: &ContextKey) -> Result<bool, StoreError> {
        self.inner.forget_session_if_unused(key)
    }
    fn counts(&self) -> Result<StoreCounts, StoreError> {
        self.inner.counts()
    }
}

/// The push queue, counting retries and dead letters.
pub struct MeteredQueue {
    inner: Arc<dyn JobQueue>,
    metrics: Arc<Metrics>,
}

impl MeteredQueue {
    /// Wraps `inner`, seeding the dead-letter count from it (once). A Redis queue that
    /// cannot be reached now leaves the count at 0 (the node starts during an outage).
    pub fn new(inner: Arc<dyn JobQueue>, metrics: Arc<Metrics>) -> Result<Self, StoreError> {
        match inner.dead() {
            Ok(dead) => metrics.push_dead.store(dead.len() as i64, Ordering::Relaxed),
            Err(e @ StoreError::Redis { .. }) => {
                tracing::warn!(error = %e, "cannot count the dead push jobs yet; the gauge starts at 0");
            }
            Err(e) => return Err(e),
        }
        Ok(MeteredQueue { inner, metrics })
    }
}

impl JobQueue for MeteredQueue {
    fn enqueue(&self, jobs: &[PushJob]) -> Result<(), StoreError> {
        self.inner.enqueue(jobs)
    }
    fn due(&self, now_ms: i64, max: usize, in_flight: &HashSet<String>) -> Result<Vec<PushJob>, StoreError> {
        self.inner.due(now_ms, max, in_flight)
    }
    fn ack(&self, job: &PushJob) -> Result<(), StoreError> {
        self.inner.ack(job)
    }
    /// Counts a retry; a deferral (the same attempts, see `a2ad_push_deferred_total`) is not one.
    fn reschedule(&self, job: &PushJob, next: &PushJob) -> Result<(), StoreError> {
        self.inner.reschedule(job, next)?;
        if next.attempts > job.attempts {
            self.metrics.push_retries.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
    fn bury(&self, job: &PushJob, reason: &str, now_ms: i64) -> Result<(), StoreError> {
        self.inner.bury(job, reason, now_ms)?;
        self.metrics.push_dead.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn dead(&self) -> Result<Vec<DeadJob>, StoreError> {
        self.inner.dead()
    }
    fn revive(&self, id: Option<&str>, now_ms: i64) -> Result<usize, StoreError> {
        let n = self.inner.revive(id, now_ms)?;
        self.metrics.push_dead.fetch_sub(n as i64, Ordering::Relaxed);
        Ok(n)
    }
    fn purge(&self, id: Option<&str>) -> Result<usize, StoreError> {
        let n = self.inner.purge(id)?;
        self.metrics.push_dead.fetch_sub(n as i64, Ordering::Relaxed);
        Ok(n)
    }
    fn depth(&self) -> Result<usize, StoreError> {
        self.inner.depth()
    }
}
