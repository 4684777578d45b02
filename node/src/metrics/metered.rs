//! What counts as the node writes: the task store tells [`Metrics`] of each task's change
//! of state ([`StateChanges`], given to the store once when it is built: tasks per state,
//! and the states entered), and [`MeteredQueue`] wraps the push queue (retries, dead
//! letters).

use super::{Metrics, STATES};
use a2ad_protocol::TaskState;
use a2ad_storage::{DeadJob, JobQueue, PushJob, StateChanges, StoreError, TaskStore};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Metrics {
    /// Seeds the per-state counts from the store's by-time index (once, at start-up,
    /// before any request: the index holds every task's state, terminal ones included).
    /// From then on the store's [`StateChanges`] moves them.
    pub fn count_stored_tasks(&self, store: &dyn TaskStore) -> Result<(), StoreError> {
        let mut counts = [0i64; STATES.len()];
        store.visit_tasks(&mut |entry| {
            if let Some(i) = STATES.iter().position(|s| *s == entry.state) {
                counts[i] += 1;
            }
        })?;
        for (gauge, n) in self.tasks.iter().zip(counts) {
            gauge.store(n, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// A write moves the task between the per-state gauges (and counts the state entered);
/// a removal takes it out of its state's gauge.
impl StateChanges for Metrics {
    fn moved(&self, from: Option<TaskState>, to: Option<TaskState>) {
        match to {
            Some(to) => self.move_task(from, to),
            None => {
                if let Some(i) = from.and_then(|s| STATES.iter().position(|x| *x == s)) {
                    self.tasks[i].fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// The push queue, counting retries and dead letters. A wrapper of the queue's own (the
/// queue is not the task store's seam): [`JobQueue`] is the push worker's interface, and
/// retries and dead letters are the worker's decisions that only it reports, so the
/// wrapper forwards its nine methods and counts on four.
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
