use super::*;
use crate::sled::store::tests::record;
use crate::sled::wal::FullDiskSwitch;
use crate::{GroupCommit, JobQueue, Owner, SledStore};
use std::collections::HashSet;
use std::path::Path;

fn sled(dir: &Path) -> (Arc<crate::SledStore>, PushQueue) {
    let store = crate::sled::store::open_retrying(dir);
    let queue = PushQueue::new(store.tree("push_queue").unwrap());
    (Arc::new(store), queue)
}

fn open(data: &Path, wal: &Path) -> (WalStore, ReplayReport, PushQueue) {
    let (inner, queue) = sled(data);
    let (store, report) = WalStore::open(inner, Some(queue.clone()), wal, WalOptions::default()).unwrap();
    (store, report, queue)
}

fn event(seq: u64) -> LoggedEvent {
    LoggedEvent { seq, json: format!(r#"{{"statusUpdate":{{"seq":{seq}}}}}"#).into() }
}

fn session(ctx: &str, count: u64) -> SessionRecord {
    let mut session = SessionRecord::new(ContextKey::new(Owner::anonymous(), ctx), "echo");
    session.message_count = count;
    session
}

fn message(text: &str) -> Message {
    Message::agent_text("m-".to_owned() + text, "c1", None, text)
}

/// One of each operation, through the log.
fn write_steps(store: &WalStore) {
    let owner = Owner::anonymous();
    let mut task = record(&owner, "t1", "c1", TaskState::Working, 1000);
    task.last_event_seq = 2;
    let job = PushJob::new("t1", "cfg", 2, event(2).json.to_string(), 1000);
    store.put_step(&task, &[event(1), event(2)], vec![job]).unwrap();
    store.put_task(&record(&owner, "t2", "c2", TaskState::Completed, 2000), &[event(1)]).unwrap();
    store.put_session(&session("c1", 2), &[message("a"), message("b")], 10).unwrap();
    store.put_task(&record(&owner, "gone", "c3", TaskState::Completed, 3000), &[]).unwrap();
    store.delete_task("gone").unwrap();
    store.put_task(&record(&owner, "reply", "c4", TaskState::Completed, 4000), &[]).unwrap();
    store.settle_reply("reply", &session("c4", 1), &[message("r")], 10).unwrap();
    let end = record(&owner, "t5", "c5", TaskState::Completed, 5000);
    let turn = [message("q"), message("a")];
    let write = SessionWrite { session: &session("c5", 2), appended: &turn, history_limit: 10 };
    store.put_step_with_session(&end, &[event(1)], Vec::new(), write).unwrap();
}

fn assert_steps(store: &WalStore, queue: &PushQueue) {
    let t1 = store.get_task(crate::Scope::Node, "t1").unwrap().expect("t1");
    assert_eq!((t1.state(), t1.last_event_seq), (TaskState::Working, 2));
    let seqs: Vec<u64> = store.events_after(crate::Scope::Node, "t1", 0, 10).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
    assert!(store.get_task(crate::Scope::Node, "t2").unwrap().is_some());
    assert!(store.get_task(crate::Scope::Node, "gone").unwrap().is_none());
    assert!(store.get_task(crate::Scope::Node, "reply").unwrap().is_none());
    let history = store.get_session(&ContextKey::new(Owner::anonymous(), "c1"), 10).unwrap().expect("session");
    assert_eq!(history.history.len(), 2);
    assert!(store.get_session(&ContextKey::new(Owner::anonymous(), "c4"), 10).unwrap().is_some());
    let ended = store.get_session(&ContextKey::new(Owner::anonymous(), "c5"), 10).unwrap().expect("c5");
    assert_eq!(ended.history.len(), 2, "a turn's end writes its task and session in one record");
    assert_eq!(store.get_task(crate::Scope::Node, "t5").unwrap().map(|r| r.state()), Some(TaskState::Completed));
    let jobs = queue.due(i64::MAX, 10, &HashSet::new()).unwrap();
    assert_eq!(jobs.len(), 1, "the push job is back with its event");
    assert_eq!((jobs[0].event_seq, jobs[0].body.as_str()), (2, &*event(2).json));
    let query = TaskQuery {
        owner: Owner::anonymous(),
        context_id: None,
        state: None,
        status_after_millis: None,
        page_size: 10,
        cursor: None,
    };
    assert_eq!(store.list_tasks(&query).unwrap().total, 3, "counters agree after replay");
}

#[tokio::test]
async fn a_store_that_lost_everything_is_rebuilt_from_the_log() {
    let (first, second, wal) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    {
        let (store, report, _) = open(first.path(), wal.path());
        assert_eq!(report.replayed, 0);
        write_steps(&store);
        let store = Arc::new(store);
        GroupCommit::over_log(Arc::clone(&store)).commit().await.unwrap();
        store.wal().close();
    }
    // A fresh sled: as if none of sled's writes had reached the disk before the crash.
    let (store, report, queue) = open(second.path(), wal.path());
    assert_eq!(report.replayed, 8);
    assert_steps(&store, &queue);
}

#[test]
fn replay_over_a_store_that_has_the_writes_changes_nothing_and_a_checkpoint_ends_it() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    {
        let (store, _, _) = open(data.path(), wal.path());
        write_steps(&store);
        store.flush().expect("durable in the log");
        store.wal().close();
    }
    {
        let (store, report, queue) = open(data.path(), wal.path());
        assert_eq!(report.replayed, 8, "the same writes, applied again");
        assert_steps(&store, &queue);
        assert_eq!(store.wal().checkpoint_lsn(), Lsn(8), "open checkpoints what it replayed");
        store.wal().close();
    }
    let (store, report, queue) = open(data.path(), wal.path());
    assert_eq!((report.replayed, report.checkpoint), (0, 8));
    assert_steps(&store, &queue);
}

#[tokio::test]
async fn a_full_disk_refuses_commits_as_unavailable_and_heals_without_a_restart() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let switch = FullDiskSwitch::default();
    let (inner, queue) = sled(data.path());
    let options = WalOptions::default().full_disk_switch(&switch);
    let (store, _) = WalStore::open(inner, Some(queue), wal.path(), options).unwrap();
    let store = Arc::new(store);
    let commit = GroupCommit::over_log(Arc::clone(&store));
    switch.set_full(true);
    store.put_task(&record(&Owner::anonymous(), "t1", "c1", TaskState::Working, 1), &[event(1)]).unwrap();
    let refused = commit.commit().await.expect_err("the disk is full");
    assert!(matches!(refused, StoreError::Unavailable(_)), "{refused:?}");
    assert!(commit.is_failing());
    let answer = a2ad_protocol::A2aError::from(refused);
    assert_eq!(answer.code, a2ad_protocol::ErrorCode::StoreUnavailable);
    assert_eq!(answer.metadata["retryAfterSeconds"], "1");
    switch.set_full(false);
    commit.commit().await.expect("the log rewrites the refused record once space is back");
    assert!(!commit.is_failing());
    assert_eq!(store.wal().durable_lsn(), Lsn(1));
}

#[test]
fn the_push_worker_sees_a_job_only_once_its_step_is_durable() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, _, queue) = open(data.path(), wal.path());
    let task = record(&Owner::anonymous(), "t1", "c1", TaskState::Completed, 1);
    let job = PushJob::new("t1", "cfg", 1, event(1).json.to_string(), 1);
    store.put_step(&task, &[event(1)], vec![job]).unwrap();
    assert_eq!(store.wal().durable_lsn(), Lsn(0), "appended, not yet synced");
    assert!(queue.due(i64::MAX, 10, &HashSet::new()).unwrap().is_empty(), "no job before its step is durable");
    assert!(store.get_task(crate::Scope::Node, "t1").unwrap().is_none(), "nor its task");
    store.flush().unwrap();
    assert_eq!(store.wal().durable_lsn(), Lsn(1));
    assert_eq!(queue.due(i64::MAX, 10, &HashSet::new()).unwrap().len(), 1, "the sync applied the step");
    assert!(store.get_task(crate::Scope::Node, "t1").unwrap().is_some());
}

#[test]
fn a_record_that_does_not_decode_stops_the_open() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    {
        let (log, _) = Wal::open(wal.path(), WalOptions::default()).unwrap();
        let lsn = log.append(b"\x01\x09not a step").unwrap();
        log.commit_blocking(lsn).unwrap();
        log.close();
    }
    let (inner, queue) = sled(data.path());
    let failed = WalStore::open(inner, Some(queue), wal.path(), WalOptions::default()).err().expect("refused");
    assert!(matches!(failed, StoreError::Corrupt(_)), "{failed:?}");
}

#[test]
fn every_step_round_trips_through_its_encoding() {
    let task = record(&Owner::anonymous(), "t1", "c1", TaskState::Working, 5);
    let job = PushJob::new("t1", "cfg", 3, event(3).json.to_string(), 77);
    let json = step::record_json(&task).unwrap();
    let payload = step::encode_put_task(&task, &json, &[event(3)], std::slice::from_ref(&job), None).unwrap();
    let (record, events, jobs) = (Arc::new(task.clone()), vec![event(3)], vec![job]);
    let record_json = serde_json::to_vec(&task).unwrap().into();
    assert_eq!(step::decode(&payload).unwrap(), Step::PutTask { record, record_json, events, jobs, session: None });
    let turn = [message("q")];
    let write = SessionWrite { session: &session("c1", 1), appended: &turn, history_limit: 4 };
    let payload = step::encode_put_task(&task, &json, &[event(3)], &[], Some(write)).unwrap();
    let Step::PutTask { session: Some(ended), .. } = step::decode(&payload).unwrap() else {
        panic!("a task write with its session")
    };
    assert_eq!((ended.appended.len(), ended.history_limit, ended.session.message_count), (1, 4, 1));
    let stray = PushJob::new("t1", "cfg", 9, String::new(), 1);
    let refused = step::encode_put_task(&task, &json, &[event(3)], &[stray], None);
    assert!(refused.is_err(), "a job must be for an event of its step");
    let payload = step::encode_session(Some("t9"), &session("c1", 1), &[message("x")], 7).unwrap();
    let Step::SettleReply { task_id, appended, history_limit, .. } = step::decode(&payload).unwrap() else {
        panic!("a settle record")
    };
    assert_eq!((task_id.as_str(), appended.len(), history_limit), ("t9", 1, 7));
    assert_eq!(step::decode(&step::encode_delete_task("t1")).unwrap(), Step::DeleteTask { task_id: "t1".into() });
    assert!(step::decode(&payload[..payload.len() - 1]).is_err(), "a cut record is refused");
}

#[test]
fn a_long_record_is_packed_and_an_unpacked_one_still_reads() {
    let turn: Vec<_> = (0..8).map(|i| message(&format!("question {i} about the same long subject"))).collect();
    let task = record(&Owner::anonymous(), "t1", "c1", TaskState::Completed, 5);
    let json = step::record_json(&task).unwrap();
    let write = SessionWrite { session: &session("c1", 8), appended: &turn, history_limit: 20 };
    let payload = step::encode_put_task(&task, &json, &[event(3), event(4)], &[], Some(write)).unwrap();
    assert_eq!(payload[0], crate::sled::packed::LZ4, "a turn's record is long and repetitive");
    let Step::PutTask { session: Some(ended), events, .. } = step::decode(&payload).unwrap() else {
        panic!("a task write with its session")
    };
    assert_eq!((ended.appended, events), (turn.clone(), vec![event(3), event(4)]));
    // What a2ad before packing wrote: the same bytes, unpacked.
    let plain = crate::sled::packed::unpack(&payload, "test").unwrap().into_owned();
    assert_eq!(plain[0], 1, "the version byte");
    assert!(matches!(step::decode(&plain).unwrap(), Step::PutTask { session: Some(_), .. }));
    assert!(step::decode(&payload[..payload.len() - 1]).is_err(), "a cut packed record is refused");
}

#[test]
fn a_sled_store_behind_the_log_flushes_durably() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open_behind_log(dir.path()).unwrap();
    store.put_task(&record(&Owner::anonymous(), "t1", "c1", TaskState::Working, 1), &[]).unwrap();
    store.flush().expect("db.flush and the fsyncs of sled's files");
}

/// A log from a node before 2026-12-02 may hold event-id reservations (tag 6): the open
/// refuses it, saying what to do, and leaves the log as it was.
#[test]
fn a_log_holding_a_reservation_record_is_refused_and_kept() {
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    {
        let (log, _) = Wal::open(wal.path(), WalOptions::default()).unwrap();
        let lsn = log.append(&step::encode_reserve("t1", 70)).unwrap();
        log.commit_blocking(lsn).unwrap();
        log.close();
    }
    for _ in 0..2 {
        let (inner, queue) = sled(data.path());
        let failed = WalStore::open(inner, Some(queue), wal.path(), WalOptions::default()).err().expect("refused");
        assert!(matches!(failed, StoreError::Retired { .. }), "{failed:?}");
        let text = failed.to_string();
        assert!(text.contains("event-id reservation records") && text.contains("before 2026-12-06"), "{text}");
    }
}
