//! RSS per idle context.
//!
//! Two fresh nodes take the same number of SendMessage calls, each into a new context:
//! one keeps every context actor alive (long idle timeout), the other evicts them as
//! soon as they go idle. Both did the same storage work, so the difference in resident
//! memory, divided by the number of contexts, is what an idle context actor costs.

use crate::client;
use crate::node::Node;
use std::path::Path;
use std::time::Duration;

pub struct MemoryResult {
    pub contexts: u64,
    pub rss_live_kib: u64,
    pub rss_evicting_kib: u64,
}

impl MemoryResult {
    pub fn bytes_per_context(&self) -> f64 {
        (self.rss_live_kib as f64 - self.rss_evicting_kib as f64) * 1024.0 / self.contexts as f64
    }
}

fn new_context_body(conn: usize, seq: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","contextId":"mem-{conn}-{seq}","role":"ROLE_USER","parts":[{{"text":"hello"}}]}}}}}}"#
    )
}

async fn fill(bin: &Path, contexts: u64, idle_timeout: &str) -> u64 {
    let node = Node::start(bin, &["--workers", "1", "--idle-timeout", idle_timeout]);
    let target = client::Target {
        addr: node.addr,
        path: "/",
        body_for: new_context_body,
        expect: "TASK_STATE_COMPLETED",
        a2a_version: None,
    };
    let result = client::run(target, 64, Duration::ZERO, Duration::from_secs(600), contexts).await;
    assert_eq!(result.errors, 0, "every context was created");
    // Let evictions and the allocator settle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    node.rss_kib()
}

pub async fn measure(bin: &Path, contexts: u64) -> MemoryResult {
    let rss_live_kib = fill(bin, contexts, "1h").await;
    let rss_evicting_kib = fill(bin, contexts, "100ms").await;
    MemoryResult { contexts, rss_live_kib, rss_evicting_kib }
}
