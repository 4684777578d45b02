//! The outbox and its forwarder, against a real redis-server: only durable jobs leave,
//! a forwarded job leaves the outbox, and an outage delays jobs without losing one.

use super::*;
use crate::redis::push_queue::forwarder::forward_batch;
use crate::sled::store::tests::record;
use crate::sled::wal::{FullDiskSwitch, WalOptions};
use crate::TaskStoreExt;
use crate::{LoggedEvent, Owner, PushQueue, TaskStore, WalStore};
use a2ad_protocol::TaskState;
use std::sync::Arc;

fn event(seq: u64) -> LoggedEvent {
    LoggedEvent { seq, json: format!(r#"{{"statusUpdate":{{"seq":{seq}}}}}"#).into() }
}

/// Polls `check` every 20 ms, at most 500 times.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    (0..500).any(|_| {
        let ok = check();
        if !ok {
            std::thread::sleep(Duration::from_millis(20));
        }
        ok
    })
}

fn quick() -> ForwarderSettings {
    ForwarderSettings {
        batch: 2,
        idle_poll: Duration::from_millis(5),
        retry_base: Duration::from_millis(5),
        retry_max: Duration::from_millis(50),
    }
}

/// The ids of the jobs a fresh worker reads from the stream.
fn stream_ids(server: &RedisServer) -> Vec<String> {
    let reader = queue(server, "reader", Duration::from_secs(30));
    let mut ids: Vec<String> = reader.due(i64::MAX, 100, &none()).unwrap().iter().map(PushJob::id).collect();
    ids.sort();
    ids
}

#[test]
fn a_job_is_forwarded_only_once_its_step_is_durable_and_then_leaves_the_outbox() {
    let Some(server) = redis() else { return };
    let target = queue(&server, "w1", Duration::from_secs(30));
    let (data, wal) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sled = crate::sled::store::open_retrying(data.path());
    let outbox = PushQueue::new(sled.tree(PUSH_OUTBOX_TREE).unwrap());
    let switch = FullDiskSwitch::default();
    let options = WalOptions::default().full_disk_switch(&switch);
    let (store, _) = WalStore::open(Arc::new(sled), Some(outbox.clone()), wal.path(), options).unwrap();

    switch.set_full(true);
    let task = record(&Owner::anonymous(), "t1", "c1", TaskState::Completed, 1);
    let job = PushJob::new("t1", "cfg", 1, event(1).json.to_string(), 1);
    store.put_step(&task, &[event(1)], vec![job.clone()]).unwrap();
    let refused = store.flush().expect_err("the disk is full");
    assert!(matches!(refused, StoreError::Unavailable(_)), "{refused:?}");
    assert_eq!(outbox.depth().unwrap(), 0, "a job reaches the outbox only once its step is durable");
    assert_eq!(forward_batch(&outbox, &target, 10).unwrap(), 0);
    assert_eq!(target.depth().unwrap(), 0, "nothing reached Redis before the step was durable");

    switch.set_full(false);
    store.flush().expect("the log rewrites the step once space is back");
    assert_eq!(outbox.depth().unwrap(), 1, "the durable step put its job in the outbox");
    assert_eq!(forward_batch(&outbox, &target, 10).unwrap(), 1);
    assert_eq!(outbox.depth().unwrap(), 0, "a forwarded job leaves the outbox");
    assert_eq!(stream_ids(&server), vec![job.id()]);
    assert_eq!(forward_batch(&outbox, &target, 10).unwrap(), 0, "nothing is forwarded twice");
}

#[test]
fn a_redis_outage_delays_forwarding_and_loses_no_job() {
    let Some(mut server) = redis_with(&["--appendonly", "yes", "--appendfsync", "always"]) else { return };
    let db = sled::Config::new().temporary(true).open().unwrap();
    let outbox = PushQueue::new(db.open_tree(PUSH_OUTBOX_TREE).unwrap());
    let target = RedisQueue::open(RedisQueueOptions { url: server.url(), ..RedisQueueOptions::default() }).unwrap();
    let forwarder = Forwarder::start(Arc::new(outbox.clone()), Arc::new(target), quick()).unwrap();
    let jobs: Vec<PushJob> = (1..=5).map(|seq| PushJob::new("t1", "cfg", seq, "{}".into(), 1)).collect();

    outbox.enqueue(&jobs[..1]).unwrap();
    assert!(eventually(|| outbox.depth().unwrap() == 0), "the first job is forwarded");
    server.kill();
    outbox.enqueue(&jobs[1..]).unwrap();
    std::thread::sleep(Duration::from_millis(200)); // a few failed passes
    assert_eq!(outbox.depth().unwrap(), 4, "the jobs wait in the outbox while Redis is down");

    server.restart(&["--appendonly", "yes", "--appendfsync", "always"]);
    assert!(eventually(|| outbox.depth().unwrap() == 0), "the outbox empties once Redis is back");
    forwarder.stop();
    let mut expected: Vec<String> = jobs.iter().map(PushJob::id).collect();
    expected.sort();
    assert_eq!(stream_ids(&server), expected, "every job is in the stream, once");
}
