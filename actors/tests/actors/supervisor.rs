//! The supervisor: eviction and rebuild from the store, capacity, drain and shutdown.

use crate::support::{done, send, settings, until, within, Node};
use a2ad_actors::messages::{Drain, GetStats, StopAll};
use a2ad_actors::supervisor::Route;
use a2ad_actors::RuntimeError;
use a2ad_actors::RuntimeSettings;
use a2ad_protocol::{ErrorCode, TaskState};
use a2ad_storage::{ContextKey, Owner};
use std::time::Duration;

/// Moved down from `tests/node/actors.rs`: the supervisor's sweep evicts the idle
/// context, and the actor it starts for the next message rebuilds the session from the
/// store.
#[actix::test]
async fn an_evicted_context_is_rebuilt_with_its_history() {
    let quick = RuntimeSettings {
        idle_timeout: Duration::from_millis(150),
        sweep_interval: Duration::from_millis(20),
        ..settings()
    };
    let mut node = Node::with(quick, None, false);
    let first = node.start_turn(send("evict-me", "remember me")).await.unwrap();
    let turn = node.turns.next().await;
    assert_eq!(turn.input.history.len(), 0);
    turn.end(TaskState::Completed, Some("noted"));
    done(first).await.unwrap();
    until("the idle context's eviction", || async {
        let stats = node.supervisor.send(GetStats).await.unwrap();
        stats.evicted_total >= 1 && stats.live_contexts == 0
    })
    .await;

    let second = node.start_turn(send("evict-me", "again")).await.unwrap();
    let turn = node.turns.next().await;
    let seen: Vec<String> = turn.input.history.iter().map(|m| m.text()).collect();
    assert_eq!(seen, ["remember me", "noted"], "the rebuilt actor saw the earlier user message and reply");
    turn.end(TaskState::Completed, None);
    done(second).await.unwrap();
    assert_eq!(node.supervisor.send(GetStats).await.unwrap().started_total, 2);
}

#[actix::test]
async fn a_full_node_refuses_new_contexts_but_routes_live_ones() {
    let node = Node::with(RuntimeSettings { max_contexts: 2, ..settings() }, None, false);
    node.context("cap-0").await.unwrap();
    node.context("cap-1").await.unwrap();
    let full = node.context("cap-extra").await.expect_err("a third context is refused");
    assert_eq!(full.code, ErrorCode::ServerBusy);
    assert!(full.message.contains("capacity"), "{}", full.message);
    assert!(node.context("cap-0").await.is_ok(), "a live context is still routed");
}

/// A request finds a running context in the live contexts, without a message to the
/// supervisor; a context nobody started, or one evicted, is not there (the caller then
/// asks the supervisor); and from the drain on nothing is found.
#[actix::test]
async fn a_running_context_is_found_without_the_supervisor_until_evicted_or_draining() {
    let quick = RuntimeSettings {
        idle_timeout: Duration::from_millis(150),
        sweep_interval: Duration::from_millis(20),
        ..settings()
    };
    let node = Node::with(quick, None, false);
    let key = |context: &str| ContextKey::new(Owner::anonymous(), context);
    assert!(node.live.find(&key("live")).unwrap().is_none(), "nothing runs before a route");
    let started = node.context("live").await.unwrap();
    assert_eq!(node.live.find(&key("live")).unwrap(), Some(started));
    assert!(node.live.find(&key("other")).unwrap().is_none());
    // Waited on through the stats: a find stamps the context as routed to, which keeps
    // it from being idle.
    until("the idle context's eviction", || async { node.supervisor.send(GetStats).await.unwrap().evicted_total == 1 })
        .await;
    assert!(node.live.find(&key("live")).unwrap().is_none(), "an evicted context is not found");

    node.context("again").await.unwrap();
    within("the drain", node.supervisor.send(Drain { grace: Duration::from_secs(1) })).await.unwrap();
    let refused = node.live.find(&key("again")).expect_err("no route once draining");
    assert_eq!(refused.message, RuntimeError::ShuttingDown.to_string());
}

#[actix::test]
async fn a_drain_refuses_new_turns_and_waits_for_the_running_one() {
    let mut node = Node::start();
    let running = node.start_turn(send("ctx", "work")).await.unwrap();
    let turn = node.turns.next().await;
    let drain = node.supervisor.send(Drain { grace: Duration::from_secs(30) });
    let drained = actix::spawn(drain);
    let key = ContextKey::new(Owner::anonymous(), "other");
    let refused = within("a route while draining", node.supervisor.send(Route { key })).await.unwrap();
    assert_eq!(refused.err().map(|e| e.message), Some("The node is shutting down".to_owned()));
    turn.end(TaskState::Completed, None);
    assert_eq!(done(running).await.unwrap().status.state, TaskState::Completed);
    within("the drain", drained).await.unwrap().unwrap();
}

#[actix::test]
async fn stopping_fails_running_turns_honestly_and_ends_waiting_streams_with_an_error() {
    let mut node = Node::start();
    let asking = node.start_turn(send("waits", "hi")).await.unwrap();
    node.turns.next().await.end(TaskState::InputRequired, None);
    let waiting = done(asking).await.unwrap();
    let mut watcher = node.subscribe("waits", &waiting.id, None).await.unwrap();
    let running = node.start_turn(send("runs", "work")).await.unwrap();
    let turn = node.turns.next().await;

    within("the stop", node.supervisor.send(StopAll)).await.unwrap();
    turn.cancelled().await;
    let failed = done(running).await.unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    assert_eq!(failed.status.message.unwrap().text(), "The node shut down while this task was running.");
    let lines = watcher.rest().await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1], format!("error SERVER_BUSY taskId={}", waiting.id));
    assert!(node.context("new").await.is_err(), "no route after the stop");
}
