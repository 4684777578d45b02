//! What only the Redis store has to show: two nodes' stores on one Redis, the commit
//! script's refusals (a stale generation, another node's lease) changing nothing, push
//! jobs in the commit itself, and an outage answered as one. Every trait method's answers
//! are compared with the sled store's in `memory/tests.rs`.

use super::*;
use crate::redis::test_cluster::RedisCluster;
use crate::redis::test_server::{redis, redis_cluster, redis_with, RedisServer};
use crate::sled::store::tests::record;
use crate::TaskStoreExt;
use crate::{Cluster, JobQueue, Owner, PushJob, RedisFailure, RedisQueue, RedisQueueOptions, TaskStore};
use a2ad_protocol::TaskState;

fn store(server: &RedisServer) -> RedisStore {
    RedisStore::connect(RedisStoreOptions { url: server.url(), ..RedisStoreOptions::default() }).unwrap()
}

fn event(seq: u64) -> LoggedEvent {
    LoggedEvent { seq, json: format!("{{\"n\":{seq}}}").into() }
}

/// A task at generation `seq` with the events up to it.
pub(super) fn at(owner: &Owner, seq: u64, state: TaskState) -> TaskRecord {
    TaskRecord { last_event_seq: seq, ..record(owner, "t1", "c1", state, 1000 + seq as i64) }
}

pub(super) fn raw(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url()).unwrap().get_connection().unwrap()
}

#[test]
fn a_task_written_through_one_nodes_store_is_read_listed_and_removed_through_anothers() {
    let Some(server) = redis() else { return };
    let (node1, node2) = (store(&server), store(&server));
    let owner = Owner { tenant: "acme".into(), principal: "ann".into() };
    node1.put_task(&at(&owner, 2, TaskState::Working), &[event(1), event(2)]).unwrap();
    let read = node2.get_task(Scope::Owner(&owner), "t1").unwrap().expect("node 2 reads node 1's task");
    assert_eq!(read.last_event_seq, 2);
    let page = node2.list_tasks(&crate::TaskQuery {
        owner: owner.clone(),
        context_id: Some("c1".into()),
        state: Some(TaskState::Working),
        status_after_millis: None,
        page_size: 10,
        cursor: None,
    });
    assert_eq!(page.unwrap().total, 1);
    assert_eq!(node2.events_after(Scope::Owner(&owner), "t1", 1, 10).unwrap(), vec![event(2)]);
    let other = Owner { tenant: "acme".into(), principal: "bob".into() };
    assert!(node2.get_task(Scope::Owner(&other), "t1").unwrap().is_none(), "another owner's task reads absent");
    assert!(node2.events_after(Scope::Owner(&other), "t1", 0, 10).unwrap().is_empty());
    assert!(node2.delete_task("t1").unwrap().is_some());
    assert!(node1.get_task(Scope::Node, "t1").unwrap().is_none());
}

#[test]
fn a_stale_generation_is_a_conflict_and_changes_nothing() {
    let Some(server) = redis() else { return };
    let (node1, node2) = (store(&server), store(&server));
    let owner = Owner::anonymous();
    node1.put_task(&at(&owner, 3, TaskState::Working), &[event(1), event(2), event(3)]).unwrap();
    // Node 2 read generation 2 and writes its step 3 after node 1 wrote its own.
    let stale = node2.put_task(&at(&owner, 3, TaskState::Completed), &[event(3)]).unwrap_err();
    assert!(matches!(stale, StoreError::Conflict { stored: 3, offered: 3, .. }), "{stale:?}");
    let older = node2.put_task(&at(&owner, 2, TaskState::Failed), &[]).unwrap_err();
    assert!(matches!(older, StoreError::Conflict { stored: 3, offered: 2, .. }), "{older:?}");
    let kept = node1.get_task(Scope::Node, "t1").unwrap().unwrap();
    assert_eq!((kept.state(), kept.last_event_seq), (TaskState::Working, 3));
    assert_eq!(node1.events_after(Scope::Node, "t1", 0, 10).unwrap(), vec![event(1), event(2), event(3)]);
    // The same generation without events (a snapshot rewrite) is fine.
    node1.put_task(&at(&owner, 3, TaskState::Working), &[]).unwrap();
}

#[test]
fn the_same_commit_sent_again_is_done_and_writes_nothing_more() {
    let Some(server) = redis() else { return };
    let node = store(&server);
    let owner = Owner::anonymous();
    let step = at(&owner, 2, TaskState::Working);
    node.put_task(&step, &[event(1), event(2)]).unwrap();
    // As the cluster client sends it when the connection dropped before the reply.
    node.put_task(&step, &[event(1), event(2)]).expect("a replay is not a conflict");
    assert_eq!(node.events_after(Scope::Node, "t1", 0, 10).unwrap(), vec![event(1), event(2)]);
    let changed =
        TaskRecord { task: a2ad_protocol::Task { metadata: Some(Default::default()), ..step.task.clone() }, ..step };
    let refused = node.put_task(&changed, &[event(1), event(2)]).unwrap_err();
    assert!(matches!(refused, StoreError::Conflict { .. }), "another record at the same generation is: {refused:?}");
}

#[test]
fn a_context_leased_by_another_node_refuses_the_write_and_changes_nothing() {
    let Some(server) = redis() else { return };
    let node = store(&server);
    let owner = Owner::anonymous();
    node.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    let lease = node.keys.lease(&crate::ContextKey::new(owner.clone(), "c1"));
    redis::cmd("SET").arg(lease).arg("other-node:7").query::<()>(&mut raw(&server)).unwrap();
    let refused = node.put_task(&at(&owner, 2, TaskState::Failed), &[event(2)]).unwrap_err();
    assert!(matches!(refused, StoreError::LeaseLost { .. }), "{refused:?}");
    assert_eq!(node.task_version("t1").unwrap(), Some((1, TaskState::Working)));
    assert_eq!(node.events_after(Scope::Node, "t1", 0, 10).unwrap(), vec![event(1)]);
}

/// A store on `server` whose steps' push jobs go to the Redis Streams queue it returns.
pub(super) fn store_with_queue(server: &RedisServer) -> (RedisStore, RedisQueue) {
    let mut queue_options = RedisQueueOptions { url: server.url(), ..RedisQueueOptions::default() };
    let options = RedisStoreOptions {
        url: server.url(),
        push_stream: Some(queue_options.stream.clone()),
        ..RedisStoreOptions::default()
    };
    let store = RedisStore::connect(options).unwrap();
    queue_options.shards = store.queue_keys(&queue_options);
    (store, RedisQueue::connect(queue_options).unwrap())
}

fn job(seq: u64) -> PushJob {
    PushJob {
        task_id: "t1".into(),
        config_id: "cfg".into(),
        event_seq: seq,
        body: "{}".into(),
        attempts: 0,
        first_enqueued_ms: 0,
        next_attempt_ms: 0,
        last_error: None,
        last_status: None,
        host: None,
        receipt: None,
    }
}

#[test]
fn a_steps_push_jobs_join_the_push_stream_in_its_commit() {
    let Some(server) = redis() else { return };
    let owner = Owner::anonymous();
    let without = store(&server);
    let refused = without.put_step(&at(&owner, 1, TaskState::Working), &[event(1)], vec![job(1)]).unwrap_err();
    assert!(matches!(refused, StoreError::NoPushQueue(1)), "jobs are refused, never dropped: {refused:?}");
    assert!(without.get_task(Scope::Node, "t1").unwrap().is_none(), "and the step is not written");
    let (with, queue) = store_with_queue(&server);
    with.put_step(&at(&owner, 1, TaskState::Working), &[event(1)], vec![job(1)]).unwrap();
    let due = queue.due(0, 10, &Default::default()).unwrap();
    assert_eq!(due.iter().map(|j| j.event_seq).collect::<Vec<_>>(), [1]);
    // A refused step adds no job.
    let stale = with.put_step(&at(&owner, 1, TaskState::Completed), &[event(1)], vec![job(1)]);
    assert!(stale.is_err());
    // Nor does the same step sent again (done already).
    with.put_step(&at(&owner, 1, TaskState::Working), &[event(1)], vec![job(1)]).unwrap();
    assert!(queue.due(0, 10, &Default::default()).unwrap().is_empty());
}

#[test]
fn an_outage_is_a_redis_error_and_the_store_reconnects_after_it() {
    let Some(mut server) = redis_with(&["--appendonly", "yes", "--appendfsync", "always"]) else { return };
    let node = store(&server);
    let owner = Owner::anonymous();
    node.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    server.kill();
    let down = node.get_task(Scope::Node, "t1").unwrap_err();
    assert!(matches!(down, StoreError::Redis { kind: RedisFailure::Refused | RedisFailure::Dropped, .. }), "{down:?}");
    server.restart(&["--appendonly", "yes", "--appendfsync", "always"]);
    let back = node.get_task(Scope::Node, "t1");
    // The broken connection is dropped by the failed call; the next one reconnects.
    let back = back.or_else(|_| node.get_task(Scope::Node, "t1")).unwrap();
    assert_eq!(back.map(|r| r.last_event_seq), Some(1), "an acknowledged write outlives a kill -9 of Redis");
}

fn lease_store(server: &RedisServer, ttl_ms: u64) -> RedisStore {
    let options = RedisStoreOptions {
        url: server.url(),
        lease_ttl: std::time::Duration::from_millis(ttl_ms),
        node_id: lease::new_node_id(),
        ..RedisStoreOptions::default()
    };
    RedisStore::connect(options).unwrap()
}

#[test]
fn one_node_at_a_time_holds_a_context_and_only_its_writes_pass() {
    let Some(server) = redis() else { return };
    let (node1, node2) = (lease_store(&server, 10_000), lease_store(&server, 10_000));
    let owner = Owner::anonymous();
    let context = crate::ContextKey::new(owner.clone(), "c1");
    assert!(node1.acquire_lease(&context).unwrap());
    assert!(node1.acquire_lease(&context).unwrap(), "the holder keeps it");
    assert!(!node2.acquire_lease(&context).unwrap(), "another node is refused");
    assert_eq!(node2.lease_holder(&context).unwrap().as_deref(), Some(node1.node_id()));
    node1.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    let refused = node2.put_task(&at(&owner, 2, TaskState::Failed), &[event(2)]).unwrap_err();
    assert!(matches!(refused, StoreError::LeaseLost { .. }), "{refused:?}");
    node1.release_lease(&context);
    // The release is sent without waiting; a read on the context's lane comes after it.
    assert_eq!(node1.lease_holder(&context).unwrap(), None, "released before anything asked after it");
    assert!(node2.acquire_lease(&context).unwrap(), "a released context is free");
    node2.put_task(&at(&owner, 2, TaskState::Completed), &[event(2)]).unwrap();
}

#[test]
fn each_grant_of_a_lease_has_a_token_of_its_own_and_a_holder_keeps_its_token() {
    let Some(server) = redis() else { return };
    let node = lease_store(&server, 10_000);
    let context = crate::ContextKey::new(Owner::anonymous(), "c1");
    let token = || redis::cmd("GET").arg(node.keys.lease(&context)).query::<String>(&mut raw(&server)).unwrap();
    let mut grants = Vec::new();
    for _ in 0..3 {
        assert!(node.acquire_lease(&context).unwrap());
        let first = token();
        assert!(node.acquire_lease(&context).unwrap(), "the holder extends its lease");
        assert_eq!(token(), first, "an extension keeps the grant's token");
        node.release_lease(&context);
        assert_eq!(node.lease_holder(&context).unwrap(), None);
        grants.push(first);
    }
    assert!(grants.iter().all(|t| t.starts_with(&format!("{}:", node.node_id()))), "{grants:?}");
    grants.sort();
    grants.dedup();
    assert_eq!(grants.len(), 3, "three grants, three fencing tokens: {grants:?}");
}

/// The anonymous owner and its context `c1`.
fn owner_and_context() -> (Owner, crate::ContextKey) {
    (Owner::anonymous(), crate::ContextKey::new(Owner::anonymous(), "c1"))
}

#[test]
fn a_holder_whose_lease_expired_or_passed_on_cannot_write() {
    let Some(server) = redis() else { return };
    let (node1, node2) = (lease_store(&server, 10_000), lease_store(&server, 10_000));
    let (owner, context) = owner_and_context();
    let expire = || redis::cmd("DEL").arg(node1.keys.lease(&context)).query::<()>(&mut raw(&server)).unwrap();
    let refused = |seq: u64| {
        let e = node1.put_task(&at(&owner, seq, TaskState::Working), &[event(seq)]).unwrap_err();
        assert!(matches!(e, StoreError::LeaseLost { .. }), "{e:?}");
    };
    assert!(node1.acquire_lease(&context).unwrap());
    node1.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    // Expired (as if node 1 had stalled past the TTL): no lease at all, and still refused.
    expire();
    refused(2);
    // Taken by node 2, which ran its turn and gave the lease back.
    assert!(node2.acquire_lease(&context).unwrap());
    node2.put_task(&at(&owner, 2, TaskState::Working), &[event(2)]).unwrap();
    node2.release_lease(&context);
    assert_eq!(node2.lease_holder(&context).unwrap(), None);
    refused(3);
    assert_eq!(node1.get_task(Scope::Node, "t1").unwrap().unwrap().last_event_seq, 2, "node 2's write stands");
}

#[test]
fn a_lease_the_keeper_finds_lost_keeps_refusing_its_turns_writes_until_the_turn_ends() {
    let Some(server) = redis() else { return };
    let node = lease_store(&server, 300); // renewed every 100 ms
    let (owner, context) = owner_and_context();
    assert!(node.acquire_lease(&context).unwrap());
    redis::cmd("DEL").arg(node.keys.lease(&context)).query::<()>(&mut raw(&server)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400)); // a keeper round finds it lost
    let e = node.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap_err();
    assert!(matches!(e, StoreError::LeaseLost { .. }), "not taken for a write without a lease: {e:?}");
    // The turn ends (its lease given back): the context's writes without a lease pass again.
    node.release_lease(&context);
    node.put_task(&at(&owner, 1, TaskState::Failed), &[event(1)]).unwrap();
}

#[test]
fn a_lease_its_node_stops_renewing_expires_and_another_node_takes_it() {
    let Some(server) = redis() else { return };
    let node2 = lease_store(&server, 600);
    let context = crate::ContextKey::new(Owner::anonymous(), "c1");
    {
        let node1 = lease_store(&server, 600);
        assert!(node1.acquire_lease(&context).unwrap());
        // Renewed by its keeper: still held after twice the TTL.
        std::thread::sleep(std::time::Duration::from_millis(1200));
        assert!(!node2.acquire_lease(&context).unwrap(), "the keeper renews it");
    } // node 1 "dies": its keeper stops.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !node2.acquire_lease(&context).unwrap() {
        assert!(std::time::Instant::now() < deadline, "the dead node's lease expires");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_follower_on_another_node_gets_each_committed_event_and_stops_with_its_task() {
    let Some(server) = redis() else { return };
    let (node1, node2) = (store(&server), store(&server));
    let owner = Owner::anonymous();
    node1.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    node2
        .follow(
            "t1",
            1,
            Box::new(move |events| {
                events.into_iter().for_each(|e| tx.send(e.seq).unwrap_or_default());
                true
            }),
        )
        .unwrap();
    node1.put_task(&at(&owner, 3, TaskState::Working), &[event(2), event(3)]).unwrap();
    let wait = std::time::Duration::from_secs(5);
    assert_eq!((rx.recv_timeout(wait).unwrap(), rx.recv_timeout(wait).unwrap()), (2, 3));
    node1.delete_task("t1").unwrap();
    // The follower notices the task is gone at its next empty read, and drops the sink.
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(10)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
    );
}

#[test]
fn a_cancel_request_reaches_the_node_it_is_sent_to() {
    let Some(server) = redis() else { return };
    let (node1, node2) = (store(&server), store(&server));
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    node1.on_cancel_request(Box::new(move |request| drop(tx.lock().unwrap().send(request)))).unwrap();
    let request = crate::CancelRequest { owner: Owner::anonymous(), context_id: "c1".into(), task_id: "t1".into() };
    // The listener subscribes on a thread of its own: send until it hears one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let got = loop {
        node2.request_cancel(node1.node_id(), &request).unwrap();
        if let Ok(got) = rx.recv_timeout(std::time::Duration::from_millis(100)) {
            break got;
        }
        assert!(std::time::Instant::now() < deadline, "the request arrives");
    };
    assert_eq!(got, request);
}

#[test]
fn the_step_that_ends_a_turn_gives_the_lease_back_with_it() {
    let Some(server) = redis() else { return };
    let (node1, node2) = (lease_store(&server, 10_000), lease_store(&server, 10_000));
    let owner = Owner::anonymous();
    let context = crate::ContextKey::new(owner.clone(), "c1");
    assert!(node1.acquire_lease(&context).unwrap());
    node1.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    assert!(!node2.acquire_lease(&context).unwrap(), "a working step keeps it");
    node1.put_task(&at(&owner, 2, TaskState::InputRequired), &[event(2)]).unwrap();
    assert_eq!(node1.lease_holder(&context).unwrap(), None, "the turn's end released it in its commit");
    assert!(node2.acquire_lease(&context).unwrap());
}

/// A store on the Redis Cluster `cluster`, 16 shards, its push jobs in `queue`'s streams.
pub(super) fn cluster_store(cluster: &RedisCluster, queue: &RedisQueueOptions) -> RedisStore {
    let options = RedisStoreOptions {
        url: cluster.url(),
        topology: crate::Topology::Cluster,
        shards: 16,
        push_stream: Some(queue.stream.clone()),
        node_id: lease::new_node_id(),
        ..RedisStoreOptions::default()
    };
    RedisStore::connect(options).unwrap()
}

#[test]
fn on_a_redis_cluster_owners_spread_over_the_primaries_and_each_step_is_one_slots_script() {
    let Some(cluster) = redis_cluster() else { return };
    let queue_options =
        RedisQueueOptions { url: cluster.url(), topology: crate::Topology::Cluster, ..RedisQueueOptions::default() };
    let (node1, node2) = (cluster_store(&cluster, &queue_options), cluster_store(&cluster, &queue_options));
    let queue =
        RedisQueue::connect(RedisQueueOptions { shards: node1.queue_keys(&queue_options), ..queue_options }).unwrap();
    let owners: Vec<Owner> = (0..24).map(|i| Owner { tenant: format!("tenant-{i}"), principal: "p".into() }).collect();
    let mut ids = Vec::new();
    for owner in &owners {
        // An id minted for the owner, as the node mints them: found by id alone at once.
        let id = a2ad_protocol::ids::new_task_id(owner.shard_hash());
        let context = crate::ContextKey::new(owner.clone(), "c1");
        assert!(node1.acquire_lease(&context).unwrap(), "the lease is one slot's script");
        let record = TaskRecord { last_event_seq: 1, ..record(owner, &id, "c1", TaskState::Working, 1000) };
        let job = PushJob { task_id: id.clone(), ..job(1) };
        node1.put_step(&record, &[event(1)], vec![job]).unwrap();
        let done = TaskRecord { last_event_seq: 2, ..record.clone() };
        node1
            .put_task(
                &TaskRecord {
                    task: a2ad_protocol::Task {
                        status: a2ad_protocol::TaskStatus::now(TaskState::Completed, None),
                        ..done.task.clone()
                    },
                    ..done
                },
                &[event(2)],
            )
            .unwrap();
        assert_eq!(node2.lease_holder(&context).unwrap(), None, "the turn's end gave the lease back in its commit");
        ids.push((owner.clone(), id));
    }
    // Any node reads any task, by its owner or by id alone; another owner's reads absent.
    for (owner, id) in &ids {
        let by_owner = node2.get_task(Scope::Owner(owner), id).unwrap().expect("read by its owner");
        assert_eq!(by_owner.state(), TaskState::Completed);
        assert_eq!(node2.events_after(Scope::Node, id, 0, 10).unwrap(), vec![event(1), event(2)]);
        assert!(node2.get_task(Scope::Owner(&owners[0]), id).unwrap().is_none() || owner == &owners[0]);
    }
    let listed = node2.list_tasks(&crate::TaskQuery {
        owner: owners[3].clone(),
        context_id: Some("c1".into()),
        state: None,
        status_after_millis: None,
        page_size: 10,
        cursor: None,
    });
    assert_eq!(listed.unwrap().total, 1);
    // The keys are spread: every primary holds some of them.
    for port in cluster.ports() {
        let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
        let keys: u64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
        assert!(keys > 0, "primary {port} holds some owners' keys");
    }
    // The push jobs went to their shards' streams in their commits; one worker reads them all.
    let mut due = Vec::new();
    for _ in 0..32 {
        due.extend(queue.due(0, 100, &Default::default()).unwrap());
    }
    assert_eq!(due.len(), owners.len(), "one job per step that had one");
    for job in &due {
        queue.ack(job).unwrap();
    }
    assert_eq!(queue.depth().unwrap(), 0, "each job settled in the shard it came from");
    // Node-wide questions span the shards.
    assert_eq!(node2.tasks_in_states(&[TaskState::Completed]).unwrap().len(), owners.len());
    let (_, minted) = &ids[5];
    assert!(node1.delete_task(minted).unwrap().is_some(), "a removal by id alone");
    assert!(node2.get_task(Scope::Node, minted).unwrap().is_none());
    // An id not minted for its owner (a moved sled task's) is found in the other shards.
    let moved = TaskRecord { last_event_seq: 1, ..record(&owners[7], "moved-1", "c9", TaskState::Completed, 9) };
    node1.put_task(&moved, &[event(1)]).unwrap();
    assert!(node2.get_task(Scope::Node, "moved-1").unwrap().is_some());
    assert_eq!(node2.task_version("moved-1").unwrap(), Some((1, TaskState::Completed)));
    assert!(node2.delete_task("moved-1").unwrap().is_some());
    assert!(node1.get_task(Scope::Owner(&owners[7]), "moved-1").unwrap().is_none());
}

#[test]
fn a_whole_cluster_outage_is_a_redis_error_and_the_store_reconnects_after_it() {
    let Some(mut cluster) = redis_cluster() else { return };
    let node = cluster_store(&cluster, &RedisQueueOptions::default());
    let owner = Owner::anonymous();
    node.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    cluster.kill();
    let down = node.get_task(Scope::Owner(&owner), "t1").unwrap_err();
    assert!(matches!(down, StoreError::Redis { .. }), "{down:?}");
    cluster.restart().unwrap();
    // The nodes kept their slots (nodes.conf), not their data (no AOF here): a new
    // write goes through once the pool has reconnected.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while node.put_task(&at(&Owner::anonymous(), 1, TaskState::Working), &[event(1)]).is_err() {
        assert!(std::time::Instant::now() < deadline, "the store reconnects to the cluster");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_store_made_with_one_shard_count_refuses_a_node_with_another() {
    let Some(server) = redis() else { return };
    let with =
        |shards| RedisStore::connect(RedisStoreOptions { url: server.url(), shards, ..RedisStoreOptions::default() });
    with(4).expect("a new store records its shard count");
    with(4).expect("the same count again");
    let refused = with(1).err().expect("another count is refused");
    assert!(matches!(refused, StoreError::ShardCount { stored: 4, configured: 1 }), "{refused:?}");
    assert!(refused.to_string().contains("redis.shards 4; this node has 1"), "names both: {refused}");
}

#[test]
fn a_store_of_one_shard_on_one_server_keeps_the_layout_from_before_shards() {
    let Some(server) = redis() else { return };
    let node = store(&server);
    let owner = Owner::anonymous();
    node.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).unwrap();
    let mut conn = raw(&server);
    let exists: bool = redis::cmd("EXISTS").arg("a2ad:store:task:t1").query(&mut conn).unwrap();
    assert!(exists, "untagged keys, as the first Redis stores wrote them");
    // Data from before the shard count was recorded: a node with more shards is refused.
    redis::cmd("DEL").arg("a2ad:store:shards").query::<()>(&mut conn).unwrap();
    let options = RedisStoreOptions { url: server.url(), shards: 8, ..RedisStoreOptions::default() };
    let refused = RedisStore::connect(options).err().expect("refused");
    assert!(matches!(refused, StoreError::ShardCount { stored: 1, configured: 8 }), "{refused:?}");
    assert!(store(&server).get_task(Scope::Owner(&owner), "t1").unwrap().is_some(), "and it reads on");
}

#[test]
fn a_turn_start_skips_the_history_only_while_the_stored_session_is_the_one_held() {
    use crate::{block_on_store, SessionRecord, TurnLease};
    use a2ad_protocol::Message;
    let Some(server) = redis() else { return };
    let (node1, node2) = (lease_store(&server, 10_000), lease_store(&server, 10_000));
    let context = crate::ContextKey::new(Owner::anonymous(), "c1");
    let msg = |i: u32| Message::agent_text(format!("m{i}"), "c1", None, "x");
    let mut session = SessionRecord::new(context.clone(), "echo");
    session.last_task_id = Some("t1".into());
    session.append(&[msg(1), msg(2)], 10);
    assert!(node1.acquire_lease(&context).unwrap());
    node1.put_session(&session, &[msg(1), msg(2)], 10).unwrap();
    let start = |node: &RedisStore, known: Option<&SessionRecord>| block_on_store(node.begin_turn(&context, 10, known));
    let first = start(&node1, Some(&session)).unwrap();
    assert!(matches!(first, TurnLease::Current), "the held session is current: {first:?}");
    match start(&node1, None).unwrap() {
        TurnLease::Taken(Some(read)) => assert_eq!(read.history, session.history, "no session held: it is read"),
        other => panic!("{other:?}"),
    }
    // Node 2 runs the next turn: node 1's copy is stale, and its next start reads it all.
    node1.release_lease(&context);
    assert_eq!(node1.lease_holder(&context).unwrap(), None);
    assert!(node2.acquire_lease(&context).unwrap());
    let mut newer = session.clone();
    newer.last_task_id = Some("t2".into());
    newer.append(&[msg(3)], 10);
    node2.put_session(&newer, &[msg(3)], 10).unwrap();
    node2.release_lease(&context);
    assert_eq!(node2.lease_holder(&context).unwrap(), None, "a read on the lane comes after the release");
    match start(&node1, Some(&session)).unwrap() {
        TurnLease::Taken(Some(read)) => {
            assert_eq!(read.message_count, 3);
            assert_eq!(read.history, newer.history, "the stale copy is replaced by the stored session");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_session_list_is_trimmed_an_eighth_past_its_limit_and_reads_keep_the_limit() {
    use crate::SessionRecord;
    use a2ad_protocol::Message;
    let Some(server) = redis() else { return };
    let node = store(&server);
    let context = crate::ContextKey::new(Owner::anonymous(), "c1");
    let msg = |i: u32| Message::agent_text(format!("m{i}"), "c1", None, "x");
    let (limit, mut session) = (16, SessionRecord::new(context.clone(), "echo"));
    let mut lengths = Vec::new();
    for i in 0..40 {
        session.append(&[msg(i)], limit);
        node.put_session(&session, &[msg(i)], limit).unwrap();
        lengths.push(redis::cmd("LLEN").arg(node.keys.messages(&context)).query::<usize>(&mut raw(&server)).unwrap());
        let read = node.get_session(&context, limit).unwrap().unwrap();
        assert_eq!(read.history, session.history, "a read holds the last {limit} messages after turn {i}");
    }
    // 16 held, then one more a turn up to 16 + 2, then back to 16 in one LTRIM.
    assert_eq!(lengths.iter().max(), Some(&18), "{lengths:?}");
    assert_eq!(&lengths[15..22], &[16, 17, 18, 16, 17, 18, 16], "{lengths:?}");
}
