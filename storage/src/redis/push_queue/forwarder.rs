//! The local outbox in front of the Redis Streams queue, and the thread that empties it.
//!
//! With `push-queue: redis-streams`, a step's push jobs do not go to Redis from the actor
//! that ran the step. They go into the node's outbox, a sled tree of its own
//! ([`PUSH_OUTBOX_TREE`], the local queue's format: a [`crate::PushQueue`]), inside the
//! step's own write-ahead log record, exactly as the local-file queue takes them
//! ([`crate::TaskStore::commit`]). So the commit that makes a step durable makes its
//! jobs durable, and there is no second write path.
//!
//! The [`Forwarder`], a thread of its own, reads the outbox, which holds only jobs whose
//! step is durable (the store behind the log applies a step, jobs included, only after
//! its record's sync: `sled/journal/applier.rs`), so no push ever leaves the node for an event
//! a crash could lose and recovery renumber. It XADDs them to the stream
//! in bounded batches (one MULTI each), and removes them from the outbox once Redis
//! acknowledged the batch. While Redis is down it retries with backoff; the jobs wait in
//! the outbox, through restarts, and requests go on being answered.
//!
//! At least once: a crash between the XADD and the removal (or before the next
//! checkpoint, since removals are not logged, like the push worker's acks) forwards the
//! job again. The stream then holds the job twice, under the same job and event id; the
//! worker delivers both and receivers deduplicate on `X-A2A-Event-Id`, as for any
//! redelivery. Event ids are the task's event sequence numbers, never minted here.

use crate::thread_owner::{StopSignal, ThreadOwner};
use crate::{JobQueue, StoreError};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The sled tree of the outbox (see the module docs).
pub const PUSH_OUTBOX_TREE: &str = "push_outbox";

/// While the forwarding keeps failing, it is logged as a warning at most this often.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// How the forwarder paces itself.
#[derive(Debug, Clone)]
pub struct ForwarderSettings {
    /// The most jobs in one XADD batch.
    pub batch: usize,
    /// How often an empty outbox is looked at again.
    pub idle_poll: Duration,
    /// The first wait after a failure; each further one twice as long...
    pub retry_base: Duration,
    /// ...up to this.
    pub retry_max: Duration,
}

impl Default for ForwarderSettings {
    fn default() -> Self {
        ForwarderSettings {
            batch: 256,
            idle_poll: Duration::from_millis(20),
            retry_base: Duration::from_millis(100),
            retry_max: Duration::from_secs(5),
        }
    }
}

/// The thread that moves durable outbox jobs into the shared queue. Stopped (after one
/// last pass) by [`Forwarder::stop`] or when dropped.
pub struct Forwarder {
    owner: ThreadOwner,
}

impl Forwarder {
    /// Starts the thread: `outbox` is the outbox (durable jobs only, see above),
    /// `target` the Redis queue (a connection of its own, so
    /// that an outage never holds up the push worker's).
    pub fn start(
        outbox: Arc<dyn JobQueue>,
        target: Arc<dyn JobQueue>,
        settings: ForwarderSettings,
    ) -> Result<Forwarder, StoreError> {
        let owner = ThreadOwner::spawn_stoppable("a2ad-push-forward", "push forwarder", move |stop| {
            run(&*outbox, &*target, &settings, stop)
        })?;
        Ok(Forwarder { owner })
    }

    /// Stops the thread after one last pass over the outbox (what it cannot forward now
    /// stays there for the next start), and waits for it. Blocks.
    pub fn stop(&self) {
        self.owner.close_and_join();
    }
}

/// Moves one batch (at most `max` jobs) of durable outbox jobs into `target`, and removes
/// them from the outbox once `target` took them. Returns how many it moved.
pub(crate) fn forward_batch(outbox: &dyn JobQueue, target: &dyn JobQueue, max: usize) -> Result<usize, StoreError> {
    // Every outbox job is forwarded at once, whatever its due time.
    let jobs = outbox.due(i64::MAX, max, &HashSet::new())?;
    if jobs.is_empty() {
        return Ok(0);
    }
    target.enqueue(&jobs)?;
    for job in &jobs {
        outbox.ack(job)?;
    }
    Ok(jobs.len())
}

fn run(outbox: &dyn JobQueue, target: &dyn JobQueue, settings: &ForwarderSettings, stop: &StopSignal) {
    let batch = settings.batch.max(1);
    let mut outage = Outage::default();
    loop {
        let stopping = stop.is_set();
        let wait = match forward_batch(outbox, target, batch) {
            Ok(moved) => {
                outage.ended(moved);
                if moved >= batch && !stopping {
                    continue; // more are waiting
                }
                settings.idle_poll
            }
            Err(e) => outage.failed(&e, outbox, settings),
        };
        if stopping {
            return;
        }
        stop.wait(wait);
    }
}

/// The failures since the last pass that went through: how long to wait next, and what
/// to log (once when it starts, then at most every [`WARN_EVERY`], once when it ends).
#[derive(Default)]
struct Outage {
    failures: u32,
    since: Option<Instant>,
    warned: Option<Instant>,
}

impl Outage {
    /// A failed pass: logs it if due, and returns how long to wait before the next.
    fn failed(&mut self, error: &StoreError, outbox: &dyn JobQueue, settings: &ForwarderSettings) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let since = *self.since.get_or_insert_with(Instant::now);
        if self.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            self.warned = Some(Instant::now());
            let waiting = outbox.depth().unwrap_or(0);
            tracing::warn!(
                error = %error,
                waiting,
                failing_for_s = since.elapsed().as_secs(),
                "push forwarder: cannot move jobs to the Redis queue; they wait in the outbox and are retried"
            );
        }
        let exp = settings.retry_base.saturating_mul(1u32 << self.failures.saturating_sub(1).min(16));
        exp.min(settings.retry_max)
    }

    /// A pass went through (moving `moved` jobs).
    fn ended(&mut self, moved: usize) {
        if let Some(since) = self.since.take() {
            tracing::info!(
                moved,
                failed_for_s = since.elapsed().as_secs(),
                "push forwarder: the Redis queue takes jobs again"
            );
        }
        *self = Outage::default();
    }
}
