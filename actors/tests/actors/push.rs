//! The push worker, fed by the context actor: every stored event of a task with a push
//! config is delivered once, with its headers; failures are retried, then buried.

use crate::support::{done, send, settings, until, within, Node};
use a2ad_actors::messages::StartTurn;
use a2ad_actors::push::{
    AttemptOutcome, Delivery, DeliveryLog, PushHooks, PushSender, PushSettings, PushWorker, SendOutcome,
};
use a2ad_protocol::{TaskPushNotificationConfig, TaskState};
use a2ad_storage::{JobQueue, PushConfigStore, PushQueue, SecretKey};
use actix::prelude::*;
use futures_util::future::BoxFuture;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// A receiver that answers with the outcomes it was given (then Delivered) and hands
/// every delivery to the test.
struct Receiver {
    outcomes: Mutex<VecDeque<SendOutcome>>,
    seen: mpsc::UnboundedSender<Delivery>,
}

impl PushSender for Receiver {
    fn send(&self, delivery: Delivery) -> BoxFuture<'static, SendOutcome> {
        let outcome = self.outcomes.lock().unwrap().pop_front().unwrap_or(SendOutcome::Delivered);
        let _ = self.seen.send(delivery);
        Box::pin(async move { outcome })
    }
}

/// A node with push on (queue and configs in a temporary sled database), its worker,
/// the queue, and the deliveries the receiver sees.
fn push_node(
    terminal_only: bool,
    outcomes: Vec<SendOutcome>,
) -> (Node, Arc<PushQueue>, mpsc::UnboundedReceiver<Delivery>) {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let configs = PushConfigStore::new(db.open_tree("push-configs").unwrap(), SecretKey::generate().unwrap());
    let queue = Arc::new(PushQueue::new(db.open_tree("push-queue").unwrap()));
    let hooks = PushHooks {
        configs: configs.clone(),
        queue: Arc::clone(&queue) as Arc<dyn JobQueue>,
        outbox: None,
        terminal_only,
        deliveries: DeliveryLog::default(),
        configs_in_commit: false,
    };
    let log = hooks.deliveries.clone();
    let node = Node::with(settings(), Some(hooks), false);
    let (seen, deliveries) = mpsc::unbounded_channel();
    let receiver = Arc::new(Receiver { outcomes: Mutex::new(outcomes.into()), seen });
    let quick = PushSettings {
        max_attempts: 2,
        retry_base: Duration::from_millis(1),
        retry_max: Duration::from_millis(2),
        poll_interval: Duration::from_millis(5),
        ..PushSettings::default()
    };
    PushWorker::new(Arc::clone(&queue) as Arc<dyn JobQueue>, configs, receiver, quick).recording_to(log).start();
    (node, queue, deliveries)
}

/// `turn` with a push config for its task, stored first under the id the new task will
/// get, as the node's core does for an inline config.
fn with_push(node: &Node, turn: StartTurn) -> StartTurn {
    let task_id = a2ad_protocol::ids::new_id();
    let config = TaskPushNotificationConfig {
        tenant: None,
        id: Some("cfg".into()),
        task_id: Some(task_id.clone()),
        url: "https://receiver.example/hook".into(),
        token: Some("tok".into()),
        authentication: None,
    };
    node.rt.push.as_ref().expect("push is on").configs.put(&turn.owner, &config).unwrap();
    StartTurn { new_task_id: Some(task_id), keep_task: true, ..turn }
}

fn header<'a>(delivery: &'a Delivery, name: &str) -> Option<&'a str> {
    delivery.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

#[actix::test]
async fn every_event_of_a_turn_is_pushed_once_with_its_id_and_token() {
    let (mut node, queue, mut deliveries) = push_node(false, Vec::new());
    let ticket = node.start_turn(with_push(&node, send("ctx", "hi"))).await.unwrap();
    let turn = node.turns.next().await;
    turn.say("working on it");
    turn.end(TaskState::Completed, None);
    let task = done(ticket).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(within("a delivery", deliveries.recv()).await.unwrap());
    }
    seen.sort_by_key(|d| header(d, "X-A2A-Event-Id").map(str::to_owned));
    let ids: Vec<Option<&str>> = seen.iter().map(|d| header(d, "X-A2A-Event-Id")).collect();
    let expected: Vec<String> = (1..=3).map(|seq| format!("{}:{seq}", task.id)).collect();
    assert_eq!(ids, expected.iter().map(|s| Some(s.as_str())).collect::<Vec<_>>());
    for delivery in &seen {
        assert_eq!(delivery.url, "https://receiver.example/hook");
        assert_eq!(header(delivery, "X-A2A-Notification-Token"), Some("tok"));
    }
    assert!(seen[2].body.contains("TASK_STATE_COMPLETED"), "{}", seen[2].body);
    until("the acks", || async { queue.depth().unwrap() == 0 }).await;
    assert!(deliveries.try_recv().is_err(), "nothing is delivered twice");
    let log = node.rt.push.as_ref().unwrap().deliveries.of_task(&task.id);
    let mut delivered: Vec<u64> =
        log.iter().filter(|a| a.outcome == AttemptOutcome::Delivered && a.attempt == 1).map(|a| a.event_id).collect();
    delivered.sort();
    assert_eq!(delivered, vec![1, 2, 3], "one first attempt per event, each delivered: {log:?}");
}

#[actix::test]
async fn a_failing_receiver_is_retried_then_the_job_is_buried_after_its_last_attempt() {
    let retry = || SendOutcome::Retry { reason: "503 Service Unavailable".into(), after: None, status: Some(503) };
    let (mut node, queue, mut deliveries) = push_node(true, vec![retry(), retry()]);
    let ticket = node.start_turn(with_push(&node, send("ctx", "hi"))).await.unwrap();
    node.turns.next().await.end(TaskState::InputRequired, Some("and?"));
    let task = done(ticket).await.unwrap();
    let interrupted = format!("{}:2", task.id);
    for attempt in 1..=2 {
        let delivery = within("an attempt", deliveries.recv()).await.unwrap();
        assert_eq!(header(&delivery, "X-A2A-Event-Id"), Some(interrupted.as_str()), "attempt {attempt}: only the end");
    }
    until("the dead letter", || async { !queue.dead().unwrap().is_empty() }).await;
    let dead = queue.dead().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reason, "gave up after 2 attempts: 503 Service Unavailable");
    assert_eq!(dead[0].job.last_status, Some(503), "the last response's status is kept");
    assert!(dead[0].job.host.as_deref().is_some_and(|h| !h.contains('/')), "host and port only: {:?}", dead[0].job);
    assert_eq!(queue.depth().unwrap(), 0);
    let log = node.rt.push.as_ref().unwrap().deliveries.of_task(&task.id);
    let seen: Vec<(u32, AttemptOutcome, Option<&str>)> =
        log.iter().map(|a| (a.attempt, a.outcome, a.detail.as_deref())).collect();
    let why = Some("503 Service Unavailable");
    assert_eq!(seen, vec![(1, AttemptOutcome::Retry, why), (2, AttemptOutcome::Dead, why)], "each attempt, in order");
    assert!(log.iter().all(|a| a.event_id == 2 && a.config_id == "cfg"));
}
