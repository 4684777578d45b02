//! The delivery attempts of recent tasks, for the operator's view of one task (the admin
//! API's task detail and the console's Task page).
//!
//! Kept in memory, bounded, since the node started: the last [`PER_TASK`] attempts of
//! each of the last [`TASKS`] tasks that had one. What must survive a restart already
//! does: a job is in its durable queue until it is delivered, and a job that gave up is a
//! dead letter with its attempts and last error. So this log costs the delivery path one
//! short lock and no write, and the A2A hot path nothing.

use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Attempts kept per task: a job retried to its limit (8 by default) for a few configs
/// and events fits, with room.
pub const PER_TASK: usize = 64;
/// Tasks kept: the oldest task's attempts go first.
pub const TASKS: usize = 10_000;

/// One delivery attempt and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    /// When the outcome was known (milliseconds since the epoch).
    pub at_ms: i64,
    pub config_id: String,
    /// The event delivered (its `X-A2A-Event-Id` is `{taskId}:{eventId}`).
    pub event_id: u64,
    /// 1 for the first attempt of this job.
    pub attempt: u32,
    pub outcome: AttemptOutcome,
    /// Why it failed, as the dead letters say it (an HTTP status, a network error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AttemptOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// It failed and is tried again later.
    Retry,
    /// It failed for good (a permanent refusal, or the last attempt): a dead letter now.
    Dead,
    /// The push config was deleted before the attempt: nothing was sent.
    Dropped,
}

/// The shared log: the worker records, the admin API reads. Cheap to clone.
#[derive(Clone, Default)]
pub struct DeliveryLog(Arc<Mutex<Attempts>>);

#[derive(Default)]
struct Attempts {
    by_task: HashMap<String, VecDeque<DeliveryAttempt>>,
    /// Task ids in the order they were first recorded, oldest first.
    order: VecDeque<String>,
    /// Attempts delivered since the node started (the admin API's series), counted under
    /// the lock the log takes anyway.
    delivered: u64,
}

impl DeliveryLog {
    pub fn record(&self, task_id: &str, attempt: DeliveryAttempt) {
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !log.by_task.contains_key(task_id) {
            if log.order.len() >= TASKS {
                if let Some(oldest) = log.order.pop_front() {
                    log.by_task.remove(&oldest);
                }
            }
            log.order.push_back(task_id.to_owned());
        }
        if attempt.outcome == AttemptOutcome::Delivered {
            log.delivered += 1;
        }
        let attempts = log.by_task.entry(task_id.to_owned()).or_default();
        if attempts.len() >= PER_TASK {
            attempts.pop_front();
        }
        attempts.push_back(attempt);
    }

    /// Deliveries made since the node started.
    pub fn delivered(&self) -> u64 {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).delivered
    }

    /// A task's attempts, oldest first.
    pub fn of_task(&self, task_id: &str) -> Vec<DeliveryAttempt> {
        let log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        log.by_task.get(task_id).map(|a| a.iter().cloned().collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(n: u32) -> DeliveryAttempt {
        DeliveryAttempt {
            at_ms: i64::from(n),
            config_id: "c".into(),
            event_id: 1,
            attempt: n,
            outcome: AttemptOutcome::Retry,
            detail: None,
        }
    }

    #[test]
    fn a_task_keeps_its_newest_attempts_in_order() {
        let log = DeliveryLog::default();
        for n in 1..=(PER_TASK as u32 + 3) {
            log.record("t", attempt(n));
        }
        let kept = log.of_task("t");
        assert_eq!(kept.len(), PER_TASK);
        assert_eq!(kept.first().unwrap().attempt, 4);
        assert_eq!(kept.last().unwrap().attempt, PER_TASK as u32 + 3);
        assert!(log.of_task("other").is_empty());
        assert_eq!(log.delivered(), 0, "retries are not deliveries");
        log.record("t", DeliveryAttempt { outcome: AttemptOutcome::Delivered, ..attempt(1) });
        assert_eq!(log.delivered(), 1);
    }

    #[test]
    fn the_oldest_task_goes_first() {
        let log = DeliveryLog::default();
        for n in 0..=TASKS {
            log.record(&format!("t{n}"), attempt(1));
        }
        assert!(log.of_task("t0").is_empty());
        assert_eq!(log.of_task("t1").len(), 1);
        assert_eq!(log.of_task(&format!("t{TASKS}")).len(), 1);
    }
}
