//! The session chunks: the metadata that wins, the history limit, replay, migration.

use super::super::SledStore;
use super::{chunk_key, Prefix};
use crate::sled::store::index;
use crate::{ContextKey, Owner, SessionRecord, TaskStore, TaskStoreExt};
use a2ad_protocol::Message;

fn message(i: u64) -> Message {
    Message::agent_text(format!("m{i}"), "ctx", None, "x")
}

fn ids(session: &SessionRecord) -> Vec<String> {
    session.history.iter().map(|m| m.message_id.clone()).collect()
}

/// `turns` turns of two messages each, every one a task of its own.
fn run_turns(store: &SledStore, session: &mut SessionRecord, turns: std::ops::Range<u64>, limit: usize) {
    for turn in turns {
        let appended = [message(turn * 2), message(turn * 2 + 1)];
        session.append(&appended, limit);
        session.last_task_id = Some(format!("task-{turn}"));
        store.put_session(session, &appended, limit).unwrap();
    }
}

#[test]
fn the_newest_chunk_carries_the_metadata_and_a_later_meta_only_write_wins() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let mut session = SessionRecord::new(key.clone(), "echo");
    run_turns(&store, &mut session, 0..3, 10);
    let loaded = store.get_session(&key, 10).unwrap().unwrap();
    assert_eq!(loaded.last_task_id.as_deref(), Some("task-2"), "the `m` record is the first turn's; the chunk wins");
    assert_eq!(loaded.message_count, 6);
    assert_eq!(ids(&loaded), ["m0", "m1", "m2", "m3", "m4", "m5"]);

    session.cwd = Some("/work".into());
    store.put_session(&session, &[], 10).unwrap();
    let loaded = store.get_session(&key, 0).unwrap().unwrap();
    assert_eq!(loaded.cwd.as_deref(), Some("/work"), "a write without messages goes to `m` and wins at equal count");
    assert!(loaded.history.is_empty());
}

#[test]
fn a_replayed_write_changes_nothing_and_a_lower_limit_drops_more_turns() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let mut session = SessionRecord::new(key.clone(), "echo");
    run_turns(&store, &mut session, 0..5, 100);
    let last = [message(8), message(9)];
    store.put_session(&session, &last, 100).unwrap();
    assert_eq!(store.count_session_messages().unwrap(), 10, "the same chunk again is the same key");

    run_turns(&store, &mut session, 5..6, 3);
    assert_eq!(store.count_session_messages().unwrap(), 4, "turns wholly past the new limit go at once");
    assert_eq!(ids(&store.get_session(&key, 3).unwrap().unwrap()), ["m9", "m10", "m11"]);
    run_turns(&store, &mut session, 6..7, 0);
    assert_eq!(store.count_session_messages().unwrap(), 0, "a limit of 0 keeps no message");
    assert_eq!(store.get_session(&key, 5).unwrap().unwrap().message_count, 14);
}

#[test]
fn one_key_per_message_sessions_are_rewritten_as_chunks_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    {
        let db = sled::open(dir.path()).unwrap();
        let sessions = db.open_tree("sessions").unwrap();
        let mut meta = SessionRecord::new(key.clone(), "echo");
        meta.message_count = 3;
        meta.last_task_id = Some("old".into());
        let context = key.storage_key();
        sessions.insert(index::key(Prefix::SessionMeta, &context), serde_json::to_vec(&meta).unwrap()).unwrap();
        for seq in 0..3u64 {
            let mut k = index::key(Prefix::SessionMessage, &context);
            k.extend_from_slice(&seq.to_be_bytes());
            sessions.insert(k, serde_json::to_vec(&message(seq)).unwrap()).unwrap();
        }
        db.flush().unwrap();
    }
    let store = super::super::open_retrying(dir.path());
    assert_eq!(super::super::migrations::tests::stored_version(&store), super::super::migrations::FORMAT_VERSION);
    assert!(store.sessions.scan_prefix([Prefix::SessionMessage as u8]).next().is_none());
    assert!(store.sessions.contains_key(chunk_key(&key.storage_key(), 2, 1)).unwrap());
    let loaded = store.get_session(&key, 2).unwrap().unwrap();
    assert_eq!((loaded.message_count, loaded.last_task_id.as_deref()), (3, Some("old")));
    assert_eq!(ids(&loaded), ["m1", "m2"]);

    let mut session = loaded;
    run_turns(&store, &mut session, 2..3, 2);
    assert_eq!(ids(&store.get_session(&key, 2).unwrap().unwrap()), ["m4", "m5"]);
    assert_eq!(store.count_session_messages().unwrap(), 2, "the migrated one-message chunks expire like any other");
}

/// Past a large limit, the oldest chunks go every few turns, not every turn: the store
/// holds at most an eighth of the limit (and one turn) more, and reads still cut it.
#[test]
fn past_the_limit_chunks_are_pruned_every_few_turns_within_an_eighth_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let mut session = SessionRecord::new(key.clone(), "echo");
    let limit = 200;
    let (mut most, mut prunes, mut held) = (0, 0, 0);
    for turn in 0..500 {
        run_turns(&store, &mut session, turn..turn + 1, limit);
        let stored = store.count_session_messages().unwrap();
        if stored < held {
            prunes += 1;
        }
        (most, held) = (most.max(stored), stored);
        assert!(stored >= (session.message_count).min(limit as u64), "never fewer than the limit");
    }
    assert!(most <= (limit + limit / 8 + 2) as u64, "at most an eighth more: {most}");
    assert!((30..=50).contains(&prunes), "about once per 12.5 turns past the limit: {prunes}");
    let loaded = store.get_session(&key, limit).unwrap().unwrap();
    assert_eq!(loaded.history.len(), limit, "reads cut to the limit");
    assert_eq!(loaded.history.front().unwrap().message_id, "m800");
}

/// Task `id` of context "ctx" with `history`, as the step that ends a turn writes it.
fn task_with(id: &str, history: &[Message], generation: u64) -> crate::TaskRecord {
    let mut task: a2ad_protocol::Task = serde_json::from_value(
        serde_json::json!({"id": id, "contextId": "ctx", "status": {"state": "TASK_STATE_COMPLETED"}}),
    )
    .unwrap();
    task.history = history.to_vec();
    crate::TaskRecord { owner: Owner::anonymous(), agent: "echo".into(), task, last_event_seq: generation }
}

/// One turn's step: the task, then the session's chunk for `appended` (as the log's
/// applier and the store's own commit write them).
fn end_turn(store: &SledStore, session: &mut SessionRecord, task: &crate::TaskRecord, appended: &[Message]) {
    session.append(appended, 100);
    session.last_task_id = Some(task.task.id.clone());
    store.put_task(task, &[]).unwrap();
    let write = crate::SessionWrite { session, appended, history_limit: 100 };
    store.put_turn_session(write, task).unwrap();
}

fn chunk_value(store: &SledStore, key: &ContextKey, first: u64, count: u32) -> sled::IVec {
    store.sessions.get(chunk_key(&key.storage_key(), first, count)).unwrap().expect("the chunk")
}

/// One turn of context "ctx", task a with messages m0 and m1.
fn one_turn(store: &SledStore) -> (ContextKey, SessionRecord, Vec<Message>) {
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let mut session = SessionRecord::new(key.clone(), "echo");
    let m: Vec<Message> = (0..2).map(message).collect();
    end_turn(store, &mut session, &task_with("a", &m, 1), &m);
    (key, session, m)
}

/// Three turns of context "ctx": task a, task b, then task a resumed; messages m0..m5.
fn three_turns_in_two_tasks(store: &SledStore) -> ContextKey {
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let mut session = SessionRecord::new(key.clone(), "echo");
    let m: Vec<Message> = (0..6).map(message).collect();
    end_turn(store, &mut session, &task_with("a", &m[0..2], 1), &m[0..2]);
    end_turn(store, &mut session, &task_with("b", &m[2..4], 1), &m[2..4]);
    let resumed = task_with("a", &[m[0].clone(), m[1].clone(), m[4].clone(), m[5].clone()], 2);
    end_turn(store, &mut session, &resumed, &m[4..6]);
    key
}

/// Issue 35: a turn that ends with its task stores no second copy of its messages, and
/// a session read (an evicted context coming back) finds them in the tasks, across a task
/// resumed over several turns.
#[test]
fn a_turn_that_ends_with_its_task_references_the_tasks_messages() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = three_turns_in_two_tasks(&store);

    for (first, count) in [(0, 2), (2, 2), (4, 2)] {
        assert_eq!(chunk_value(&store, &key, first, count)[0], super::TASK_REF, "chunk {first} is a reference");
    }
    assert_eq!(chunk_value(&store, &key, 4, 2).len(), 5 + 1, "tag, position, task id");
    let loaded = store.get_session(&key, 100).unwrap().unwrap();
    assert_eq!(ids(&loaded), ["m0", "m1", "m2", "m3", "m4", "m5"]);
    assert_eq!((loaded.message_count, loaded.last_task_id.as_deref()), (6, Some("a")));
    assert_eq!(ids(&store.get_session(&key, 3).unwrap().unwrap()), ["m3", "m4", "m5"], "the limit cuts as before");
}

/// Removing a task (retention, a deletion) first rewrites the chunks that reference it
/// as chunks holding its messages: a session loses nothing to a removal, as before
/// chunks referenced tasks. A chunk whose task is gone anyway (damage) reads as no
/// messages, with the metadata intact.
#[test]
fn a_removed_task_leaves_its_messages_in_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = three_turns_in_two_tasks(&store);
    store.delete_task("a").unwrap();
    for (first, count) in [(0, 2), (4, 2)] {
        assert_ne!(chunk_value(&store, &key, first, count)[0], super::TASK_REF, "chunk {first} holds its messages");
    }
    assert_eq!(chunk_value(&store, &key, 2, 2)[0], super::TASK_REF, "task b's chunk still references it");
    let loaded = store.get_session(&key, 100).unwrap().unwrap();
    assert_eq!(ids(&loaded), ["m0", "m1", "m2", "m3", "m4", "m5"]);
    assert_eq!((loaded.message_count, loaded.last_task_id.as_deref()), (6, Some("a")));

    store.tasks.remove(index::key(Prefix::Task, b"b")).unwrap();
    let loaded = store.get_session(&key, 100).unwrap().unwrap();
    assert_eq!(ids(&loaded), ["m0", "m1", "m4", "m5"], "a lost task's turn reads as no messages");
}

/// A turn whose messages are not the end of its task's history (or whose session names
/// another task as the latest) keeps them in its chunk, as before.
#[test]
fn a_turn_whose_messages_are_not_its_tasks_history_keeps_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let mut session = SessionRecord::new(key.clone(), "echo");
    let m: Vec<Message> = (0..4).map(message).collect();
    end_turn(&store, &mut session, &task_with("a", &m[0..1], 1), &m[0..2]);
    let other = task_with("b", &m[2..4], 1);
    session.append(&m[2..4], 100);
    store.put_task(&other, &[]).unwrap();
    let write = crate::SessionWrite { session: &session, appended: &m[2..4], history_limit: 100 };
    store.put_turn_session(write, &other).unwrap();
    assert_ne!(chunk_value(&store, &key, 0, 2)[0], super::TASK_REF, "m1 is not in task a's history");
    assert_ne!(chunk_value(&store, &key, 2, 2)[0], super::TASK_REF, "the session's latest task is still a");
    assert_eq!(ids(&store.get_session(&key, 100).unwrap().unwrap()), ["m0", "m1", "m2", "m3"]);
}

/// A damaged reference, or one past its task's history, is corrupt data, never other
/// messages; a reference to another context's task reads as a removed task.
#[test]
fn a_damaged_or_foreign_reference_is_never_read_as_messages() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (key, _, m) = one_turn(&store);
    let chunk = chunk_key(&key.storage_key(), 0, 2);
    for (value, why) in [(vec![super::TASK_REF, 0], "cut short"), (super::encode_ref(1, "a"), "past the history")] {
        store.sessions.insert(&chunk, value).unwrap();
        let err = store.get_session(&key, 100).unwrap_err();
        assert!(
            matches!(err, crate::StoreError::Corrupt(ref what) if what.starts_with("session chunk")),
            "{why}: {err:?}"
        );
    }
    let mut foreign = task_with("x", &m, 1);
    foreign.owner = Owner::tenant_wide("other");
    store.put_task(&foreign, &[]).unwrap();
    store.sessions.insert(&chunk, super::encode_ref(0, "x")).unwrap();
    assert!(store.get_session(&key, 100).unwrap().unwrap().history.is_empty());
}

/// A session read that found a reference, then its task gone (a removal ran on the log's
/// thread in between), reads the chunk again and finds the messages the removal put back.
#[test]
fn a_read_that_races_a_removal_finds_the_messages_in_the_rewritten_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (key, session, m) = one_turn(&store);
    let chunk = chunk_key(&key.storage_key(), 0, 2);
    let read_before_the_removal = store.sessions.get(&chunk).unwrap().unwrap();
    store.delete_task("a").unwrap();
    let meta = SessionRecord { history: Default::default(), ..session.clone() };
    let (after, messages) =
        store.referenced_turn(&meta, &chunk, &read_before_the_removal, &mut Default::default()).unwrap();
    assert_eq!(messages, m);
    assert_eq!(after.map(|a| (a.message_count, a.last_task_id)), Some((2, Some("a".to_owned()))));
}

/// A damaged reference in the context never holds up a removal (which would stay at the
/// head of the log's queue): it is left as it is, and the task goes.
#[test]
fn a_damaged_reference_does_not_stop_a_removal() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = three_turns_in_two_tasks(&store);
    store.sessions.insert(chunk_key(&key.storage_key(), 0, 2), super::encode_ref(7, "a")).unwrap();
    store.sessions.insert(chunk_key(&key.storage_key(), 9, 1), vec![super::TASK_REF, 0]).unwrap();
    assert!(store.delete_task("a").unwrap().is_some(), "the task went");
    assert_eq!(chunk_value(&store, &key, 0, 2).as_ref(), super::encode_ref(7, "a").as_slice(), "left as it was");
}
