//! The memory store, and the Redis store, answer every trait method as the sled store
//! does: each test plays the same writes on all of them and compares every answer. The
//! Redis store joins, on one server and on a Redis Cluster, when there is a redis-server to
//! start (`crate::redis::test_server`).

use super::MemoryStore;
use crate::redis::test_cluster::RedisCluster;
use crate::redis::test_server::{redis, redis_cluster, RedisServer};
use crate::sled::store::tests::record;
use crate::TaskStoreExt;
use crate::{
    ContextKey, LoggedEvent, Owner, RedisStore, RedisStoreOptions, SessionRecord, SledStore, StoreError, TaskQuery,
    TaskStore,
};
use a2ad_protocol::{Message, StreamResponse, TaskState};

/// A store of [`both`]: the trait, and the session write each store has of its own
/// (`put_session`, off the trait: the node writes sessions in steps).
trait Compared: TaskStore {
    fn put_session(&self, session: &SessionRecord, appended: &[Message], limit: usize) -> Result<(), StoreError>;
}

macro_rules! compared {
    ($($store:ty),*) => {$(
        impl Compared for $store {
            fn put_session(&self, session: &SessionRecord, appended: &[Message], limit: usize) -> Result<(), StoreError> {
                <$store>::put_session(self, session, appended, limit)
            }
        }
    )*};
}
compared!(SledStore, MemoryStore, RedisStore);

/// What the stores of [`both`] live in.
type Held = (tempfile::TempDir, Option<RedisServer>, Option<RedisCluster>);

/// A fresh sled store (in a temporary directory), a memory store and, when a
/// redis-server can be started, a Redis store on one server and one on a Redis Cluster of
/// three primaries (16 shards), all keeping `retention` events per task. The directory
/// and the servers live as long as the first value.
fn both(retention: usize) -> (Held, Vec<Box<dyn Compared>>) {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStore::open(dir.path()).unwrap().with_event_retention(retention);
    let memory = MemoryStore::new().with_event_retention(retention);
    let mut stores: Vec<Box<dyn Compared>> = vec![Box::new(sled), Box::new(memory)];
    let server = redis();
    if let Some(server) = &server {
        let options = RedisStoreOptions { url: server.url(), ..RedisStoreOptions::default() };
        stores.push(Box::new(RedisStore::connect(options).unwrap().with_event_retention(retention)));
    }
    let cluster = redis_cluster();
    if let Some(cluster) = &cluster {
        let options = RedisStoreOptions {
            url: cluster.url(),
            topology: crate::Topology::Cluster,
            shards: 16,
            ..RedisStoreOptions::default()
        };
        stores.push(Box::new(RedisStore::connect(options).unwrap().with_event_retention(retention)));
    }
    ((dir, server, cluster), stores)
}

/// Runs `probe` on each store and asserts that they all answer alike.
fn same<T: PartialEq + std::fmt::Debug>(stores: &[Box<dyn Compared>], probe: impl Fn(&dyn Compared) -> T) -> T {
    let mut answers = stores.iter().map(|s| probe(s.as_ref()));
    let first = answers.next().unwrap();
    for other in answers {
        assert_eq!(first, other, "every store answers as the sled store does");
    }
    first
}

fn query(owner: &Owner, page_size: usize) -> TaskQuery {
    TaskQuery {
        owner: owner.clone(),
        context_id: None,
        state: None,
        status_after_millis: None,
        page_size,
        cursor: None,
    }
}

/// Every page of `query`, as (ids, total, cursor) per page.
fn all_pages(store: &dyn Compared, mut query: TaskQuery) -> Vec<(Vec<String>, usize, Option<crate::Cursor>)> {
    let mut pages = Vec::new();
    loop {
        let page = store.list_tasks(&query).unwrap();
        let ids = page.records.iter().map(|r| r.task.id.clone()).collect();
        pages.push((ids, page.total, page.next_cursor.clone()));
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => return pages,
        }
    }
}

#[test]
fn listing_pages_filters_totals_and_state_changes_agree() {
    let (_dir, stores) = both(10);
    let alice = Owner { tenant: "t".into(), principal: "alice".into() };
    let bob = Owner { tenant: "t".into(), principal: "bob".into() };
    let writes = [
        (&alice, "a1", "c1", TaskState::Completed, 1000),
        (&alice, "a2", "c2", TaskState::Working, 2000),
        (&alice, "a3", "c1", TaskState::InputRequired, 2000),
        (&alice, "a0", "c1", TaskState::Completed, 2000),
        (&bob, "b1", "c1", TaskState::Completed, 4000),
        (&alice, "a2", "c2", TaskState::Completed, 5000),
        (&alice, "a4", "c2", TaskState::Submitted, 6000),
    ];
    for (owner, id, ctx, state, ms) in writes {
        same(&stores, |s| s.put_task(&record(owner, id, ctx, state, ms), &[]).unwrap());
    }
    for page_size in [1, 2, 10] {
        let mut queries = vec![query(&alice, page_size), query(&bob, page_size)];
        let mut by_ctx = query(&alice, page_size);
        by_ctx.context_id = Some("c1".into());
        let mut by_state = query(&alice, page_size);
        by_state.state = Some(TaskState::Completed);
        let mut both_filters = by_ctx.clone();
        both_filters.state = Some(TaskState::Completed);
        let mut recent = query(&alice, page_size);
        recent.status_after_millis = Some(2000);
        queries.extend([by_ctx, by_state, both_filters, recent]);
        for q in queries {
            same(&stores, |s| all_pages(s, q.clone()));
        }
    }
    let active = [TaskState::Submitted, TaskState::Working];
    let ids = same(&stores, |s| s.tasks_in_states(&active).unwrap().into_iter().map(|r| r.task.id).collect::<Vec<_>>());
    assert_eq!(ids, ["a4"]);
    same(&stores, |s| {
        let mut entries = Vec::new();
        s.visit_tasks(&mut |e| entries.push((e.owner, e.task_id, e.status_millis, e.state))).unwrap();
        entries.sort_by(|a, b| a.1.cmp(&b.1));
        entries
    });
}

fn event(seq: u64) -> LoggedEvent {
    let task = record(&Owner::anonymous(), "t1", "c", TaskState::Working, 1000).task;
    LoggedEvent::encode(seq, &StreamResponse::status_of(&task))
}

#[test]
fn the_event_log_keeps_the_last_events_and_deletes_with_its_task() {
    let (_dir, stores) = both(3);
    let owner = Owner::anonymous();
    let working = record(&owner, "t1", "c", TaskState::Working, 1000);
    same(&stores, |s| s.put_task(&working, &[event(1), event(2)]).unwrap());
    let done = record(&owner, "t1", "c", TaskState::Completed, 2000);
    let old = same(&stores, |s| s.put_task(&done, &[event(3), event(4), event(5)]).unwrap());
    assert_eq!(old, Some(TaskState::Working));
    let seqs = same(&stores, |s| s.events_after(crate::Scope::Node, "t1", 0, usize::MAX).unwrap());
    assert_eq!(seqs.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5]);
    same(&stores, |s| s.events_after(crate::Scope::Node, "t1", 3, 1).unwrap());
    same(&stores, |s| s.events_after(crate::Scope::Node, "nope", 0, 10).unwrap());
    same(&stores, |s| s.counts().unwrap());
    let removed = same(&stores, |s| s.delete_task("t1").unwrap().map(|r| r.task.id));
    assert_eq!(removed.as_deref(), Some("t1"));
    same(&stores, |s| {
        (s.delete_task("t1").unwrap(), s.events_after(crate::Scope::Node, "t1", 0, 10).unwrap(), s.counts().unwrap())
    });
}

/// The memory store's log is a sorted ring: an event written again under its number
/// replaces the kept one, and one written out of order lands in its place (Redis refuses
/// both, so only this store is asked).
#[test]
fn an_event_written_again_or_out_of_order_keeps_the_log_in_order() {
    let store = MemoryStore::new().with_event_retention(3);
    let working = record(&Owner::anonymous(), "t1", "c", TaskState::Working, 1000);
    let seqs_after = |after| -> Vec<u64> {
        store.events_after(crate::Scope::Node, "t1", after, usize::MAX).unwrap().iter().map(|e| e.seq).collect()
    };
    store.put_task(&working, &[event(2), event(4)]).unwrap();
    store.put_task(&working, &[event(3), event(4)]).unwrap();
    assert_eq!(seqs_after(0), [2, 3, 4]);
    store.put_task(&working, &[event(5)]).unwrap();
    assert_eq!(seqs_after(0), [3, 4, 5], "the third back is gone");
    assert_eq!(seqs_after(3), [4, 5]);
    assert_eq!(store.counts().unwrap().events, 3);
}

/// A store's counts without its session messages: the sled store keeps whole turns, so
/// the turn that straddles the history limit is still counted whole there (its reads cut
/// it, as every store's do).
fn counts_but_messages(store: &dyn Compared) -> crate::StoreCounts {
    crate::StoreCounts { session_messages: 0, ..store.counts().unwrap() }
}

#[test]
fn sessions_keep_their_last_messages_settle_atomically_and_are_forgotten_when_unused() {
    let (_dir, stores) = both(10);
    let owner = Owner::anonymous();
    let key = ContextKey::new(owner.clone(), "ctx");
    let msg = |i: u64| Message::agent_text(format!("m{i}"), "ctx", None, "x");
    let mut session = SessionRecord::new(key.clone(), "echo");
    for turn in 0..4 {
        let appended = [msg(turn * 2), msg(turn * 2 + 1)];
        session.append(&appended, 3);
        same(&stores, |s| s.put_session(&session, &appended, 3).unwrap());
    }
    let loaded = same(&stores, |s| s.get_session(&key, 3).unwrap());
    assert_eq!(loaded.map(|s| s.history), Some(session.history.clone()));
    same(&stores, |s| s.get_session(&key, 2).unwrap());
    same(&stores, counts_but_messages);

    same(&stores, |s| s.put_task(&record(&owner, "reply", "ctx", TaskState::Working, 1000), &[event(1)]).unwrap());
    assert!(!same(&stores, |s| s.forget_session_if_unused(&key).unwrap()), "a task is left");
    let reply = [msg(8)];
    session.append(&reply, 3);
    let settled = same(&stores, |s| s.settle_reply("reply", &session, &reply, 3).unwrap().map(|r| r.task.id));
    assert_eq!(settled.as_deref(), Some("reply"));
    same(&stores, |s| {
        (s.get_task(crate::Scope::Node, "reply").unwrap(), s.get_session(&key, 3).unwrap(), counts_but_messages(s))
    });
    assert!(same(&stores, |s| s.forget_session_if_unused(&key).unwrap()));
    same(&stores, |s| (s.forget_session_if_unused(&key).unwrap(), s.get_session(&key, 3).unwrap()));
    same(&stores, |s| s.counts().unwrap());
}

#[test]
fn reads_by_id_are_scoped_to_the_owner() {
    use crate::Scope;
    let (_dir, stores) = both(10);
    let alice = Owner { tenant: "t".into(), principal: "alice".into() };
    // A principal whose name extends alice's, and the same name in another tenant.
    let alicia = Owner { tenant: "t".into(), principal: "alice2".into() };
    let other = Owner { tenant: "u".into(), principal: "alice".into() };
    let task = record(&alice, "t1", "c", TaskState::Working, 1000);
    same(&stores, |s| s.put_task(&task, &[event(1), event(2)]).unwrap());
    for store in &stores {
        assert_eq!(store.get_task(Scope::Owner(&alice), "t1").unwrap().as_ref(), Some(&task));
        assert_eq!(store.events_after(Scope::Owner(&alice), "t1", 0, 10).unwrap().len(), 2);
        for stranger in [&alicia, &other] {
            assert_eq!(store.get_task(Scope::Owner(stranger), "t1").unwrap(), None, "a foreign id reads as unknown");
            assert!(store.events_after(Scope::Owner(stranger), "t1", 0, 10).unwrap().is_empty());
        }
        assert!(store.get_task(Scope::Node, "t1").unwrap().is_some(), "the node reads every owner's");
        assert_eq!(store.get_task(Scope::Owner(&alice), "t2").unwrap(), None);
    }
}

/// The node's per-state counts come from the store's observer: the memory store and the
/// Redis store tell it of the same moves for the same writes (the log's: `tests_apply.rs`).
#[test]
fn the_state_observer_is_told_of_every_step_and_removal() {
    use crate::store::RecordedMoves;
    use std::sync::Arc;
    use TaskState::{Completed, Working};
    let moves = Arc::new(RecordedMoves::default());
    let server = redis();
    let mut stores: Vec<Box<dyn TaskStore>> =
        vec![Box::new(MemoryStore::new().with_state_changes(Arc::clone(&moves) as _))];
    if let Some(server) = &server {
        let redis = RedisStore::connect(RedisStoreOptions { url: server.url(), ..RedisStoreOptions::default() });
        stores.push(Box::new(redis.unwrap().with_state_changes(Arc::clone(&moves) as _)));
    }
    let owner = Owner::anonymous();
    for store in &stores {
        let mut task = record(&owner, "t1", "ctx", Working, 1000);
        task.last_event_seq = 1;
        store.put_task(&task, &[event(1)]).unwrap();
        task.task.status.state = Completed;
        task.last_event_seq = 2;
        store.put_task(&task, &[event(2)]).unwrap();
        store.delete_task("t1").unwrap();
        store.delete_task("t1").unwrap();
        let reply = record(&owner, "reply", "ctx", Working, 2000);
        store.put_task(&reply, &[]).unwrap();
        let session = SessionRecord::new(ContextKey::new(owner.clone(), "ctx"), "echo");
        store.settle_reply("reply", &session, &[], 3).unwrap();
        let expected =
            [(None, Some(Working)), (Some(Working), Some(Completed)), (Some(Completed), None), (None, Some(Working))];
        assert_eq!(moves.take(), [&expected[..], &[(Some(Working), None)]].concat());
    }
}

/// A visit copies the tasks a batch at a time, the lock released between batches: every
/// task is visited once, in id order, and a visitor may write to the store meanwhile.
#[test]
fn a_visit_of_many_batches_sees_every_task_once_and_lets_the_visitor_write() {
    let store = MemoryStore::new();
    let owner = Owner::anonymous();
    let count = super::VISIT_BATCH * 2 + 7;
    for i in 0..count {
        store.put_task(&record(&owner, &format!("t{i:05}"), "ctx", TaskState::Completed, 1000), &[]).unwrap();
    }
    let mut seen = Vec::new();
    store
        .visit_tasks(&mut |entry| {
            if entry.task_id == "t00003" {
                store.delete_task("t00003").unwrap();
            }
            seen.push(entry.task_id);
        })
        .unwrap();
    let expected: Vec<String> = (0..count).map(|i| format!("t{i:05}")).collect();
    assert_eq!(seen, expected);
}

/// The ring of a stored session: a write of the same numbers again replaces them, a
/// write past a gap (a failed step's messages, counted but never stored) follows the kept
/// ones, and the limit keeps the newest.
#[test]
fn a_session_rewritten_or_written_past_a_gap_holds_one_run_of_messages() {
    let store = MemoryStore::new();
    let key = ContextKey::new(Owner::anonymous(), "ctx");
    let msg = |text: &str| Message::agent_text(format!("m-{text}"), "ctx", None, text);
    let texts = |store: &MemoryStore| -> Vec<String> {
        let session = store.get_session(&key, 10).unwrap().expect("a session");
        session.history.iter().map(|m| m.text()).collect()
    };
    let at = |count: u64| SessionRecord { message_count: count, ..SessionRecord::new(key.clone(), "echo") };
    store.put_session(&at(2), &[msg("a"), msg("b")], 10).unwrap();
    store.put_session(&at(3), &[msg("c")], 10).unwrap();
    store.put_session(&at(3), &[msg("B"), msg("C")], 10).unwrap();
    assert_eq!(texts(&store), ["a", "B", "C"], "the same numbers written again replace the kept ones");
    store.put_session(&at(9), &[msg("h"), msg("i")], 10).unwrap();
    assert_eq!(texts(&store), ["a", "B", "C", "h", "i"], "past a gap the kept messages stay");
    store.put_session(&at(12), &[msg("j"), msg("k"), msg("l")], 4).unwrap();
    assert_eq!(texts(&store), ["i", "j", "k", "l"], "the limit keeps the newest");
    assert_eq!(store.counts().unwrap().session_messages, 4);
    store.put_session(&at(2), &[msg("x"), msg("y")], 10).unwrap();
    assert_eq!(texts(&store), ["x", "y"], "a write before the kept run replaces all of it");
}
