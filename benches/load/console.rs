//! What the console costs the A2A path: `SendMessage` (blocking, echo, one context per
//! connection) on one node, measured three times in a row: with no live feed open, with
//! the admin API's feed (`GET /admin/v1/feed`) open and read, and closed again (the
//! spread between the two closed runs is the noise). With no watcher the feed is one
//! atomic load per stored step; with one, every event is also sent to it.

use crate::client::{self, LoadResult, Target};
use crate::node::Node;
use crate::report::say;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "bench-operator-token-0123456789";

fn config() -> String {
    format!("agents:\n  - {{id: echo, kind: echo}}\nadmin:\n  tokens:\n    - {{token: {TOKEN}, name: bench, role: viewer}}\n")
}

/// Opens the feed and counts the events it carries until the task is aborted.
fn watch_feed(addr: std::net::SocketAddr, events: Arc<AtomicU64>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        use futures_util::StreamExt as _;
        let url = format!("http://{addr}/admin/v1/feed");
        let response = reqwest::Client::new().get(url).bearer_auth(TOKEN).send().await.expect("the feed opens");
        assert!(response.status().is_success(), "the feed answers {}", response.status());
        let mut body = response.bytes_stream();
        while let Some(Ok(chunk)) = body.next().await {
            let frames = chunk.windows(11).filter(|w| w == b"event: task").count();
            events.fetch_add(frames as u64, Ordering::Relaxed);
        }
    })
}

/// The console part: the three runs and the ratio open / closed.
pub async fn run_all(bin: &Path, connections: usize, warmup: Duration, duration: Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start_in(bin, &dir.path().join("data"), &config(), &[]);
    let body_for: client::BodyFor = crate::send_body;
    let target = || Target { addr: node.addr, path: "/", body_for, expect: "TASK_STATE_COMPLETED", a2a_version: None };
    let load = || client::run(target(), connections, warmup, duration, u64::MAX);
    say!(
        "console: SendMessage with the live feed closed / open / closed, {connections} connections, {} s after {} s warm-up each, one node on 1 core:",
        duration.as_secs(),
        warmup.as_secs()
    );
    let closed: LoadResult = load().await;
    let events = Arc::new(AtomicU64::new(0));
    let feed = watch_feed(node.addr, Arc::clone(&events));
    let open = load().await;
    feed.abort();
    let _ = feed.await;
    // The node notices the closed feed at its next write (a keep-alive, 15 s by default)
    // or event: the load's first events do it.
    let closed_again = load().await;
    say!("{}", closed.summary("feed closed"));
    say!("{}  ({} feed events read)", open.summary("feed open"), events.load(Ordering::Relaxed));
    say!("{}", closed_again.summary("feed closed again"));
    say!(
        "ratio open / closed: {:.3}  (closed again / closed: {:.3})",
        open.throughput() / closed.throughput(),
        closed_again.throughput() / closed.throughput()
    );
}
