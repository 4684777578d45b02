//! The event log's two homes: the events a task's value carries and the keys they move to.

use super::index::{self, Prefix, Stamp};
use super::tests::record;
use super::SledStore;
use crate::TaskStoreExt;
use crate::{LoggedEvent, Owner, Scope, TaskRecord, TaskStore};
use a2ad_protocol::{StreamResponse, TaskState};

fn event(record: &TaskRecord, seq: u64) -> LoggedEvent {
    LoggedEvent::encode(seq, &StreamResponse::Task(record.task.clone()))
}

/// A task written with one event per step, steps `1..=steps`.
fn stepped(store: &SledStore, id: &str, steps: u64) -> TaskRecord {
    let mut rec = record(&Owner::anonymous(), id, "c", TaskState::Working, 1000);
    for seq in 1..=steps {
        rec.last_event_seq = seq;
        store.put_task(&rec, &[event(&rec, seq)]).unwrap();
    }
    rec
}

fn seqs(store: &SledStore, id: &str, after: u64, limit: usize) -> Vec<u64> {
    store.events_after(Scope::Node, id, after, limit).unwrap().iter().map(|e| e.seq).collect()
}

/// The sequence numbers of the task's event keys (the events it does not carry).
fn keyed(store: &SledStore, id: &str) -> Vec<u64> {
    let prefix = index::event_prefix(id);
    store
        .tasks
        .scan_prefix(&prefix)
        .map(|entry| u64::from_be_bytes(entry.unwrap().0[prefix.len()..].try_into().unwrap()))
        .collect()
}

#[test]
fn a_steps_events_ride_in_its_record_until_the_next_step_moves_them_to_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let rec = stepped(&store, "t1", 1);
    assert!(keyed(&store, "t1").is_empty(), "one step: the record carries its event");
    assert_eq!(seqs(&store, "t1", 0, 10), vec![1]);

    let mut rec = rec;
    rec.last_event_seq = 3;
    store.put_task(&rec, &[event(&rec, 2), event(&rec, 3)]).unwrap();
    assert_eq!(keyed(&store, "t1"), vec![1], "the next step moved it");
    assert_eq!(seqs(&store, "t1", 0, 10), vec![1, 2, 3]);
    assert_eq!(seqs(&store, "t1", 1, 10), vec![2, 3]);
    assert_eq!(seqs(&store, "t1", 2, 10), vec![3]);
    assert_eq!(seqs(&store, "t1", 0, 2), vec![1, 2], "the limit counts both");
    assert_eq!(store.events_after(Scope::Node, "t1", 2, 10).unwrap()[0], event(&rec, 3), "byte for byte");
    assert_eq!(store.counts().unwrap().events, 3);

    rec.task.status.state = TaskState::Completed;
    store.put_task(&rec, &[]).unwrap();
    assert_eq!(
        (keyed(&store, "t1"), seqs(&store, "t1", 0, 10)),
        (vec![1], vec![1, 2, 3]),
        "a step without events keeps them"
    );

    store.delete_task("t1").unwrap();
    assert!(seqs(&store, "t1", 0, 10).is_empty() && keyed(&store, "t1").is_empty());
    assert_eq!(store.counts().unwrap().events, 0);
}

/// Replay applies a durable step again: over the old record when a crash cut the step
/// short, or over its own record when it had been applied whole. Neither loses or doubles
/// an event.
#[test]
fn a_step_applied_again_neither_loses_nor_doubles_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open_behind_log(dir.path()).unwrap();
    let mut rec = stepped(&store, "t1", 2);
    store.put_task(&rec, &[event(&rec, 2)]).unwrap();
    assert_eq!((keyed(&store, "t1"), seqs(&store, "t1", 0, 10)), (vec![1], vec![1, 2]), "applied whole, again");

    // Cut short: step 3 moved event 2 to its key, and the crash came before its record.
    store.tasks.insert(index::event_key("t1", 2), event(&rec, 2).json.as_bytes()).unwrap();
    assert_eq!(seqs(&store, "t1", 0, 10), vec![1, 2], "carried and keyed, read once");
    rec.last_event_seq = 3;
    store.put_task(&rec, &[event(&rec, 3)]).unwrap();
    assert_eq!((keyed(&store, "t1"), seqs(&store, "t1", 0, 10)), (vec![1, 2], vec![1, 2, 3]));
}

#[test]
fn many_or_large_events_go_to_keys_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let mut rec = stepped(&store, "t1", 1);
    rec.last_event_seq = 21;
    let burst: Vec<LoggedEvent> = (2..=21).map(|seq| event(&rec, seq)).collect();
    store.put_task(&rec, &burst).unwrap();
    assert_eq!(keyed(&store, "t1"), (1..=21).collect::<Vec<_>>());
    assert_eq!(seqs(&store, "t1", 0, 100), (1..=21).collect::<Vec<_>>());

    let mut big = record(&Owner::anonymous(), "t2", "c", TaskState::Working, 1000);
    big.task.metadata = Some(serde_json::json!({ "blob": "x".repeat(20_000) }).as_object().unwrap().clone());
    big.last_event_seq = 1;
    store.put_task(&big, &[event(&big, 1)]).unwrap();
    assert_eq!(keyed(&store, "t2"), vec![1], "a 20 KB event is not copied with its record");
}

#[test]
fn retention_counts_carried_events_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap().with_event_retention(3);
    let mut rec = stepped(&store, "t1", 1);
    rec.last_event_seq = 6;
    let five: Vec<LoggedEvent> = (2..=6).map(|seq| event(&rec, seq)).collect();
    store.put_task(&rec, &five).unwrap();
    assert_eq!(seqs(&store, "t1", 0, 100), vec![4, 5, 6], "the carried event 1 is past retention, not moved");
    assert!(keyed(&store, "t1").is_empty(), "the step carries its retained events");
}

/// Stores written before carried events hold the record's JSON right after the stamp and
/// every event as a key; they read as before, and their next step carries its events.
#[test]
fn a_store_from_before_carried_events_reads_and_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let mut rec = record(&Owner::anonymous(), "t1", "c", TaskState::Working, 1000);
    rec.last_event_seq = 1;
    store.put_task(&rec, &[]).unwrap();
    let mut old_value = Stamp::of(&rec).encode().to_vec();
    old_value.extend_from_slice(&serde_json::to_vec(&rec).unwrap());
    store.tasks.insert(index::key(Prefix::Task, b"t1"), old_value).unwrap();
    store.tasks.insert(index::event_key("t1", 1), event(&rec, 1).json.as_bytes()).unwrap();
    assert_eq!(store.get_task(Scope::Node, "t1").unwrap(), Some(rec.clone()));
    assert_eq!(store.task_version("t1").unwrap(), Some((1, TaskState::Working)));
    assert_eq!(seqs(&store, "t1", 0, 10), vec![1]);

    rec.last_event_seq = 2;
    store.put_task(&rec, &[event(&rec, 2)]).unwrap();
    assert_eq!((keyed(&store, "t1"), seqs(&store, "t1", 0, 10)), (vec![1], vec![1, 2]));
    assert_eq!(store.task_version("t1").unwrap(), Some((2, TaskState::Working)), "read off the carrying value");
}

#[test]
fn another_owners_events_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    stepped(&store, "t1", 2);
    let stranger = Owner { tenant: "other".into(), principal: "eve".into() };
    assert!(store.events_after(Scope::Owner(&stranger), "t1", 0, 10).unwrap().is_empty());
    assert_eq!(store.events_after(Scope::Owner(&Owner::anonymous()), "t1", 0, 10).unwrap().len(), 2);
}
