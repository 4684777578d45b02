//! Following an interrupted task (`context/watch.rs`): a SubscribeToTask subscriber of an
//! input-required task waits for its next turn and follows the task until it is terminal.

use crate::support::{answer, done, send, streamed, Events, Node};
use a2ad_actors::messages::{CancelTask, TryEvict};
use a2ad_protocol::TaskState;
use a2ad_storage::Owner;
use std::time::Duration;

/// Starts a task in `context_id` and lets its first turn end input-required.
async fn interrupted_task(node: &mut Node, context_id: &str) -> String {
    let ticket = node.start_turn(send(context_id, "hi")).await.unwrap();
    node.turns.next().await.end(TaskState::InputRequired, Some("and?"));
    let task = done(ticket).await.unwrap();
    assert_eq!(task.status.state, TaskState::InputRequired);
    task.id
}

#[actix::test]
async fn every_watcher_follows_an_interrupted_task_through_its_turns_to_the_end() {
    let mut node = Node::start();
    let id = interrupted_task(&mut node, "ctx").await;
    let mut first = node.subscribe("ctx", &id, None).await.unwrap();
    let mut second = node.subscribe("ctx", &id, None).await.unwrap();
    for watcher in [&mut first, &mut second] {
        assert_eq!(watcher.next().await.as_deref(), Some("2 task INPUT_REQUIRED"), "the snapshot first");
    }

    // The caller's own stream of the next turn ends with that turn, interrupted again.
    let mut ticket = node.start_turn(streamed(answer("ctx", &id, "again"))).await.unwrap();
    let mut caller = Events::of_ticket(&mut ticket);
    let turn = node.turns.next().await;
    turn.say("hm");
    turn.end(TaskState::InputRequired, Some("more?"));
    assert_eq!(caller.rest().await, ["3 task WORKING", "4 status WORKING", "5 status INPUT_REQUIRED"]);
    done(ticket).await.unwrap();

    let last = node.start_turn(answer("ctx", &id, "done")).await.unwrap();
    node.turns.next().await.end(TaskState::Completed, None);
    assert_eq!(done(last).await.unwrap().status.state, TaskState::Completed);
    let expected =
        ["3 status WORKING", "4 status WORKING", "5 status INPUT_REQUIRED", "6 status WORKING", "7 status COMPLETED"];
    for watcher in [&mut first, &mut second] {
        assert_eq!(watcher.rest().await, expected, "both turns, then the stream ends on the terminal state");
    }
}

#[actix::test]
async fn cancelling_an_interrupted_task_ends_its_watchers_after_the_canceled_status() {
    let mut node = Node::start();
    let id = interrupted_task(&mut node, "ctx").await;
    let mut watcher = node.subscribe("ctx", &id, None).await.unwrap();
    let context = node.context("ctx").await.unwrap();
    let canceled = context.send(CancelTask { owner: Owner::anonymous(), task_id: id }).await.unwrap().unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(watcher.rest().await, ["2 task INPUT_REQUIRED", "3 status CANCELED"]);
}

#[actix::test]
async fn a_context_with_a_watcher_is_not_evicted_until_the_watcher_goes() {
    let mut node = Node::start();
    let id = interrupted_task(&mut node, "ctx").await;
    let mut watcher = node.subscribe("ctx", &id, None).await.unwrap();
    watcher.next().await;
    let context = node.context("ctx").await.unwrap();
    let evict = || TryEvict { min_idle: Duration::ZERO };
    assert!(!context.send(evict()).await.unwrap(), "its actor holds the waiting stream");
    drop(watcher);
    assert!(context.send(evict()).await.unwrap(), "a closed stream holds nothing");
}

#[actix::test]
async fn a_cancel_sent_on_the_answer_of_an_interrupted_turn_reaches_its_followers() {
    let mut node = Node::start();
    let id = interrupted_task(&mut node, "ctx").await;
    let mut watcher = node.subscribe("ctx", &id, None).await.unwrap();
    let ticket = node.start_turn(answer("ctx", &id, "again")).await.unwrap();
    node.turns.next().await.end(TaskState::InputRequired, Some("more?"));
    // The cancel goes out the moment the turn's caller hears of its end: the followers
    // the turn gives back to the context must already be there (or get the mark raised).
    done(ticket).await.unwrap();
    let context = node.context("ctx").await.unwrap();
    let canceled = context.send(CancelTask { owner: Owner::anonymous(), task_id: id }).await.unwrap().unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let expected = ["2 task INPUT_REQUIRED", "3 status WORKING", "4 status INPUT_REQUIRED", "5 status CANCELED"];
    assert_eq!(watcher.rest().await, expected);
}
