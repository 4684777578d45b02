//! What a commit makes of its push jobs for every config, and how a commit with
//! `replica-acks` is answered when its connection drops.

use super::tests::{at, cluster_store, raw, store_with_queue};
use super::*;
use crate::redis::test_server::{redis, redis_with, RedisServer};
use crate::sled::store::tests::record;
use crate::{JobQueue, Owner, PushJob, RedisQueue, RedisQueueOptions, SecretKey, Step, TaskStore, TaskStoreExt};
use a2ad_protocol::{TaskPushNotificationConfig, TaskState};

fn event(seq: u64) -> LoggedEvent {
    LoggedEvent { seq, json: format!("{{\"n\":{seq},\"path\":\"a/b\",\"text\":\"\\\"ü\\\"\"}}").into() }
}

fn config(id: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        tenant: None,
        id: Some(id.into()),
        task_id: Some("t1".into()),
        url: "https://example.com/hook".into(),
        token: None,
        authentication: None,
    }
}

#[test]
fn a_job_for_every_config_becomes_one_per_config_stored_when_its_step_commits() {
    let Some(server) = redis() else { return };
    let owner = Owner::anonymous();
    let (store, queue) = store_with_queue(&server);
    let configs = store.push_configs(SecretKey::generate().unwrap());
    let every = |seq| PushJob::for_every_config("t1", seq, 5);
    store.put_step(&at(&owner, 1, TaskState::Working), &[event(1)], vec![every(1)]).unwrap();
    assert!(queue.due(i64::MAX, 10, &Default::default()).unwrap().is_empty(), "no config yet, no job");
    configs.put(&owner, &config("b")).unwrap();
    configs.put(&owner, &config("a")).unwrap();
    // Two events, a job for every config of the second only (a terminal-only filter).
    store.put_step(&at(&owner, 3, TaskState::Completed), &[event(2), event(3)], vec![every(3)]).unwrap();
    let mut due = queue.due(i64::MAX, 10, &Default::default()).unwrap();
    due.sort_by(|a, b| a.config_id.cmp(&b.config_id));
    let expected = |id: &str| PushJob { receipt: None, ..PushJob::new("t1", id, 3, event(3).json.to_string(), 5) };
    let due: Vec<PushJob> = due.into_iter().map(|job| PushJob { receipt: None, ..job }).collect();
    assert_eq!(due, [expected("a"), expected("b")], "the body is the event, as sent");
}

/// Waits (bounded) until `check` holds of `server`'s `INFO replication` or `CLIENT LIST`.
fn until(server: &RedisServer, command: &str, arg: &str, check: impl Fn(&str) -> bool) -> bool {
    let mut conn = raw(server);
    for _ in 0..500 {
        let text: String = redis::cmd(command).arg(arg).query(&mut conn).unwrap_or_default();
        if check(&text) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn a_commit_whose_connection_dropped_during_its_wait_is_not_confirmed_by_a_wait_on_another() {
    let Some(primary) = redis() else { return };
    let port = primary.port().to_string();
    let replica = redis_with(&["--appendonly", "no", "--replicaof", "127.0.0.1", &port]).unwrap();
    assert!(until(&replica, "INFO", "replication", |info| info.contains("master_link_status:up")));
    assert!(until(&primary, "INFO", "replication", |info| info.contains("connected_slaves:1")));
    let options = RedisStoreOptions { url: primary.url(), replica_acks: 1, ..RedisStoreOptions::default() };
    let store = std::sync::Arc::new(RedisStore::connect(options).unwrap());
    let owner = Owner::anonymous();
    store.put_task(&at(&owner, 1, TaskState::Working), &[event(1)]).expect("the replica confirms");
    // The replica stops acknowledging (it stays connected); the next commit's WAIT waits.
    replica.signal(libc::SIGSTOP);
    let committing = std::sync::Arc::clone(&store);
    let owner2 = owner.clone();
    let answer = std::thread::spawn(move || {
        let step = at(&owner2, 2, TaskState::Working);
        let events = [event(2)];
        crate::block_on_store(committing.commit(Step {
            record: &step,
            events: &events,
            jobs: Vec::new(),
            session: None,
        }))
    });
    assert!(
        until(&primary, "CLIENT", "LIST", |list| list
            .lines()
            .any(|c| c.contains(" flags=b ") && c.contains(" cmd=wait "))),
        "the WAIT blocks"
    );
    // The connection drops with the commit written and its WAIT in flight: the pipe sends
    // both again on a new connection. A WAIT alone there, before any command, would count
    // the replica at once (its connection has no write to wait for).
    let _: redis::Value = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query(&mut raw(&primary))
        .unwrap();
    let answered = answer.join().unwrap();
    replica.signal(libc::SIGCONT);
    let refused = answered.expect_err("no replica has confirmed the step");
    assert!(matches!(refused, StoreError::Redis { kind: crate::RedisFailure::TimedOut, .. }), "{refused:?}");
    // Once the replica acknowledges again, the same step sent again is confirmed.
    store.put_task(&at(&owner, 2, TaskState::Working), &[event(2)]).expect("confirmed once the replica is back");
}

#[test]
fn on_a_redis_cluster_jobs_for_every_config_follow_the_configs_of_minted_and_moved_tasks() {
    let Some(cluster) = crate::redis::test_server::redis_cluster() else { return };
    let mut queue_options =
        RedisQueueOptions { url: cluster.url(), topology: crate::Topology::Cluster, ..RedisQueueOptions::default() };
    let store = cluster_store(&cluster, &queue_options);
    queue_options.shards = store.queue_keys(&queue_options);
    let queue = RedisQueue::connect(queue_options).unwrap();
    let configs = store.push_configs(SecretKey::generate().unwrap());
    let owner = Owner { tenant: "acme".into(), principal: "ann".into() };
    // A minted id (its configs in its step's slot: read by the script), and one that is
    // not (a task moved from sled: its configs' hash is in another slot, read beforehand).
    let minted = a2ad_protocol::ids::new_task_id(owner.shard_hash());
    assert_ne!(store.keys.hinted("moved-1"), store.keys.of_owner(&owner), "the moved id names another shard");
    for (n, id) in [minted.as_str(), "moved-1"].into_iter().enumerate() {
        configs.put(&owner, &TaskPushNotificationConfig { task_id: Some(id.into()), ..config("a") }).unwrap();
        let context = format!("c{n}");
        let step = TaskRecord { last_event_seq: 1, ..record(&owner, id, &context, TaskState::Working, 1000) };
        store.put_step(&step, &[event(1)], vec![PushJob::for_every_config(id, 1, 5)]).unwrap();
    }
    let mut due = Vec::new();
    for _ in 0..32 {
        due.extend(queue.due(i64::MAX, 100, &Default::default()).unwrap());
    }
    let mut made: Vec<(String, String, String)> =
        due.into_iter().map(|job| (job.task_id, job.config_id, job.body)).collect();
    made.sort();
    let mut expected = vec![
        (minted.clone(), "a".to_owned(), event(1).json.to_string()),
        ("moved-1".to_owned(), "a".to_owned(), event(1).json.to_string()),
    ];
    expected.sort();
    assert_eq!(made, expected);
}
