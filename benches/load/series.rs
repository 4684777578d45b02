//! What the admin series costs the A2A path: `SendMessage` (blocking, echo, one context per
//! connection) on a node without the sampler (no admin tokens: `src/startup.rs` starts it
//! only with them) and on one with it, no console open (no watcher of the feed or of
//! `/admin/v1/series`). Off, on, off, on: each on a fresh node and data dir, so that the
//! spread between the two runs of a kind is the noise. With no one watching, the series
//! costs one atomic add per counted event and a sample every 10 s.

use crate::client::{self, LoadResult, Target};
use crate::node::Node;
use crate::report::say;
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "bench-operator-token-0123456789";

/// The echo agent, and (`series`) an admin token, which starts the series sampler.
fn config(series: bool) -> String {
    let admin = format!("admin:\n  tokens:\n    - {{token: {TOKEN}, name: bench, role: viewer}}\n");
    format!("agents:\n  - {{id: echo, kind: echo}}\n{}", if series { admin.as_str() } else { "" })
}

/// One run on a fresh node, with or without the series.
async fn run_once(bin: &Path, series: bool, connections: usize, warmup: Duration, duration: Duration) -> LoadResult {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start_in(bin, &dir.path().join("data"), &config(series), &[]);
    let body_for: client::BodyFor = crate::send_body;
    let target = Target { addr: node.addr, path: "/", body_for, expect: "TASK_STATE_COMPLETED", a2a_version: None };
    let result = client::run(target, connections, warmup, duration, u64::MAX).await;
    node.stop();
    result
}

/// The series part: off, on, off, on, and the ratio of the means on / off.
pub async fn run_all(bin: &Path, connections: usize, warmup: Duration, duration: Duration) {
    say!(
        "series: SendMessage with the admin series off / on / off / on (no watcher), {connections} connections, {} s after {} s warm-up each, one node on 1 core:",
        duration.as_secs(),
        warmup.as_secs()
    );
    let mut off = Vec::new();
    let mut on = Vec::new();
    for _ in 0..2 {
        off.push(run_once(bin, false, connections, warmup, duration).await);
        on.push(run_once(bin, true, connections, warmup, duration).await);
    }
    for (i, (off, on)) in off.iter().zip(&on).enumerate() {
        say!("{}", off.summary(&format!("series off ({})", i + 1)));
        say!("{}", on.summary(&format!("series on  ({})", i + 1)));
    }
    let mean = |runs: &[LoadResult]| runs.iter().map(LoadResult::throughput).sum::<f64>() / runs.len() as f64;
    say!(
        "ratio on / off: {:.3}  (off 2 / off 1: {:.3}, on 2 / on 1: {:.3})",
        mean(&on) / mean(&off),
        off[1].throughput() / off[0].throughput(),
        on[1].throughput() / on[0].throughput()
    );
}
