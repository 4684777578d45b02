//! The push worker under a bad receiver: one that never answers holds only its own
//! destination's slots, and one that keeps failing has its circuit opened (its jobs wait
//! in the queue without an attempt) and closed again by a successful probe. The receiver
//! is the worker's `PushSender`; the queue and the configs are the real sled ones.

use crate::support::until;
use a2ad_actors::push::{Delivery, PushBoard, PushSender, PushSettings, PushWorker, SendOutcome};
use a2ad_protocol::TaskPushNotificationConfig;
use a2ad_storage::{JobQueue, Owner, PushConfigStore, PushJob, PushQueue, SecretKey};
use actix::prelude::*;
use futures_util::future::BoxFuture;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A receiver by host: `hang.example` never answers, `down.example` fails (503) while
/// `down` is set, every other host acknowledges. Records every delivery's URL.
#[derive(Default)]
struct Receivers {
    seen: Mutex<Vec<String>>,
    down: AtomicBool,
}

impl Receivers {
    fn count(&self, host: &str) -> usize {
        self.seen.lock().unwrap().iter().filter(|u| u.contains(host)).count()
    }
}

struct Sender(Arc<Receivers>);

impl PushSender for Sender {
    fn send(&self, delivery: Delivery) -> BoxFuture<'static, SendOutcome> {
        self.0.seen.lock().unwrap().push(delivery.url.clone());
        if delivery.url.contains("hang.example") {
            return Box::pin(futures_util::future::pending());
        }
        let failing = delivery.url.contains("down.example") && self.0.down.load(Ordering::SeqCst);
        Box::pin(async move {
            match failing {
                true => SendOutcome::Retry { reason: "HTTP 503".into(), after: None, status: Some(503) },
                false => SendOutcome::Delivered,
            }
        })
    }
}

struct Bench {
    queue: Arc<PushQueue>,
    configs: PushConfigStore,
    receivers: Arc<Receivers>,
    board: PushBoard,
}

fn bench(settings: PushSettings) -> Bench {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let configs = PushConfigStore::new(db.open_tree("push-configs").unwrap(), SecretKey::generate().unwrap());
    let queue = Arc::new(PushQueue::new(db.open_tree("push-queue").unwrap()));
    let receivers = Arc::new(Receivers::default());
    let sender = Arc::new(Sender(Arc::clone(&receivers)));
    let worker = PushWorker::new(Arc::clone(&queue) as Arc<dyn JobQueue>, configs.clone(), sender, settings);
    let board = worker.board();
    worker.start();
    Bench { queue, configs, receivers, board }
}

impl Bench {
    /// `n` tasks of `tenant`, each with a config pointing at `url` and one job due now.
    fn jobs(&self, tenant: &str, prefix: &str, url: &str, n: usize) {
        let owner = Owner { tenant: tenant.into(), principal: "p".into() };
        let now = chrono::Utc::now().timestamp_millis();
        let jobs: Vec<PushJob> = (0..n)
            .map(|i| {
                let task_id = format!("{prefix}-{i}");
                let config = TaskPushNotificationConfig {
                    tenant: None,
                    id: Some("cfg".into()),
                    task_id: Some(task_id.clone()),
                    url: url.into(),
                    token: None,
                    authentication: None,
                };
                self.configs.put(&owner, &config).unwrap();
                PushJob::new(&task_id, "cfg", 1, "{}".into(), now)
            })
            .collect();
        self.queue.enqueue(&jobs).unwrap();
    }

    fn pending(&self) -> Vec<PushJob> {
        self.queue.due(i64::MAX / 2, usize::MAX, &HashSet::new()).unwrap()
    }
}

fn quick() -> PushSettings {
    PushSettings {
        concurrency: 4,
        destination_concurrency: 2,
        tenant_concurrency: 4,
        max_attempts: 100,
        retry_base: Duration::from_millis(5),
        retry_max: Duration::from_millis(10),
        poll_interval: Duration::from_millis(5),
        ..PushSettings::default()
    }
}

#[actix::test]
async fn a_receiver_that_never_answers_holds_only_its_own_slots() {
    let b = bench(quick());
    // The hanging destination's jobs come first in the queue and outnumber every slot.
    b.jobs("t", "hang", "http://hang.example/hook", 20);
    b.jobs("t", "ok", "http://ok.example/hook", 30);
    until("every healthy delivery", || async { b.receivers.count("ok.example") >= 30 }).await;
    until("the healthy jobs' acks", || async { b.queue.depth().unwrap() == 20 }).await;
    assert_eq!(b.receivers.count("hang.example"), 2, "the hanging destination got only its two slots");
    let pending = b.pending();
    assert!(pending.iter().all(|j| j.task_id.starts_with("hang-") && j.attempts == 0), "{pending:?}");
    assert!(b.queue.dead().unwrap().is_empty());
    let gauges = b.board.gauges(10);
    let hang = gauges.named.iter().find(|g| g.destination == "hang.example:80").expect("named");
    assert_eq!(hang.in_flight, 2);
}

#[actix::test]
async fn a_failing_destination_opens_its_circuit_and_a_successful_probe_closes_it() {
    let b = bench(PushSettings {
        destination_concurrency: 1,
        circuit_failures: 3,
        circuit_open: Duration::from_secs(3600),
        ..quick()
    });
    b.receivers.down.store(true, Ordering::SeqCst);
    b.jobs("t", "down", "http://down.example/hook", 10);
    b.jobs("t", "ok", "http://ok.example/hook", 10);
    until("the circuit to open", || async { b.board.gauges(10).circuit_opens_total == 1 }).await;
    until("the healthy deliveries", || async { b.receivers.count("ok.example") >= 10 }).await;
    // Every job of the open destination is back in the queue, an hour out, and only the
    // three failures that opened it were attempts.
    let soon = chrono::Utc::now().timestamp_millis() + 60_000;
    until("the deferrals", || async {
        b.queue.depth().unwrap() == 10 && b.queue.due(soon, 100, &HashSet::new()).unwrap().is_empty()
    })
    .await;
    assert_eq!(b.receivers.count("down.example"), 3);
    assert_eq!(b.pending().iter().map(|j| j.attempts).sum::<u32>(), 3);
    let down = b.board.gauges(10).named.into_iter().find(|g| g.destination == "down.example:80").unwrap();
    assert_eq!((down.in_flight, down.waiting, down.open_circuits), (0, 0, 1), "an open circuit holds no slot");
}

#[actix::test]
async fn after_its_open_time_one_probe_goes_and_its_success_lets_the_rest_through() {
    let b = bench(PushSettings { circuit_failures: 2, circuit_open: Duration::from_millis(100), ..quick() });
    b.receivers.down.store(true, Ordering::SeqCst);
    b.jobs("t", "down", "http://down.example/hook", 8);
    until("the circuit to open", || async { b.board.gauges(10).circuit_opens_total >= 1 }).await;
    b.receivers.down.store(false, Ordering::SeqCst);
    until("every job delivered", || async { b.queue.depth().unwrap() == 0 }).await;
    assert!(b.queue.dead().unwrap().is_empty());
    let gauges = b.board.gauges(10);
    assert!(gauges.named.iter().all(|g| g.open_circuits == 0), "closed again: {gauges:?}");
}
