//! The task indexes and counters in memory (`task_index.rs`): kept in step by writes and
//! removals, equal to what a scan counts, built again from the task values at open, and
//! the old stored indexes removed by the migration to format 6.

use super::tests::record;
use super::SledStore;
use crate::TaskStoreExt;
use crate::{Owner, TaskQuery, TaskStore};
use a2ad_protocol::TaskState;
use std::sync::Arc;

fn query(owner: &Owner, context: Option<&str>, state: Option<TaskState>) -> TaskQuery {
    TaskQuery {
        owner: owner.clone(),
        context_id: context.map(str::to_owned),
        state,
        status_after_millis: None,
        page_size: 1,
        cursor: None,
    }
}

/// The total as the store answers it (from a counter where one answers) and as a walk of
/// every page finds it.
fn totals(store: &SledStore, query: &TaskQuery) -> (usize, usize) {
    let total = store.list_tasks(query).unwrap().total;
    let mut paged = query.clone();
    paged.page_size = 7;
    let mut seen = 0;
    loop {
        let page = store.list_tasks(&paged).unwrap();
        seen += page.records.len();
        match page.next_cursor {
            Some(cursor) => paged.cursor = Some(cursor),
            None => return (total, seen),
        }
    }
}

fn assert_total(store: &SledStore, query: &TaskQuery, expected: usize) {
    assert_eq!(totals(store, query), (expected, expected), "{query:?}");
}

#[test]
fn counts_follow_puts_overwrites_state_changes_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let al = Owner { tenant: "acme".into(), principal: "al".into() };
    let bo = Owner { tenant: "beta".into(), principal: "bo".into() };
    store.put_task(&record(&al, "t1", "c1", TaskState::Working, 1000), &[]).unwrap();
    store.put_task(&record(&al, "t2", "c1", TaskState::Working, 1001), &[]).unwrap();
    store.put_task(&record(&al, "t3", "c2", TaskState::Completed, 1002), &[]).unwrap();
    store.put_task(&record(&bo, "t4", "c1", TaskState::Working, 1003), &[]).unwrap();
    assert_total(&store, &query(&al, None, None), 3);
    assert_total(&store, &query(&al, None, Some(TaskState::Working)), 2);
    assert_total(&store, &query(&al, Some("c1"), None), 2);
    assert_total(&store, &query(&bo, None, None), 1);

    // The same state again, at a later time: nothing moves.
    store.put_task(&record(&al, "t1", "c1", TaskState::Working, 1500), &[]).unwrap();
    assert_total(&store, &query(&al, None, None), 3);
    assert_total(&store, &query(&al, None, Some(TaskState::Working)), 2);
    // A state change moves one task between state counters only.
    store.put_task(&record(&al, "t1", "c1", TaskState::Completed, 2000), &[]).unwrap();
    assert_total(&store, &query(&al, None, Some(TaskState::Working)), 1);
    assert_total(&store, &query(&al, None, Some(TaskState::Completed)), 2);
    assert_total(&store, &query(&al, None, None), 3);
    assert_total(&store, &query(&al, Some("c1"), None), 2);
    assert_total(&store, &query(&al, Some("c1"), Some(TaskState::Completed)), 1);
    assert_eq!(store.tasks_in_states(&[TaskState::Working]).unwrap().len(), 2, "t2 and bo's t4");

    store.delete_task("t1").unwrap();
    store.delete_task("t1").unwrap(); // Twice: counted once.
    assert_total(&store, &query(&al, None, None), 2);
    assert_total(&store, &query(&al, None, Some(TaskState::Completed)), 1);
    assert_total(&store, &query(&al, Some("c1"), None), 1);
    assert_total(&store, &query(&bo, Some("c1"), None), 1);
    for id in ["t2", "t3"] {
        store.delete_task(id).unwrap();
    }
    assert_total(&store, &query(&al, None, None), 0);
    assert_total(&store, &query(&al, Some("c1"), None), 0);
    let mut visited = Vec::new();
    store.visit_tasks(&mut |entry| visited.push((entry.owner, entry.task_id, entry.state))).unwrap();
    assert_eq!(visited, [(bo, "t4".to_owned(), TaskState::Working)]);
}

/// Nothing of the index is on disk: reopened, the store finds it all again in its task
/// values, and a store of format 5 loses the index keys it kept in sled.
#[test]
fn the_index_is_built_again_at_open_and_old_stored_indexes_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let al = Owner { tenant: "acme".into(), principal: "al".into() };
    {
        let store = SledStore::open(dir.path()).unwrap();
        for i in 0..5 {
            let state = if i % 2 == 0 { TaskState::Completed } else { TaskState::Working };
            store.put_task(&record(&al, &format!("t{i}"), &format!("c{}", i % 2), state, 1000 + i), &[]).unwrap();
        }
        // What a store of format 5 also held: index, active and counter keys.
        for stale in [&b"s-stale"[..], b"c-stale", b"a-stale", b"n-stale"] {
            store.tasks.insert(stale, &[1]).unwrap();
        }
        store.db.insert("format", &5u32.to_be_bytes()).unwrap();
        store.flush().unwrap();
    }
    let store = super::open_retrying(dir.path());
    assert_total(&store, &query(&al, None, None), 5);
    assert_total(&store, &query(&al, None, Some(TaskState::Completed)), 3);
    assert_total(&store, &query(&al, None, Some(TaskState::Working)), 2);
    assert_total(&store, &query(&al, Some("c0"), None), 3);
    assert_total(&store, &query(&al, Some("c1"), None), 2);
    let mut active: Vec<String> =
        store.tasks_in_states(&[TaskState::Working]).unwrap().into_iter().map(|r| r.task.id).collect();
    active.sort();
    assert_eq!(active, ["t1", "t3"]);
    let keys: Vec<u8> = store.tasks.iter().keys().map(|key| key.unwrap()[0]).collect();
    assert!(keys.iter().all(|first| *first == b't'), "only task values are left: {keys:?}");
    assert_eq!(super::migrations::tests::stored_version(&store), super::migrations::FORMAT_VERSION);
}

#[test]
fn concurrent_writers_of_one_owner_lose_no_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open_behind_log(dir.path()).unwrap());
    let owner = Owner { tenant: "acme".into(), principal: "al".into() };
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (store, owner) = (store.clone(), owner.clone());
            std::thread::spawn(move || {
                for i in 0..50 {
                    let (id, ctx) = (format!("w{w}-{i}"), format!("ctx{w}"));
                    store.put_task(&record(&owner, &id, &ctx, TaskState::Working, 1000 + i), &[]).unwrap();
                    store.put_task(&record(&owner, &id, &ctx, TaskState::Completed, 2000 + i), &[]).unwrap();
                    if i % 5 == 0 {
                        store.delete_task(&id).unwrap();
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    assert_total(&store, &query(&owner, None, None), 160);
    assert_total(&store, &query(&owner, None, Some(TaskState::Completed)), 160);
    assert_total(&store, &query(&owner, None, Some(TaskState::Working)), 0);
    assert_total(&store, &query(&owner, Some("ctx2"), None), 40);
}

#[test]
fn pages_seek_to_the_cursor_and_filters_that_no_counter_answers_still_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let owner = Owner::anonymous();
    for i in 0..10i64 {
        let state = if i % 3 == 0 { TaskState::Failed } else { TaskState::Completed };
        store.put_task(&record(&owner, &format!("t{i:02}"), "c", state, 1000 + i), &[]).unwrap();
    }
    let mut q = query(&owner, None, Some(TaskState::Completed));
    q.page_size = 4;
    let mut seen = Vec::new();
    loop {
        let page = store.list_tasks(&q).unwrap();
        assert_eq!(page.total, 6);
        seen.extend(page.records.iter().map(|r| r.task.id.clone()));
        match page.next_cursor {
            Some(cursor) => q.cursor = Some(cursor),
            None => break,
        }
    }
    assert_eq!(seen, ["t08", "t07", "t05", "t04", "t02", "t01"]);

    let mut recent = query(&owner, Some("c"), Some(TaskState::Failed));
    recent.status_after_millis = Some(1003);
    recent.page_size = 10;
    let page = store.list_tasks(&recent).unwrap();
    assert_eq!((page.records.len(), page.total, page.next_cursor), (3, 3, None), "t03, t06, t09");
}

/// A value that cannot be read is left out of the index, and a later write of that task
/// counts it once.
#[test]
fn an_unreadable_value_is_left_out_and_counted_once_when_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let owner = Owner::anonymous();
    {
        let store = SledStore::open(dir.path()).unwrap();
        store.put_task(&record(&owner, "good", "c", TaskState::Completed, 1000), &[]).unwrap();
        let stamp = super::Stamp::of(&record(&owner, "bad", "c", TaskState::Working, 1001));
        let mut value = stamp.encode().to_vec();
        value.extend_from_slice(b"{\"owner\":");
        store.tasks.insert(super::index::key(super::Prefix::Task, b"bad"), value).unwrap();
        store.flush().unwrap();
    }
    let store = super::open_retrying(dir.path());
    assert_total(&store, &query(&owner, None, None), 1);
    store.put_task(&record(&owner, "bad", "c", TaskState::Working, 1001), &[]).unwrap();
    assert_total(&store, &query(&owner, None, None), 2);
    assert_total(&store, &query(&owner, None, Some(TaskState::Working)), 1);
    assert_total(&store, &query(&owner, Some("c"), None), 2);
}
