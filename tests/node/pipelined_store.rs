//! The store seam on Redis is asynchronous (issue 34): while one context's commit is held
//! back on its connection, the context actors' one thread goes on serving other contexts.
//!
//! The node runs with one context arbiter (`workers: 1`) on a Redis reached through a
//! proxy of the test's own, which stops forwarding a connection once it carries a marker
//! text: the text of context A's message, which only A's commit holds (the start of a
//! turn sends the lease and session keys, never the message). Messages to other contexts
//! then complete on the other connections; A's answer comes only once the proxy lets its
//! connection go on.

use crate::redis::RedisServer;
use crate::support::{send_params, spawn_app};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MARKER: &[u8] = b"hold-this-commit";
/// How long any one wait of this test may take before it counts as a hang (a bound, not
/// a timing: every wait ends as soon as what it waits for happens).
const HANG: Duration = Duration::from_secs(60);

/// A proxy to Redis that holds the client-to-server side of the first connection whose
/// bytes contain [`MARKER`], from that chunk on, until `release` is set. It runs on a
/// thread of its own: the node's start-up connects to Redis synchronously.
fn holding_proxy(redis_port: u16, held: Arc<AtomicBool>, release: Arc<tokio::sync::Notify>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    std::thread::spawn(move || runtime.block_on(proxy_loop(listener, redis_port, held, release)));
    port
}

async fn proxy_loop(
    listener: std::net::TcpListener,
    redis_port: u16,
    held: Arc<AtomicBool>,
    release: Arc<tokio::sync::Notify>,
) {
    let listener = TcpListener::from_std(listener).unwrap();
    {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(("127.0.0.1", redis_port)).await else { return };
            let (held, release) = (Arc::clone(&held), Arc::clone(&release));
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
                let mut buf = vec![0u8; 64 * 1024];
                let mut holding = false;
                loop {
                    let Ok(n) = client_read.read(&mut buf).await else { return };
                    if n == 0 {
                        return;
                    }
                    let marked = buf[..n].windows(MARKER.len()).any(|w| w == MARKER);
                    if !holding && marked && !held.swap(true, Ordering::AcqRel) {
                        holding = true;
                        release.notified().await;
                    }
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    }
}

#[actix_web::test]
async fn a_held_commit_leaves_the_actor_thread_serving_other_contexts() {
    let Some(redis) = RedisServer::start() else { return };
    let held = Arc::new(AtomicBool::new(false));
    let release = Arc::new(tokio::sync::Notify::new());
    let proxy = holding_proxy(redis.port, Arc::clone(&held), Arc::clone(&release));
    let app = spawn_app(|config| {
        config.workers = 1;
        config.store = a2ad::config::StoreKind::Redis;
        config.redis.url = format!("redis://127.0.0.1:{proxy}/");
        config.redis.allow_weak_persistence = true;
    })
    .await;
    let app = Arc::new(app);
    // A warm-up turn opens the pipe's connections before anything is held.
    app.ok("SendMessage", send_params("warm up", json!({"contextId": "warm"}))).await;

    let held_send = {
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            let text = String::from_utf8_lossy(MARKER).into_owned();
            app.ok("SendMessage", send_params(&text, json!({"contextId": "ctx-a"}))).await
        })
    };
    let waited = tokio::time::timeout(HANG, async {
        while !held.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    assert!(waited.await.is_ok(), "context A's commit reached the proxy");

    // Contexts on the other connections finish their whole turns meanwhile.
    let mut others = tokio::task::JoinSet::new();
    for i in 0..8 {
        let app = Arc::clone(&app);
        others.spawn(async move {
            app.rpc("SendMessage", send_params("hello", json!({"contextId": format!("ctx-b{i}")}))).await
        });
    }
    let first = tokio::time::timeout(HANG, others.join_next()).await;
    let answer = first.expect("another context answered while A's commit is held").unwrap().unwrap();
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert!(!held_send.is_finished(), "A is answered only once its commit is");

    release.notify_one();
    let a = tokio::time::timeout(HANG, held_send).await.expect("A answers once released").unwrap();
    assert_eq!(a["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{a}");
    while let Some(done) = tokio::time::timeout(HANG, others.join_next()).await.expect("the others end") {
        let answer = done.unwrap();
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    }
}
