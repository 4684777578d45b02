//! Cluster mode (`store: redis`): three node processes on one redis-server of the test's
//! own (AOF with `appendfsync always`), or on a Redis Cluster of three primaries in the
//! suite's `A2AD_TEST_STORE=redis-cluster` pass, each node on its own port and data dir,
//! as an operator runs them behind a load balancer. Any node serves any task; turns stay one at a time
//! per context across nodes; a node killed mid-turn loses its turn to the lease expiry,
//! and nothing acknowledged is lost, not even across a Redis restart.

use crate::receiver::Receiver;
use crate::redis::RedisServer;
use crate::shared_redis::SharedRedis;
use crate::support::{eventually, send_params, NodeProcess, RemoteNode, SseReader};
use serde_json::{json, Value};
use std::path::Path;

/// The lease TTL of the tests that kill a node or restart Redis: short, so a killed
/// node's turn fails soon.
const SHORT_LEASE_TTL: &str = "1s";

/// The lease TTL of the other tests. A node renews its leases every third of the TTL, so
/// with 1 s a renewal late by ~0.7 s lost a running turn's lease and refused its writes
/// (an internal error): once in a full CI run, with every test binary and Redis's
/// `appendfsync always` contending for two cores and one disk.
const LEASE_TTL: &str = "5s";

/// The push-secret key the nodes share (32 bytes, base64).
const PUSH_KEY: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

/// Redis's durable settings: every acknowledged write is on disk.
const DURABLE: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

struct Cluster {
    redis: SharedRedis,
    nodes: Vec<NodeProcess>,
    dir: tempfile::TempDir,
    config: String,
}

/// A failed test shows what its nodes logged (their logs are in the temp dir, which goes
/// with the cluster): a turn's internal error says its cause only there.
impl Drop for Cluster {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for n in 0.. {
            let Ok(log) = std::fs::read_to_string(self.dir.path().join(format!("node{n}.log"))) else { break };
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("--- node {n}, the last {} lines of its log:", tail.len());
            tail.iter().rev().for_each(|line| eprintln!("{line}"));
        }
    }
}

/// The config every node shares: the store, and a slow echo agent (a turn takes
/// ~`chunks` × 100 ms) whose tasks, with `end-state`, end as asked.
fn config(redis: &SharedRedis, extra: &str, lease_ttl: &str) -> String {
    format!(
        "store: redis\nredis:\n{}  lease-ttl: {lease_ttl}\n\
         agents:\n  - {{id: slow, kind: echo, echo: {{chunk-size: 1, chunk-delay: 100ms}}}}\n\
         {extra}",
        redis.config_lines()
    )
}

impl Cluster {
    /// `count` nodes, or `None` (skipped) without a redis-server.
    fn start(count: usize, extra: &str) -> Option<Cluster> {
        Self::start_with_lease(count, extra, LEASE_TTL)
    }

    /// [`Cluster::start`] with the nodes' `lease-ttl` given.
    fn start_with_lease(count: usize, extra: &str, lease_ttl: &str) -> Option<Cluster> {
        let redis = SharedRedis::start_with(DURABLE)?;
        let dir = tempfile::tempdir().unwrap();
        let config_path = dir.path().join("a2ad.yaml");
        std::fs::write(&config_path, config(&redis, extra, lease_ttl)).unwrap();
        let config = config_path.to_str().unwrap().to_owned();
        let mut cluster = Cluster { redis, nodes: Vec::new(), dir, config };
        for _ in 0..count {
            cluster.add_node();
        }
        Some(cluster)
    }

    /// Starts one more node on the shared config (its own data dir).
    fn add_node(&mut self) {
        let n = self.nodes.len();
        let data = self.dir.path().join(format!("node{n}"));
        let log = self.dir.path().join(format!("node{n}.log"));
        let args = ["--config", self.config.as_str(), "--data-dir", data.to_str().unwrap()];
        // Every node seals and opens push secrets with the same key.
        let env = [("A2AD_PUSH_KEY", PUSH_KEY)];
        self.nodes.push(NodeProcess::start_logging_with_env(self.dir.path(), &args, &log, &env));
    }

    fn node(&self, i: usize) -> RemoteNode {
        self.nodes[i].app_view()
    }
}

impl RemoteNode {
    /// A JSON-RPC call: the whole response body.
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.client.post(&self.url).json(&body).send().await.expect("sent").json().await.expect("json")
    }

    /// A streaming JSON-RPC call with extra headers.
    async fn stream(&self, method: &str, params: Value, headers: &[(&str, &str)]) -> SseReader {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = self.client.post(&self.url).json(&body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        SseReader::from_response(request.send().await.expect("sent")).await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a slow turn of `chunks` characters and answers at once: the task, WORKING.
    async fn start_slow(&self, chunks: usize, extra: Value) -> Value {
        let mut extra = extra;
        extra["configuration"] = json!({"returnImmediately": true});
        self.ok("SendMessage", send_params(&"x".repeat(chunks), extra)).await["task"].clone()
    }

    async fn state_of(&self, task_id: &str) -> String {
        let task = self.ok("GetTask", json!({"id": task_id})).await;
        task["status"]["state"].as_str().unwrap_or_default().to_owned()
    }
}

/// The task state an SSE event carries ("" for an artifact update).
fn state(event: &crate::support::SseEvent) -> String {
    let result = event.result();
    let state = result["statusUpdate"]["status"]["state"].as_str().or(result["task"]["status"]["state"].as_str());
    state.unwrap_or_default().to_owned()
}

#[actix_web::test]
async fn a_task_made_on_one_node_is_read_listed_streamed_resumed_and_cancelled_on_the_others() {
    let Some(cluster) = Cluster::start(3, "") else { return };
    let (one, two, three) = (cluster.node(0), cluster.node(1), cluster.node(2));
    let task = one.start_slow(8, json!({})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(two.state_of(&id).await, "TASK_STATE_WORKING", "node 2 reads node 1's running task");
    let listed = three.ok("ListTasks", json!({"contextId": task["contextId"]})).await;
    assert_eq!((listed["totalSize"].as_u64(), listed["tasks"][0]["id"].as_str()), (Some(1), Some(id.as_str())));

    // Node 2 follows the turn running on node 1, to its end.
    let mut stream = two.stream("SubscribeToTask", json!({"id": id}), &[]).await;
    let events = stream.rest().await;
    assert_eq!(state(events.last().unwrap()), "TASK_STATE_COMPLETED", "{events:?}");
    let artifacts = events.iter().filter(|e| e.result().get("artifactUpdate").is_some()).count();
    assert!(artifacts >= 1, "node 2 saw node 1's artifact updates live: {events:?}");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "one event per id, in order: {seqs:?}");

    // Node 3 resumes another turn after the event id it last saw.
    let task = one.start_slow(6, json!({})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let mut first = two.stream("SubscribeToTask", json!({"id": id}), &[]).await;
    let seen = first.next_data().await.unwrap().seq();
    drop(first);
    let mut resumed = three.stream("SubscribeToTask", json!({"id": id}), &[("Last-Event-ID", &seen.to_string())]).await;
    let rest = resumed.rest().await;
    assert_eq!(rest.first().map(|e| e.seq()), Some(seen + 1), "the resume starts right after: {rest:?}");
    assert_eq!(state(rest.last().unwrap()), "TASK_STATE_COMPLETED");

    // Node 3 cancels a turn that runs on node 1; node 2 sees it cancelled.
    let task = one.start_slow(100, json!({})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let cancelled = three.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(cancelled["status"]["state"], "TASK_STATE_CANCELED", "{cancelled}");
    assert_eq!(two.state_of(&id).await, "TASK_STATE_CANCELED");
}

#[actix_web::test]
async fn concurrent_sends_to_one_context_through_different_nodes_run_exactly_one_turn() {
    let Some(cluster) = Cluster::start(3, "") else { return };
    let first = cluster.node(0).ok("SendMessage", send_params("a", json!({}))).await;
    let context = first["task"]["contextId"].clone();
    for round in 0..3 {
        let sends = (0..3).map(|i| {
            let node = cluster.node(i);
            let context = context.clone();
            async move { node.rpc("SendMessage", send_params("abcdef", json!({"contextId": context}))).await }
        });
        let answers = futures_util::future::join_all(sends).await;
        let ran: Vec<&Value> = answers.iter().filter(|a| a.get("result").is_some()).collect();
        let refused: Vec<&Value> =
            answers.iter().filter(|a| a["error"]["message"] == "Task is already working.").collect();
        assert_eq!(
            (ran.len(), refused.len()),
            (1, 2),
            "round {round}: one turn runs, the others are refused: {answers:?}"
        );
    }
    // One history: a turn adds the user's message, a message per chunk and the final
    // one; "a" is 3 messages, and each of the three turns that ran 8 (a fourth turn, or
    // a lost one, would show).
    let last = cluster.node(2).ok("SendMessage", send_params("z", json!({"contextId": context}))).await;
    assert_eq!(last["task"]["status"]["message"]["metadata"]["echo"]["sessionMessages"], 3 + 3 * 8, "{last}");
}

#[actix_web::test]
async fn a_node_killed_mid_turn_loses_the_turn_after_its_lease_and_the_context_goes_on_elsewhere() {
    let Some(mut cluster) = Cluster::start_with_lease(2, "", SHORT_LEASE_TTL) else { return };
    let before = cluster.node(0).ok("SendMessage", send_params("hi", json!({}))).await;
    let context = before["task"]["contextId"].clone();
    let running = cluster.node(0).start_slow(100, json!({"contextId": context})).await;
    let id = running["id"].as_str().unwrap().to_owned();
    let busy = cluster.node(1).rpc("SendMessage", send_params("no", json!({"contextId": context}))).await;
    assert_eq!(busy["error"]["message"], "Task is already working.", "{busy}");
    cluster.nodes.remove(0).crash();
    let survivor = cluster.node(0);
    let failed = eventually(400, || async { survivor.state_of(&id).await == "TASK_STATE_FAILED" }).await;
    assert!(failed, "the dead node's turn is failed once its lease expires");
    let task = survivor.ok("GetTask", json!({"id": id})).await;
    let text = task["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, a2ad_actors::recovery::RESTART_MESSAGE, "the message recovery gives on one node");
    // The context runs on the survivor, its session as of its last finished turn; the
    // task acknowledged before the kill is still there.
    let after = survivor.ok("SendMessage", send_params("again", json!({"contextId": context}))).await;
    assert_eq!(after["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let before_id = before["task"]["id"].as_str().unwrap();
    assert_eq!(survivor.state_of(before_id).await, "TASK_STATE_COMPLETED", "no acknowledged task is lost");
}

#[actix_web::test]
async fn a_redis_restart_with_aof_loses_nothing_acknowledged_and_the_nodes_recover_by_themselves() {
    let Some(mut cluster) = Cluster::start_with_lease(2, "", SHORT_LEASE_TTL) else { return };
    let mut ids = Vec::new();
    for i in 0..10 {
        let task = cluster.node(i % 2).ok("SendMessage", send_params("ok", json!({}))).await;
        ids.push(task["task"]["id"].as_str().unwrap().to_owned());
    }
    cluster.redis.kill();
    let down = cluster.node(0).rpc("GetTask", json!({"id": ids[0]})).await;
    assert_eq!(down["error"]["code"], -32054, "an outage is STORE_UNAVAILABLE, not an internal error: {down}");
    let ready = reqwest::get(format!("{}/ready", cluster.nodes[0].url)).await.unwrap().status();
    assert_eq!(ready, 503, "the node says it is not ready while Redis is down");
    cluster.redis.restart(DURABLE);
    let node = cluster.node(1);
    let back = eventually(400, || async { node.rpc("GetTask", json!({"id": ids[0]})).await.get("result").is_some() });
    assert!(back.await, "the nodes reconnect by themselves");
    for id in &ids {
        assert_eq!(cluster.node(0).state_of(id).await, "TASK_STATE_COMPLETED", "task {id} outlived the restart");
    }
    let ready = eventually(400, || async {
        reqwest::get(format!("{}/ready", cluster.nodes[0].url)).await.is_ok_and(|r| r.status() == 200)
    });
    assert!(ready.await, "ready again");
}

#[actix_web::test]
async fn tenants_stay_apart_across_nodes() {
    let auth = "auth:\n  bearer-tokens:\n    - {token: tok-ann, tenant: acme, principal: ann}\n    \
                - {token: tok-eve, tenant: evil, principal: eve}\n";
    let Some(cluster) = Cluster::start(2, auth) else { return };
    let (one, two) = (cluster.node(0), cluster.node(1));
    let made = one.rpc_as("tok-ann", "SendMessage", send_params("secret", json!({}))).await;
    let id = made["result"]["task"]["id"].as_str().unwrap().to_owned();
    let context = made["result"]["task"]["contextId"].clone();
    assert!(two.rpc_as("tok-ann", "GetTask", json!({"id": id})).await.get("result").is_some());
    for (method, params) in
        [("GetTask", json!({"id": id})), ("CancelTask", json!({"id": id})), ("SubscribeToTask", json!({"id": id}))]
    {
        let answer = two.rpc_as("tok-eve", method, params).await;
        assert_eq!(answer["error"]["code"], -32001, "{method}: another tenant's task is not found: {answer}");
    }
    let listed = two.rpc_as("tok-eve", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    // Eve's message naming Ann's context starts a context of Eve's own.
    let eve = two.rpc_as("tok-eve", "SendMessage", send_params("mine", json!({"contextId": context}))).await;
    assert_eq!(eve["result"]["task"]["status"]["message"]["metadata"]["echo"]["sessionMessages"], 0, "{eve}");
}

/// What a node prints when it refuses to start, with its exit status.
fn refused_start(dir: &Path, config: &str) -> (bool, String) {
    let path = dir.join("refused.yaml");
    std::fs::write(&path, config).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--data-dir")
        .arg(dir.join("refused-data"))
        .output()
        .unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn a_node_refuses_a_redis_that_evicts_keys_or_may_lose_acknowledged_writes() {
    let Some(redis) = RedisServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let base = format!("store: redis\nredis:\n  url: redis://127.0.0.1:{}/\n", redis.port);
    let (ok, stderr) = refused_start(dir.path(), &base);
    assert!(!ok && stderr.contains("appendonly is off"), "{stderr}");
    assert!(stderr.contains("redis.allow-weak-persistence"), "names the key that allows it: {stderr}");
    let mut conn = redis::Client::open(format!("redis://127.0.0.1:{}/", redis.port)).unwrap().get_connection().unwrap();
    redis::cmd("CONFIG").arg("SET").arg("maxmemory-policy").arg("allkeys-lru").query::<()>(&mut conn).unwrap();
    let (ok, stderr) = refused_start(dir.path(), &format!("{base}  allow-weak-persistence: true\n"));
    assert!(!ok && stderr.contains("maxmemory-policy is allkeys-lru"), "evicting is never allowed: {stderr}");
}

#[test]
fn on_a_redis_cluster_every_primarys_settings_are_checked() {
    let Some(probe) = RedisServer::start() else { return };
    drop(probe); // There is a redis-server to start: the cluster's nodes are the same binary.
    let binary = crate::shared_redis::redis_server_binary().expect("the probe's redis-server");
    let cluster = crate::shared_redis::RedisCluster::start(&binary, 3, DURABLE).unwrap();
    let second = cluster.ports()[1];
    let mut conn = redis::Client::open(format!("redis://127.0.0.1:{second}/")).unwrap().get_connection().unwrap();
    redis::cmd("CONFIG").arg("SET").arg("appendfsync").arg("everysec").query::<()>(&mut conn).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = format!("store: redis\nredis:\n  url: {}\n  cluster: true\n", cluster.url());
    let (ok, stderr) = refused_start(dir.path(), &config);
    assert!(!ok && stderr.contains(&format!("appendfsync is everysec on 127.0.0.1:{second}")), "{stderr}");
}

#[actix_web::test]
async fn pushes_are_delivered_at_least_once_across_a_node_kill() {
    let push = "push-notifications: true\npush-allow: [127.0.0.1/32]\npush-retry-base: 200ms\n\
                push-circuit-failures: 1000\npush-lease-timeout-ms: 1000\n";
    let Some(mut cluster) = Cluster::start_with_lease(2, push, SHORT_LEASE_TTL) else { return };
    let receiver = Receiver::start();
    // Each event's first delivery fails: its retry waits in Redis for whichever node.
    let hook = json!({"url": format!("{}/flaky/1", receiver.base)});
    let mut acknowledged = std::collections::BTreeSet::new();
    for i in 0..10 {
        let params = send_params(&format!("m{i}"), json!({"configuration": {"taskPushNotificationConfig": hook}}));
        let done = cluster.node(0).ok("SendMessage", params).await;
        acknowledged.insert(done["task"]["id"].as_str().unwrap().to_owned());
    }
    cluster.nodes.remove(0).crash();
    let delivered = || {
        let ok = receiver.received().into_iter().filter(|r| r.status == 200);
        ok.filter_map(|r| r.event_id().rsplit_once(':').map(|(task, _)| task.to_owned()))
            .collect::<std::collections::BTreeSet<String>>()
    };
    let all = eventually(600, || async { delivered().is_superset(&acknowledged) }).await;
    let got: std::collections::BTreeSet<String> = delivered();
    assert!(all, "every acknowledged task's push arrives after the node that ran it died: {got:?} of {acknowledged:?}");
}

/// `a2ad <command> <args>`, without the push key in its environment: whether it
/// succeeded, and what it printed.
fn a2ad(command: &[&str], args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(command)
        .args(args)
        .env_remove("A2AD_PUSH_KEY")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

/// `a2ad push dead <args>` against the config `config` (offline: no `--url`).
fn dead_letters(config: &str, args: &[&str]) -> (bool, String) {
    a2ad(&["push", "dead"], &[args, &["--config", config]].concat())
}

#[actix_web::test]
async fn the_offline_dead_letter_commands_work_on_the_shared_stores_queue() {
    let push = "push-notifications: true\npush-allow: [127.0.0.1/32]\npush-terminal-only: true\n\
                push-max-attempts: 1\n";
    let Some(cluster) = Cluster::start(1, push) else { return };
    let receiver = Receiver::start();
    let hook = json!({"url": format!("{}/gone", receiver.base)});
    let params = send_params("x", json!({"configuration": {"taskPushNotificationConfig": hook}}));
    cluster.node(0).ok("SendMessage", params).await;
    let died = eventually(400, || async { dead_letters(&cluster.config, &["list"]).1.contains("HTTP 404") });
    assert!(died.await, "the job that got a 404 is listed from the store's own queue: {:?}", receiver.received());
    receiver.set_gone_ok(true);
    let (ok, printed) = dead_letters(&cluster.config, &["retry", "--all"]);
    assert!(ok && printed.contains("1 job(s) queued again"), "{printed}");
    let delivered = eventually(400, || async { receiver.received().iter().any(|r| r.status == 200) });
    assert!(delivered.await, "the revived job is delivered: {:?}", receiver.received());
}

/// `a2ad admin move-to-redis` with `args`: whether it succeeded, and what it printed.
fn move_to_redis(args: &[&str]) -> (bool, String) {
    a2ad(&["admin", "move-to-redis"], args)
}

#[actix_web::test]
async fn a_sled_nodes_data_moves_into_redis_and_a_redis_node_goes_on_with_it() {
    let Some(redis) = SharedRedis::start_with(DURABLE) else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let common = format!("push-notifications: true\npush-allow: [127.0.0.1/32]\nredis:\n{}", redis.config_lines());
    let sled_config = dir.path().join("sled.yaml");
    std::fs::write(&sled_config, &common).unwrap();
    let sled_args = ["--config", sled_config.to_str().unwrap(), "--data-dir", data];
    let node = NodeProcess::start(dir.path(), &sled_args);
    let first = node.app_view().ok("SendMessage", send_params("one", json!({}))).await;
    let context = first["task"]["contextId"].clone();
    let mut ids = vec![first["task"]["id"].as_str().unwrap().to_owned()];
    for text in ["two", "three"] {
        let task = node.app_view().ok("SendMessage", send_params(text, json!({"contextId": context}))).await;
        ids.push(task["task"]["id"].as_str().unwrap().to_owned());
    }
    let hook = json!({"taskId": ids[0], "id": "hook", "url": "http://127.0.0.1:9/hook", "token": "tok-secret"});
    node.app_view().ok("CreateTaskPushNotificationConfig", hook).await;
    node.crash(); // Kill -9: the log's tail is applied by the move, as by a restart.

    let (ok, printed) = move_to_redis(&sled_args);
    assert!(
        ok && printed.contains("moved 3 task(s)") && printed.contains("1 session(s), 1 push config(s)"),
        "{printed}"
    );
    let (ok, again) = move_to_redis(&sled_args);
    assert!(ok && again.contains("already in Redis: 3 task(s), 1 session(s)"), "run again, nothing doubles: {again}");

    let redis_config = dir.path().join("redis.yaml");
    std::fs::write(&redis_config, format!("store: redis\n{common}")).unwrap();
    let shared = NodeProcess::start(dir.path(), &["--config", redis_config.to_str().unwrap(), "--data-dir", data]);
    let view = shared.app_view();
    let listed = view.ok("ListTasks", json!({"contextId": context})).await;
    assert_eq!(listed["totalSize"], 3, "{listed}");
    let hook = view.ok("GetTaskPushNotificationConfig", json!({"taskId": ids[0], "id": "hook"})).await;
    assert_eq!(hook["url"], "http://127.0.0.1:9/hook", "{hook}");
    let done = view.rpc("SubscribeToTask", json!({"id": ids[2]})).await;
    assert!(done["error"]["message"].as_str().unwrap_or_default().contains("terminal"), "as on sled: {done}");
    assert!(!printed.contains("with 0 event(s)"), "the event logs came along: {printed}");
    // The session came along: three turns before this one, two messages each (the
    // user's and the echo).
    let next = view.ok("SendMessage", send_params("four", json!({"contextId": context}))).await;
    assert_eq!(next["task"]["status"]["message"]["metadata"]["echo"]["sessionMessages"], 6, "{next}");
}

#[test]
fn a_move_without_a_redis_url_or_from_a_running_node_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (ok, printed) = move_to_redis(&["--data-dir", data.to_str().unwrap()]);
    assert!(!ok && printed.contains("redis.url is not set"), "{printed}");
    let Some(redis) = RedisServer::start_with(DURABLE) else { return };
    let config = dir.path().join("move.yaml");
    std::fs::write(&config, format!("redis:\n  url: redis://127.0.0.1:{}/\n", redis.port)).unwrap();
    let args = ["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    let (ok, printed) = move_to_redis(&args);
    assert!(!ok && printed.contains("there is no task store"), "{printed}");
    let node = NodeProcess::start(dir.path(), &args);
    let (ok, printed) = move_to_redis(&args);
    assert!(!ok && printed.contains("stop it first"), "a running node's store is not read: {printed}");
    drop(node);
}
