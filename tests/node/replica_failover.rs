//! `redis.replica-acks` (issue 34, point 3): a node answers a step only once a replica
//! confirmed it, so a failover to that replica loses nothing acknowledged.
//!
//! A real primary and replica (two redis-server processes), a node on the primary with
//! `replica-acks: 1` under a load of blocking sends; the primary is killed (SIGKILL) while
//! the load runs, the replica promoted (`REPLICAOF NO ONE`), and a new node pointed at it
//! must find every task the first node acknowledged, completed.

use crate::redis::RedisServer;
use crate::support::{send_params, spawn_app, TestApp};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sends at most this many messages per load loop (a bound in count; the loops also stop
/// at their first error, which the kill brings).
const SENDS_PER_LOOP: usize = 200;
const LOOPS: usize = 8;
/// The primary is killed once this many sends were acknowledged.
const KILL_AFTER: usize = 60;

fn node_on(port: u16, replica_acks: u32) -> impl FnOnce(&mut a2ad::config::Config) {
    move |config| {
        config.store = a2ad::config::StoreKind::Redis;
        config.redis.url = format!("redis://127.0.0.1:{port}/");
        config.redis.replica_acks = replica_acks;
        config.redis.prefix = "failover".into();
    }
}

/// Waits (bounded) until the replica's link to its primary is up.
fn replica_in_sync(replica_port: u16) -> bool {
    let client = redis::Client::open(format!("redis://127.0.0.1:{replica_port}/")).unwrap();
    for _ in 0..500 {
        if let Ok(mut conn) = client.get_connection() {
            let info: String = redis::cmd("INFO").arg("replication").query(&mut conn).unwrap_or_default();
            if info.contains("master_link_status:up") {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// One load loop: sends until an error or [`SENDS_PER_LOOP`], noting each acknowledged task.
async fn load(app: Arc<TestApp>, loop_id: usize, acked: Arc<Mutex<Vec<String>>>) {
    for i in 0..SENDS_PER_LOOP {
        let params = send_params("keep me", json!({"contextId": format!("loop{loop_id}-{i}")}));
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
        // After the kill the node answers STORE_UNAVAILABLE (HTTP 503): the loop ends.
        let Ok(response) = app.client.post(&app.url).json(&body).send().await else { return };
        let Ok(answer) = response.json::<serde_json::Value>().await else { return };
        let Some(id) = answer["result"]["task"]["id"].as_str() else { return };
        acked.lock().unwrap().push(id.to_owned());
    }
}

#[actix_web::test]
async fn a_failover_to_the_replica_loses_no_acknowledged_step() {
    let durable = ["--appendonly", "yes", "--appendfsync", "always"];
    let Some(mut primary) = RedisServer::start_with(&durable) else { return };
    let port = primary.port.to_string();
    let replica_args = [&durable[..], &["--replicaof", "127.0.0.1", &port]].concat();
    let replica = RedisServer::start_with(&replica_args).expect("the replica starts");
    assert!(replica_in_sync(replica.port), "the replica follows the primary");

    let first = Arc::new(spawn_app(node_on(primary.port, 1)).await);
    let acked = Arc::new(Mutex::new(Vec::new()));
    let loops: Vec<_> = (0..LOOPS).map(|n| tokio::spawn(load(Arc::clone(&first), n, Arc::clone(&acked)))).collect();
    for _ in 0..3000 {
        if acked.lock().unwrap().len() >= KILL_AFTER {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(acked.lock().unwrap().len() >= KILL_AFTER, "the load got going");
    primary.kill();
    for l in loops {
        tokio::time::timeout(Duration::from_secs(120), l).await.expect("the loops end").unwrap();
    }

    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", replica.port)).unwrap();
    let mut conn = client.get_connection().unwrap();
    let () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut conn).unwrap();
    let second = spawn_app(node_on(replica.port, 0)).await;
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= KILL_AFTER);
    for id in &acked {
        let task = second.ok("GetTask", json!({"id": id})).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "task {id} was acknowledged: {task}");
    }
}
