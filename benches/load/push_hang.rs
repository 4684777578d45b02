//! How long a healthy receiver waits for its deliveries while `hanging` tasks push to a
//! receiver that accepts connections and never answers: first `hanging` blocking sends
//! whose configs point at the hanging receiver, then `healthy` sends one after another,
//! each timed from its answer to the healthy receiver's 200 (terminal state only, so one
//! delivery per task). The p50 and max of those delays. Push settings are the defaults
//! (`push-timeout: 10s`, `push-concurrency: 32`, ...).

use crate::client::{post, read_message, read_response};
use crate::node::Node;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

/// A receiver that reads requests and never answers; its connections stay open.
async fn hanging_receiver() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while read_message(&mut stream, &mut buf).await.is_some() {}
            });
        }
    });
    port
}

fn send_body(port: u16, context: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"configuration":{{"taskPushNotificationConfig":{{"url":"http://127.0.0.1:{port}/hook"}}}},"message":{{"messageId":"m","contextId":"{context}","role":"ROLE_USER","parts":[{{"text":"hi"}}]}}}}}}"#
    )
}

/// The healthy deliveries' delays, sorted; `None` for one that did not arrive in 120 s.
pub async fn healthy_delays(bin: &std::path::Path, hanging: usize, healthy: usize) -> Vec<Option<Duration>> {
    let hang_port = hanging_receiver().await;
    let (ok_port, count) = crate::push::receiver().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("a2ad.yml");
    let text = "push-notifications: true\npush-allow: [127.0.0.1/32]\npush-terminal-only: true\n";
    std::fs::write(&config, text).expect("config");
    let node = Node::start(bin, &["--workers", "1", "--config", config.to_str().expect("utf-8")]);
    let mut stream = TcpStream::connect(node.addr).await.expect("connect");
    let mut buf = Vec::new();
    for i in 0..hanging {
        post(&mut stream, &send_body(hang_port, &format!("hang-{i}"))).await.expect("send");
        read_response(&mut stream, &mut buf).await.expect("answer");
    }
    let mut delays = Vec::with_capacity(healthy);
    for i in 0..healthy {
        // A new connection each: waiting for a delivery may outlast the keep-alive.
        stream = TcpStream::connect(node.addr).await.expect("connect");
        buf.clear();
        post(&mut stream, &send_body(ok_port, &format!("ok-{i}"))).await.expect("send");
        read_response(&mut stream, &mut buf).await.expect("answer");
        let answered = Instant::now();
        let deadline = answered + Duration::from_secs(120);
        while count.load(Ordering::Relaxed) < (i + 1) as u64 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        delays.push((count.load(Ordering::Relaxed) > i as u64).then(|| answered.elapsed()));
    }
    node.stop();
    delays.sort();
    delays
}
