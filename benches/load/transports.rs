//! `SendMessage` (blocking, echo, persistence on) over each transport added to JSON-RPC:
//! WebSocket (many requests in flight on a few sockets), HTTP on a Unix socket, `a2ad
//! stdio` (one process, pipelined) and Redis Streams (a redis-server of our own), each
//! against HTTP JSON-RPC measured in the same run with the same number of requests in
//! flight. Every node is fresh, has the same config, and runs on one core.

use crate::client::{self, new_histogram, post_to, read_response, LoadResult};
use crate::mux::{self, Load, Pending};
use crate::node::{self, cpu_seconds_of, Node};
use crate::report::say;
use futures_util::{SinkExt, StreamExt};
use redis::AsyncCommands;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

/// How the transports run is shaped.
#[derive(Clone, Copy)]
pub struct Shape {
    /// Requests in flight (HTTP and Unix: connections; the others: loops).
    pub in_flight: usize,
    /// WebSocket connections the in-flight requests are spread over.
    pub ws_sockets: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

/// One transport's figures: the load result and the server's CPU per request.
pub struct Measured {
    pub result: LoadResult,
    pub cpu_us_per_request: f64,
}

impl Measured {
    pub fn line(&self, label: &str, http: Option<&Measured>) -> String {
        let ratio = http.map(|h| format!("  ratio {:.3}", self.result.throughput() / h.result.throughput()));
        format!(
            "{}  server CPU {:.0} us/req{}",
            self.result.summary(label),
            self.cpu_us_per_request,
            ratio.unwrap_or_default()
        )
    }
}

/// The config every node of this run shares (the Unix socket and Redis blocks added).
fn config(extra: &str) -> String {
    format!("agents:\n  - {{id: echo, kind: echo}}\nwebsocket: true\n{extra}")
}

fn mux_request(slot: usize, id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"SendMessage","params":{{"message":{{"messageId":"m-{slot}-{id}","contextId":"mux-{slot}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}}}"#
    )
}

fn load(shape: Shape) -> Load {
    Load {
        slots: shape.in_flight,
        request_for: mux_request,
        expect: "TASK_STATE_COMPLETED",
        warmup: shape.warmup,
        duration: shape.duration,
    }
}

/// Runs `work` and divides the CPU `pid` used after the warm-up by the measured requests.
async fn with_cpu(pid: u32, warmup: Duration, work: impl std::future::Future<Output = LoadResult>) -> Measured {
    let sampler = tokio::spawn(async move {
        tokio::time::sleep(warmup).await;
        cpu_seconds_of(pid)
    });
    let result = work.await;
    let used = cpu_seconds_of(pid) - sampler.await.expect("sampler");
    let cpu_us_per_request = used * 1e6 / result.requests.max(1) as f64;
    Measured { result, cpu_us_per_request }
}

/// A fresh node of this run (data and config in `dir`).
fn start(bin: &Path, dir: &tempfile::TempDir, extra: &str) -> Node {
    Node::start_in(bin, &dir.path().join("data"), &config(extra), &[])
}

/// HTTP JSON-RPC: `in_flight` keep-alive connections, one request at a time each.
pub async fn http(bin: &Path, shape: Shape) -> Measured {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = start(bin, &dir, "");
    let target = client::Target {
        addr: node.addr,
        path: "/",
        body_for: crate::send_body,
        expect: "TASK_STATE_COMPLETED",
        a2a_version: None,
    };
    with_cpu(node.pid(), shape.warmup, client::run(target, shape.in_flight, shape.warmup, shape.duration, u64::MAX))
        .await
}

/// WebSocket: `in_flight` loops over `ws_sockets` sockets to `/ws`.
pub async fn websocket(bin: &Path, shape: Shape) -> Measured {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = start(bin, &dir, "");
    let pending = Pending::default();
    let mut lanes = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..shape.ws_sockets.max(1) {
        let (lane, mut handles) = ws_lane(node.addr, pending.clone()).await;
        lanes.push(lane);
        tasks.append(&mut handles);
    }
    let measured = with_cpu(node.pid(), shape.warmup, mux::run(load(shape), lanes, pending)).await;
    tasks.iter().for_each(JoinHandle::abort);
    measured
}

/// One WebSocket: a writer task fed by the returned lane, a reader feeding `pending`.
pub async fn ws_lane(
    addr: std::net::SocketAddr,
    pending: Pending,
) -> (mpsc::UnboundedSender<String>, Vec<JoinHandle<()>>) {
    let (socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.expect("WebSocket upgrade");
    let (mut sink, mut stream) = socket.split();
    let (lane, mut requests) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(text) = requests.recv().await {
            if sink.send(Message::text(text)).await.is_err() {
                break;
            }
        }
    });
    let reader = tokio::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            if let Message::Text(text) = message {
                pending.answer(text.as_str().to_owned());
            }
        }
    });
    (lane, vec![writer, reader])
}

/// HTTP JSON-RPC on the Unix socket: `in_flight` keep-alive connections.
pub async fn unix(bin: &Path, shape: Shape) -> Measured {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("a2ad.sock");
    let node = start(bin, &dir, &format!("listen-unix: {}\n", socket.display()));
    let measure_from = Instant::now() + shape.warmup;
    let deadline = measure_from + shape.duration;
    let loops: Vec<_> = (0..shape.in_flight)
        .map(|conn| tokio::spawn(unix_loop(socket.clone(), conn, measure_from, deadline)))
        .collect();
    let work = LoadResult::sum(loops, shape.duration);
    with_cpu(node.pid(), shape.warmup, work).await
}

async fn unix_loop(
    socket: PathBuf,
    conn: usize,
    measure_from: Instant,
    deadline: Instant,
) -> (u64, u64, hdrhistogram::Histogram<u64>) {
    let mut hist = new_histogram();
    let (mut requests, mut errors) = (0u64, 0u64);
    let mut stream = UnixStream::connect(&socket).await.expect("connect to the Unix socket");
    let mut buf = Vec::with_capacity(16 * 1024);
    while Instant::now() < deadline {
        let sent = Instant::now();
        post_to(&mut stream, "/", &crate::send_body(conn, 0)).await.expect("write");
        let ok = read_response(&mut stream, &mut buf).await.is_some_and(|t| t.contains("TASK_STATE_COMPLETED"));
        if sent >= measure_from {
            requests += 1;
            errors += u64::from(!ok);
            hist.record(sent.elapsed().as_micros() as u64).ok();
        }
        if !ok && sent >= measure_from && errors > 100 {
            break;
        }
    }
    (requests, errors, hist)
}

/// `a2ad stdio`: one process, `in_flight` requests pipelined on its stdin.
pub async fn stdio(bin: &Path, shape: Shape) -> Measured {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a2ad.yml");
    std::fs::write(&file, config("")).expect("config");
    let mut command = tokio::process::Command::from(node::pinned(bin));
    command
        .arg("stdio")
        .arg("--config")
        .arg(&file)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("spawn a2ad stdio");
    let (mut stdin, stdout) = (child.stdin.take().expect("stdin"), child.stdout.take().expect("stdout"));
    let pending = Pending::default();
    let (lane, mut requests) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(mut line) = requests.recv().await {
            line.push('\n');
            if stdin.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let answers = pending.clone();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            answers.answer(line);
        }
    });
    let pid = child.id().expect("a running child");
    let measured = with_cpu(pid, shape.warmup, mux::run(load(shape), vec![lane], pending)).await;
    writer.abort();
    reader.abort();
    let _ = child.kill().await;
    measured
}

/// Names the request and reply streams apart for every Redis node of one driver run.
static REDIS_RUN: AtomicU64 = AtomicU64::new(0);

/// Redis Streams: `in_flight` loops XADDing requests (each on its own task, so they are
/// pipelined on one connection) and one reader XREADing the shared reply stream. Also
/// returns the redis-server's own CPU per request.
pub async fn redis(bin: &Path, shape: Shape, redis_port: u16, redis_pid: u32) -> (Measured, f64) {
    let run = REDIS_RUN.fetch_add(1, Ordering::Relaxed);
    let (requests_stream, replies) = (format!("bench:requests:{run}"), format!("bench:replies:{run}"));
    let url = format!("redis://127.0.0.1:{redis_port}/");
    let block = format!(
        "redis-transport:\n  url: {url}\n  requests: {requests_stream}\n  block-ms: 200\n  max-in-flight: {}\n",
        shape.in_flight
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let node = start(bin, &dir, &block);
    let client = redis::Client::open(url).expect("redis url");
    let writer_con = client.get_multiplexed_async_connection().await.expect("redis connect");
    let reader_con = client.get_multiplexed_async_connection().await.expect("redis connect");
    let pending = Pending::default();
    let (lane, mut requests) = mpsc::unbounded_channel::<String>();
    let reply_to = replies.clone();
    let writer = tokio::spawn(async move {
        while let Some(text) = requests.recv().await {
            let (mut con, stream, reply_to) = (writer_con.clone(), requests_stream.clone(), reply_to.clone());
            tokio::spawn(async move {
                let fields = [("request", text.as_str()), ("reply-to", reply_to.as_str())];
                let _: redis::RedisResult<String> = con.xadd(stream, "*", &fields).await;
            });
        }
    });
    let reader = tokio::spawn(read_replies(reader_con, replies, pending.clone()));
    let redis_cpu_before = cpu_seconds_of(redis_pid);
    let measured = with_cpu(node.pid(), shape.warmup, mux::run(load(shape), vec![lane], pending)).await;
    // The redis figure includes the warm-up: an upper bound, for where the time goes.
    let redis_us = (cpu_seconds_of(redis_pid) - redis_cpu_before) * 1e6 / measured.result.requests.max(1) as f64;
    writer.abort();
    reader.abort();
    (measured, redis_us)
}

/// Reads the reply stream from its start, handing each response to its request.
async fn read_replies(mut con: redis::aio::MultiplexedConnection, stream: String, pending: Pending) {
    use redis::streams::{StreamReadOptions, StreamReadReply};
    let options = StreamReadOptions::default().block(200).count(512);
    let mut last = "0".to_owned();
    loop {
        let reply: redis::RedisResult<StreamReadReply> = con.xread_options(&[&stream], &[&last], &options).await;
        let Ok(reply) = reply else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        for entry in reply.keys.into_iter().flat_map(|key| key.ids) {
            last = entry.id.clone();
            if let Some(text) = entry.map.get("response").and_then(|v| redis::from_redis_value::<String>(v).ok()) {
                pending.answer(text);
            }
        }
    }
}

/// The whole transports part: HTTP first, then each transport, each with its ratio.
pub async fn run_all(bin: &Path, shape: Shape) {
    say!(
        "transports: SendMessage, {} requests in flight ({} WebSocket sockets), {} s after {} s warm-up, server on 1 core:",
        shape.in_flight,
        shape.ws_sockets,
        shape.duration.as_secs(),
        shape.warmup.as_secs()
    );
    let http = http(bin, shape).await;
    say!("{}", http.line("HTTP JSON-RPC", None));
    say!("{}", websocket(bin, shape).await.line("WebSocket", Some(&http)));
    say!("{}", unix(bin, shape).await.line("HTTP on Unix socket", Some(&http)));
    say!("{}", stdio(bin, shape).await.line("stdio (pipelined)", Some(&http)));
    match crate::redis_server() {
        Some((server, port)) => {
            let (measured, redis_us) = redis(bin, shape, port, server.pid()).await;
            say!("{}  (redis-server CPU {redis_us:.0} us/req)", measured.line("Redis Streams", Some(&http)));
        }
        None => say!("Redis Streams: skipped (no redis-server; run scripts/redis.sh)"),
    }
}
