//! Fan-out of a running turn's events: several subscribers, a slow one, resumption, and
//! a Message-only reply.

use crate::support::{done, outcome, send, settings, streamed, Events, Node};
use a2ad_actors::agent::TurnEnd;
use a2ad_actors::messages::TurnOutcome;
use a2ad_actors::RuntimeSettings;
use a2ad_protocol::{Message, TaskState};
use a2ad_storage::{ContextKey, Owner, TaskStore, TaskStoreExt};

#[actix::test]
async fn every_subscriber_gets_the_same_events_in_the_same_order() {
    let mut node = Node::start();
    let mut ticket = node.start_turn(streamed(send("ctx", "hi"))).await.unwrap();
    let mut caller = Events::of_ticket(&mut ticket);
    let id = ticket.task.id.clone();
    let mut first = node.subscribe("ctx", &id, None).await.unwrap();
    let mut second = node.subscribe("ctx", &id, None).await.unwrap();
    let turn = node.turns.next().await;
    for text in ["a", "b", "c"] {
        turn.say(text);
    }
    turn.end(TaskState::Completed, None);
    let expected = ["1 task WORKING", "2 status WORKING", "3 status WORKING", "4 status WORKING", "5 status COMPLETED"];
    for events in [&mut caller, &mut first, &mut second] {
        assert_eq!(events.rest().await, expected);
    }
    done(ticket).await.unwrap();
}

#[actix::test]
async fn a_slow_subscriber_is_dropped_with_its_last_event_id_while_others_continue() {
    let mut node = Node::with(RuntimeSettings { stream_buffer: 2, ..settings() }, None, false);
    let mut ticket = node.start_turn(streamed(send("ctx", "hi"))).await.unwrap();
    let mut fast = Events::of_ticket(&mut ticket);
    let mut slow = node.subscribe("ctx", &ticket.task.id, None).await.unwrap();
    let turn = node.turns.next().await;
    assert_eq!(fast.next().await.as_deref(), Some("1 task WORKING"));
    for (seq, text) in (2..).zip(["a", "b", "c", "d"]) {
        turn.say(text);
        assert_eq!(fast.next().await, Some(format!("{seq} status WORKING")), "the fast one keeps up");
    }
    turn.end(TaskState::Completed, None);
    assert_eq!(fast.rest().await, ["6 status COMPLETED"]);
    let lines = slow.rest().await;
    assert_eq!(
        lines,
        ["1 task WORKING", "2 status WORKING", "3 status WORKING", "error SUBSCRIBER_TOO_SLOW lastEventId=3"],
        "two events fill its buffer (one slot stays for the end); it resumes after the last it got"
    );
    done(ticket).await.unwrap();
}

#[actix::test]
async fn a_resumed_subscription_replays_stored_and_unsaved_events_without_gap_or_repeat() {
    let mut node = Node::start();
    let ticket = node.start_turn(send("ctx", "hi")).await.unwrap();
    let id = ticket.task.id.clone();
    let turn = node.turns.next().await;
    turn.say("a");
    turn.say("b");
    let mut watcher = node.subscribe("ctx", &id, None).await.unwrap();
    // Events are applied in order: once the watcher sees one more, "a" and "b" are in.
    turn.say("c");
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some("4 status WORKING") {
        seen.push(watcher.next().await.unwrap());
    }
    let mut resumed = node.subscribe("ctx", &id, Some(2)).await.unwrap();
    turn.end(TaskState::Completed, None);
    assert_eq!(resumed.rest().await, ["3 status WORKING", "4 status WORKING", "5 status COMPLETED"]);
    done(ticket).await.unwrap();
    let ended = node.subscribe("ctx", &id, Some(2)).await.err().expect("a terminal task has nothing to follow");
    assert!(ended.message.contains("terminal state"), "{}", ended.message);
}

#[actix::test]
async fn a_message_only_reply_is_one_message_event_and_leaves_only_the_session() {
    let mut node = Node::with(settings(), None, true);
    let mut ticket = node.start_turn(streamed(send("ctx", "hi"))).await.unwrap();
    let mut events = Events::of_ticket(&mut ticket);
    let id = ticket.task.id.clone();
    let reply = Message::agent_text(String::new(), "", None, "hello back");
    node.turns
        .next()
        .await
        .end_with(Ok(TurnEnd { reply_only: true, ..TurnEnd::new(TaskState::Completed, Some(reply)) }));
    assert_eq!(events.rest().await, ["2 message"], "the held task snapshot is never sent");
    let answered = outcome(ticket).await.unwrap();
    let reply = match &answered {
        TurnOutcome::Reply(reply) => Some(reply.text()),
        TurnOutcome::Task(_) => None,
    };
    assert_eq!(reply.as_deref(), Some("hello back"));
    assert!(node.store.get_task(a2ad_storage::Scope::Node, &id).unwrap().is_none(), "the reply's task is gone");
    let session = node.store.get_session(&ContextKey::new(Owner::anonymous(), "ctx"), 10).unwrap().unwrap();
    let kept: Vec<(String, Option<String>)> = session.history.iter().map(|m| (m.text(), m.task_id.clone())).collect();
    assert_eq!(kept, [("hi".to_owned(), None), ("hello back".to_owned(), None)]);
    assert_eq!(session.last_task_id, None);
}
