//! The push worker's state and polling loop.

use super::attempts::DeliveryLog;
use super::lanes::{destination_of, Admission, Deferral, PushBoard, Ready, Route};
use super::{Attempt, PushSender, PushSettings};
use a2ad_storage::{JobQueue, PushConfigStore, PushJob};
use actix::prelude::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Delivers push jobs. One per node; the queue is durable, so the worker itself keeps only
/// the jobs it holds and its destinations' slots and circuits ([`PushBoard`]).
pub struct PushWorker {
    pub(super) queue: Arc<dyn JobQueue>,
    pub(super) configs: PushConfigStore,
    pub(super) sender: Arc<dyn PushSender>,
    pub(super) settings: PushSettings,
    /// Ids of the jobs the worker holds (in flight, waiting in a destination's line, or
    /// being settled or deferred): never handed out twice at once.
    pub(super) held: HashSet<String>,
    /// Slots, lines and circuits, shared with the metrics.
    pub(super) board: PushBoard,
    /// A poll of the queue is under way.
    pub(super) polling: bool,
    /// Each attempt and its outcome, for the admin API.
    pub(super) deliveries: DeliveryLog,
}

impl PushWorker {
    pub fn new(
        queue: Arc<dyn JobQueue>,
        configs: PushConfigStore,
        sender: Arc<dyn PushSender>,
        settings: PushSettings,
    ) -> Self {
        let board = PushBoard::new(settings.limits());
        let deliveries = DeliveryLog::default();
        PushWorker { queue, configs, sender, settings, held: HashSet::new(), board, polling: false, deliveries }
    }

    /// Records its attempts in `log` (shared with the admin API) instead of a log of its own.
    pub fn recording_to(mut self, log: DeliveryLog) -> Self {
        self.deliveries = log;
        self
    }

    /// The worker's slots, lines and circuits, for the metrics.
    pub fn board(&self) -> PushBoard {
        self.board.clone()
    }

    /// Takes due jobs, up to the free delivery slots, off a blocking thread (a Redis queue
    /// does network I/O), and routes each.
    fn poll(&mut self, ctx: &mut Context<Self>) {
        let free = self.board.with(|lanes| lanes.free());
        if self.polling || free == 0 {
            return;
        }
        self.polling = true;
        let queue = Arc::clone(&self.queue);
        let held = self.held.clone();
        let due = async move { tokio::task::spawn_blocking(move || queue.due(now_ms(), free, &held)).await };
        ctx.spawn(due.into_actor(self).map(|result, act, ctx| {
            act.polling = false;
            match result {
                Ok(Ok(jobs)) => jobs.into_iter().for_each(|job| act.route(job, ctx)),
                Ok(Err(e)) => log_poll_failure(&e),
                Err(e) => tracing::error!(error = %e, "push queue poll was interrupted"),
            }
        }));
    }

    /// Reads a job's config and finds where it goes; then it starts, waits in its
    /// destination's line, or goes back to the queue ([`super::lanes::Lanes::admit`]).
    fn route(&mut self, job: PushJob, ctx: &mut Context<Self>) {
        self.held.insert(job.id());
        let stored = match self.configs.get(a2ad_storage::Scope::Node, &job.task_id, &job.config_id) {
            Ok(Some(stored)) => stored,
            Ok(None) => return self.conclude(job, Attempt::Gone, ctx),
            Err(e) => return self.conclude(job, Attempt::Unreadable(e.to_string()), ctx),
        };
        let route = Route { destination: destination_of(&stored.config.url), tenant: stored.owner.tenant };
        let ready = Ready { job, config: stored.config, route, probe: false };
        match self.board.with(|lanes| lanes.admit(ready, now_ms())) {
            Admission::Start(ready) => self.start(ready, ctx),
            Admission::Wait => {}
            Admission::Defer(deferral) => self.defer(deferral, ctx),
        }
    }

    /// Sends a job, settles it, then frees its slots, starts what was waiting for them and
    /// looks for more work at once (a busy queue is not held to the poll interval).
    fn start(&mut self, ready: Ready, ctx: &mut Context<Self>) {
        let attempt = self.attempt(ready);
        ctx.spawn(
            attempt
                .into_actor(self)
                .then(|(ready, attempt), act, _| {
                    let reach = attempt.reach();
                    let host = Some(ready.route.destination.clone());
                    futures_util::FutureExt::map(act.settle(ready.job.clone(), attempt, host), move |()| (ready, reach))
                        .into_actor(act)
                })
                .map(|(ready, reach), act, ctx| {
                    let deferrals = act.board.with(|lanes| lanes.finish(&ready, reach, now_ms()));
                    act.held.remove(&ready.job.id());
                    deferrals.into_iter().for_each(|deferral| act.defer(deferral, ctx));
                    act.start_waiting(ctx);
                    act.poll(ctx);
                }),
        );
    }

    /// Starts every waiting job that has its slots now.
    fn start_waiting(&mut self, ctx: &mut Context<Self>) {
        while let Some(ready) = self.board.with(|lanes| lanes.next_startable(now_ms())) {
            self.start(ready, ctx);
        }
    }

    /// Settles a job that needs no delivery (its config is gone or unreadable).
    fn conclude(&mut self, job: PushJob, attempt: Attempt, ctx: &mut Context<Self>) {
        let id = job.id();
        ctx.spawn(self.settle(job, attempt, None).into_actor(self).map(move |(), act, _| {
            act.held.remove(&id);
        }));
    }

    /// Sends a job back to the queue without an attempt.
    fn defer(&mut self, deferral: Deferral, ctx: &mut Context<Self>) {
        let id = deferral.job.id();
        ctx.spawn(self.put_back(deferral).into_actor(self).map(move |(), act, _| {
            act.held.remove(&id);
        }));
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
/// stay due in the queue for the next start (as do the jobs waiting in lines).
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
