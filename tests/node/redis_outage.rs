//! A Redis outage under the redis-streams push queue: requests are answered, pushes wait
//! in the node's outbox (through a node crash too), and every one is delivered once Redis
//! is back. A real redis-server (killed and restarted on its port), the real binary and a
//! real webhook receiver.

use crate::receiver::Receiver;
use crate::redis::{config, RedisServer};
use crate::support::{eventually, send_params, NodeProcess, RemoteNode};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Redis as the README asks for a durable queue.
const DURABLE: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

/// Sends `n` messages, each asking for a push of its end to `hook`; returns the task ids.
async fn send_with_push(node: &RemoteNode, hook: &Value, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let params = send_params(&format!("m{i}"), json!({"configuration": {"taskPushNotificationConfig": hook}}));
        let result = node.ok("SendMessage", params).await;
        assert_eq!(result["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{result}");
        ids.push(result["task"]["id"].as_str().expect("a task id").to_owned());
    }
    ids
}

/// The tasks the receiver got a push for.
fn pushed_tasks(receiver: &Receiver) -> BTreeSet<String> {
    let ids = receiver.received().iter().map(|r| r.event_id()).collect::<Vec<_>>();
    ids.iter().filter_map(|id| id.rsplit_once(':').map(|(task, _)| task.to_owned())).collect()
}

async fn metric(node: &NodeProcess, name: &str) -> Option<f64> {
    let text = reqwest::get(format!("{}/metrics", node.url)).await.unwrap().text().await.unwrap();
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[actix_web::test]
async fn pushes_wait_out_a_redis_outage_and_a_node_crash_and_none_is_lost() {
    let Some(mut redis) = RedisServer::start() else { return };
    let receiver = Receiver::start();
    let hook = json!({"url": format!("{}/ok", receiver.base)});
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    let data = data.to_str().unwrap();
    let node_config = config(cwd.path(), redis.port, "outage");
    let args = ["--config", node_config.to_str().unwrap(), "--data-dir", data];
    let node = NodeProcess::start(cwd.path(), &args);
    let first = send_with_push(&node.app_view(), &hook, 1).await;
    assert!(eventually(400, || async { pushed_tasks(&receiver).len() == 1 }).await, "Redis up: pushed");

    redis.kill();
    let during = send_with_push(&node.app_view(), &hook, 4).await;
    // A config for an existing task is stored too.
    let create = json!({"taskId": first[0], "id": "later", "url": format!("{}/ok", receiver.base)});
    node.app_view().ok("CreateTaskPushNotificationConfig", create).await;
    let ready = reqwest::get(format!("{}/ready", node.url)).await.unwrap();
    assert_eq!(ready.status(), 200, "a Redis outage does not make the node unready");
    assert_eq!(metric(&node, "a2ad_push_outbox_depth").await, Some(4.0), "the jobs wait in the outbox");
    assert_eq!(pushed_tasks(&receiver).len(), 1, "nothing is pushed while Redis is down");

    redis.restart(DURABLE);
    let all: BTreeSet<String> = first.iter().chain(&during).cloned().collect();
    let delivered = eventually(800, || async { pushed_tasks(&receiver) == all }).await;
    assert!(delivered, "every end pushed once Redis is back: {:?} of {all:?}", pushed_tasks(&receiver));
    assert!(eventually(400, || async { metric(&node, "a2ad_push_outbox_depth").await == Some(0.0) }).await);

    // Down again; the node crashes with jobs in its outbox and restarts while Redis is down.
    redis.kill();
    let crashed = send_with_push(&node.app_view(), &hook, 2).await;
    node.crash();
    let node = NodeProcess::start(cwd.path(), &args);
    assert_eq!(metric(&node, "a2ad_push_outbox_depth").await, Some(2.0), "the outbox survived the crash");
    redis.restart(DURABLE);
    let all: BTreeSet<String> = all.into_iter().chain(crashed).collect();
    let delivered = eventually(800, || async { pushed_tasks(&receiver) == all }).await;
    assert!(delivered, "the crashed node's pushes are delivered: {:?} of {all:?}", pushed_tasks(&receiver));
    for received in receiver.received() {
        assert_eq!(received.status, 200, "{received:?}");
    }
}
