//! JSON-RPC over Redis Streams, with a real redis-server started by the test and the
//! async redis client playing the caller.

use crate::redis::RedisServer;
use crate::support::JsonBody as _;
use crate::support::{echo_agent, eventually, send_params, slow_echo, spawn_app, TestApp};
use a2ad::config::{Config, RedisTransportConfig};
use a2ad_protocol::TaskState;
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamPendingReply, StreamRangeReply};
use redis::AsyncCommands;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

const REQUESTS: &str = "a2ad:requests";
const GROUP: &str = "a2ad";

type Entry = HashMap<String, String>;

fn transport(port: u16, consumer: &str) -> RedisTransportConfig {
    RedisTransportConfig {
        url: format!("redis://127.0.0.1:{port}/"),
        requests: REQUESTS.into(),
        group: GROUP.into(),
        consumer: consumer.into(),
        block_ms: 100,
        claim_idle: Duration::from_secs(30),
        max_in_flight: 16,
        reply_maxlen: 1000,
    }
}

async fn connect(port: u16) -> MultiplexedConnection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

async fn node(port: u16, consumer: &str, tweak: impl FnOnce(&mut Config)) -> TestApp {
    let consumer = consumer.to_owned();
    spawn_app(move |c| {
        c.redis_transport = Some(transport(port, &consumer));
        tweak(c);
    })
    .await
}

fn rpc(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// XADDs a request entry; returns its id.
async fn add(con: &mut MultiplexedConnection, fields: &[(&str, &str)]) -> String {
    con.xadd(REQUESTS, "*", fields).await.unwrap()
}

/// The entries of `stream` that answer `entry_id`, in order.
async fn replies(con: &mut MultiplexedConnection, stream: &str, entry_id: &str) -> Vec<Entry> {
    let range: StreamRangeReply = con.xrange_all(stream).await.unwrap();
    range
        .ids
        .into_iter()
        .map(|e| e.map.into_iter().map(|(k, v)| (k, redis::from_redis_value::<String>(&v).unwrap())).collect::<Entry>())
        .filter(|e| e.get("id").map(String::as_str) == Some(entry_id))
        .collect()
}

/// Waits for the final reply entry to `entry_id`; returns every reply entry.
async fn answered(con: &MultiplexedConnection, stream: &str, entry_id: &str) -> Vec<Entry> {
    let done = eventually(800, || {
        let mut con = con.clone();
        async move { replies(&mut con, stream, entry_id).await.iter().any(|e| e["final"] == "true") }
    })
    .await;
    assert!(done, "no final reply to {entry_id} on {stream}");
    replies(&mut con.clone(), stream, entry_id).await
}

fn response(entry: &Entry) -> Value {
    serde_json::from_str(&entry["response"]).expect("a JSON-RPC response")
}

async fn pending(con: &mut MultiplexedConnection) -> usize {
    let reply: StreamPendingReply = con.xpending(REQUESTS, GROUP).await.unwrap();
    reply.count()
}

#[actix_web::test]
async fn a_request_is_answered_on_its_reply_stream_and_acked_only_after() {
    let Some(redis) = RedisServer::start() else { return };
    let node = node(redis.port, "n1", slow_echo(Duration::from_millis(30))).await;
    let mut con = connect(redis.port).await;
    let request = rpc(json!(1), "SendMessage", send_params("abcdefghij", json!({})));
    let id = add(&mut con, &[("request", request.as_str()), ("reply-to", "replies")]).await;
    let mut seen_pending = false;
    loop {
        let waiting = pending(&mut con).await;
        let written = replies(&mut con, "replies", &id).await.len();
        assert!(waiting == 1 || written > 0, "acknowledged before the answer was written");
        seen_pending |= waiting == 1 && written == 0;
        if waiting == 0 {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen_pending, "the entry was pending while its turn ran");
    let entries = replies(&mut con, "replies", &id).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["final"], "true");
    let answer = response(&entries[0]);
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let metrics = node.client.get(format!("{}/metrics", node.url)).send().await.unwrap().text().await.unwrap();
    let counted = r#"a2ad_requests_total{method="SendMessage",binding="redis",status="ok"} 1"#;
    assert!(metrics.lines().any(|l| l == counted), "{counted} missing from {metrics}");
}

#[actix_web::test]
async fn a_stream_is_one_entry_per_frame_then_a_final_marker() {
    let Some(redis) = RedisServer::start() else { return };
    let _node = node(redis.port, "n1", slow_echo(Duration::from_millis(5))).await;
    let mut con = connect(redis.port).await;
    let request = rpc(json!("s"), "SendStreamingMessage", send_params("abc", json!({})));
    let id = add(&mut con, &[("request", request.as_str()), ("reply-to", "frames")]).await;
    let entries = answered(&con, "frames", &id).await;
    let (last, frames) = entries.split_last().unwrap();
    assert_eq!(last["final"], "true");
    assert!(!last.contains_key("response"), "the marker carries no response: {last:?}");
    assert!(frames.len() >= 4, "{frames:?}");
    let mut previous_seq = 0;
    for frame in frames {
        assert_eq!(frame["final"], "false");
        let seq: u64 = frame["seq"].parse().unwrap();
        assert!(seq > previous_seq, "event numbers rise");
        previous_seq = seq;
        assert_eq!(response(frame)["id"], "s");
    }
    let states: Vec<Value> =
        frames.iter().map(|f| response(f)["result"]["statusUpdate"]["status"]["state"].clone()).collect();
    assert_eq!(states.last().unwrap(), "TASK_STATE_COMPLETED");
    assert!(eventually(200, || async { pending(&mut con.clone()).await == 0 }).await, "acked after the marker");
}

#[actix_web::test]
async fn bad_entries_get_an_error_reply_and_are_acked_either_way() {
    let Some(redis) = RedisServer::start() else { return };
    let _node = node(redis.port, "n1", |c| c.body_limit = 4096).await;
    let mut con = connect(redis.port).await;
    let not_json = add(&mut con, &[("request", "{nope"), ("reply-to", "errors")]).await;
    let huge = rpc(json!(10), "SendMessage", send_params(&"x".repeat(5000), json!({})));
    let too_large = add(&mut con, &[("request", huge.as_str()), ("reply-to", "errors")]).await;
    let bad_params =
        add(&mut con, &[("request", &rpc(json!(11), "GetTask", json!({"id": 5}))), ("reply-to", "errors")]).await;
    let not_found =
        add(&mut con, &[("request", &rpc(json!(12), "GetTask", json!({"id": "nope"}))), ("reply-to", "errors")]).await;
    let no_request = add(&mut con, &[("reply-to", "errors")]).await;
    let unknown =
        add(&mut con, &[("request", &rpc(json!(9), "NoSuchMethod", json!({}))), ("reply-to", "errors")]).await;
    let nowhere = add(&mut con, &[("request", &rpc(json!(1), "ListTasks", json!({})))]).await;

    let parse = response(&answered(&con, "errors", &not_json).await[0]);
    assert_eq!((parse["id"].clone(), parse["error"]["code"].clone()), (Value::Null, json!(-32700)));
    let missing = response(&answered(&con, "errors", &no_request).await[0]);
    assert_eq!(missing["error"]["code"], -32600);
    assert!(missing["error"]["message"].as_str().unwrap().contains("request"), "{missing}");
    let method = response(&answered(&con, "errors", &unknown).await[0]);
    assert_eq!((method["id"].clone(), method["error"]["code"].clone()), (json!(9), json!(-32601)));
    let large = response(&answered(&con, "errors", &too_large).await[0]);
    assert_eq!(large["error"]["data"][0]["reason"], "PAYLOAD_TOO_LARGE", "{large}");
    let params = response(&answered(&con, "errors", &bad_params).await[0]);
    assert_eq!((params["id"].clone(), params["error"]["code"].clone()), (json!(11), json!(-32602)), "{params}");
    let missing_task = response(&answered(&con, "errors", &not_found).await[0]);
    assert_eq!(missing_task["error"]["code"], -32001, "{missing_task}");
    assert!(eventually(200, || async { pending(&mut con.clone()).await == 0 }).await, "all acked, none retried");
    assert!(replies(&mut con, "errors", &nowhere).await.is_empty(), "no reply-to: acked unanswered");
}

#[actix_web::test]
async fn a_reply_to_that_is_not_a_stream_is_acked_not_retried_forever() {
    let Some(redis) = RedisServer::start() else { return };
    let _node = node(redis.port, "n1", |_| {}).await;
    let mut con = connect(redis.port).await;
    let _: () = con.set("a-string", "not a stream").await.unwrap();
    let request = rpc(json!(1), "ListTasks", json!({}));
    add(&mut con, &[("request", request.as_str()), ("reply-to", "a-string")]).await;
    assert!(eventually(200, || async { pending(&mut con.clone()).await == 0 }).await, "acknowledged");
    let kept: String = con.get("a-string").await.unwrap();
    assert_eq!(kept, "not a stream", "the key is left as it was");
}

#[actix_web::test]
async fn the_authorization_field_is_checked_by_the_authenticator() {
    let Some(redis) = RedisServer::start() else { return };
    let node = node(redis.port, "n1", |c| {
        c.auth =
            serde_yaml_ng::from_str("bearer-tokens:\n  - {token: tok-r, tenant: acme, principal: rita}\n").unwrap();
    })
    .await;
    let mut con = connect(redis.port).await;
    let send = rpc(json!(1), "SendMessage", send_params("hi", json!({})));
    let anonymous = add(&mut con, &[("request", send.as_str()), ("reply-to", "auth")]).await;
    let wrong =
        add(&mut con, &[("request", send.as_str()), ("reply-to", "auth"), ("authorization", "Bearer nope")]).await;
    let good =
        add(&mut con, &[("request", send.as_str()), ("reply-to", "auth"), ("authorization", "Bearer tok-r")]).await;
    let v03 = rpc(json!(7), "tasks/get", json!({"id": "t"}));
    let v03_refused = add(&mut con, &[("request", v03.as_str()), ("reply-to", "auth")]).await;
    let v01 = rpc(json!(8), "tasks/send", json!({"capability_id": "x"}));
    let v01_refused = add(&mut con, &[("request", v01.as_str()), ("reply-to", "auth")]).await;
    for refused in [anonymous, wrong] {
        let error = response(&answered(&con, "auth", &refused).await[0]);
        assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (json!(1), json!(-31401)), "{error}");
        assert_eq!(error["error"]["data"][0]["reason"], "UNAUTHENTICATED", "{error}");
    }
    let error = response(&answered(&con, "auth", &v03_refused).await[0]);
    assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (json!(7), json!(-31401)), "{error}");
    assert_eq!(error["error"]["data"]["reason"], "UNAUTHENTICATED", "0.3 data is an object: {error}");
    let error = response(&answered(&con, "auth", &v01_refused).await[0]);
    assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (json!(8), json!(-32000)), "{error}");
    let accepted = response(&answered(&con, "auth", &good).await[0]);
    let task_id = accepted["result"]["task"]["id"].as_str().unwrap();
    let over_http: Value = node
        .client
        .post(&node.url)
        .bearer_auth("tok-r")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}))
        .json_body()
        .await;
    assert_eq!(over_http["result"]["id"], task_id, "the entry's caller owns the task");
}

#[actix_web::test]
async fn two_nodes_in_one_group_share_the_requests() {
    let Some(redis) = RedisServer::start() else { return };
    let one_at_a_time = |c: &mut Config| {
        slow_echo(Duration::from_millis(20))(c);
        c.redis_transport.as_mut().unwrap().max_in_flight = 1;
    };
    let a = node(redis.port, "node-a", one_at_a_time).await;
    let b = node(redis.port, "node-b", one_at_a_time).await;
    let mut con = connect(redis.port).await;
    let mut ids = Vec::new();
    for n in 0..8 {
        let request = rpc(json!(n), "SendMessage", send_params("abcde", json!({})));
        ids.push(add(&mut con, &[("request", request.as_str()), ("reply-to", "shared")]).await);
    }
    for id in &ids {
        let answer = response(&answered(&con, "shared", id).await[0]);
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    }
    let count = |app: &TestApp| {
        let app_url = app.url.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
            let listed: Value = reqwest::Client::new().post(app_url).json(&body).json_body().await;
            listed["result"]["tasks"].as_array().unwrap().len()
        }
    };
    let (on_a, on_b) = (count(&a).await, count(&b).await);
    assert_eq!(on_a + on_b, 8, "each request answered once");
    assert!(on_a > 0 && on_b > 0, "both nodes got work ({on_a} and {on_b})");
}

#[actix_web::test]
async fn an_entry_left_pending_by_a_dead_consumer_is_claimed_and_answered() {
    let Some(redis) = RedisServer::start() else { return };
    let mut con = connect(redis.port).await;
    let _: () = con.xgroup_create_mkstream(REQUESTS, GROUP, "0").await.unwrap();
    let request = rpc(json!("orphan"), "SendMessage", send_params("hello", json!({})));
    let id = add(&mut con, &[("request", request.as_str()), ("reply-to", "claimed")]).await;
    // A consumer reads the entry and dies without answering it.
    let options = redis::streams::StreamReadOptions::default().group(GROUP, "ghost").count(1);
    let read: redis::streams::StreamReadReply = con.xread_options(&[REQUESTS], &[">"], &options).await.unwrap();
    assert_eq!(read.keys[0].ids[0].id, id);
    assert_eq!(pending(&mut con).await, 1);

    let _node = node(redis.port, "rescuer", |c| {
        c.redis_transport.as_mut().unwrap().claim_idle = Duration::from_millis(300);
    })
    .await;
    let answer = response(&answered(&con, "claimed", &id).await[0]);
    assert_eq!(answer["id"], "orphan");
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(eventually(200, || async { pending(&mut con.clone()).await == 0 }).await, "acked by the rescuer");
}

#[actix_web::test]
async fn a_deleted_request_stream_and_group_are_created_again() {
    let Some(redis) = RedisServer::start() else { return };
    let _node = node(redis.port, "n1", |_| {}).await;
    let mut con = connect(redis.port).await;
    let first = add(&mut con, &[("request", &rpc(json!(1), "ListTasks", json!({}))), ("reply-to", "again")]).await;
    answered(&con, "again", &first).await;
    let _: () = con.del(REQUESTS).await.unwrap(); // the stream and its group are gone
    let second = add(&mut con, &[("request", &rpc(json!(2), "ListTasks", json!({}))), ("reply-to", "again")]).await;
    let answer = response(&answered(&con, "again", &second).await[0]);
    assert_eq!(answer["id"], 2, "{answer}");
}

/// SIGTERM: the node stops reading before it drains, so a request that arrives then is left
/// for the other nodes or (read before the signal) answered, never refused for the drain;
/// the running one is answered and acked.
#[actix_web::test]
async fn a_stopping_node_finishes_its_running_request_and_leaves_new_ones_in_the_stream() {
    let Some(redis) = RedisServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("node.yml");
    let yaml = format!(
        "agents:\n  - id: slow\n    kind: echo\n    echo: {{chunk-size: 1, chunk-delay: 30ms}}\nshutdown-grace: 10s\n\
         redis-transport: {{url: 'redis://127.0.0.1:{}/', consumer: stopping, block-ms: 100, claim-idle: 30s}}\n",
        redis.port
    );
    std::fs::write(&config, yaml).unwrap();
    let data = dir.path().join("data");
    let node = crate::support::NodeProcess::start(
        dir.path(),
        &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()],
    );
    let mut con = connect(redis.port).await;
    let running = rpc(json!("running"), "SendMessage", send_params("abcdefghij", json!({})));
    let first = add(&mut con, &[("request", running.as_str()), ("reply-to", "stop")]).await;
    assert!(eventually(400, || async { pending(&mut con.clone()).await == 1 }).await, "the node took it");
    let exited = actix_web::rt::task::spawn_blocking(move || node.terminate());
    let late = rpc(json!("late"), "SendMessage", send_params("late", json!({})));
    let second = add(&mut con, &[("request", late.as_str()), ("reply-to", "stop")]).await;
    assert!(exited.await.unwrap().success(), "a clean exit");

    let answer = response(&replies(&mut con, "stop", &first).await[0]);
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let late_replies = replies(&mut con, "stop", &second).await;
    if let Some(reply) = late_replies.first() {
        let answer = response(reply);
        assert!(answer.get("error").is_none(), "read before the signal, so answered, not refused: {answer}");
    }
    let pending_ids: Vec<String> = {
        let reply: redis::streams::StreamPendingCountReply =
            con.xpending_count(REQUESTS, GROUP, "-", "+", 10).await.unwrap();
        reply.ids.into_iter().map(|p| p.id).collect()
    };
    assert!(!pending_ids.contains(&first), "the answered one is acked");
    if late_replies.is_empty() {
        let range: StreamRangeReply = con.xrange_all(REQUESTS).await.unwrap();
        assert!(range.ids.iter().any(|e| e.id == second), "the late one is still in the stream for another node");
    }
}

#[actix_web::test]
async fn a_reply_only_agent_is_one_frame_then_the_final_marker_and_leaves_no_task() {
    use crate::reply_only::{command_agent, REPLY};
    let Some(redis) = RedisServer::start() else { return };
    let node = node(redis.port, "n1", |c| c.agents = vec![command_agent("reply", REPLY)]).await;
    let mut con = connect(redis.port).await;
    let request = rpc(json!("r"), "SendStreamingMessage", send_params("hi", json!({})));
    let id = add(&mut con, &[("request", request.as_str()), ("reply-to", "frames")]).await;
    let entries = answered(&con, "frames", &id).await;
    assert_eq!(entries.len(), 2, "one frame, then the marker: {entries:?}");
    assert_eq!((entries[0]["final"].as_str(), entries[1]["final"].as_str()), ("false", "true"));
    let frame = response(&entries[0]);
    assert_eq!(frame["id"], "r");
    let message = &frame["result"]["message"];
    assert_eq!(message["role"], "ROLE_AGENT", "{frame}");
    assert!(message["parts"][0]["text"].as_str().unwrap().starts_with("answer history=none"), "{frame}");
    assert!(eventually(200, || async { pending(&mut con.clone()).await == 0 }).await, "acked after the marker");

    let blocking = rpc(json!("b"), "SendMessage", send_params("hi", json!({})));
    let id = add(&mut con, &[("request", blocking.as_str()), ("reply-to", "answers")]).await;
    let answers = answered(&con, "answers", &id).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    let answer = response(&answers[0]);
    assert!(answer["result"].get("task").is_none(), "{answer}");
    assert_eq!(answer["result"]["message"]["role"], "ROLE_AGENT", "{answer}");
    assert_eq!(node.ok("ListTasks", json!({})).await["totalSize"], 0, "no task is left behind");
}

#[actix_web::test]
async fn a_redis_subscription_to_an_interrupted_task_follows_its_next_turn() {
    let Some(redis) = RedisServer::start() else { return };
    let chat = |c: &mut Config| c.agents = vec![echo_agent("chat", TaskState::InputRequired, 0, Duration::ZERO)];
    let app = node(redis.port, "n1", chat).await;
    let task = app.send_text("hi", json!({})).await;
    let mut con = connect(redis.port).await;
    let request = rpc(json!("w"), "SubscribeToTask", json!({"id": task["id"]}));
    let id = add(&mut con, &[("request", request.as_str()), ("reply-to", "watch")]).await;
    let snapshot = eventually(400, || {
        let (mut con, id) = (con.clone(), id.clone());
        async move { !replies(&mut con, "watch", &id).await.is_empty() }
    })
    .await;
    assert!(snapshot, "the snapshot frame came");
    app.send_text("more", json!({"taskId": task["id"]})).await;
    app.ok("CancelTask", json!({"id": task["id"]})).await;
    let entries = answered(&con, "watch", &id).await;
    let (marker, frames) = entries.split_last().unwrap();
    assert_eq!(marker["final"], "true");
    let state = |frame: &Entry| {
        let result = response(frame)["result"].clone();
        let status = result.get("task").unwrap_or(&result["statusUpdate"])["status"].clone();
        status["state"].clone()
    };
    let states: Vec<Value> = frames.iter().map(state).filter(|s| !s.is_null()).collect();
    assert_eq!(
        states,
        ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"],
        "the snapshot, the next turn, the cancel, then the final marker"
    );
}
