//! The task counters behind `totalSize`: kept in step by writes and removals, equal to
//! what a scan counts, rebuilt for a data dir that has none.

use super::tests::record;
use super::{counters, index, SledStore};
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

/// The total as the store answers it (from a counter) and as a scan of the index finds it.
fn totals(store: &SledStore, query: &TaskQuery) -> (usize, usize) {
    let prefix = match &query.context_id {
        Some(context) => index::context_prefix(&query.owner, context),
        None => index::time_prefix(&query.owner),
    };
    (store.list_tasks(query).unwrap().total, index::count(&store.tasks, &prefix, query).unwrap())
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
    let counters_left = store.tasks.scan_prefix([b'n']).count();
    assert_eq!(counters_left, 3, "counters at 0 are removed; only bo's three are left");
}

#[test]
fn missing_counters_are_rebuilt_from_the_indexes_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let al = Owner { tenant: "acme".into(), principal: "al".into() };
    {
        let store = SledStore::open(dir.path()).unwrap();
        for i in 0..5 {
            let state = if i % 2 == 0 { TaskState::Completed } else { TaskState::Failed };
            store.put_task(&record(&al, &format!("t{i}"), &format!("c{}", i % 2), state, 1000 + i), &[]).unwrap();
        }
        // What a data dir from before counters looks like: indexes, no counter, no marker.
        let mut batch = sled::Batch::default();
        for key in store.tasks.iter().keys() {
            let key = key.unwrap();
            if matches!(key[0], b'n' | b'v') {
                batch.remove(key);
            }
        }
        store.tasks.apply_batch(batch).unwrap();
        store.db.remove("format").unwrap();
        assert_eq!(store.list_tasks(&query(&al, None, None)).unwrap().total, 0, "no counter yet");
        store.flush().unwrap();
    }
    let store = super::open_retrying(dir.path());
    assert_total(&store, &query(&al, None, None), 5);
    assert_total(&store, &query(&al, None, Some(TaskState::Completed)), 3);
    assert_total(&store, &query(&al, None, Some(TaskState::Failed)), 2);
    assert_total(&store, &query(&al, Some("c0"), None), 3);
    assert_total(&store, &query(&al, Some("c1"), None), 2);
    assert_eq!(super::migrations::tests::stored_version(&store), super::migrations::FORMAT_VERSION);
}

#[test]
fn concurrent_writers_of_one_owner_lose_no_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
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

#[test]
fn behind_the_log_counters_are_held_until_the_flush_writes_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let al = Owner { tenant: "acme".into(), principal: "al".into() };
    let stored =
        |store: &SledStore, counter: &[u8]| counters::Counters::new(false).read(&store.tasks, counter).unwrap();
    {
        let store = SledStore::open_behind_log(dir.path()).unwrap();
        store.put_task(&record(&al, "t1", "c1", TaskState::Working, 1000), &[]).unwrap();
        store.put_task(&record(&al, "t2", "c1", TaskState::Working, 1001), &[]).unwrap();
        store.put_task(&record(&al, "t1", "c1", TaskState::Completed, 1002), &[]).unwrap();
        store.delete_task("t2").unwrap();
        assert_total(&store, &query(&al, None, None), 1);
        assert_total(&store, &query(&al, None, Some(TaskState::Completed)), 1);
        assert_total(&store, &query(&al, None, Some(TaskState::Working)), 0);
        let owner = counters::counter_key(&al, counters::Counter::Owner);
        assert_eq!(stored(&store, &owner), 0, "held, not written per request");
        store.flush().unwrap();
        assert_eq!(stored(&store, &owner), 1, "written back by the flush");
    }
    let store = super::open_retrying(dir.path());
    assert_total(&store, &query(&al, None, None), 1);
    assert_total(&store, &query(&al, None, Some(TaskState::Completed)), 1);
    assert_total(&store, &query(&al, Some("c1"), None), 1);
}
