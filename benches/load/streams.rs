//! Streaming figures: streams per second, events per second through one stream, the
//! cost of fan-out to many subscribers, and memory per open stream.

use crate::client::{self, post, read_response};
use crate::node::Node;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// The agents the streaming runs use.
pub const CONFIG: &str = "agents:
  - {id: echo, kind: echo}
  - {id: firehose, kind: echo, echo: {chunk-size: 1}}
  - {id: slow, kind: echo, echo: {chunk-size: 1, chunk-delay: 10ms}}
  - {id: quiet, kind: echo, echo: {chunk-size: 1000, chunk-delay: 60s}}
# Room for a whole fire-hose turn: the one-stream figure measures delivery, not drops.
stream-buffer: 250000
";

/// A node with [`CONFIG`]; the config file lives as long as the node.
pub fn start(bin: &Path, extra: &[&str]) -> (Node, tempfile::TempDir) {
    start_with(bin, "", extra)
}

/// A node with [`CONFIG`] and then `more` (`store: memory`, say).
fn start_with(bin: &Path, more: &str, extra: &[&str]) -> (Node, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("a2ad.yml");
    std::fs::write(&config, format!("{CONFIG}{more}")).expect("config");
    let mut args = vec!["--workers", "1", "--config", config.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    (Node::start(bin, &args), dir)
}

fn stream_body(conn: usize, _seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{{"message":{{"messageId":"m-{conn}","contextId":"stream-{conn}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}}}"#
    )
}

/// Streams completed per second: 64 connections, each `SendStreamingMessage` read to its
/// end (task, artifact update, final status), on a node whose config adds `more` (the
/// store, say) to [`CONFIG`].
pub async fn streams_per_second(
    bin: &Path,
    more: &str,
    connections: usize,
    warmup: Duration,
    duration: Duration,
) -> client::LoadResult {
    let (node, _config) = start_with(bin, more, &[]);
    let target = client::Target {
        addr: node.addr,
        path: "/",
        body_for: stream_body,
        expect: "TASK_STATE_COMPLETED",
        a2a_version: None,
    };
    client::run(target, connections, warmup, duration, u64::MAX).await
}

fn send(skill: &str, text: &str, stream: bool, return_immediately: bool) -> String {
    let method = if stream { "SendStreamingMessage" } else { "SendMessage" };
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"configuration":{{"returnImmediately":{return_immediately}}},"message":{{"messageId":"m","role":"ROLE_USER","metadata":{{"skill":"{skill}"}},"parts":[{{"text":"{text}"}}]}}}}}}"#
    )
}

fn count_events(body: &str) -> usize {
    body.matches("\nid: ").count() + usize::from(body.starts_with("id: "))
}

/// Events per second through one stream: one `SendStreamingMessage` whose agent emits two
/// events per character of a long text, as fast as it can.
pub async fn events_per_second(bin: &Path, characters: usize) -> (usize, Duration) {
    let (node, _config) = start(bin, &["--body-limit", "16MiB"]);
    let mut stream = TcpStream::connect(node.addr).await.expect("connect");
    let started = Instant::now();
    post(&mut stream, &send("firehose", &"x".repeat(characters), true, false)).await.expect("send");
    let mut buf = Vec::new();
    let body = read_response(&mut stream, &mut buf).await.expect("a stream");
    (count_events(&body), started.elapsed())
}

/// What fan-out costs: the same slow task (10 ms per character) watched by 1 and by
/// `subscribers` streams; the extra server CPU divided by the extra events delivered.
pub struct FanOut {
    pub subscribers: usize,
    pub events_delivered: usize,
    pub cpu_one: f64,
    pub cpu_many: f64,
    pub wall: Duration,
}

impl FanOut {
    pub fn micros_per_extra_event(&self, events_per_subscriber: usize) -> f64 {
        let extra = self.events_delivered.saturating_sub(events_per_subscriber).max(1);
        (self.cpu_many - self.cpu_one).max(0.0) * 1e6 / extra as f64
    }
}

pub async fn fan_out(bin: &Path, subscribers: usize, characters: usize) -> (FanOut, usize) {
    let (node, _config) = start(bin, &[]);
    let (one_events, cpu_one, _) = watch(&node, 1, characters).await;
    let (events, cpu_many, wall) = watch(&node, subscribers, characters).await;
    (FanOut { subscribers, events_delivered: events, cpu_one, cpu_many, wall }, one_events)
}

/// Starts a slow task, subscribes `n` streams to it, reads them all to the end. Returns
/// events delivered, server CPU seconds used, and wall time.
async fn watch(node: &Node, n: usize, characters: usize) -> (usize, f64, Duration) {
    let mut control = TcpStream::connect(node.addr).await.expect("connect");
    let mut buf = Vec::new();
    let cpu_before = node.cpu_seconds();
    let started = Instant::now();
    post(&mut control, &send("slow", &"z".repeat(characters), false, true)).await.expect("send");
    let created = read_response(&mut control, &mut buf).await.expect("created");
    let task_id =
        created.split("\"id\":\"").nth(1).and_then(|rest| rest.split('"').next()).expect("task id").to_owned();
    let watchers: Vec<_> = (0..n)
        .map(|_| {
            let (addr, task_id) = (node.addr, task_id.clone());
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.expect("connect");
                let body =
                    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{{"id":"{task_id}"}}}}"#);
                post(&mut stream, &body).await.expect("subscribe");
                let mut buf = Vec::new();
                read_response(&mut stream, &mut buf).await.map(|b| count_events(&b)).unwrap_or(0)
            })
        })
        .collect();
    let mut events = 0;
    for watcher in watchers {
        events += watcher.await.expect("watcher");
    }
    (events, node.cpu_seconds() - cpu_before, started.elapsed())
}

/// RSS per open stream: `n` subscribers held open on one running task that is quiet
/// (its agent waits a minute before its first chunk), so the figure is the stream's own
/// cost, not buffered events.
pub async fn memory_per_stream(bin: &Path, n: usize) -> (u64, u64) {
    let (node, _config) = start(bin, &[]);
    let mut control = TcpStream::connect(node.addr).await.expect("connect");
    let mut buf = Vec::new();
    post(&mut control, &send("quiet", "w", false, true)).await.expect("send");
    let created = read_response(&mut control, &mut buf).await.expect("created");
    let task_id =
        created.split("\"id\":\"").nth(1).and_then(|rest| rest.split('"').next()).expect("task id").to_owned();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = node.rss_kib();
    let mut open = Vec::with_capacity(n);
    for _ in 0..n {
        let mut stream = TcpStream::connect(node.addr).await.expect("connect");
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{{"id":"{task_id}"}}}}"#);
        post(&mut stream, &body).await.expect("subscribe");
        open.push(stream);
    }
    // Keep reading so the streams stay healthy subscribers, not stalled ones.
    let readers: Vec<_> = open
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt as _;
                let mut chunk = [0u8; 4096];
                let deadline = Instant::now() + Duration::from_secs(3);
                while Instant::now() < deadline {
                    if let Ok(Ok(0)) = tokio::time::timeout(Duration::from_millis(200), s.read(&mut chunk)).await {
                        break;
                    }
                }
                s
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = node.rss_kib();
    for reader in readers {
        let _ = reader.await;
    }
    (before, after)
}
