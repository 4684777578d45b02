//! The load driver (see BENCHMARKS.md).
//!
//! `cargo build --release && taskset -c 1 cargo bench --bench load -- [--seconds N]
//! [--connections N] [--contexts N] [--skip-memory]`
//!
//! 1. Throughput and latency of `SendMessage` (echo, persistence on, blocking) on the
//!    release binary with one worker pinned to one core, at 64 connections; then the same
//!    load on a bare actix-web handler that parses the same body; and the ratio.
//! 2. RSS per idle context at 100k contexts (see `memory.rs`).

mod bare;
mod client;
mod grpc_load;
mod memory;
mod node;
mod push;
mod streams;

use node::Node;
use std::path::PathBuf;
use std::time::Duration;

struct Options {
    seconds: u64,
    connections: usize,
    contexts: u64,
    skip_memory: bool,
    skip_streams: bool,
    skip_push: bool,
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
            skip_memory: args.iter().any(|a| a == "--skip-memory"),
            skip_streams: args.iter().any(|a| a == "--skip-streams"),
            skip_push: args.iter().any(|a| a == "--skip-push"),
        }
    }
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
    let options = Options::from_args();
    let bin = a2ad_binary();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let warmup = Duration::from_secs(2);
    let duration = Duration::from_secs(options.seconds);
    let load = |addr| {
        let target = client::Target { addr, path: "/", body_for: send_body, expect: "TASK_STATE_COMPLETED" };
        client::run(target, options.connections, warmup, duration, u64::MAX)
    };

    println!(
        "SendMessage, {} connections, {} s after {} s warm-up, server on 1 core:",
        options.connections,
        options.seconds,
        warmup.as_secs()
    );
    let bare = Node::start_bare();
    let bare_result = runtime.block_on(load(bare.addr));
    drop(bare);
    let node = Node::start(&bin, &["--workers", "1"]);
    let node_result = runtime.block_on(load(node.addr));
    let node_rss = node.rss_kib();
    drop(node);
    let rest = Node::start(&bin, &["--workers", "1"]);
    let target = client::Target {
        addr: rest.addr,
        path: "/a2a/message:send",
        body_for: rest_body,
        expect: "TASK_STATE_COMPLETED",
    };
    let rest_result = runtime.block_on(client::run(target, options.connections, warmup, duration, u64::MAX));
    drop(rest);
    let grpc = Node::start(&bin, &["--workers", "1"]);
    let grpc_result = runtime.block_on(grpc_load::run(grpc.grpc_addr(), options.connections, warmup, duration));
    drop(grpc);
    println!("{}", bare_result.summary("bare actix-web handler"));
    println!("{}", node_result.summary("a2ad JSON-RPC (sled, fsync)"));
    println!("{}", rest_result.summary("a2ad HTTP+JSON"));
    println!("{}", grpc_result.summary("a2ad gRPC"));
    println!(
        "ratio a2ad / bare: {:.3}  (a2ad RSS after run: {} MiB)",
        node_result.throughput() / bare_result.throughput(),
        node_rss / 1024
    );

    if !options.skip_streams {
        run_streaming(&runtime, &bin, &options, warmup, duration, bare_result.throughput());
    }

    if !options.skip_push {
        run_push(&runtime, &bin);
    }

    if !options.skip_memory {
        let mem = runtime.block_on(memory::measure(&bin, options.contexts));
        println!(
            "idle contexts: {}  RSS live {} MiB, evicting {} MiB  =>  {:.0} bytes per idle context",
            mem.contexts,
            mem.rss_live_kib / 1024,
            mem.rss_evicting_kib / 1024,
            mem.bytes_per_context()
        );
    }
}

fn run_streaming(
    runtime: &tokio::runtime::Runtime,
    bin: &std::path::Path,
    options: &Options,
    warmup: Duration,
    duration: Duration,
    bare_throughput: f64,
) {
    let streams = runtime.block_on(streams::streams_per_second(bin, options.connections, warmup, duration));
    println!("{}", streams.summary("a2ad SendStreamingMessage"));
    println!("ratio streams / bare: {:.3}", streams.throughput() / bare_throughput);

    let (events, elapsed) = runtime.block_on(streams::events_per_second(bin, 50_000));
    println!(
        "one stream: {events} events in {:.2} s = {:.0} events/s",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64()
    );

    let (fan, per_subscriber) = runtime.block_on(streams::fan_out(bin, 1000, 200));
    println!(
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
    println!(
        "open streams: {open}, RSS {} -> {} KiB => {:.0} bytes per open stream",
        before,
        after,
        (after.saturating_sub(before)) as f64 * 1024.0 / open as f64
    );
}

fn run_push(runtime: &tokio::runtime::Runtime, bin: &std::path::Path) {
    let n = 5000;
    let (rate, elapsed) = runtime.block_on(push::deliveries_per_second(bin, n, "push-queue: local-file\n"));
    println!("push, local-file queue: {n} deliveries in {:.2} s = {rate:.0} deliveries/s", elapsed.as_secs_f64());
    match redis_server() {
        Some((server, port)) => {
            let queue = format!("push-queue: redis-streams\npush-redis-url: redis://127.0.0.1:{port}/\n");
            let (rate, elapsed) = runtime.block_on(push::deliveries_per_second(bin, n, &queue));
            println!(
                "push, redis-streams queue: {n} deliveries in {:.2} s = {rate:.0} deliveries/s",
                elapsed.as_secs_f64()
            );
            drop(server);
        }
        None => println!("push, redis-streams queue: skipped (no redis-server; run scripts/redis.sh)"),
    }
}

/// A redis-server on a free port, pinned next to the node (CPU 0), for the Redis run.
fn redis_server() -> Option<(node::KillOnDrop, u16)> {
    let binary = std::env::var("A2AD_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let child = std::process::Command::new(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let guard = node::KillOnDrop(child);
    for _ in 0..250 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((guard, port));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}
