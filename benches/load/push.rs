//! Push deliveries per second to a local receiver, for each queue: `n` blocking
//! `SendMessage` calls, each creating a task with a push config (terminal state only, so
//! one delivery per task), and the wall time until the receiver has acknowledged all `n`.

use crate::client::{self, read_message, Target};
use crate::node::Node;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// A keep-alive HTTP receiver that answers 200 to every POST and counts them.
pub async fn receiver() -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let count = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while read_message(&mut stream, &mut buf).await.is_some() {
                    counted.fetch_add(1, Ordering::Relaxed);
                    if stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (port, count)
}

/// The receiver's port, for the request bodies (a plain `fn` cannot capture it).
static RECEIVER_PORT: AtomicU64 = AtomicU64::new(0);

fn body(conn: usize, seq: u64) -> String {
    let port = RECEIVER_PORT.load(Ordering::Relaxed);
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"configuration":{{"taskPushNotificationConfig":{{"url":"http://127.0.0.1:{port}/hook"}}}},"message":{{"messageId":"m","contextId":"push-{conn}-{seq}","role":"ROLE_USER","parts":[{{"text":"hi"}}]}}}}}}"#
    )
}

/// Runs the measurement against a node started with `queue_config` (YAML lines).
pub async fn deliveries_per_second(bin: &Path, n: u64, queue_config: &str) -> (f64, Duration) {
    let (port, count) = receiver().await;
    RECEIVER_PORT.store(u64::from(port), Ordering::Relaxed);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("a2ad.yml");
    let text =
        format!("push-notifications: true\npush-allow: [127.0.0.1/32]\npush-terminal-only: true\n{queue_config}");
    std::fs::write(&config, text).expect("config");
    let node = Node::start(bin, &["--workers", "1", "--config", config.to_str().expect("utf-8")]);
    let started = Instant::now();
    let target = Target { addr: node.addr, path: "/", body_for: body, expect: "TASK_STATE_COMPLETED" };
    let _ = client::run(target, 64, Duration::ZERO, Duration::from_secs(300), n).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    while count.load(Ordering::Relaxed) < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    (count.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64(), elapsed)
}
