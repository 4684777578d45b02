//! A streamed turn whose final write cannot be made durable: the stream ends with a
//! STORE_UNAVAILABLE frame (-32054, retry after a second, no detail), not silently; and
//! the write-ahead log on a disk that is full, then has space again, heals by itself.
//!
//! The node's actors run on the real sled store behind the real write-ahead log, whose
//! disk can be switched "full" (the log's own test switch: the one failure a real disk
//! cannot be made to show on cue); everything else is the real runtime, the real commit
//! path and the real echo agent.

use crate::support::echo_agent;
use a2ad::config::Config;
use a2ad_actors::limits::TurnLimits;
use a2ad_actors::messages::{StartTurn, TurnOutcome};
use a2ad_actors::supervisor::Route;
use a2ad_actors::supervisor::Supervisor;
use a2ad_actors::{Runtime, RuntimeSettings};
use a2ad_protocol::{ErrorCode, Message, Role, TaskState};
use a2ad_storage::{ContextKey, GroupCommit, Owner, Scope, SledStore, TaskStoreExt};
use actix::Actor;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;

#[actix_web::test]
async fn a_stream_whose_final_commit_fails_ends_with_a_store_unavailable_frame() {
    let dir = tempfile::tempdir().unwrap();
    let (_rt, supervisor, switch) = behind_a_log_on_a_disk_that_fills(dir.path());
    let key = ContextKey::new(Owner::anonymous(), "ctx-disk");
    let context = supervisor.send(Route { key: key.clone() }).await.unwrap().unwrap();
    let ticket = context.send(start_turn("ctx-disk")).await.unwrap().unwrap();
    switch.set_full(true); // Before the turn's end is committed.

    let items: Vec<_> = ticket.subscription.unwrap().into_items().collect().await;
    let (last, events) = items.split_last().unwrap();
    assert!(events.iter().all(Result::is_ok) && !events.is_empty(), "the turn's events came first: {items:?}");
    let error = last.as_ref().expect_err("the stream ends with an error, not silently");
    // A commit the disk refuses is STORE_UNAVAILABLE (503, Retry-After), not an internal error.
    assert_eq!(error.code, ErrorCode::StoreUnavailable);
    assert_eq!(error.metadata["retryAfterSeconds"], "1");
    assert!(!error.message.contains("secret") && !error.message.contains("space"), "no detail leaks");
    let done = ticket.done.await.unwrap();
    assert_eq!(done.unwrap_err().code, ErrorCode::StoreUnavailable, "whoever waits for the turn hears it too");
}

/// A turn on a runtime whose store sits behind a write-ahead log on a disk that can be
/// made "full".
fn start_turn(context_id: &str) -> StartTurn {
    let mut message = Message::agent_text(format!("m-{context_id}"), context_id, None, "twelve chars");
    message.role = Role::User;
    StartTurn {
        owner: Owner::anonymous(),
        message,
        skill: None,
        task_id: None,
        stream: true,
        keep_task: true,
        new_task_id: None,
    }
}

/// The real runtime, with the slow echo agent, on the real sled store behind the real
/// write-ahead log, whose disk the returned switch makes "full".
fn behind_a_log_on_a_disk_that_fills(
    dir: &std::path::Path,
) -> (Arc<Runtime>, actix::Addr<Supervisor>, a2ad_storage::wal::FullDiskSwitch) {
    use a2ad_storage::wal::{FullDiskSwitch, WalOptions};
    use a2ad_storage::WalStore;
    let switch = FullDiskSwitch::default();
    let sled = Arc::new(SledStore::open_behind_log(&dir.join("db")).unwrap());
    let options = WalOptions::default().full_disk_switch(&switch);
    let (journal, _) = WalStore::open(sled, None, &dir.join("wal"), options).unwrap();
    let journal = Arc::new(journal);
    let mut config = Config::default_node();
    config.agents = vec![echo_agent("slow", TaskState::Completed, 4, Duration::from_millis(20))];
    let rt = Arc::new(Runtime {
        store: journal.clone(),
        commit: GroupCommit::over_log(Arc::clone(&journal)),
        agents: a2ad::agents::build_registry(&config.agents, config.agent_env(&Default::default(), false)),
        settings: RuntimeSettings::default(),
        push: None,
        turn_limits: TurnLimits::new(0, 0),
        data_dir: dir.to_owned(),
        feed: Default::default(),
    });
    let supervisor = Supervisor::new(Arc::clone(&rt)).start();
    (rt, supervisor, switch)
}

#[actix_web::test]
async fn a_full_disk_refuses_the_turn_end_then_heals_and_the_task_never_stays_working() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, supervisor, switch) = behind_a_log_on_a_disk_that_fills(dir.path());
    let route = |ctx: &str| Route { key: ContextKey::new(Owner::anonymous(), ctx) };
    let context = supervisor.send(route("ctx-full")).await.unwrap().unwrap();
    let ticket = context.send(start_turn("ctx-full")).await.unwrap().unwrap();
    switch.set_full(true);
    let refused = ticket.done.await.unwrap().expect_err("the turn's end cannot be made durable");
    assert_eq!(refused.code, ErrorCode::StoreUnavailable);
    assert!(rt.commit.is_failing(), "readiness sees the refusing store");

    switch.set_full(false);
    let context = supervisor.send(route("ctx-after")).await.unwrap().unwrap();
    let ticket = context.send(start_turn("ctx-after")).await.unwrap().unwrap();
    let done = ticket.done.await.unwrap().expect("the log healed without a restart");
    let TurnOutcome::Task(done) = done else { panic!("a task, not a reply: {done:?}") };
    assert_eq!(done.status.state, TaskState::Completed);
    assert!(!rt.commit.is_failing());
    let first = rt.store.tasks_in_states(&[TaskState::Working, TaskState::Submitted]).unwrap();
    assert!(first.is_empty(), "no task stays WORKING: {first:?}");
}

#[actix_web::test]
async fn a_stream_sends_nothing_its_commit_has_not_made_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, supervisor, switch) = behind_a_log_on_a_disk_that_fills(dir.path());
    let route = |ctx: &str| Route { key: ContextKey::new(Owner::anonymous(), ctx) };
    let context = supervisor.send(route("ctx-held")).await.unwrap().unwrap();
    let ticket = context.send(start_turn("ctx-held")).await.unwrap().unwrap();
    rt.commit.commit().await.expect("the task's start is durable"); // As the node does before streaming.
    let task_id = ticket.task.id.clone();
    // The disk fills before the agent's first event (20 ms in): none of the turn's
    // progress, nor its end, can be made durable.
    switch.set_full(true);
    let stream = a2ad_node::core::send_when_durable(ticket.subscription.unwrap(), 256).into_items();
    let refused = ticket.done.await.unwrap().expect_err("the turn's end cannot be made durable");
    assert_eq!(refused.code, ErrorCode::StoreUnavailable);

    let items: Vec<_> = stream.collect().await;
    let (last, events) = items.split_last().unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.as_ref().unwrap().seq).collect();
    assert_eq!(seqs, [1], "only the task's start was durable, so only it was sent: {items:?}");
    assert_eq!(last.as_ref().unwrap_err().code, ErrorCode::StoreUnavailable, "then the refusal, not silence");

    // The disk heals: the log writes what it held, and the task does not stay WORKING.
    switch.set_full(false);
    rt.commit.commit().await.expect("the log healed without a restart");
    let record = rt.store.get_task(Scope::Node, &task_id).unwrap().unwrap();
    assert_ne!(record.state(), TaskState::Working);
}
