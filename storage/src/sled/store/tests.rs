use super::*;
use crate::{encode_page_token, Cursor, LoggedEvent, Owner};
use a2ad_protocol::{timestamp, Task, TaskStatus};
use std::sync::Arc;

pub(crate) fn record(owner: &Owner, id: &str, ctx: &str, state: TaskState, ms: i64) -> TaskRecord {
    TaskRecord {
        owner: owner.clone(),
        agent: "echo".into(),
        task: Task {
            id: id.into(),
            context_id: ctx.into(),
            status: TaskStatus { state, message: None, timestamp: Some(timestamp::from_millis(ms)) },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        },
        last_event_seq: 0,
    }
}

fn query(owner: &Owner) -> TaskQuery {
    TaskQuery {
        owner: owner.clone(),
        context_id: None,
        state: None,
        status_after_millis: None,
        page_size: 2,
        cursor: None,
    }
}

fn ids(page: &TaskPage) -> Vec<&str> {
    page.records.iter().map(|r| r.task.id.as_str()).collect()
}

#[test]
fn lists_newest_first_with_cursor_filters_and_owner_scoping() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let alice = Owner { tenant: "t".into(), principal: "alice".into() };
    let bob = Owner { tenant: "t".into(), principal: "bob".into() };
    store.put_task(&record(&alice, "a1", "c1", TaskState::Completed, 1000), &[]).unwrap();
    store.put_task(&record(&alice, "a2", "c2", TaskState::Working, 2000), &[]).unwrap();
    store.put_task(&record(&alice, "a3", "c1", TaskState::Completed, 3000), &[]).unwrap();
    store.put_task(&record(&bob, "b1", "c1", TaskState::Completed, 4000), &[]).unwrap();

    let first = store.list_tasks(&query(&alice)).unwrap();
    assert_eq!((ids(&first), first.total), (vec!["a3", "a2"], 3));
    let mut next = query(&alice);
    next.cursor = first.next_cursor.clone();
    let second = store.list_tasks(&next).unwrap();
    assert_eq!(ids(&second), vec!["a1"]);
    assert_eq!(second.next_cursor, None);

    let mut by_ctx = query(&alice);
    by_ctx.context_id = Some("c1".into());
    assert_eq!(ids(&store.list_tasks(&by_ctx).unwrap()), vec!["a3", "a1"]);
    let mut by_state = query(&alice);
    by_state.state = Some(TaskState::Working);
    assert_eq!(ids(&store.list_tasks(&by_state).unwrap()), vec!["a2"]);
    let mut recent = query(&alice);
    recent.status_after_millis = Some(2000);
    assert_eq!(store.list_tasks(&recent).unwrap().total, 2);
    assert!(!encode_page_token(&Cursor { ts: 1, id: "x".into() }).is_empty());
}

#[test]
fn status_changes_move_index_entries_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let owner = Owner::anonymous();
    {
        let store = Arc::new(SledStore::open(dir.path()).unwrap());
        store.put_task(&record(&owner, "t1", "c", TaskState::Working, 1000), &[]).unwrap();
        assert_eq!(store.tasks_in_states(&[TaskState::Working]).unwrap().len(), 1);
        store.put_task(&record(&owner, "t1", "c", TaskState::Completed, 5000), &[]).unwrap();
        store.flush().unwrap();
    }
    let store = super::open_retrying(dir.path());
    let page = store.list_tasks(&query(&owner)).unwrap();
    assert_eq!(page.total, 1, "the old index entry was removed");
    assert_eq!(page.records[0].state(), TaskState::Completed);
    assert!(store.tasks_in_states(&[TaskState::Working]).unwrap().is_empty());
}

#[test]
fn session_history_appends_and_keeps_only_the_last_messages() {
    use crate::{ContextKey, SessionRecord};
    use a2ad_protocol::Message;
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let msg = |i: u32| Message::agent_text(format!("m{i}"), "ctx", None, "x");
    let mut session = SessionRecord::new(key.clone(), "echo");
    for turn in 0..4 {
        let appended = [msg(turn * 2), msg(turn * 2 + 1)];
        session.append(&appended, 3);
        store.put_session(&session, &appended, 3).unwrap();
    }
    let loaded = store.get_session(&key, 3).unwrap().unwrap();
    assert_eq!(loaded.message_count, 8);
    let ids: Vec<&str> = loaded.history.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids, ["m5", "m6", "m7"]);
    assert_eq!(loaded.history, session.history);
    // Whole turns past the limit go; the turn that straddles it stays (reads cut it).
    assert_eq!(store.count_session_messages().unwrap(), 4, "older turns are dropped");
    assert!(store.get_session(&ContextKey::new(Owner::anonymous(), "other"), 3).unwrap().is_none());
}

#[test]
fn the_event_log_keeps_the_last_events_in_order() {
    use a2ad_protocol::StreamResponse;
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap().with_event_retention(3);
    let owner = Owner::anonymous();
    let mut rec = record(&owner, "t1", "c", TaskState::Working, 1000);
    for seq in 1..=5u64 {
        rec.last_event_seq = seq;
        let event = LoggedEvent::encode(seq, &StreamResponse::Task(rec.task.clone()));
        store.put_task(&rec, &[event]).unwrap();
    }
    store
        .put_task(
            &record(&owner, "t10", "c", TaskState::Working, 1000),
            &[LoggedEvent::encode(1, &StreamResponse::Task(rec.task.clone()))],
        )
        .unwrap();
    let seqs = |after| {
        store.events_after(crate::Scope::Node, "t1", after, 100).unwrap().iter().map(|e| e.seq).collect::<Vec<_>>()
    };
    assert_eq!(seqs(0), vec![3, 4, 5], "only the last 3 are retained");
    assert_eq!(seqs(3), vec![4, 5]);
    assert!(seqs(5).is_empty(), "another task's log is not read");
    assert!(store.events_after(crate::Scope::Node, "t1", 0, 1).unwrap()[0].json.contains("\"task\""));
}

#[test]
fn delete_task_clears_the_record_every_index_and_the_event_log() {
    use a2ad_protocol::StreamResponse;
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let owner = Owner { tenant: "acme".into(), principal: "al".into() };
    let mut gone = record(&owner, "t1", "c", TaskState::Working, 1000);
    for seq in 1..=3u64 {
        gone.last_event_seq = seq;
        store.put_task(&gone, &[LoggedEvent::encode(seq, &StreamResponse::Task(gone.task.clone()))]).unwrap();
    }
    gone.task.status.state = TaskState::Completed;
    gone.task.status.timestamp = Some(timestamp::from_millis(2000));
    store.put_task(&gone, &[]).unwrap();
    let kept = record(&owner, "t10", "c", TaskState::Working, 3000);
    store.put_task(&kept, &[LoggedEvent::encode(1, &StreamResponse::Task(kept.task.clone()))]).unwrap();

    let removed = store.delete_task("t1").unwrap().expect("the task was there");
    assert_eq!(removed.task.id, "t1");
    assert!(store.get_task(crate::Scope::Node, "t1").unwrap().is_none());
    assert!(store.events_after(crate::Scope::Node, "t1", 0, 100).unwrap().is_empty(), "the event log is gone");
    assert_eq!(
        store.events_after(crate::Scope::Node, "t10", 0, 100).unwrap().len(),
        1,
        "a task whose id extends it keeps its log"
    );
    let page = store.list_tasks(&query(&owner)).unwrap();
    assert_eq!((ids(&page), page.total), (vec!["t10"], 1), "the by-time index");
    let mut by_ctx = query(&owner);
    by_ctx.context_id = Some("c".into());
    assert_eq!(store.list_tasks(&by_ctx).unwrap().total, 1, "the by-context index");
    assert!(store.delete_task("t1").unwrap().is_none(), "deleting twice is not an error");

    store.delete_task("t10").unwrap();
    assert!(store.tasks_in_states(&[TaskState::Working]).unwrap().is_empty(), "the active index");
    let left: Vec<_> = store.tasks.iter().keys().map(|k| k.unwrap()).filter(|k| k[0] != b'v').collect();
    assert!(left.is_empty(), "no key of either task is left, and no counter: {left:?}");
}

#[test]
fn a_session_is_forgotten_only_once_its_context_has_no_task() {
    use crate::{ContextKey, SessionRecord};
    use a2ad_protocol::Message;
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let owner = Owner::anonymous();
    let key = ContextKey::new(owner.clone(), "c");
    let mut session = SessionRecord::new(key.clone(), "echo");
    let messages = [Message::agent_text("m1".into(), "c", None, "x"), Message::agent_text("m2".into(), "c", None, "y")];
    session.append(&messages, 10);
    store.put_session(&session, &messages, 10).unwrap();
    store.put_task(&record(&owner, "t1", "c", TaskState::Completed, 1000), &[]).unwrap();

    assert!(!store.forget_session_if_unused(&key).unwrap(), "a task is left");
    assert!(store.get_session(&key, 10).unwrap().is_some());
    store.delete_task("t1").unwrap();
    assert!(store.forget_session_if_unused(&key).unwrap());
    assert!(store.get_session(&key, 10).unwrap().is_none());
    assert_eq!(store.sessions.len(), 0, "metadata and messages are gone");
    assert!(!store.forget_session_if_unused(&key).unwrap());
}

#[test]
fn visit_tasks_reports_every_owner_with_state_and_time_and_counts_add_up() {
    use a2ad_protocol::StreamResponse;
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let a = Owner { tenant: "acme".into(), principal: "al".into() };
    let b = Owner { tenant: "beta".into(), principal: "bo".into() };
    let first = record(&a, "t1", "c", TaskState::Completed, 1000);
    store.put_task(&first, &[LoggedEvent::encode(1, &StreamResponse::Task(first.task.clone()))]).unwrap();
    store.put_task(&record(&b, "t2", "d", TaskState::InputRequired, 2000), &[]).unwrap();
    let mut seen = Vec::new();
    store.visit_tasks(&mut |entry| seen.push(entry)).unwrap();
    seen.sort_by(|x, y| x.task_id.cmp(&y.task_id));
    assert_eq!(
        seen,
        vec![
            crate::TaskEntry { owner: a, task_id: "t1".into(), status_millis: 1000, state: TaskState::Completed },
            crate::TaskEntry { owner: b, task_id: "t2".into(), status_millis: 2000, state: TaskState::InputRequired },
        ]
    );
    assert_eq!(store.counts().unwrap().events, 1);
}

#[test]
fn settle_reply_writes_the_session_and_removes_the_task_together() {
    use crate::{ContextKey, SessionRecord};
    use a2ad_protocol::{Message, StreamResponse};
    let dir = tempfile::tempdir().unwrap();
    let owner = Owner { tenant: "acme".into(), principal: "al".into() };
    let key = ContextKey::new(owner.clone(), "c");
    let limit = 3;
    {
        let store = SledStore::open(dir.path()).unwrap();
        let mut session = SessionRecord::new(key.clone(), "reply");
        let earlier = [Message::agent_text("m0".into(), "c", None, "earlier")];
        session.append(&earlier, limit);
        store.put_session(&session, &earlier, limit).unwrap();
        let kept = record(&owner, "t-kept", "c", TaskState::Completed, 500);
        store.put_task(&kept, &[LoggedEvent::encode(1, &StreamResponse::Task(kept.task.clone()))]).unwrap();
        let mut reply_task = record(&owner, "t-reply", "c", TaskState::Working, 1000);
        reply_task.last_event_seq = 1;
        store.put_task(&reply_task, &[LoggedEvent::encode(1, &StreamResponse::Task(reply_task.task.clone()))]).unwrap();

        let turn =
            [Message::agent_text("m1".into(), "c", None, "hi"), Message::agent_text("m2".into(), "c", None, "answer")];
        session.append(&turn, limit);
        let removed = store.settle_reply("t-reply", &session, &turn, limit).unwrap().expect("the task was there");
        assert_eq!((removed.task.id.as_str(), removed.state()), ("t-reply", TaskState::Working));
        store.flush().unwrap();
    }
    let store = open_retrying(dir.path());
    assert!(store.get_task(crate::Scope::Node, "t-reply").unwrap().is_none(), "the task is gone");
    assert!(store.events_after(crate::Scope::Node, "t-reply", 0, 10).unwrap().is_empty(), "with its event log");
    assert!(
        store.tasks_in_states(&[TaskState::Working]).unwrap().is_empty(),
        "and its active entry: recovery has nothing to fail"
    );
    let page = store.list_tasks(&query(&owner)).unwrap();
    assert_eq!((ids(&page), page.total), (vec!["t-kept"], 1), "the by-time index");
    let mut by_ctx = query(&owner);
    by_ctx.context_id = Some("c".into());
    assert_eq!(store.list_tasks(&by_ctx).unwrap().total, 1, "the by-context index");
    let mut working = query(&owner);
    working.state = Some(TaskState::Working);
    assert_eq!(store.list_tasks(&working).unwrap().total, 0, "the per-state count");
    let mut seen = 0;
    store.visit_tasks(&mut |_| seen += 1).unwrap();
    assert_eq!(seen, 1);

    let session = store.get_session(&key, limit).unwrap().expect("the session");
    assert_eq!(session.message_count, 3);
    let texts: Vec<&str> = session.history.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(texts, ["m0", "m1", "m2"], "the session holds the message and the reply");
    assert_eq!(store.counts().unwrap(), crate::StoreCounts { events: 1, sessions: 1, session_messages: 3 });

    // Settling again (a retry, or a task already removed) still writes the session.
    let mut session = session;
    let next = [Message::agent_text("m3".into(), "c", None, "again")];
    session.append(&next, limit);
    assert!(store.settle_reply("t-reply", &session, &next, limit).unwrap().is_none());
    assert_eq!(store.get_session(&key, limit).unwrap().unwrap().message_count, 4);
    assert_eq!(store.counts().unwrap().session_messages, 3, "history is trimmed to the limit as by put_session");
}

/// A second open of a store that is open elsewhere says so, instead of sled's message.
#[test]
fn a_store_open_elsewhere_is_reported_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let first = SledStore::open(dir.path()).unwrap();
    let second = SledStore::open(dir.path()).err().expect("the second open fails");
    assert!(matches!(second, StoreError::Locked), "{second:?}");
    assert_eq!(second.to_string(), "locked by another process");
    drop(first);
    SledStore::open(dir.path()).expect("the lock goes with the first store");
}

#[test]
fn a_stale_generation_is_a_conflict_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let owner = Owner::anonymous();
    let mut newer = record(&owner, "t1", "c1", TaskState::Completed, 2000);
    newer.last_event_seq = 5;
    store.put_task(&newer, &[]).unwrap();
    store.put_task(&newer, &[]).expect("the same generation again is fine");
    let mut stale = record(&owner, "t1", "c1", TaskState::Working, 1000);
    stale.last_event_seq = 4;
    let refused = store.put_task(&stale, &[]).expect_err("a stale writer");
    assert!(matches!(refused, StoreError::Conflict { stored: 5, offered: 4, .. }), "{refused:?}");
    assert_eq!(store.get_task(crate::Scope::Node, "t1").unwrap().unwrap(), newer, "never a silent overwrite");
    assert_eq!(stored_generation(br#"{"a":1,"last_event_seq":12}"#), Some(12));
    assert_eq!(stored_generation(br#"{"a":1}"#), None);
}

/// A store made with another segment size (8 MiB, as this node made them for a while)
/// opens again with it: sled refuses another size, so a node must not ask for its default.
#[test]
fn a_store_keeps_the_segment_size_it_was_made_with() {
    let dir = tempfile::tempdir().unwrap();
    let owner = Owner::anonymous();
    {
        let old = sled::Config::new().path(dir.path()).segment_size(8 * 1024 * 1024).open().unwrap();
        old.flush().unwrap();
    }
    assert_eq!(segment_size_for(dir.path()), 8 * 1024 * 1024);
    let store = SledStore::open(dir.path()).unwrap();
    store.put_task(&record(&owner, "t1", "c1", TaskState::Completed, 1), &[]).unwrap();
    assert!(store.get_task(crate::Scope::Node, "t1").unwrap().is_some());

    let fresh = tempfile::tempdir().unwrap();
    assert_eq!(segment_size_for(fresh.path()), SEGMENT_SIZE);
    drop(SledStore::open(fresh.path()).unwrap());
    assert_eq!(segment_size_for(fresh.path()), SEGMENT_SIZE);
}

/// The owner is compared on the raw value: another owner's record is not decoded (a
/// value that would not decode reads as absent for a stranger, and as corrupt for its
/// owner), and a value written without the owner first is still checked, by decoding.
#[test]
fn a_scoped_read_compares_the_owner_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let alice = Owner { tenant: "t".into(), principal: "alice".into() };
    let bob = Owner { tenant: "t".into(), principal: "bob".into() };
    let mut value = Stamp::of(&record(&alice, "x", "c", TaskState::Working, 1)).encode().to_vec();
    value.extend_from_slice(br#"{"owner":{"tenant":"t","principal":"alice"},"agent":"#);
    store.tasks.insert(index::key(Prefix::Task, b"bad"), value).unwrap();
    assert!(store.get_task(crate::Scope::Owner(&bob), "bad").unwrap().is_none(), "never decoded");
    assert!(matches!(store.get_task(crate::Scope::Owner(&alice), "bad"), Err(StoreError::Corrupt(_))));

    // Fields in another order: no owner prefix, so the record is decoded and compared.
    let task = record(&alice, "odd", "c", TaskState::Working, 1);
    let mut value = Stamp::of(&task).encode().to_vec();
    let json = serde_json::json!({"agent": task.agent, "task": task.task, "owner": task.owner, "last_event_seq": 0});
    value.extend_from_slice(json.to_string().as_bytes());
    store.tasks.insert(index::key(Prefix::Task, b"odd"), value).unwrap();
    assert!(store.get_task(crate::Scope::Owner(&bob), "odd").unwrap().is_none());
    assert_eq!(store.get_task(crate::Scope::Owner(&alice), "odd").unwrap(), Some(task));
}

/// The log's writer thread hands the store the record's JSON from the log record
/// (`put_task_json`): what it stores is byte for byte what `put_task` stores, so the
/// owner check on raw JSON and the generation read off its end work the same.
#[test]
fn a_task_put_with_its_json_is_stored_as_put_task_stores_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let alice = Owner { tenant: "t".into(), principal: "alice".into() };
    let mut task = record(&alice, "t1", "c", TaskState::Working, 1000);
    task.last_event_seq = 3;
    let events = [LoggedEvent { seq: 3, json: "{}".into() }];
    store.put_task(&task, &events).unwrap();
    let by_put = store.tasks.get(index::key(Prefix::Task, b"t1")).unwrap().unwrap();
    store.delete_task("t1").unwrap();
    let json = serde_json::to_vec(&task).unwrap();
    store.put_task_json(&task, &json, &events, None).unwrap();
    let by_json = store.tasks.get(index::key(Prefix::Task, b"t1")).unwrap().unwrap();
    assert_eq!(by_put, by_json);
    assert_eq!(store.task_version("t1").unwrap(), Some((3, TaskState::Working)));
    assert_eq!(store.list_tasks(&query(&alice)).unwrap().total, 1, "the indexes and counters too");
}

/// A read of an unknown id unpacks a value as a found one does (see `scoped_task_bytes`):
/// the stand-in is packed, and its record starts with another owner.
#[test]
fn an_unknown_id_unpacks_a_packed_stand_in() {
    let value = unknown_owner_value();
    assert_eq!(value[Stamp::LEN], crate::sled::packed::LZ4);
    let parsed = task_value::parse(value).unwrap();
    assert!(parsed.record_json().starts_with(&UNKNOWN_OWNER[..UNKNOWN_OWNER.len() - 1]));
    assert!(serde_json::from_slice::<serde_json::Value>(parsed.record_json()).is_ok());
}
