//! Push delivery: every persisted task event becomes one job per push config of its task
//! ([`PushHooks::jobs_for`], stored with the event in one step), and the
//! [`PushWorker`] actor delivers the jobs from a durable [`JobQueue`] at least once, with
//! retries and dead letters.
//!
//! * [`actor`]: the worker's state and its polling loop.
//! * [`handlers`]: how one job is sent and settled.
//! * [`attempts`]: the recent attempts of each task and their outcomes, for operators.
//! * [`lanes`]: delivery slots per node, destination and tenant, so that a slow or dead
//!   receiver holds only its own; [`circuit`]: each destination's circuit breaker.
//!
//! The HTTP side (SSRF guard, client) is behind [`PushSender`], implemented by the node.

mod actor;
pub mod attempts;
pub mod circuit;
mod handlers;
pub mod lanes;

pub use actor::{PushWorker, StopWorker};
pub use attempts::{AttemptOutcome, DeliveryAttempt, DeliveryLog};
pub use lanes::{DestinationGauge, PushBoard, PushGauges};

use a2ad_protocol::TaskState;
use a2ad_storage::{JobQueue, LoggedEvent, PushConfigStore, PushJob, StoreError};
use circuit::Reach;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// One HTTP POST to a receiver.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// How a delivery went.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// 2xx: acknowledged.
    Delivered,
    /// 408, 429, 5xx or a network error: try again (no sooner than `after`, if given).
    /// `status`: the response's HTTP status, if one came back (kept with the job, so
    /// that a dead letter can show it).
    Retry { reason: String, after: Option<Duration>, status: Option<u16> },
    /// Any other 4xx, or a URL refused at dispatch (no `status`): never again.
    Permanent { reason: String, status: Option<u16> },
}

/// What became of an attempt, as the worker settles it.
enum Attempt {
    Sent(SendOutcome),
    /// The config was deleted: nothing to deliver any more.
    Gone,
    /// The config could not be read (a store or key failure): retried like a network error.
    Unreadable(String),
}

impl Attempt {
    /// How the attempt reached its destination, for its circuit (`None`: it never tried).
    fn reach(&self) -> Option<Reach> {
        match self {
            Attempt::Sent(SendOutcome::Delivered | SendOutcome::Permanent { .. }) => Some(Reach::Answered),
            Attempt::Sent(SendOutcome::Retry { .. }) => Some(Reach::Failed),
            Attempt::Gone | Attempt::Unreadable(_) => None,
        }
    }
}

/// Sends deliveries (the node's HTTP client, with its URL policy).
pub trait PushSender: Send + Sync + 'static {
    fn send(&self, delivery: Delivery) -> BoxFuture<'static, SendOutcome>;
}

/// Retry and concurrency settings of delivery.
#[derive(Debug, Clone)]
pub struct PushSettings {
    /// Attempts before a job goes to the dead letters.
    pub max_attempts: u32,
    /// A job older than this goes to the dead letters instead of another retry.
    pub max_age: Duration,
    /// The first retry waits about this long; each next one twice as long.
    pub retry_base: Duration,
    /// No retry waits longer than this.
    pub retry_max: Duration,
    /// Deliveries in flight at once, in all.
    pub concurrency: usize,
    /// Deliveries in flight at once to one destination (`host:port`).
    pub destination_concurrency: usize,
    /// Deliveries in flight at once for one tenant.
    pub tenant_concurrency: usize,
    /// Failed deliveries in a row to one destination that open its circuit.
    pub circuit_failures: u32,
    /// How long an opened circuit stays open the first time (then twice as long after each
    /// failed probe, at most `retry_max`).
    pub circuit_open: Duration,
    /// How often the queue is polled for due jobs.
    pub poll_interval: Duration,
}

impl Default for PushSettings {
    fn default() -> Self {
        PushSettings {
            max_attempts: 8,
            max_age: Duration::from_secs(3600),
            retry_base: Duration::from_secs(1),
            retry_max: Duration::from_secs(300),
            concurrency: 32,
            destination_concurrency: 8,
            tenant_concurrency: 16,
            circuit_failures: 5,
            circuit_open: Duration::from_secs(30),
            poll_interval: Duration::from_millis(50),
        }
    }
}

impl PushSettings {
    /// The slot limits and circuit settings of delivery. A job whose destination's line
    /// is full waits `retry_base` in the queue.
    pub fn limits(&self) -> lanes::SlotLimits {
        lanes::SlotLimits {
            global: self.concurrency,
            destination: self.destination_concurrency,
            tenant: self.tenant_concurrency,
            busy_wait: self.retry_base,
            circuit: circuit::CircuitSettings {
                failures: self.circuit_failures,
                open_base: self.circuit_open,
                open_max: self.retry_max.max(self.circuit_open),
            },
        }
    }
}

/// What the context actors need to turn events into jobs (the store takes the jobs into
/// its step), and where those jobs wait, for the gauges.
#[derive(Clone)]
pub struct PushHooks {
    pub configs: PushConfigStore,
    /// The queue the worker delivers from.
    pub queue: Arc<dyn JobQueue>,
    /// With a shared (Redis) queue: the local outbox a step's jobs wait in until the
    /// forwarder moved them to `queue`.
    pub outbox: Option<Arc<dyn JobQueue>>,
    /// Only terminal and interrupted states are delivered.
    pub terminal_only: bool,
    /// The worker's attempts and their outcomes (the worker records into it).
    pub deliveries: DeliveryLog,
    /// The store reads the task's configs itself, in the step's commit (the shared Redis
    /// store, whose configs live beside its tasks): a step then carries one
    /// [`PushJob::for_every_config`] per event, and nothing is read before it, so no
    /// actor's thread waits for a round trip. A node's own store reads them here, locally.
    pub configs_in_commit: bool,
}

impl PushHooks {
    /// One job per event and push config of `task_id` (only ends of turns when
    /// `terminal_only`), due at `now_ms`; not queued yet. With
    /// [`PushHooks::configs_in_commit`], one job per event for every config, which the
    /// store's commit makes into one per config as they are when the step is written (a
    /// config acknowledged before the step is submitted is seen by it).
    pub fn jobs_for(&self, task_id: &str, events: &[LoggedEvent], now_ms: i64) -> Result<Vec<PushJob>, StoreError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        if self.configs_in_commit {
            let delivered = events.iter().filter(|e| !self.terminal_only || ends_turn(e));
            return Ok(delivered.map(|e| PushJob::for_every_config(task_id, e.seq, now_ms)).collect());
        }
        let configs = self.configs.list(a2ad_storage::Scope::Node, task_id)?;
        let mut jobs = Vec::new();
        for event in events.iter().filter(|e| !configs.is_empty() && (!self.terminal_only || ends_turn(e))) {
            for stored in &configs {
                let config_id = stored.config.id.as_deref().unwrap_or_default();
                jobs.push(PushJob::new(task_id, config_id, event.seq, event.json.to_string(), now_ms));
            }
        }
        Ok(jobs)
    }
}

/// Whether an event is a status update (or snapshot) into a terminal or interrupted state.
fn ends_turn(event: &LoggedEvent) -> bool {
    event.task_state().is_some_and(TaskState::ends_turn)
}

/// Exponential backoff with jitter: about `base * 2^(attempt-1)`, at most `max`, drawn
/// from the upper half so that retries of many jobs spread out.
pub fn backoff(attempt: u32, base: Duration, max: Duration) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(20)).min(max);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as u32;
    exp / 2 + exp / 2 * jitter / 1000
}
