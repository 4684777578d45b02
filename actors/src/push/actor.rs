//! The push worker's state and polling loop.

use super::{PushSender, PushSettings};
use a2ad_storage::{JobQueue, PushConfigStore, PushJob};
use actix::prelude::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Delivers push jobs. One per node; the queue is durable, so the worker itself keeps only
/// what is in flight.
pub struct PushWorker {
    pub(super) queue: Arc<dyn JobQueue>,
    pub(super) configs: PushConfigStore,
    pub(super) sender: Arc<dyn PushSender>,
    pub(super) settings: PushSettings,
    /// Ids of jobs being delivered: never handed out twice at once.
    pub(super) in_flight: HashSet<String>,
    /// A poll of the queue is under way.
    pub(super) polling: bool,
}

impl PushWorker {
    pub fn new(
        queue: Arc<dyn JobQueue>,
        configs: PushConfigStore,
        sender: Arc<dyn PushSender>,
        settings: PushSettings,
    ) -> Self {
        PushWorker { queue, configs, sender, settings, in_flight: HashSet::new(), polling: false }
    }

    /// Takes due jobs, up to the free delivery slots, off a blocking thread (a Redis queue
    /// does network I/O), and starts each.
    fn poll(&mut self, ctx: &mut Context<Self>) {
        let free = self.settings.concurrency.saturating_sub(self.in_flight.len());
        if self.polling || free == 0 {
            return;
        }
        self.polling = true;
        let queue = Arc::clone(&self.queue);
        let in_flight = self.in_flight.clone();
        let due = async move { tokio::task::spawn_blocking(move || queue.due(now_ms(), free, &in_flight)).await };
        ctx.spawn(due.into_actor(self).map(|result, act, ctx| {
            act.polling = false;
            match result {
                Ok(Ok(jobs)) => jobs.into_iter().for_each(|job| act.start(job, ctx)),
                Ok(Err(e)) => log_poll_failure(&e),
                Err(e) => tracing::error!(error = %e, "push queue poll was interrupted"),
            }
        }));
    }

    /// Sends a job, settles it, then frees its slot and looks for more work at once (a
    /// busy queue is not held to the poll interval).
    pub(super) fn start(&mut self, job: PushJob, ctx: &mut Context<Self>) {
        let id = job.id();
        self.in_flight.insert(id.clone());
        let attempt = self.attempt(job);
        ctx.spawn(
            attempt.into_actor(self).then(|(job, outcome), act, _| act.settle(job, outcome).into_actor(act)).map(
                move |(), act, ctx| {
                    act.in_flight.remove(&id);
                    act.poll(ctx);
                },
            ),
        );
    }
}

impl Actor for PushWorker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(64);
        ctx.run_interval(self.settings.poll_interval, Self::poll);
    }
}

/// Stops the worker: deliveries in flight are dropped, and their jobs, never settled,
/// stay due in the queue for the next start.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopWorker;

impl Handler<StopWorker> for PushWorker {
    type Result = ();

    fn handle(&mut self, _msg: StopWorker, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// A queue that cannot be read (a Redis outage) fails every poll: logged as an error at
/// most every [`POLL_FAILURE_LOG_EVERY_MS`] (per process), the repeats at debug level.
fn log_poll_failure(e: &a2ad_storage::StoreError) {
    static LAST_LOGGED_MS: AtomicI64 = AtomicI64::new(i64::MIN);
    let now = now_ms();
    let last = LAST_LOGGED_MS.load(Ordering::Relaxed);
    let due = now.saturating_sub(last) >= POLL_FAILURE_LOG_EVERY_MS;
    if due && LAST_LOGGED_MS.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
        tracing::error!(error = %e, "could not read the push queue (while it fails, logged every 30 s)");
    } else {
        tracing::debug!(error = %e, "could not read the push queue");
    }
}

const POLL_FAILURE_LOG_EVERY_MS: i64 = 30_000;

/// Milliseconds since the epoch.
pub(super) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
