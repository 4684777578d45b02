//! Memory and disk under steady load (issue 17 point 8): whether they level off.
//!
//! One node with `retention.max-age: 30s` (swept every 5 s) takes, for `--soak-seconds`,
//! a steady mixed load: `in_flight` keep-alive loops, each sending `SendMessage` into one
//! of its share of `contexts` in turn, then `GetTask` on the task it got and `ListTasks`
//! of that context: one round. The loops together run `rounds_per_second` rounds a
//! second (`--soak-rate`), so the node works at a steady rate below what it can take, as
//! a serving node does; a soak that saturates the node (`--soak-rate 0`) measures how far
//! its background work (sled's segment cleaner, the checkpointer) falls behind instead.
//!
//! What the node holds levels off once both of its bounded sets are full: the stored
//! tasks, after the 30 s retention; and the contexts' sessions, each keeping the last
//! `session-history-limit` (200) messages, after 100 turns in every context (about 6
//! minutes with the defaults: 1,024 contexts at 300 rounds a second). The warm-up (the
//! first third) covers both; RSS (sled's page cache fills up to `store-cache-size`, set
//! through `A2AD_STORE_CACHE_SIZE` in the driver's environment) and the data dir should
//! be flat after it, and the summary's fitted slopes say how flat (BENCHMARKS.md).
//!
//! Every `sample_every` the RSS (`VmRSS`), the data dir's bytes, the stored tasks
//! (`a2ad_tasks`) and live contexts (`a2ad_live_contexts`) are printed; the summary sets
//! the end of the warm-up (the first third) against the end and fits the trend of the
//! last half ([`spread`]). Bounded in time (the deadline, a per-request timeout) and
//! in count ([`MAX_REQUESTS`]).

use crate::client::{post, read_response};
use crate::node::Node;
use crate::report::say;
use crate::retention::{dir_bytes, human, metric_sum};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

const CONFIG: &str = "agents:\n  - {id: echo, kind: echo}\nretention:\n  max-age: 30s\n  sweep-interval: 5s\n";

/// A request not answered in this long counts as an error and its connection is replaced.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Requests (of all three kinds) after which the loops stop even before the deadline.
const MAX_REQUESTS: u64 = 100_000_000;

/// How long and how hard the soak runs.
#[derive(Clone, Copy)]
pub struct Shape {
    pub duration: Duration,
    pub sample_every: Duration,
    pub in_flight: usize,
    /// Rounds a second, all loops together; 0: back to back.
    pub rounds_per_second: u64,
    /// Contexts in all, shared out between the loops.
    pub contexts: u64,
}

impl Shape {
    /// The contexts one loop cycles through.
    fn contexts_per_loop(&self) -> u64 {
        (self.contexts / self.in_flight as u64).max(1)
    }

    /// How often one loop starts a round: `None` when the loops run back to back.
    fn round_every(&self) -> Option<Duration> {
        (self.rounds_per_second > 0)
            .then(|| Duration::from_secs_f64(self.in_flight as f64 / self.rounds_per_second as f64))
    }
}

/// One reading of the node.
struct Sample {
    at: Duration,
    rss_kib: u64,
    disk_bytes: u64,
    /// Of `disk_bytes`, the write-ahead log's: one or two 64 MiB segments, a saw-tooth of
    /// its own that hides the store's trend.
    log_bytes: u64,
    tasks: u64,
    live_contexts: u64,
    requests: u64,
    errors: u64,
}

/// Requests and errors of every loop, as they go.
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    errors: AtomicU64,
}

/// The whole part, printed.
pub async fn run_all(bin: &Path, shape: Shape) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    // gRPC on a free port: the default one may be taken on a shared machine.
    let node = Node::start_in(bin, &data, CONFIG, &["--grpc-listen", "127.0.0.1:0"]);
    let rate = match shape.rounds_per_second {
        0 => "rounds back to back".to_owned(),
        n => format!("{n} rounds/s"),
    };
    say!(
        "soak: {} s, {} in flight, {rate}, {} contexts, retention max-age 30s (sweep 5s), a sample every {} s",
        shape.duration.as_secs(),
        shape.in_flight,
        shape.in_flight as u64 * shape.contexts_per_loop(),
        shape.sample_every.as_secs()
    );
    let started = Instant::now();
    let deadline = started + shape.duration;
    let counts = Arc::new(Counts::default());
    let loops: Vec<_> = (0..shape.in_flight)
        .map(|conn| tokio::spawn(mixed_loop(node.addr, conn, shape, deadline, counts.clone())))
        .collect();
    let mut samples = Vec::new();
    while Instant::now() < deadline {
        let next = (started + shape.sample_every * (samples.len() as u32 + 1)).min(deadline);
        tokio::time::sleep_until(next.into()).await;
        let sample = take_sample(&node, &data, started, &counts).await;
        print_sample(&sample);
        samples.push(sample);
    }
    for task in loops {
        task.await.expect("soak loop");
    }
    node.stop();
    print_summary(&samples, shape.duration);
}

async fn take_sample(node: &Node, data: &Path, started: Instant, counts: &Counts) -> Sample {
    Sample {
        at: started.elapsed(),
        rss_kib: node.rss_kib(),
        disk_bytes: dir_bytes(data),
        log_bytes: dir_bytes(&data.join(a2ad_storage::WAL_DIR)),
        tasks: metric_sum(node.addr, "a2ad_tasks").await,
        live_contexts: metric_sum(node.addr, "a2ad_live_contexts").await,
        requests: counts.requests.load(Ordering::Relaxed),
        errors: counts.errors.load(Ordering::Relaxed),
    }
}

fn print_sample(s: &Sample) {
    say!(
        "  t={:>5} s  RSS {:>7.1} MiB  disk {:>10} (log {:>10})  tasks {:>7}  live contexts {:>6}  requests {:>9} ({} errors)",
        s.at.as_secs(),
        s.rss_kib as f64 / 1024.0,
        human(s.disk_bytes),
        human(s.log_bytes),
        s.tasks,
        s.live_contexts,
        s.requests,
        s.errors
    );
}

/// Warm-up end (the last sample in the first third) against the last sample, and the
/// fitted trend of every sample from half time on.
fn print_summary(samples: &[Sample], duration: Duration) {
    let last_at_or_before = |t: Duration| samples.iter().rev().find(|s| s.at <= t).or(samples.first());
    let (Some(warm), Some(half), Some(end)) =
        (last_at_or_before(duration / 3), last_at_or_before(duration / 2), samples.last())
    else {
        say!("soak: no samples (run longer than one sample interval)");
        return;
    };
    say!(
        "soak summary: RSS {:.1} MiB at t={} s (end of warm-up) -> {:.1} MiB at t={} s; disk {} -> {}",
        warm.rss_kib as f64 / 1024.0,
        warm.at.as_secs(),
        end.rss_kib as f64 / 1024.0,
        end.at.as_secs(),
        human(warm.disk_bytes),
        human(end.disk_bytes)
    );
    say!(
        "soak summary: {} requests, {} errors, {:.0} req/s",
        end.requests,
        end.errors,
        end.requests as f64 / end.at.as_secs_f64().max(1e-3)
    );
    let last_half: Vec<&Sample> = samples.iter().filter(|s| s.at >= half.at).collect();
    let mib = |bytes: f64| bytes / f64::from(1 << 20);
    let rss = spread(&last_half, |s| s.rss_kib as f64 * 1024.0);
    let disk = spread(&last_half, |s| s.disk_bytes as f64);
    let store = spread(&last_half, |s| s.disk_bytes.saturating_sub(s.log_bytes) as f64);
    say!(
        "soak summary: last half (t={}..{} s), {} samples: RSS {:.1}..{:.1} MiB, fitted slope {:+.2} MiB/min; disk {:.1}..{:.1} MiB, fitted slope {:+.2} MiB/min; without the log {:.1}..{:.1} MiB, {:+.2} MiB/min",
        half.at.as_secs(),
        end.at.as_secs(),
        last_half.len(),
        mib(rss.min),
        mib(rss.max),
        mib(rss.slope_per_minute),
        mib(disk.min),
        mib(disk.max),
        mib(disk.slope_per_minute),
        mib(store.min),
        mib(store.max),
        mib(store.slope_per_minute)
    );
}

/// The range of one reading over some samples, and its least-squares slope: one pair of
/// samples of a saw-tooth (sled's cleaner, the log's segments) says little, the fit over
/// all of them says whether it trends.
struct Spread {
    min: f64,
    max: f64,
    slope_per_minute: f64,
}

fn spread(samples: &[&Sample], reading: impl Fn(&Sample) -> f64) -> Spread {
    let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.at.as_secs_f64() / 60.0, reading(s))).collect();
    let n = points.len().max(1) as f64;
    let (mean_t, mean_v) = points.iter().fold((0.0, 0.0), |(t, v), p| (t + p.0 / n, v + p.1 / n));
    let covariance: f64 = points.iter().map(|(t, v)| (t - mean_t) * (v - mean_v)).sum();
    let variance: f64 = points.iter().map(|(t, _)| (t - mean_t).powi(2)).sum();
    Spread {
        min: points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min),
        max: points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max),
        slope_per_minute: if variance > 0.0 { covariance / variance } else { 0.0 },
    }
}

/// One keep-alive connection's share of the load, until `deadline` or [`MAX_REQUESTS`].
/// A paced loop that falls behind starts its next round at once, without catching up in
/// a burst (the node then runs at what it can take, and the summary's rate says so).
async fn mixed_loop(addr: SocketAddr, conn: usize, shape: Shape, deadline: Instant, counts: Arc<Counts>) {
    let mut stream = None;
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut seq = 0u64;
    let mut pace = shape.round_every().map(|every| {
        // The loops start spread over one period, not all at once.
        let start = tokio::time::Instant::now() + every.mul_f64(conn as f64 / shape.in_flight as f64);
        let mut pace = tokio::time::interval_at(start, every);
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        pace
    });
    while Instant::now() < deadline && counts.requests.load(Ordering::Relaxed) < MAX_REQUESTS {
        if let Some(pace) = pace.as_mut() {
            pace.tick().await;
        }
        let context = format!("soak-{conn}-{}", seq % shape.contexts_per_loop());
        let send = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-{conn}-{seq}","contextId":"{context}","role":"ROLE_USER","parts":[{{"text":"hello from the soak"}}]}}}}}}"#
        );
        seq += 1;
        let task_id = call(&mut stream, addr, &send, &mut buf, &counts).await.and_then(|body| task_id_of(&body));
        if let Some(id) = task_id {
            let get =
                format!(r#"{{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{{"id":"{id}","historyLength":1}}}}"#);
            call(&mut stream, addr, &get, &mut buf, &counts).await;
        }
        let list = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{{"contextId":"{context}","pageSize":10}}}}"#
        );
        call(&mut stream, addr, &list, &mut buf, &counts).await;
    }
}

/// One request on the loop's connection (opened on first use, dropped after a failure);
/// the body of a 200 answer with a `result`, counted either way.
async fn call(
    stream: &mut Option<TcpStream>,
    addr: SocketAddr,
    body: &str,
    buf: &mut Vec<u8>,
    counts: &Counts,
) -> Option<String> {
    counts.requests.fetch_add(1, Ordering::Relaxed);
    let answer = tokio::time::timeout(REQUEST_TIMEOUT, async {
        if stream.is_none() {
            let opened = TcpStream::connect(addr).await.ok()?;
            opened.set_nodelay(true).ok();
            *stream = Some(opened);
        }
        let open = stream.as_mut()?;
        post(open, body).await.ok()?;
        read_response(open, buf).await
    })
    .await
    .ok()
    .flatten()
    .filter(|text| text.contains("\"result\""));
    if answer.is_none() {
        counts.errors.fetch_add(1, Ordering::Relaxed);
        *stream = None;
    }
    answer
}

/// `result.task.id` of a SendMessage answer.
fn task_id_of(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    Some(value.get("result")?.get("task")?.get("id")?.as_str()?.to_owned())
}
