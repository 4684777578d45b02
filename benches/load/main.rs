//! The load driver (see BENCHMARKS.md).
//!
//! `cargo build --release && taskset -c 1 cargo bench --bench load -- [--seconds N]
//! [--connections N] [--contexts N] [--skip-memory]`
//!
//! 1. Throughput and latency of `SendMessage` (echo, persistence on, blocking) on the
//!    release binary with one worker pinned to one core, at 64 connections; then the same
//!    load on a bare actix-web handler that parses the same body, and on the official Rust
//!    SDK's in-memory server when it is built (`benches/rust-sdk-peer`); and the ratios.
//! 2. Streaming, push and RSS per idle context at 100k contexts (see `streams.rs`,
//!    `push.rs`, `memory.rs`).
//!
//! Parts beyond these run only when asked: `--all` adds them, `--only PART[,PART]` runs
//! just the parts named, and every part has its `--skip-PART`. Parts: `core` (1),
//! `streams`, `push`, `memory` (the default set); `transports`, `dialects`, `ws-stream`,
//! `retention`, `push-hang`, `soak`, `console`, `series`, `cluster`, `network`
//! (`transports.rs`, `dialects.rs`, `ws_stream.rs`, `retention.rs`, `push_hang.rs`,
//! `soak.rs`, `console.rs`, `series.rs`, `cluster.rs`, `network.rs`).
//! `--repeat N` runs each of the added parts N times in a row (for the spread).
//! `--markdown FILE` writes every result line of the run to FILE as BENCHMARKS.md's table
//! of current figures, with the date, the commit and the command (`report.rs`).

mod bare;
mod client;
mod cluster;
mod console;
mod dialects;
mod grpc_load;
mod memory;
mod mux;
mod network;
mod node;
mod push;
mod push_hang;
mod report;
mod retention;
mod sdk_peer;
mod series;
mod soak;
mod streams;
mod transports;
mod ws_stream;

use node::Node;
use report::say;
use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str = "\
usage: taskset -c 1 cargo bench --bench load -- [OPTIONS]   (after cargo build --release)
  --seconds N              measured seconds per load (10; each after a 2 s warm-up)
  --connections N          connections / requests in flight (64)
  --contexts N             contexts of the memory part (100000)
  --only PART[,PART]       run just these parts
  --all                    run every part (default: core, streams, push, memory)
  --skip-PART              leave a part out (e.g. --skip-memory, --skip-transports)
  --repeat N               run each of the added parts N times in a row (1)
  --markdown FILE          write the run's results as BENCHMARKS.md's current-figures table
  --redis-beside-node      run redis-server on the node's CPU (0), not the driver's (1)
  --ws-sockets N           WebSocket connections of the transports part (4)
  --stream-characters N    fire-hose characters of the ws-stream part (50000)
  --retention-tasks N      tasks of the retention part (10000, at most 10000)
  --push-hang-healthy N    healthy deliveries the push-hang part times (50)
  --soak-seconds N         how long the soak part runs (1800)
  --soak-sample-seconds N  seconds between the soak part's samples (30)
  --soak-in-flight N       requests in flight in the soak part (16)
  --soak-rate N            rounds (send, get, list) per second of the soak part, all loops
                           together; 0 runs them back to back, saturating the node (300)
  --soak-contexts N        contexts the soak part's sends cycle through (1024)
env: A2AD_BIN (a2ad binary; target/release/a2ad), A2AD_SDK_PEER_BIN (the Rust SDK peer of
  the core part; benches/rust-sdk-peer/target/release/rust-sdk-peer, skipped when absent)
parts: core streams push memory transports dialects ws-stream retention push-hang soak console series
  cluster network";

/// Every part, in the order they run; the first four are the default set.
const PARTS: [&str; 14] = [
    "core",
    "streams",
    "push",
    "memory",
    "transports",
    "dialects",
    "ws-stream",
    "retention",
    "push-hang",
    "soak",
    "console",
    "series",
    "cluster",
    "network",
];

struct Options {
    seconds: u64,
    connections: usize,
    contexts: u64,
    parts: Vec<&'static str>,
    repeat: u64,
    ws_sockets: usize,
    stream_characters: usize,
    retention_tasks: u64,
    push_hang_healthy: usize,
    soak: soak::Shape,
    /// `--markdown FILE`: where the run's table of current figures goes.
    markdown: Option<String>,
    /// `--redis-beside-node`: redis-servers on the node's CPU ([`REDIS_BESIDE_NODE`]).
    redis_beside_node: bool,
}

impl Options {
    fn from_args() -> Options {
        let args: Vec<String> = std::env::args().collect();
        let value = |flag: &str, default: u64| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        Options {
            seconds: value("--seconds", 10),
            connections: value("--connections", 64) as usize,
            contexts: value("--contexts", 100_000),
            parts: selected_parts(&args),
            repeat: value("--repeat", 1).max(1),
            ws_sockets: value("--ws-sockets", 4).max(1) as usize,
            stream_characters: value("--stream-characters", 50_000) as usize,
            retention_tasks: value("--retention-tasks", 10_000).clamp(1, 10_000),
            push_hang_healthy: value("--push-hang-healthy", 50).max(1) as usize,
            soak: soak::Shape {
                duration: Duration::from_secs(value("--soak-seconds", 1800).max(1)),
                sample_every: Duration::from_secs(value("--soak-sample-seconds", 30).max(1)),
                in_flight: value("--soak-in-flight", 16).clamp(1, 1024) as usize,
                rounds_per_second: value("--soak-rate", 300),
                contexts: value("--soak-contexts", 1024).max(1),
            },
            markdown: args.iter().position(|a| a == "--markdown").and_then(|i| args.get(i + 1)).cloned(),
            redis_beside_node: args.iter().any(|a| a == "--redis-beside-node"),
        }
    }

    fn runs(&self, part: &str) -> bool {
        self.parts.contains(&part)
    }
}

/// `--only a,b` or (`--all` | the default four), minus every `--skip-PART`.
fn selected_parts(args: &[String]) -> Vec<&'static str> {
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1));
    if let Some(unknown) = only.into_iter().flat_map(|o| o.split(',')).find(|p| !PARTS.contains(p)) {
        eprintln!("--only: unknown part `{unknown}` (parts: {})", PARTS.join(", "));
        std::process::exit(2);
    }
    let all = args.iter().any(|a| a == "--all");
    PARTS
        .iter()
        .enumerate()
        .filter(|(i, part)| match only {
            Some(only) => only.split(',').any(|p| p == **part),
            None => all || *i < 4,
        })
        .filter(|(_, part)| !args.iter().any(|a| *a == format!("--skip-{part}")))
        .map(|(_, part)| *part)
        .collect()
}

/// The same JSON-RPC body for both servers: one context per connection, so that each
/// connection's messages run one after another in its own context.
fn send_body(conn: usize, _seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-{conn}","contextId":"bench-{conn}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}}}"#
    )
}

/// The same request for the HTTP+JSON binding (the params alone).
fn rest_body(conn: usize, _seq: u64) -> String {
    format!(
        r#"{{"message":{{"messageId":"m-{conn}","contextId":"rest-{conn}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}"#
    )
}

fn a2ad_binary() -> PathBuf {
    let path = std::env::var_os("A2AD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/a2ad"));
    assert!(path.exists(), "{} is missing: run `cargo build --release` first", path.display());
    path
}

fn main() {
    if std::env::args().any(|a| a == "--bare-server") {
        bare::serve().expect("bare server");
        return;
    }
    if std::env::args().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
    let options = Options::from_args();
    REDIS_BESIDE_NODE.store(options.redis_beside_node, std::sync::atomic::Ordering::Relaxed);
    let bin = a2ad_binary();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let warmup = Duration::from_secs(2);
    let duration = Duration::from_secs(options.seconds);
    report::enter("core");
    let bare_throughput = options.runs("core").then(|| run_core(&runtime, &bin, &options, warmup, duration));

    if options.runs("streams") {
        report::enter("streams");
        run_streaming(&runtime, &bin, &options, warmup, duration, bare_throughput);
    }

    if options.runs("push") {
        report::enter("push");
        run_push(&runtime, &bin);
    }

    if options.runs("memory") {
        report::enter("memory");
        let mem = runtime.block_on(memory::measure(&bin, options.contexts));
        say!(
            "idle contexts: {}  RSS live {} MiB, evicting {} MiB  =>  {:.0} bytes per idle context",
            mem.contexts,
            mem.rss_live_kib / 1024,
            mem.rss_evicting_kib / 1024,
            mem.bytes_per_context()
        );
    }
    run_added_parts(&runtime, &bin, &options, warmup, duration);
    if let Some(file) = &options.markdown {
        let command = format!(
            "taskset -c 1 cargo bench --bench load -- {}",
            std::env::args().skip(1).collect::<Vec<_>>().join(" ")
        );
        match std::fs::write(file, report::markdown(&command)) {
            Ok(()) => eprintln!("wrote the current-figures table to {file}"),
            Err(e) => eprintln!("could not write {file}: {e}"),
        }
    }
}

/// The parts measuring this session's additions, each `--repeat` times in a row.
fn run_added_parts(
    runtime: &tokio::runtime::Runtime,
    bin: &std::path::Path,
    options: &Options,
    warmup: Duration,
    duration: Duration,
) {
    let shape = transports::Shape { in_flight: options.connections, ws_sockets: options.ws_sockets, warmup, duration };
    // Every part after the default four, in PARTS's order: the one list of parts.
    let added = PARTS.iter().copied().skip(4);
    for part in added.filter(|p| options.runs(p)) {
        report::enter(part);
        for round in 1..=options.repeat {
            println!("[{part} {round}/{}]", options.repeat);
            match part {
                "transports" => runtime.block_on(transports::run_all(bin, shape)),
                "dialects" => runtime.block_on(dialects::run_all(bin, options.connections, warmup, duration)),
                "ws-stream" => runtime.block_on(ws_stream::run_all(bin, options.stream_characters)),
                "push-hang" => run_push_hang(runtime, bin, options.push_hang_healthy),
                "soak" => runtime.block_on(soak::run_all(bin, options.soak)),
                "console" => runtime.block_on(console::run_all(bin, options.connections, warmup, duration)),
                "series" => runtime.block_on(series::run_all(bin, options.connections, warmup, duration)),
                "cluster" => runtime.block_on(cluster::run_all(bin, options.connections, warmup, duration)),
                "network" => network::run_all(runtime, bin, options.connections, warmup, duration),
                _ => runtime.block_on(retention::run_all(bin, options.retention_tasks)),
            }
        }
    }
}

/// SendMessage on the bare handler, on the Rust SDK's in-memory server (when built; see
/// `sdk_peer.rs`) and on a2ad over JSON-RPC, HTTP+JSON and gRPC; returns the bare
/// handler's throughput (the reference of the streaming ratio).
fn run_core(
    runtime: &tokio::runtime::Runtime,
    bin: &std::path::Path,
    options: &Options,
    warmup: Duration,
    duration: Duration,
) -> f64 {
    let json_rpc = |addr| client::Target {
        addr,
        path: "/",
        body_for: send_body,
        expect: "TASK_STATE_COMPLETED",
        a2a_version: None,
    };
    let load = |target| client::run(target, options.connections, warmup, duration, u64::MAX);
    say!(
        "SendMessage, {} connections, {} s after {} s warm-up, server on 1 core:",
        options.connections,
        options.seconds,
        warmup.as_secs()
    );
    let bare = Node::start_bare();
    let bare_result = runtime.block_on(load(json_rpc(bare.addr)));
    drop(bare);
    let peer = sdk_peer::binary().map(|program| {
        let peer = Node::start_peer(&program);
        measure(runtime, &peer, load(sdk_peer::target(peer.addr)), warmup + duration)
    });
    let node = Node::start(bin, &["--workers", "1"]);
    let a2ad = measure(runtime, &node, load(json_rpc(node.addr)), warmup + duration);
    drop(node);
    // `store: memory` (issue 35): the like-for-like peer of the SDK's in-memory server.
    let memory_dir = tempfile::tempdir().expect("temp dir");
    let memory_node = Node::start_in(bin, &memory_dir.path().join("data"), "store: memory\n", &[]);
    let memory = measure(runtime, &memory_node, load(json_rpc(memory_node.addr)), warmup + duration);
    drop(memory_node);
    let rest = Node::start(bin, &["--workers", "1"]);
    let target = client::Target { path: "/a2a/message:send", body_for: rest_body, ..json_rpc(rest.addr) };
    let rest_result = runtime.block_on(load(target));
    drop(rest);
    let grpc = Node::start(bin, &["--workers", "1"]);
    let grpc_result = runtime.block_on(grpc_load::run(grpc.grpc_addr(), options.connections, warmup, duration));
    drop(grpc);
    say!("{}", bare_result.summary("bare actix-web handler"));
    match &peer {
        Ok(peer) => say!("{}", peer.result.summary("rust SDK (in-memory)")),
        Err(skipped) => say!("{skipped}"),
    }
    say!("{}", a2ad.result.summary("a2ad JSON-RPC (sled, fsync)"));
    say!("{}", rest_result.summary("a2ad HTTP+JSON"));
    say!("{}", grpc_result.summary("a2ad gRPC"));
    say!(
        "ratio a2ad / bare: {:.3}  (a2ad RSS after run: {} MiB)",
        a2ad.result.throughput() / bare_result.throughput(),
        a2ad.rss_kib / 1024
    );
    say!("{}", a2ad.per_request("a2ad JSON-RPC"));
    say!("{}", memory.result.summary("a2ad JSON-RPC (store: memory)"));
    say!("{}", memory.per_request("a2ad JSON-RPC (store: memory)"));
    for (label, m) in [("sled", &a2ad), ("memory", &memory)] {
        let (p50, p99) = (m.result.latency_us.value_at_quantile(0.5), m.result.latency_us.value_at_quantile(0.99));
        say!("a2ad ({label}) p99 / p50: {:.2}", p99 as f64 / p50.max(1) as f64);
    }
    if let Ok(peer) = &peer {
        let ratio = a2ad.result.throughput() / peer.result.throughput();
        say!("ratio a2ad / rust SDK: {ratio:.3}  (rust SDK RSS after run: {} MiB)", peer.rss_kib / 1024);
        say!("ratio a2ad (store: memory) / rust SDK: {:.3}", memory.result.throughput() / peer.result.throughput());
        say!("{}", peer.per_request("rust SDK"));
    }

    bare_result.throughput()
}

/// One server's figures under one load: the load's result, and what the server spent.
struct Measured {
    result: client::LoadResult,
    /// The requests answered, warm-up included (at the measured rate): what per-request
    /// figures divide by.
    requests: f64,
    cpu_us_per_request: f64,
    written_per_request: f64,
    rss_kib: u64,
}

impl Measured {
    fn per_request(&self, label: &str) -> String {
        format!(
            "{label}: {:.0} us server CPU and {:.0} bytes written (/proc/PID/io write_bytes) per request",
            self.cpu_us_per_request, self.written_per_request
        )
    }
}

/// Runs `load` (warm-up and measured seconds: `ran_for`) against `server`, reading its CPU
/// time and bytes written before and after.
fn measure(
    runtime: &tokio::runtime::Runtime,
    server: &Node,
    load: impl std::future::Future<Output = client::LoadResult>,
    ran_for: Duration,
) -> Measured {
    let (cpu_before, written_before) = (server.cpu_seconds(), node::write_bytes_of(server.pid()));
    let result = runtime.block_on(load);
    // Warm-up and measured seconds both ran at about the measured rate.
    let requests = result.throughput() * ran_for.as_secs_f64();
    let written = node::write_bytes_of(server.pid()).saturating_sub(written_before);
    Measured {
        cpu_us_per_request: (server.cpu_seconds() - cpu_before) / requests * 1e6,
        written_per_request: written as f64 / requests,
        rss_kib: server.rss_kib(),
        requests,
        result,
    }
}

fn run_streaming(
    runtime: &tokio::runtime::Runtime,
    bin: &std::path::Path,
    options: &Options,
    warmup: Duration,
    duration: Duration,
    bare_throughput: Option<f64>,
) {
    let streams = runtime.block_on(streams::streams_per_second(bin, "", options.connections, warmup, duration));
    say!("{}", streams.summary("a2ad SendStreamingMessage"));
    if let Some(bare) = bare_throughput {
        say!("ratio streams / bare: {:.3}", streams.throughput() / bare);
    }
    // Issue 35 asks for the tail of both stores.
    let memory = "store: memory\n";
    let on_memory = runtime.block_on(streams::streams_per_second(bin, memory, options.connections, warmup, duration));
    say!("{}", on_memory.summary("a2ad SendStreamingMessage (store: memory)"));
    for (label, result) in [("sled", &streams), ("memory", &on_memory)] {
        let (p50, p99) = (result.latency_us.value_at_quantile(0.5), result.latency_us.value_at_quantile(0.99));
        say!("streams ({label}) p99 / p50: {:.2}", p99 as f64 / p50.max(1) as f64);
    }

    let (events, elapsed) = runtime.block_on(streams::events_per_second(bin, 50_000));
    say!(
        "one stream: {events} events in {:.2} s = {:.0} events/s",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64()
    );

    let (fan, per_subscriber) = runtime.block_on(streams::fan_out(bin, 1000, 200));
    say!(
        "fan-out: {} subscribers, {} events delivered in {:.2} s ({:.0}/s); server CPU {:.2} s vs {:.2} s for 1 subscriber => {:.1} us per extra delivered event",
        fan.subscribers,
        fan.events_delivered,
        fan.wall.as_secs_f64(),
        fan.events_delivered as f64 / fan.wall.as_secs_f64(),
        fan.cpu_many,
        fan.cpu_one,
        fan.micros_per_extra_event(per_subscriber)
    );

    let open = 2000;
    let (before, after) = runtime.block_on(streams::memory_per_stream(bin, open));
    say!(
        "open streams: {open}, RSS {} -> {} KiB => {:.0} bytes per open stream",
        before,
        after,
        (after.saturating_sub(before)) as f64 * 1024.0 / open as f64
    );
}

fn run_push(runtime: &tokio::runtime::Runtime, bin: &std::path::Path) {
    let n = 5000;
    let (rate, elapsed) = runtime.block_on(push::deliveries_per_second(bin, n, "push-queue: local-file\n"));
    say!("push, local-file queue: {n} deliveries in {:.2} s = {rate:.0} deliveries/s", elapsed.as_secs_f64());
    match redis_server() {
        Some((server, port)) => {
            let queue = format!("push-queue: redis-streams\npush-redis-url: redis://127.0.0.1:{port}/\n");
            let (rate, elapsed) = runtime.block_on(push::deliveries_per_second(bin, n, &queue));
            say!(
                "push, redis-streams queue: {n} deliveries in {:.2} s = {rate:.0} deliveries/s",
                elapsed.as_secs_f64()
            );
            drop(server);
        }
        None => say!("push, redis-streams queue: skipped (no redis-server; run scripts/redis.sh)"),
    }
}

/// A healthy receiver's delivery delays behind 100 tasks pushing to one that never answers.
fn run_push_hang(runtime: &tokio::runtime::Runtime, bin: &std::path::Path, healthy: usize) {
    let hanging = 100;
    let delays = runtime.block_on(push_hang::healthy_delays(bin, hanging, healthy));
    let arrived: Vec<Duration> = delays.iter().flatten().copied().collect();
    let ms = |d: Option<&Duration>| d.map_or("-".to_owned(), |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0));
    say!(
        "push, {healthy} healthy deliveries behind {hanging} hanging configs: {} arrived within 120 s, p50 {}, max {}",
        arrived.len(),
        ms(arrived.get(arrived.len() / 2)),
        ms(arrived.last())
    );
}

/// Where the benches' redis-servers run: on CPU 1, the driver's, unless
/// `--redis-beside-node` puts them on CPU 0 with the node under test.
///
/// In a cluster Redis has a machine of its own, shared by the nodes: its CPU (the
/// commands, the `appendfsync always` writes, and the AOF rewrites it forks, which took
/// 40 % of its CPU in the `network` part) is not the node's. Until 2026-12-06 it ran on
/// the node's core, and the node's figures on Redis paid for both (docs/benchmarks/journal.md).
/// On the driver's core it slows the driver instead, which only understates the node.
static REDIS_BESIDE_NODE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A redis-server on a free port (on the CPU [`REDIS_BESIDE_NODE`] says), for the Redis run.
fn redis_server() -> Option<(RedisProcess, u16)> {
    redis_server_with(&["--appendonly", "no"])
}

/// A bench's redis-server: killed, and its directory removed, when dropped (a durable
/// Redis leaves an AOF of hundreds of MB per run, which piled up in the temp dir).
struct RedisProcess {
    process: node::KillOnDrop,
    _dir: tempfile::TempDir,
}

impl RedisProcess {
    fn pid(&self) -> u32 {
        self.process.0.id()
    }
}

/// [`redis_server`] with the persistence options `extra`, in a directory of its own.
fn redis_server_with(extra: &[&str]) -> Option<(RedisProcess, u16)> {
    let binary = cluster::redis_cluster::redis_server_binary()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let dir = tempfile::Builder::new().prefix("a2ad-bench-redis-").tempdir().ok()?;
    let cpu = if REDIS_BESIDE_NODE.load(std::sync::atomic::Ordering::Relaxed) { 0 } else { 1 };
    let child = node::pinned_to(&binary, cpu)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
        .args(extra)
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .ok()?;
    // Fields drop in order: the process is killed before its directory goes.
    let guard = RedisProcess { process: node::KillOnDrop(child), _dir: dir };
    for _ in 0..250 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((guard, port));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}
