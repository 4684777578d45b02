//! Cluster mode over a network (issue 34 part 4): what a round trip to Redis costs a node.
//!
//! On one machine a node reaches Redis over loopback in some tens of microseconds, so the
//! `cluster` part never shows what a real network does to a store that waits for Redis on
//! every turn. This part puts a latency-injecting TCP proxy ([`DelayProxy`]) between the
//! node and one durable Redis (`appendonly yes`, `appendfsync always`, as `cluster`), and
//! runs, in one sitting, echo `SendMessage` (blocking, `--connections`) on:
//!
//! - a node on sled (the reference);
//! - a node on Redis directly;
//! - a node on Redis through the proxy at 0, 0.5 and 2 ms RTT;
//! - a node on Redis directly with `redis.replica-acks: 1`, beside a replica on loopback
//!   (what waiting for a replica's `WAIT` costs, network aside).
//!
//! For each: req/s, p50, p99, the node's CPU per request, Redis commands per request
//! (`INFO commandstats`), and the ratios to the sled node; then one markdown table.
//! Every node runs with one worker on CPU 0; the driver, the proxy's threads and Redis on
//! CPU 1 (`--redis-beside-node` puts Redis on CPU 0, as it was until 2026-12-06: then the
//! node's core paid for Redis's CPU too, which the table's Redis CPU column shows).
//!
//! The proxy's delay is not done with tokio timers: they tick in whole milliseconds, so a
//! 0.25 ms delay would become about 1 ms. Each direction is instead a reader thread that
//! stamps every chunk `now + D` and a writer thread that sleeps (`nanosleep`, timer slack
//! 1 ns) until the chunk is due. The RTT the proxy really adds is measured (a Redis `PING`
//! through it, idle) and printed beside the RTT asked for.

use crate::client::{self, Target};
use crate::cluster;
use crate::node::{cpu_seconds_of, Node};
use crate::report::say;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// At most this many requests per run, whatever `--seconds` says (the time bounds it first).
const MAX_REQUESTS: u64 = 5_000_000;

/// The `PING`s that measure the RTT a proxy adds.
const PINGS: usize = 200;

/// A TCP proxy on 127.0.0.1 to `target` that delays every chunk, in each direction, by
/// the same one-way delay, without limiting how much is in flight: the reader never waits
/// for the writer, so pipelined commands stay pipelined and bandwidth is not capped.
/// A delay of zero copies straight through (the proxy's own cost, without any delay).
/// Dropping it closes the listener and every connection it carries.
pub struct DelayProxy {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl DelayProxy {
    pub fn start(target: SocketAddr, one_way: Duration) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let sockets = Arc::new(Mutex::new(Vec::new()));
        let (stop_flag, live) = (stop.clone(), sockets.clone());
        std::thread::Builder::new().name("delay-proxy".into()).spawn(move || {
            for client in listener.incoming() {
                if stop_flag.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                if let Err(e) = splice(client, target, one_way, &live) {
                    eprintln!("delay proxy: {e}");
                }
            }
        })?;
        Ok(DelayProxy { addr, stop, sockets })
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop, which then ends
        for socket in self.sockets.lock().expect("proxy sockets").drain(..) {
            let _ = socket.shutdown(Shutdown::Both); // ends every pipe thread
        }
    }
}

/// Connects `client` to `target` through two delayed pipes, one per direction.
fn splice(
    client: TcpStream,
    target: SocketAddr,
    one_way: Duration,
    live: &Mutex<Vec<TcpStream>>,
) -> std::io::Result<()> {
    let server = TcpStream::connect(target)?;
    // Without it, Nagle holds a small chunk back while one is unacknowledged: tens of ms.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    live.lock().expect("proxy sockets").extend([client.try_clone()?, server.try_clone()?]);
    pipe(client.try_clone()?, server.try_clone()?, one_way)?;
    pipe(server, client, one_way)
}

/// Forwards `from` to `to`, each chunk `one_way` after it was read; when `from` ends,
/// shuts `to`'s write side once every chunk is out.
fn pipe(from: TcpStream, to: TcpStream, one_way: Duration) -> std::io::Result<()> {
    if one_way.is_zero() {
        return spawn("proxy-copy", move || copy_now(from, to));
    }
    let (chunks, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    let reader = from.try_clone()?;
    spawn("proxy-read", move || read_stamped(reader, chunks, one_way))?;
    spawn("proxy-write", move || write_when_due(due, from, to))
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.into()).spawn(f).map(drop)
}

/// The zero-delay pipe: each chunk written as soon as it is read.
fn copy_now(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

/// Reads `from` until it ends, stamping each chunk with when it is due.
fn read_stamped(mut from: TcpStream, chunks: mpsc::Sender<(Instant, Vec<u8>)>, one_way: Duration) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if chunks.send((Instant::now() + one_way, buf[..n].to_vec())).is_err() {
            return;
        }
    }
}

/// Writes each chunk to `to` when it is due, in order; on a write error closes `from`,
/// which ends its reader.
fn write_when_due(due: mpsc::Receiver<(Instant, Vec<u8>)>, from: TcpStream, mut to: TcpStream) {
    // The default 50 us of timer slack would add up to a fifth of a 0.25 ms delay.
    // SAFETY: prctl(PR_SET_TIMERSLACK) changes this thread's timer slack and nothing else.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    for (at, chunk) in due {
        let wait = at.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        if to.write_all(&chunk).is_err() {
            let _ = from.shutdown(Shutdown::Both);
            return;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// The median round trip of a Redis `PING` to `addr` (a proxy or Redis itself), idle.
fn ping_rtt(addr: SocketAddr) -> Option<Duration> {
    let client = redis::Client::open(format!("redis://{addr}/")).ok()?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(5)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut rtts: Vec<Duration> = (0..PINGS)
        .filter_map(|_| {
            let sent = Instant::now();
            redis::cmd("PING").query::<String>(&mut conn).ok().map(|_| sent.elapsed())
        })
        .collect();
    rtts.sort();
    rtts.get(rtts.len() / 2).copied()
}

/// One row of the table: how the node reached its store, and what the run measured.
struct Row {
    label: String,
    /// The RTT the proxy was asked to add (None: no proxy, or no Redis).
    rtt: Option<Duration>,
    /// The idle `PING` RTT through the proxy (or to Redis directly).
    ping: Option<Duration>,
    measured: crate::Measured,
    /// Redis commands per request (None on sled).
    commands: Option<f64>,
    /// Redis's own CPU per request, µs (its process's, children aside; None on sled):
    /// with `--redis-beside-node`, Redis shares the node's core, and this is the node's
    /// cost too.
    redis_cpu_us: Option<f64>,
}

impl Row {
    fn p50_ms(&self) -> f64 {
        self.measured.result.latency_us.value_at_quantile(0.50) as f64 / 1000.0
    }
}

/// JSON-RPC SendMessage bodies into contexts of the run's own (`cluster::body::<N>`:
/// context `nN-<conn>`): a node killed mid-turn leaves its leases in Redis until they
/// expire, so no two runs on the one Redis share a context.
const BODIES: [client::BodyFor; 6] = [
    cluster::body::<20>,
    cluster::body::<21>,
    cluster::body::<22>,
    cluster::body::<23>,
    cluster::body::<24>,
    cluster::body::<25>,
];

fn target(addr: SocketAddr, run: usize) -> Target {
    Target { addr, path: "/", body_for: BODIES[run], expect: "TASK_STATE_COMPLETED", a2a_version: None }
}

/// The sitting: sled, Redis directly, Redis through the proxy at 0, 0.5 and 2 ms RTT.
///
/// Each Redis row has a Redis of its own, started empty: on one Redis the rows ran on a
/// store that grew row by row, and the later ones paid for the AOF rewrites of the earlier
/// rows' data (a rewrite forks, and its child's CPU is not the Redis process's).
pub fn run_all(
    runtime: &tokio::runtime::Runtime,
    bin: &Path,
    connections: usize,
    warmup: Duration,
    duration: Duration,
) {
    if cluster::redis_cluster::redis_server_binary().is_none() {
        return say!("network: skipped (no redis-server; set A2AD_REDIS_SERVER)");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let load = |addr, run| client::run(target(addr, run), connections, warmup, duration, MAX_REQUESTS);
    say!(
        "network: SendMessage, {connections} connections, {} s after {} s warm-up, node on 1 core (1 worker):",
        duration.as_secs(),
        warmup.as_secs()
    );
    let sled = Node::start(bin, &["--workers", "1"]);
    let measured = crate::measure(runtime, &sled, load(sled.addr, 0), warmup + duration);
    drop(sled);
    let mut rows =
        vec![Row { label: "sled".into(), rtt: None, ping: None, measured, commands: None, redis_cpu_us: None }];
    print_row(&rows[0]);
    let runs: [(&str, Option<u64>); 4] = [
        ("Redis, no proxy", None),
        ("Redis, proxy", Some(0)),
        ("Redis, proxy", Some(250)),
        ("Redis, proxy", Some(1000)),
    ];
    for (run, (label, one_way_us)) in runs.into_iter().enumerate() {
        let Some((redis, port)) = crate::redis_server_with(cluster::DURABLE) else {
            return say!("network: a redis-server did not start");
        };
        let redis_addr = SocketAddr::from(([127, 0, 0, 1], port));
        let one_way = one_way_us.map(Duration::from_micros);
        let proxy = match one_way.map(|d| DelayProxy::start(redis_addr, d)).transpose() {
            Ok(proxy) => proxy,
            Err(e) => return say!("network: the proxy did not start ({e})"),
        };
        let reach = proxy.as_ref().map_or(redis_addr, |p| p.addr);
        let load = (|node| load(node, run + 1), warmup + duration);
        let (ping, measured, (commands, redis_cpu)) =
            on_redis(runtime, bin, dir.path(), (reach, redis_addr, redis.pid()), run + 1, load);
        let rtt = one_way.map(|d| d * 2);
        let row =
            Row { label: label.into(), rtt, ping, measured, commands: Some(commands), redis_cpu_us: Some(redis_cpu) };
        print_row(&row);
        rows.push(row);
        drop(proxy);
    }
    let last_run = BODIES.len() - 1;
    let Some((primary, port)) = crate::redis_server_with(cluster::DURABLE) else {
        return say!("network: a redis-server did not start");
    };
    let primary = (port, primary.pid());
    match with_a_replica(runtime, bin, dir.path(), primary, (|addr| load(addr, last_run), warmup + duration)) {
        Some(row) => {
            print_row(&row);
            rows.push(row);
        }
        None => say!("network: the replica row skipped (the replica did not come up)"),
    }
    say!("{}", table(&rows));
}

/// A node with `redis.replica-acks: 1` on the Redis at `port` (process `pid`), beside a replica of it on
/// loopback: each step waits for the replica's `WAIT` (the last run's contexts: no other
/// run shares them).
fn with_a_replica<F: std::future::Future<Output = client::LoadResult>>(
    runtime: &tokio::runtime::Runtime,
    bin: &Path,
    dir: &Path,
    (port, pid): (u16, u32),
    (load, ran_for): (impl FnOnce(SocketAddr) -> F, Duration),
) -> Option<Row> {
    let mut stats = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?.get_connection().ok()?;
    // The first sync waits 5 s by default for more replicas to join it: none will.
    let _: () = redis::cmd("CONFIG").arg("SET").arg("repl-diskless-sync-delay").arg("0").query(&mut stats).ok()?;
    let primary = port.to_string();
    let replica_of = [cluster::DURABLE, &["--replicaof", "127.0.0.1", &primary]].concat();
    let (_replica, _) = crate::redis_server_with(&replica_of)?;
    let synced = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        let info: String = redis::cmd("INFO").arg("replication").query(&mut stats).unwrap_or_default();
        info.contains("connected_slaves:1") && info.contains("state=online")
    });
    if !synced {
        return None;
    }
    let config = cluster::config(port).replacen("\nagents:", "\n  replica-acks: 1\nagents:", 1);
    let node = Node::start_in(bin, &dir.join("replicated"), &config, &["--grpc-listen", "127.0.0.1:0"]);
    let before = (total_calls(&mut stats), cpu_seconds_of(pid));
    let measured = crate::measure(runtime, &node, load(node.addr), ran_for);
    let (commands, redis_cpu) = per_request(&mut stats, pid, before, measured.requests);
    drop(node);
    let label = "Redis + replica, replica-acks: 1".to_owned();
    Some(Row { label, rtt: None, ping: None, measured, commands: Some(commands), redis_cpu_us: Some(redis_cpu) })
}

/// One node (one worker) on Redis reached at `reach` (the proxy, or Redis itself), under
/// `load` for `ran_for`: its figures, and the commands Redis (at `redis`, process `pid`)
/// ran and the CPU it used per request.
fn on_redis<F: std::future::Future<Output = client::LoadResult>>(
    runtime: &tokio::runtime::Runtime,
    bin: &Path,
    dir: &Path,
    (reach, redis, pid): (SocketAddr, SocketAddr, u32),
    run: usize,
    (load, ran_for): (impl FnOnce(SocketAddr) -> F, Duration),
) -> (Option<Duration>, crate::Measured, (f64, f64)) {
    let ping = ping_rtt(reach);
    let mut stats = redis::Client::open(format!("redis://{redis}/")).and_then(|c| c.get_connection()).expect("redis");
    let node = cluster::shared_node(bin, dir, reach.port(), 20 + run, "1");
    let before = (total_calls(&mut stats), cpu_seconds_of(pid));
    let measured = crate::measure(runtime, &node, load(node.addr), ran_for);
    let per_request = per_request(&mut stats, pid, before, measured.requests);
    drop(node);
    (ping, measured, per_request)
}

/// Commands and the CPU (µs) of Redis's process `pid` per request since `before` (calls,
/// CPU seconds).
fn per_request(stats: &mut redis::Connection, pid: u32, (calls, cpu): (u64, f64), requests: f64) -> (f64, f64) {
    let calls = total_calls(stats).saturating_sub(calls) as f64;
    let cpu = (cpu_seconds_of(pid) - cpu).max(0.0);
    (calls / requests.max(1.0), cpu * 1e6 / requests.max(1.0))
}

/// Every command Redis has run (`INFO commandstats`, summed over the commands).
fn total_calls(stats: &mut redis::Connection) -> u64 {
    cluster::command_calls(stats).values().sum()
}

/// The run's line as it ends, in the other parts' form.
fn print_row(row: &Row) {
    let label = match row.rtt {
        Some(rtt) => format!("{} {:.1} ms RTT", row.label, rtt.as_secs_f64() * 1e3),
        None => row.label.clone(),
    };
    let redis = row.redis_cpu_us.map_or(String::new(), |us| format!(", {us:.0} us Redis CPU per request"));
    say!(
        "{}  {:.0} us node CPU per request{redis}",
        row.measured.result.summary(&label),
        row.measured.cpu_us_per_request
    );
}

/// The markdown table of the sitting, every ratio against the first row (sled).
fn table(rows: &[Row]) -> String {
    let sled = &rows[0];
    let mut out = String::from(
        "| store | RTT added | PING RTT, idle | req/s | p50 | p99 | node CPU per request | Redis CPU per request \
         | Redis commands per request | req/s ÷ sled | CPU ÷ sled | (p50 − sled p50) ÷ RTT |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let ms = |d: Option<Duration>| d.map_or("-".to_owned(), |d| format!("{:.2} ms", d.as_secs_f64() * 1e3));
    for row in rows {
        let result = &row.measured.result;
        let over_rtt = match row.rtt.filter(|rtt| !rtt.is_zero()) {
            Some(rtt) => format!("{:.1}", (row.p50_ms() - sled.p50_ms()) / (rtt.as_secs_f64() * 1e3)),
            None => "-".to_owned(),
        };
        out += &format!(
            "| {} | {} | {} | {:.0} | {:.1} ms | {:.1} ms | {:.0} µs | {} | {} | {:.2} | {:.2} | {over_rtt} |\n",
            row.label,
            ms(row.rtt),
            ms(row.ping),
            result.throughput(),
            row.p50_ms(),
            result.latency_us.value_at_quantile(0.99) as f64 / 1000.0,
            row.measured.cpu_us_per_request,
            row.redis_cpu_us.map_or("-".to_owned(), |us| format!("{us:.0} µs")),
            row.commands.map_or("-".to_owned(), |c| format!("{c:.1}")),
            result.throughput() / sled.measured.result.throughput().max(1e-9),
            row.measured.cpu_us_per_request / sled.measured.cpu_us_per_request.max(1e-9),
        );
    }
    out
}
