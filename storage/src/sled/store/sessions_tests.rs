//! The session chunks: the metadata that wins, the history limit, replay, migration.

use super::super::task_index::Indexed;
use super::super::task_value::HeldTurn;
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

/// One turn's step: the task, then the session's write for `appended`, as the store's own
/// commit (and the log's applier) writes them.
fn end_turn(store: &SledStore, session: &mut SessionRecord, task: &crate::TaskRecord, appended: &[Message]) {
    session.append(appended, 100);
    session.last_task_id = Some(task.task.id.clone());
    let write = crate::SessionWrite { session, appended, history_limit: 100 };
    store.put_step_with_session(task, &[], Vec::new(), write).unwrap();
}

fn chunk(store: &SledStore, key: &ContextKey, first: u64, count: u32) -> Option<sled::IVec> {
    store.sessions.get(chunk_key(&key.storage_key(), first, count)).unwrap()
}

/// The turns the store's index holds for `key`: (first, count, task id).
fn held(store: &SledStore, key: &ContextKey) -> Vec<(u64, u32, String)> {
    let turns = store.index.turns_of(&key.storage_key());
    turns.into_iter().map(|(first, turn)| (first, turn.count, turn.task_id.to_string())).collect()
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

fn held_by_two_tasks() -> Vec<(u64, u32, String)> {
    vec![(0, 2, "a".to_owned()), (2, 2, "b".to_owned()), (4, 2, "a".to_owned())]
}

/// Issue 35: a turn that ends with its task writes no chunk at all; its task's value lists
/// it, and a session read (an evicted context coming back) finds the messages in the
/// tasks, across a task resumed over several turns, before and after the store reopens.
#[test]
fn a_turn_that_ends_with_its_task_is_held_by_the_task_and_writes_no_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let key = {
        let store = SledStore::open(dir.path()).unwrap();
        let key = three_turns_in_two_tasks(&store);
        for (first, count) in [(0, 2), (2, 2), (4, 2)] {
            assert!(chunk(&store, &key, first, count).is_none(), "turn {first} has no chunk");
        }
        assert_eq!(held(&store, &key), held_by_two_tasks());
        store.flush().unwrap();
        key
    };
    let store = super::super::open_retrying(dir.path());
    assert_eq!(held(&store, &key), held_by_two_tasks(), "built again from the task values");
    let loaded = store.get_session(&key, 100).unwrap().unwrap();
    assert_eq!(ids(&loaded), ["m0", "m1", "m2", "m3", "m4", "m5"]);
    assert_eq!((loaded.message_count, loaded.last_task_id.as_deref()), (6, Some("a")));
    assert_eq!(ids(&store.get_session(&key, 3).unwrap().unwrap()), ["m3", "m4", "m5"], "the limit cuts as before");
}

/// Removing a task (retention, a deletion) first writes the turns it holds as chunks
/// holding their messages: a session loses nothing to a removal. A held turn whose task
/// is gone anyway (damage) reads as no messages, with the metadata intact.
#[test]
fn a_removed_task_leaves_its_messages_in_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = three_turns_in_two_tasks(&store);
    store.delete_task("a").unwrap();
    for (first, count) in [(0, 2), (4, 2)] {
        assert!(chunk(&store, &key, first, count).is_some(), "turn {first} is a chunk now");
    }
    assert_eq!(held(&store, &key), [(2, 2, "b".to_owned())], "task b still holds its turn");
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
    let write = crate::SessionWrite { session: &session, appended: &m[2..4], history_limit: 100 };
    store.put_step_with_session(&other, &[], Vec::new(), write).unwrap();
    assert!(chunk(&store, &key, 0, 2).is_some(), "m1 is not in task a's history");
    assert!(chunk(&store, &key, 2, 2).is_some(), "the session's latest task is still a");
    assert!(held(&store, &key).is_empty());
    assert_eq!(ids(&store.get_session(&key, 100).unwrap().unwrap()), ["m0", "m1", "m2", "m3"]);
}

/// A held turn past its task's history is corrupt data, never other messages; a turn
/// held by another context's task reads as a removed task.
#[test]
fn a_damaged_or_foreign_held_turn_is_never_read_as_messages() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (key, _, m) = one_turn(&store);
    let task = |id: &'static str| Indexed { owner: &key.owner, context_id: "ctx", task_id: id, stamp: stamp() };
    store.index.hold_turn(&task("a"), HeldTurn { first: 0, count: 2, from: 1 });
    let err = store.get_session(&key, 100).unwrap_err();
    assert!(matches!(err, crate::StoreError::Corrupt(ref what) if what.starts_with("session chunk")), "{err:?}");

    let mut foreign = task_with("x", &m, 1);
    foreign.owner = Owner::tenant_wide("other");
    store.put_task(&foreign, &[]).unwrap();
    store.index.hold_turn(&task("x"), HeldTurn { first: 0, count: 2, from: 0 });
    assert!(store.get_session(&key, 100).unwrap().unwrap().history.is_empty());
}

fn stamp() -> super::super::Stamp {
    super::super::Stamp { millis: 1, state: 3 }
}

/// A session read that took the held turns, then found their task gone (a removal ran on
/// the log's thread in between), reads the chunk the removal wrote first.
#[test]
fn a_read_that_races_a_removal_finds_the_messages_in_the_chunk_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let (key, session, m) = one_turn(&store);
    let taken_before_the_removal = store.index.turns_of(&key.storage_key());
    store.delete_task("a").unwrap();
    let meta = SessionRecord { history: Default::default(), ..session.clone() };
    let (first, turn) = &taken_before_the_removal[0];
    let (after, messages) =
        store.read_held_turn(&meta, &key.storage_key(), *first, turn, &mut Default::default()).unwrap();
    assert_eq!(messages, m);
    assert_eq!(after.map(|a| (a.message_count, a.last_task_id)), Some((2, Some("a".to_owned()))));
}

/// A damaged session record never holds up a removal (which would stay at the head of
/// the log's queue): the task goes, and its turns with it.
#[test]
fn a_damaged_session_record_does_not_stop_a_removal() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = three_turns_in_two_tasks(&store);
    store.sessions.insert(index::key(Prefix::SessionMeta, &key.storage_key()), b"{".to_vec()).unwrap();
    assert!(store.delete_task("a").unwrap().is_some(), "the task went");
    assert_eq!(held(&store, &key), [(2, 2, "b".to_owned())]);
}

/// A store of format 5 kept a chunk per turn, referencing its task: the migration writes
/// their messages into them, and drops those that could not be read (they read as none).
#[test]
fn format_5_references_are_resolved_into_chunks_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let m: Vec<Message> = (0..4).map(message).collect();
    {
        let store = SledStore::open(dir.path()).unwrap();
        let mut session = SessionRecord::new(key.clone(), "echo");
        session.append(&m[0..2], 100);
        session.last_task_id = Some("a".into());
        store.put_session(&session, &[], 100).unwrap();
        store.put_task(&task_with("a", &m[0..2], 1), &[]).unwrap();
        let context = key.storage_key();
        let reference = |from: u32, task: &str| [&[super::TASK_REF][..], &from.to_be_bytes(), task.as_bytes()].concat();
        store.sessions.insert(chunk_key(&context, 0, 2), reference(0, "a")).unwrap();
        store.sessions.insert(chunk_key(&context, 2, 2), reference(0, "gone")).unwrap();
        store.db.insert("format", &5u32.to_be_bytes()).unwrap();
        store.flush().unwrap();
    }
    let store = super::super::open_retrying(dir.path());
    assert_ne!(chunk(&store, &key, 0, 2).unwrap()[0], super::TASK_REF, "it holds its messages");
    assert!(chunk(&store, &key, 2, 2).is_none(), "its task was gone: it read as no messages");
    let loaded = store.get_session(&key, 100).unwrap().unwrap();
    assert_eq!(ids(&loaded), ["m0", "m1"]);
    assert_eq!((loaded.message_count, loaded.last_task_id.as_deref()), (2, Some("a")));
}

/// A pruning drops held turns from the index, and `P` keeps them out of the index built at
/// the next open, though the task values still list them: a removal after a restart writes
/// no chunk for a turn past the limit.
#[test]
fn pruned_held_turns_stay_dropped_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    {
        let store = SledStore::open(dir.path()).unwrap();
        let mut session = SessionRecord::new(key.clone(), "echo");
        for turn in 0..40u64 {
            let m = [message(turn * 2), message(turn * 2 + 1)];
            session.append(&m, 16);
            session.last_task_id = Some(format!("t{turn}"));
            let write = crate::SessionWrite { session: &session, appended: &m, history_limit: 16 };
            store.put_step_with_session(&task_with(&format!("t{turn}"), &m, 1), &[], Vec::new(), write).unwrap();
        }
        assert!(held(&store, &key).len() <= 9, "{:?}", held(&store, &key));
        store.flush().unwrap();
    }
    let store = super::super::open_retrying(dir.path());
    let turns = held(&store, &key);
    assert!(turns.len() <= 9 && turns.iter().all(|(first, ..)| *first >= 62), "{turns:?}");
    store.delete_task("t0").unwrap();
    assert!(chunk(&store, &key, 0, 2).is_none(), "a turn past the limit is not written back");
    let loaded = store.get_session(&key, 16).unwrap().unwrap();
    assert_eq!(loaded.history.front().unwrap().message_id, "m64");
}

/// A read stops at the limit even when a gap (a failed step's messages, counted but never
/// stored) leaves fewer messages after it: what it returns does not depend on when the
/// store last pruned, or reopened.
#[test]
fn a_read_stops_at_the_limit_across_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let mut session = SessionRecord::new(key.clone(), "echo");
    let m: Vec<Message> = (0..10).map(message).collect();
    for (turn, range) in [(0, 0..2), (1, 2..4), (2, 4..6)] {
        let appended = &m[range];
        session.append(appended, 100);
        session.last_task_id = Some(format!("t{turn}"));
        let write = crate::SessionWrite { session: &session, appended, history_limit: 100 };
        store.put_step_with_session(&task_with(&format!("t{turn}"), appended, 1), &[], Vec::new(), write).unwrap();
    }
    session.append(&m[6..8], 100); // A step that failed: counted, never stored.
    session.append(&m[8..10], 100);
    session.last_task_id = Some("t4".into());
    let write = crate::SessionWrite { session: &session, appended: &m[8..10], history_limit: 100 };
    store.put_step_with_session(&task_with("t4", &m[8..10], 1), &[], Vec::new(), write).unwrap();
    assert_eq!(
        ids(&store.get_session(&key, 4).unwrap().unwrap()),
        ["m8", "m9"],
        "m6 and m7 are lost, m4 and m5 too old"
    );
    assert_eq!(ids(&store.get_session(&key, 6).unwrap().unwrap()), ["m4", "m5", "m8", "m9"]);
}
