//! Cluster mode on one Redis (issue 16 point 7), in one run:
//!
//! 1. `SendMessage` (echo, blocking, 64 connections) on one node on sled and on one node on
//!    the Redis store (`appendonly yes`, `appendfsync always`: the same "on disk before the
//!    answer" as sled's fsync), with the node's CPU per request;
//! 2. what one request costs in Redis: the commands Redis ran per request, by command
//!    (`INFO commandstats`; a script's inner calls are counted too), and the scripts;
//! 3. cross-node subscribe latency: a turn runs on node A, a subscriber streams it from
//!    node B, and an observer blocked in `XREAD` on the task's stream marks when each event
//!    was committed; the latency is the subscriber's arrival minus the observer's;
//! 4. the total of 1, 2 and 3 nodes on the one Redis, each node given an equal share of
//!    the connections, with the nodes' CPU seconds: throughput per node-CPU-second;
//! 5. one node on a Redis Cluster of three primaries (`redis.cluster: true`, 16 shards),
//!    against the one Redis of part 1: what slot routing costs.
//!
//! Every node, and Redis, run on CPU 0 (the driver on CPU 1): a second node adds no CPU,
//! it shares the one core, so what more nodes show here is their overhead, not a scaling.

use crate::report::say;
/// The storage crate's Redis Cluster harness (the same file its tests use).
#[allow(dead_code)]
#[path = "../../storage/src/redis/test_cluster.rs"]
pub(crate) mod redis_cluster;

use crate::client::{self, LoadResult, Target};
use crate::node::Node;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// The Redis persistence every node's commit waits for.
pub(crate) const DURABLE: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

/// The shared-store config of the nodes.
pub(crate) fn config(port: u16) -> String {
    format!(
        "store: redis\nredis:\n  url: redis://127.0.0.1:{port}/\nagents:\n  - {{id: echo, kind: echo}}\n  \
         - {{id: chunky, kind: echo, echo: {{chunk-size: 1, chunk-delay: 5ms}}}}\n"
    )
}

/// A node on the shared store, with `workers` workers (and as many context arbiters).
pub(crate) fn shared_node(bin: &Path, dir: &Path, port: u16, n: usize, workers: &str) -> Node {
    let extra = ["--grpc-listen", "127.0.0.1:0", "--workers", workers];
    Node::start_in(bin, &dir.join(format!("node{n}")), &config(port), &extra)
}

/// JSON-RPC SendMessage bodies whose contexts are distinct per node (`node` prefixes the
/// context id), so that no two nodes' loads share a context (they would refuse each other).
fn body_of(node: usize) -> client::BodyFor {
    const BODIES: [client::BodyFor; 3] = [body::<0>, body::<1>, body::<2>];
    BODIES[node.min(2)]
}

pub(crate) fn body<const N: usize>(conn: usize, _seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-{conn}","contextId":"n{N}-{conn}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}}}"#
    )
}

fn target(addr: SocketAddr, node: usize) -> Target {
    Target { addr, path: "/", body_for: body_of(node), expect: "TASK_STATE_COMPLETED", a2a_version: None }
}

/// `INFO commandstats` as command → calls.
pub(crate) fn command_calls(conn: &mut redis::Connection) -> HashMap<String, u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap_or_default();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split(',').find_map(|kv| kv.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

pub async fn run_all(bin: &Path, connections: usize, warmup: Duration, duration: Duration) {
    let Some((_redis, port)) = crate::redis_server_with(DURABLE) else {
        say!("cluster: skipped (no redis-server; set A2AD_REDIS_SERVER)");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("redis://127.0.0.1:{port}/");
    let mut stats = redis::Client::open(url.as_str()).and_then(|c| c.get_connection()).expect("redis");
    let ran_for = warmup + duration;
    say!(
        "cluster: SendMessage, {connections} connections, {} s after {} s warm-up:",
        duration.as_secs(),
        warmup.as_secs()
    );

    let sled = Node::start(bin, &["--workers", "1"]);
    let sled_cpu = sled.cpu_seconds();
    let on_sled = client::run(target(sled.addr, 0), connections, warmup, duration, u64::MAX).await;
    let sled_us = (sled.cpu_seconds() - sled_cpu) / (on_sled.throughput() * ran_for.as_secs_f64()) * 1e6;
    drop(sled);

    say!("{}  {sled_us:.0} us node CPU per request", on_sled.summary("one node, sled"));
    let (mut node, mut on_one_redis) = (None, 0.0);
    for workers in ["1", "8"] {
        let shared = shared_node(bin, dir.path(), port, usize::from(workers == "8"), workers);
        let (cpu_before, calls_before) = (shared.cpu_seconds(), command_calls(&mut stats));
        let on_redis = client::run(target(shared.addr, 0), connections, warmup, duration, u64::MAX).await;
        let requests = on_redis.throughput() * ran_for.as_secs_f64();
        let redis_us = (shared.cpu_seconds() - cpu_before) / requests * 1e6;
        let calls_after = command_calls(&mut stats);
        let label = format!("one node, Redis, {workers} worker(s)");
        say!("{}  {redis_us:.0} us node CPU per request", on_redis.summary(&label));
        say!("ratio Redis / sled: {:.2}", on_redis.throughput() / on_sled.throughput());
        print_calls(&calls_before, &calls_after, requests);
        (node, on_one_redis) = (Some(shared), on_redis.throughput());
    }
    let node = node.expect("a node ran");

    subscribe_latency(bin, dir.path(), port, &node).await;
    drop(node);
    nodes_on_one_redis(bin, dir.path(), port, connections, warmup, duration).await;
    on_a_redis_cluster(bin, dir.path(), connections, warmup, duration, on_one_redis).await;
}

/// One node (8 workers) on a Redis Cluster of three primaries, all on CPU 0 as the rest,
/// against `one_redis` (req/s of the same node on one Redis, in this run).
async fn on_a_redis_cluster(
    bin: &Path,
    dir: &Path,
    connections: usize,
    warmup: Duration,
    duration: Duration,
    one_redis: f64,
) {
    let Some(binary) = redis_cluster::redis_server_binary() else {
        return say!("Redis Cluster: skipped (no redis-server; set A2AD_REDIS_SERVER)");
    };
    let cluster = match redis_cluster::RedisCluster::start(&binary, 3, DURABLE) {
        Ok(cluster) => cluster,
        Err(e) => return say!("Redis Cluster: skipped ({e})"),
    };
    for pid in cluster.pids() {
        let _ = std::process::Command::new("/usr/bin/taskset").args(["-cp", "0", &pid.to_string()]).output();
    }
    let config = format!(
        "store: redis\nredis:\n  url: {}\n  cluster: true\nagents:\n  - {{id: echo, kind: echo}}\n",
        cluster.url()
    );
    let extra = ["--grpc-listen", "127.0.0.1:0", "--workers", "8"];
    let node = Node::start_in(bin, &dir.join("on-a-cluster"), &config, &extra);
    let cpu_before = node.cpu_seconds();
    let result = client::run(target(node.addr, 0), connections, warmup, duration, u64::MAX).await;
    let requests = result.throughput() * (warmup + duration).as_secs_f64();
    let us = (node.cpu_seconds() - cpu_before) / requests * 1e6;
    let label = "one node, Redis Cluster (3 primaries, 16 shards), 8 worker(s)";
    say!("{}  {us:.0} us node CPU per request", result.summary(label));
    say!("ratio Redis Cluster / one Redis: {:.2}", result.throughput() / one_redis.max(1e-9));
}

/// The commands Redis ran per request, the scripts among them.
fn print_calls(before: &HashMap<String, u64>, after: &HashMap<String, u64>, requests: f64) {
    let mut per: BTreeMap<String, f64> = BTreeMap::new();
    for (name, calls) in after {
        let delta = calls.saturating_sub(before.get(name).copied().unwrap_or(0));
        if delta > 0 {
            per.insert(name.clone(), delta as f64 / requests);
        }
    }
    let total: f64 = per.values().sum();
    let shown: Vec<String> = per.iter().filter(|(_, n)| **n >= 0.05).map(|(k, n)| format!("{k} {n:.2}")).collect();
    say!("Redis commands per request: {total:.1} in all ({})", shown.join(", "));
}

/// Cross-node subscribe latency, over 50 turns of about 10 events each (8 chunks 5 ms
/// apart, and the turn's status events).
async fn subscribe_latency(bin: &Path, dir: &Path, port: u16, a: &Node) {
    let b = shared_node(bin, dir, port, 2, "8");
    let mut latencies = Vec::new();
    for round in 0..50 {
        latencies.extend(one_followed_turn(a.addr, b.addr, port, round).await);
    }
    latencies.sort();
    let at = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q) as usize).copied().unwrap_or_default();
    say!(
        "cross-node subscribe (committed on A, seen on B): {} events, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
}

/// One turn on A streamed from B: each event's arrival on B minus its commit.
async fn one_followed_turn(a: SocketAddr, b: SocketAddr, port: u16, round: usize) -> Vec<Duration> {
    let http = reqwest::Client::new();
    let send = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": format!("l-{round}"), "role": "ROLE_USER", "parts": [{"text": "abcdefgh"}],
                    "metadata": {"skill": "chunky"}},
        "configuration": {"returnImmediately": true}}});
    let sent: serde_json::Value =
        http.post(format!("http://{a}/")).json(&send).send().await.unwrap().json().await.unwrap();
    let id = sent["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    let observer = observe_commits(port, id.clone());
    let subscribe = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": id}});
    let response = http.post(format!("http://{b}/")).json(&subscribe).send().await.unwrap();
    let arrivals = read_arrivals(response).await;
    let commits = observer.join().unwrap_or_default();
    arrivals.iter().filter_map(|(seq, seen)| Some(seen.saturating_duration_since(*commits.get(seq)?))).collect()
}

/// When each event of `task_id` reaches Redis: an `XREAD BLOCK` from the start, on a
/// thread of its own, until the task's last event or 5 s without one.
fn observe_commits(port: u16, task_id: String) -> std::thread::JoinHandle<HashMap<u64, Instant>> {
    std::thread::spawn(move || {
        let mut seen = HashMap::new();
        let Ok(mut conn) = redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection())
        else {
            return seen;
        };
        let key = format!("a2ad:store:ev:{task_id}");
        let mut cursor = "0-0".to_owned();
        loop {
            let reply: redis::Value =
                match redis::cmd("XREAD").arg("BLOCK").arg(5000).arg("STREAMS").arg(&key).arg(&cursor).query(&mut conn)
                {
                    Ok(reply) => reply,
                    Err(_) => return seen,
                };
            let at = Instant::now();
            let ids = stream_ids(&reply);
            if ids.is_empty() {
                return seen;
            }
            for id in &ids {
                if let Some(seq) = id.split('-').next().and_then(|s| s.parse().ok()) {
                    seen.insert(seq, at);
                }
            }
            cursor = ids.last().cloned().unwrap_or(cursor);
            if seen.len() >= 10 {
                return seen;
            }
        }
    })
}

/// The entry ids of an XREAD reply.
fn stream_ids(reply: &redis::Value) -> Vec<String> {
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    let redis::Value::Array(streams) = reply else { return Vec::new() };
    let mut ids = Vec::new();
    for stream in streams {
        let redis::Value::Array(parts) = stream else { continue };
        let Some(redis::Value::Array(entries)) = parts.get(1) else { continue };
        for entry in entries {
            if let redis::Value::Array(fields) = entry {
                ids.extend(fields.first().and_then(text));
            }
        }
    }
    ids
}

/// Each SSE event's id and when it arrived, until the stream ends.
async fn read_arrivals(response: reqwest::Response) -> Vec<(u64, Instant)> {
    use futures_util::StreamExt as _;
    let mut body = response.bytes_stream();
    let (mut buffer, mut arrivals) = (String::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline.into(), body.next()).await {
        let at = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let id = block.lines().find_map(|l| l.strip_prefix("id:")).and_then(|id| id.trim().parse().ok());
            arrivals.extend(id.map(|id| (id, at)));
        }
    }
    arrivals
}

/// 1, 2 and 3 nodes on the one Redis, the connections split evenly between them.
async fn nodes_on_one_redis(
    bin: &Path,
    dir: &Path,
    port: u16,
    connections: usize,
    warmup: Duration,
    duration: Duration,
) {
    for count in 1..=3 {
        let nodes: Vec<Node> = (0..count).map(|n| shared_node(bin, dir, port, 10 + 3 * count + n, "8")).collect();
        let cpu_before: f64 = nodes.iter().map(Node::cpu_seconds).sum();
        let per_node = (connections / count).max(1);
        let loads = nodes
            .iter()
            .enumerate()
            .map(|(n, node)| client::run(target(node.addr, n), per_node, warmup, duration, u64::MAX));
        let results: Vec<LoadResult> = futures_util::future::join_all(loads).await;
        let cpu = nodes.iter().map(Node::cpu_seconds).sum::<f64>() - cpu_before;
        let total: f64 = results.iter().map(LoadResult::throughput).sum();
        let requests = total * (warmup + duration).as_secs_f64();
        let errors: u64 = results.iter().map(|r| r.errors).sum();
        say!(
            "{count} node(s) on one Redis: {total:.0} req/s in all ({errors} errors), {:.0} requests per node-CPU-second",
            requests / cpu.max(1e-9)
        );
    }
}
