//! What the older dialects cost: every 0.3 or 0.1 request is converted to the 1.0 call
//! and its answer back. Each pair runs the same work on fresh nodes over HTTP JSON-RPC:
//!
//! * 0.3 `message/send` (blocking, the default) vs 1.0 `SendMessage` (blocking), one
//!   context per connection;
//! * 0.1 `tasks/send` (it always returns at once) vs 1.0 `SendMessage` with
//!   `returnImmediately`, a new context per request in both.

use crate::client::{self, LoadResult, Target};
use crate::node::Node;
use crate::report::say;
use std::path::Path;
use std::time::Duration;

const CONFIG: &str = "agents:\n  - {id: echo, kind: echo}\n";

fn v10_blocking(conn: usize, _seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-{conn}","contextId":"d-{conn}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}}}"#
    )
}

fn v03_blocking(conn: usize, _seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m-{conn}","contextId":"d-{conn}","role":"user","parts":[{{"kind":"text","text":"hello from the load driver"}}]}}}}}}"#
    )
}

fn v10_immediate(conn: usize, seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"configuration":{{"returnImmediately":true}},"message":{{"messageId":"m-{conn}-{seq}","contextId":"i-{conn}-{seq}","role":"ROLE_USER","parts":[{{"text":"hello from the load driver"}}]}}}}}}"#
    )
}

fn v01_send(_conn: usize, _seq: u64) -> String {
    r#"{"jsonrpc":"2.0","id":1,"method":"tasks/send","params":{"capability_id":"echo","message":{"role":"user","parts":[{"type":"text","text":"hello from the load driver"}]}}}"#.to_owned()
}

/// One load on a fresh node with the shared config.
async fn measure(
    bin: &Path,
    body_for: client::BodyFor,
    expect: &'static str,
    connections: usize,
    warmup: Duration,
    duration: Duration,
) -> LoadResult {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start_in(bin, &dir.path().join("data"), CONFIG, &[]);
    let target = Target { addr: node.addr, path: "/", body_for, expect, a2a_version: None };
    client::run(target, connections, warmup, duration, u64::MAX).await
}

/// The whole dialects part, printed with the two ratios.
pub async fn run_all(bin: &Path, connections: usize, warmup: Duration, duration: Duration) {
    say!(
        "dialects: {connections} connections, {} s after {} s warm-up, server on 1 core:",
        duration.as_secs(),
        warmup.as_secs()
    );
    let v10 = measure(bin, v10_blocking, "TASK_STATE_COMPLETED", connections, warmup, duration).await;
    let v03 = measure(bin, v03_blocking, "\"completed\"", connections, warmup, duration).await;
    say!("{}", v10.summary("1.0 SendMessage (blocking)"));
    say!("{}  ratio {:.3}", v03.summary("0.3 message/send"), v03.throughput() / v10.throughput());
    let v10i = measure(bin, v10_immediate, "TASK_STATE_", connections, warmup, duration).await;
    let v01 = measure(bin, v01_send, "created_at", connections, warmup, duration).await;
    say!("{}", v10i.summary("1.0 SendMessage (immediate)"));
    say!("{}  ratio {:.3}", v01.summary("0.1 tasks/send"), v01.throughput() / v10i.throughput());
}
