//! Turns of one context: what they store, their order, the busy refusal, cancel, and
//! agent failures.

use crate::support::{answer, done, send, streamed, until, Events, Node};
use a2ad_actors::agent::{AgentError, AgentEvent};
use a2ad_actors::messages::CancelTask;
use a2ad_protocol::{Artifact, ErrorCode, Part, TaskState};
use a2ad_storage::{ContextKey, Owner, Scope, TaskQuery, TaskStore, TaskStoreExt};

fn artifact(text: &str) -> AgentEvent {
    let artifact = Artifact {
        artifact_id: "a1".into(),
        name: None,
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
    };
    AgentEvent::Artifact { artifact, append: false, last_chunk: true }
}

#[actix::test]
async fn a_streamed_turn_sends_the_task_then_its_events_and_stores_them_all() {
    let mut node = Node::start();
    let mut ticket = node.start_turn(streamed(send("ctx", "hello"))).await.unwrap();
    let mut events = Events::of_ticket(&mut ticket);
    let turn = node.turns.next().await;
    assert_eq!(turn.input.message.text(), "hello");
    assert!(turn.input.history.is_empty());
    turn.say("thinking");
    turn.event(artifact("result"));
    turn.end(TaskState::Completed, Some("done"));

    let lines = events.rest().await;
    assert_eq!(lines, ["1 task WORKING", "2 status WORKING", "3 artifact", "4 status COMPLETED"]);
    let task = done(ticket).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    let stored = node.store.get_task(a2ad_storage::Scope::Node, &task.id).unwrap().unwrap();
    assert_eq!((stored.state(), stored.last_event_seq, stored.task.artifacts.len()), (TaskState::Completed, 4, 1));
    let logged: Vec<u64> =
        node.store.events_after(a2ad_storage::Scope::Node, &task.id, 0, 100).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(logged, [1, 2, 3, 4], "every event is in the log");
    let session = node.store.get_session(&ContextKey::new(Owner::anonymous(), "ctx"), 10).unwrap().unwrap();
    let texts: Vec<String> = session.history.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["hello", "thinking", "done"]);
    assert_eq!(session.last_task_id.as_deref(), Some(task.id.as_str()));
}

/// Moved down from `tests/node/actors.rs`: the second message is refused at once, with
/// the exact text of our contract, and creates no task.
#[actix::test]
async fn a_busy_context_refuses_a_second_message() {
    let mut node = Node::start();
    let first = node.start_turn(send("busy", "one")).await.unwrap();
    let turn = node.turns.next().await;
    let refused = node.start_turn(send("busy", "two")).await.err().expect("the second message is refused");
    assert_eq!(refused.code, ErrorCode::UnsupportedOperation);
    assert_eq!(refused.code.info().jsonrpc, -32004);
    assert_eq!(refused.message, "Task is already working.");
    let query = TaskQuery {
        owner: Owner::anonymous(),
        context_id: Some("busy".into()),
        state: None,
        status_after_millis: None,
        page_size: 10,
        cursor: None,
    };
    turn.end(TaskState::Completed, None);
    assert_eq!(done(first).await.unwrap().status.state, TaskState::Completed);
    assert_eq!(node.store.list_tasks(&query).unwrap().total, 1, "the refused message created no task");
}

/// A blocking turn's new task is in no answer until the turn ends, so it is written with
/// the turn's progress: a turn that ends at once costs one write, and one that runs on is
/// stored (WORKING, first event logged) within the progress interval.
#[actix::test]
async fn a_blocking_turn_stores_its_task_with_its_progress_not_before() {
    let mut node = Node::start();
    let quick = node.start_turn(send("quick", "one")).await.unwrap();
    let id = quick.task.id.clone();
    let turn = node.turns.next().await;
    turn.end(TaskState::Completed, Some("at once"));
    assert_eq!(done(quick).await.unwrap().status.state, TaskState::Completed);
    let logged: Vec<u64> = node.store.events_after(Scope::Node, &id, 0, 10).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(logged, [1, 2], "the first event is logged with the end");

    let slow = node.start_turn(send("slow", "two")).await.unwrap();
    let id = slow.task.id.clone();
    let turn = node.turns.next().await;
    let store = node.store.clone();
    until("the running task is stored", || {
        let stored = store.get_task(Scope::Node, &id).unwrap();
        async move { stored.is_some_and(|r| r.state() == TaskState::Working && r.last_event_seq == 1) }
    })
    .await;
    turn.end(TaskState::Completed, None);
    assert_eq!(done(slow).await.unwrap().status.state, TaskState::Completed);
    assert_eq!(node.store.get_task(Scope::Node, &id).unwrap().map(|r| r.last_event_seq), Some(2));
}

#[actix::test]
async fn the_turns_of_a_context_run_one_after_another_and_each_sees_the_history() {
    let mut node = Node::start();
    let first = node.start_turn(send("ctx", "one")).await.unwrap();
    node.turns.next().await.end(TaskState::InputRequired, Some("which one?"));
    let first = done(first).await.unwrap();
    assert_eq!(first.status.state, TaskState::InputRequired);

    let second = node.start_turn(answer("ctx", &first.id, "the blue one")).await.unwrap();
    let turn = node.turns.next().await;
    assert_eq!(turn.input.task_id, first.id, "the answer continues the interrupted task");
    let seen: Vec<String> = turn.input.history.iter().map(|m| m.text()).collect();
    assert_eq!(seen, ["one", "which one?"]);
    turn.end(TaskState::Completed, Some("blue it is"));
    let second = done(second).await.unwrap();
    assert_eq!((second.id, second.status.state, second.history.len()), (first.id.clone(), TaskState::Completed, 4));

    let refused = node.start_turn(answer("ctx", &first.id, "more")).await.err().unwrap();
    assert!(refused.message.contains("terminal state"), "{}", refused.message);
}

#[actix::test]
async fn cancel_stops_the_running_turn_and_ends_its_stream() {
    let mut node = Node::start();
    let mut ticket = node.start_turn(streamed(send("ctx", "work"))).await.unwrap();
    let mut events = Events::of_ticket(&mut ticket);
    let turn = node.turns.next().await;
    turn.say("started");
    assert_eq!(events.next().await.as_deref(), Some("1 task WORKING"));
    assert_eq!(events.next().await.as_deref(), Some("2 status WORKING"));

    let context = node.context("ctx").await.unwrap();
    let cancel = CancelTask { owner: Owner::anonymous(), task_id: ticket.task.id.clone() };
    let canceled = context.send(cancel.clone()).await.unwrap().unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    turn.cancelled().await;
    turn.say("too late");
    assert_eq!(events.rest().await, ["3 status CANCELED"]);
    assert_eq!(done(ticket).await.unwrap().status.state, TaskState::Canceled);

    let again = context.send(cancel).await.unwrap().err().unwrap();
    assert_eq!(again.code, ErrorCode::TaskNotCancelable);
    let next = node.start_turn(send("ctx", "next")).await;
    assert!(next.is_ok(), "the context is free again");
}

#[actix::test]
async fn an_agent_failure_or_a_bad_end_state_fails_the_task_saying_why() {
    let mut node = Node::start();
    let failing = node.start_turn(send("ctx", "one")).await.unwrap();
    node.turns.next().await.end_with(Err(AgentError("boom".into())));
    let failed = done(failing).await.unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    assert_eq!(failed.status.message.unwrap().text(), "Agent failed: boom");

    let working = node.start_turn(send("ctx", "two")).await.unwrap();
    node.turns.next().await.end(TaskState::Working, None);
    let failed = done(working).await.unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    assert_eq!(failed.status.message.unwrap().text(), "The agent ended its turn in state TASK_STATE_WORKING");
}
