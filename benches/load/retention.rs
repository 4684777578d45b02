//! What retention costs and gives back, for `n` tasks:
//!
//! 1. a node takes `n` blocking `SendMessage` calls (64 contexts) and stops (SIGTERM);
//! 2. a node restarted on the same data dir with `max-age: 1ms` sweeps them all in its
//!    first sweep (`n` ≤ 10,000, the per-sweep quota): the wall time until
//!    `a2ad_retention_removed_total` reaches `n`, and the node's CPU over that time, per
//!    task (the node is otherwise idle but for the `/metrics` polls);
//! 3. `a2ad admin compact` on the stopped store, once with the `n` tasks (between 1 and
//!    2: what a compacted store of `n` live tasks takes) and once after the sweep.
//!
//! Store sizes are the bytes of every file under the data dir.

use crate::client::{self, read_response, Target};
use crate::node::Node;
use crate::report::say;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const CONFIG: &str = "agents:\n  - {id: echo, kind: echo}\n";

/// The first sweep runs one interval after start.
const SWEEP_INTERVAL: Duration = Duration::from_secs(2);

/// How long the sweep may take before the run gives up (bounded runs).
const SWEEP_TIMEOUT: Duration = Duration::from_secs(300);

pub struct RetentionFigures {
    pub tasks: u64,
    pub removed: u64,
    pub sweep_wall: Duration,
    pub sweep_cpu_s: f64,
    pub bytes_full: u64,
    pub full_compacted: Compacted,
    pub bytes_swept: u64,
    pub swept_compacted: Compacted,
}

/// One `a2ad admin compact`: what it printed, how long it took, the bytes after.
pub struct Compacted {
    pub said: String,
    pub wall: Duration,
    pub bytes_after: u64,
}

fn compact(bin: &Path, data: &Path) -> Compacted {
    let started = Instant::now();
    let output =
        std::process::Command::new(bin).args(["admin", "compact", "--data-dir"]).arg(data).output().expect("compact");
    let wall = started.elapsed();
    let said = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    Compacted { said, wall, bytes_after: dir_bytes(data) }
}

fn body(conn: usize, seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-{conn}-{seq}","contextId":"ret-{conn}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}}}"#
    )
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// `a2ad_retention_removed_total` from `/metrics` (0 if it cannot be read).
async fn removed_total(addr: std::net::SocketAddr) -> u64 {
    metric_sum(addr, "a2ad_retention_removed_total").await
}

/// The sum of every series of metric `name` on `/metrics` (`a2ad_tasks{state=...}` summed
/// over its states); 0 if it cannot be read.
pub async fn metric_sum(addr: std::net::SocketAddr, name: &str) -> u64 {
    let Ok(mut stream) = TcpStream::connect(addr).await else { return 0 };
    let request = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).await.is_err() {
        return 0;
    }
    let mut buf = Vec::new();
    let text = read_response(&mut stream, &mut buf).await.unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix(name))
        .filter(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        .filter_map(|rest| rest.rsplit(' ').next()?.trim().parse::<f64>().ok())
        .sum::<f64>() as u64
}

pub async fn measure(bin: &Path, n: u64) -> RetentionFigures {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let node = Node::start_in(bin, &data, CONFIG, &[]);
    let target =
        Target { addr: node.addr, path: "/", body_for: body, expect: "TASK_STATE_COMPLETED", a2a_version: None };
    let made = client::run(target, 64, Duration::ZERO, Duration::from_secs(300), n).await;
    assert_eq!(made.errors, 0, "every task was created");
    let n = made.requests;
    node.stop();
    let bytes_full = dir_bytes(&data);
    let full_compacted = compact(bin, &data);

    let retention = format!("{CONFIG}retention:\n  max-age: 1ms\n  sweep-interval: {}s\n", SWEEP_INTERVAL.as_secs());
    let node = Node::start_in(bin, &data, &retention, &[]);
    let first_sweep = Instant::now() + SWEEP_INTERVAL;
    let cpu_before = node.cpu_seconds();
    let deadline = first_sweep + SWEEP_TIMEOUT;
    let mut removed = 0;
    while removed < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        removed = removed_total(node.addr).await;
    }
    let sweep_wall = first_sweep.elapsed();
    let sweep_cpu_s = node.cpu_seconds() - cpu_before;
    node.stop();
    let bytes_swept = dir_bytes(&data);

    let swept_compacted = compact(bin, &data);
    RetentionFigures {
        tasks: n,
        removed,
        sweep_wall,
        sweep_cpu_s,
        bytes_full,
        full_compacted,
        bytes_swept,
        swept_compacted,
    }
}

/// Bytes, readably.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// The whole part, printed.
pub async fn run_all(bin: &Path, n: u64) {
    let f = measure(bin, n).await;
    say!(
        "retention: {} tasks, {} removed in one sweep: {:.0} ms wall ({:.0} us/task), node CPU {:.0} ms ({:.0} us/task)",
        f.tasks,
        f.removed,
        f.sweep_wall.as_secs_f64() * 1e3,
        f.sweep_wall.as_secs_f64() * 1e6 / f.removed.max(1) as f64,
        f.sweep_cpu_s * 1e3,
        f.sweep_cpu_s * 1e6 / f.removed.max(1) as f64
    );
    say!(
        "store with the tasks: {} on disk, {} compacted ({:.2} s: {})",
        human(f.bytes_full),
        human(f.full_compacted.bytes_after),
        f.full_compacted.wall.as_secs_f64(),
        f.full_compacted.said
    );
    say!(
        "store after the sweep: {} on disk, {} compacted ({:.2} s: {})",
        human(f.bytes_swept),
        human(f.swept_compacted.bytes_after),
        f.swept_compacted.wall.as_secs_f64(),
        f.swept_compacted.said
    );
}
