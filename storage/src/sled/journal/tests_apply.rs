//! The apply of steps after their sync (`applier.rs`): what readers and writers see of a
//! step between its append and its commit.

use super::*;
use crate::sled::store::tests::record;
use crate::{GroupCommit, JobQueue, Owner};
use std::collections::HashSet;
use std::path::Path;

fn open(data: &Path, wal: &Path) -> (Arc<WalStore>, PushQueue) {
    let sled = crate::sled::store::open_retrying(data);
    let queue = PushQueue::new(sled.tree("push_queue").unwrap());
    let (store, _) = WalStore::open(Arc::new(sled), Some(queue.clone()), wal, WalOptions::default()).unwrap();
    (Arc::new(store), queue)
}

fn event(seq: u64) -> LoggedEvent {
    LoggedEvent { seq, json: format!(r#"{{"statusUpdate":{{"seq":{seq}}}}}"#).into() }
}

fn task(id: &str, ctx: &str, state: TaskState, generation: u64) -> TaskRecord {
    let mut record = record(&Owner::anonymous(), id, ctx, state, generation as i64);
    record.last_event_seq = generation;
    record
}

#[tokio::test]
async fn a_step_reaches_readers_and_the_push_queue_only_when_its_commit_resolves() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, queue) = open(data.path(), wal.path());
    let job = PushJob::new("t1", "cfg", 1, event(1).json.to_string(), 1);
    store.put_step(&task("t1", "c1", TaskState::Completed, 1), &[event(1)], vec![job]).unwrap();
    assert!(store.get_task(crate::Scope::Node, "t1").unwrap().is_none(), "not durable: not visible");
    let queued = store.events_after(crate::Scope::Node, "t1", 0, 10).unwrap();
    assert_eq!(queued.len(), 1, "a resuming stream gets the queued event, as live subscribers did");
    let other = crate::Owner { tenant: "other".into(), principal: "p".into() };
    assert!(store.events_after(crate::Scope::Owner(&other), "t1", 0, 10).unwrap().is_empty(), "never another's");
    assert!(queue.due(i64::MAX, 10, &HashSet::new()).unwrap().is_empty(), "no push before the sync");
    GroupCommit::over_log(Arc::clone(&store)).commit().await.unwrap();
    assert_eq!(store.get_task(crate::Scope::Node, "t1").unwrap().map(|r| r.state()), Some(TaskState::Completed));
    assert_eq!(store.events_after(crate::Scope::Node, "t1", 0, 10).unwrap().len(), 1);
    assert_eq!(queue.due(i64::MAX, 10, &HashSet::new()).unwrap().len(), 1);
    assert_eq!(store.wal().settled_lsn(), Lsn(1));
}

#[test]
fn a_write_is_checked_against_the_newest_queued_version_of_its_task() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, _) = open(data.path(), wal.path());
    assert_eq!(store.put_task(&task("t1", "c1", TaskState::Working, 1), &[event(1)]).unwrap(), None);
    let previous = store.put_task(&task("t1", "c1", TaskState::Working, 5), &[event(5)]).unwrap();
    assert_eq!(previous, Some(TaskState::Working), "the queued write is the previous version");
    assert_eq!(store.task_version("t1").unwrap(), Some((5, TaskState::Working)));
    let stale = store.put_task(&task("t1", "c1", TaskState::Completed, 3), &[]).expect_err("stale");
    assert!(matches!(stale, StoreError::Conflict { stored: 5, offered: 3, .. }), "{stale:?}");
    store.flush().unwrap();
    let stale = store.put_task(&task("t1", "c1", TaskState::Completed, 4), &[]).expect_err("stale");
    assert!(matches!(stale, StoreError::Conflict { stored: 5, offered: 4, .. }), "the stored one once applied");
    let previous = store.put_task(&task("t1", "c1", TaskState::Completed, 6), &[event(6)]).unwrap();
    assert_eq!(previous, Some(TaskState::Working));
}

#[test]
fn a_removal_removes_and_returns_the_newest_version_even_before_its_sync() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, _) = open(data.path(), wal.path());
    store.put_task(&task("t1", "c1", TaskState::Completed, 2), &[event(1), event(2)]).unwrap();
    let removed = store.delete_task("t1").unwrap().expect("the queued task");
    assert_eq!(removed.last_event_seq, 2);
    assert!(store.delete_task("t1").unwrap().is_none(), "a queued removal: nothing left to remove");
    assert_eq!(store.task_version("t1").unwrap(), None);
    store.flush().unwrap();
    assert!(store.get_task(crate::Scope::Node, "t1").unwrap().is_none());
    assert!(store.events_after(crate::Scope::Node, "t1", 0, 10).unwrap().is_empty(), "with its event log");
}

#[test]
fn a_session_is_not_forgotten_while_a_step_of_its_context_waits_for_its_sync() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, _) = open(data.path(), wal.path());
    let key = ContextKey::new(Owner::anonymous(), "c1");
    let session = SessionRecord::new(key.clone(), "echo");
    store.put_session(&session, &[], 10).unwrap();
    assert!(!store.forget_session_if_unused(&key).unwrap(), "its write is queued: in use");
    store.flush().unwrap();
    store.put_task(&task("t1", "c1", TaskState::Completed, 1), &[]).unwrap();
    store.flush().unwrap();
    assert!(!store.forget_session_if_unused(&key).unwrap(), "a task is left in the context");
    store.delete_task("t1").unwrap();
    store.flush().unwrap();
    assert!(store.forget_session_if_unused(&key).unwrap(), "unused now");
    store.flush().unwrap();
    assert!(store.get_session(&key, 10).unwrap().is_none());
}

#[test]
fn a_step_that_cannot_be_applied_fails_its_commit_stays_queued_and_replays_after_a_restart() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let job = || PushJob::new("t1", "cfg", 2, event(2).json.to_string(), 1000);
    {
        let sled = Arc::new(crate::sled::store::open_retrying(data.path()));
        let queue = PushQueue::new(sled.tree("push_queue").unwrap());
        let (store, _) = WalStore::open(Arc::clone(&sled), Some(queue), wal.path(), WalOptions::default()).unwrap();
        store.put_task(&task("t1", "c1", TaskState::Working, 1), &[]).unwrap();
        store.flush().unwrap();
        sled.drop_tree_for_test("push_queue");
        store.put_step(&task("t1", "c1", TaskState::Working, 2), &[event(2)], vec![job()]).unwrap();
        let failed = store.flush().expect_err("the job's queue is gone");
        assert!(matches!(failed, StoreError::Unavailable(_)), "{failed:?}");
        assert_eq!(store.wal().settled_lsn(), Lsn(1), "settled up to the failed step, not past it");
        assert!(store.flush().is_err(), "tried again by the next commit");
        assert_eq!(store.checkpoint().unwrap(), Lsn(1), "no checkpoint past the failed step");
        store.wal().close();
    }
    let (store, queue) = open(data.path(), wal.path());
    assert_eq!(store.wal().checkpoint_lsn(), Lsn(2), "the failed step replayed, then checkpointed");
    assert_eq!(queue.due(i64::MAX, 10, &HashSet::new()).unwrap().len(), 1, "with its job");
}

#[test]
fn the_state_observer_is_told_of_each_write_as_it_is_queued_and_of_each_removal() {
    use crate::store::RecordedMoves;
    use TaskState::{Completed, Working};
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sled = crate::sled::store::open_retrying(data.path());
    let (store, _) = WalStore::open(Arc::new(sled), None, wal.path(), WalOptions::default()).unwrap();
    let moves = Arc::new(RecordedMoves::default());
    let store = store.with_state_changes(Arc::clone(&moves) as _);
    store.put_task(&task("t1", "c1", Working, 1), &[event(1)]).unwrap();
    store.put_task(&task("t1", "c1", Completed, 2), &[event(2)]).unwrap();
    assert_eq!(moves.take(), [(None, Some(Working)), (Some(Working), Some(Completed))], "before their sync");
    store.put_task(&task("t1", "c1", Working, 1), &[]).expect_err("stale");
    assert_eq!(store.delete_task("t1").unwrap().map(|r| r.state()), Some(Completed));
    assert_eq!(store.delete_task("t1").unwrap(), None);
    assert_eq!(moves.take(), [(Some(Completed), None)], "a refused write and a second removal move nothing");
    store.put_task(&task("reply", "c1", Working, 1), &[]).unwrap();
    let session = crate::SessionRecord::new(crate::ContextKey::new(Owner::anonymous(), "c1"), "echo");
    store.settle_reply("reply", &session, &[], 10).unwrap();
    assert_eq!(moves.take(), [(None, Some(Working)), (Some(Working), None)]);
}
