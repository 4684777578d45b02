//! `--idle-timeout` of `a2ad call`: a stream whose connection goes silent ends the client
//! with the transport code and a way to resume, without cancelling the task; a stream
//! that only sends keep-alive comments is alive.

use crate::client::{a2ad, stderr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake peer does once it has sent the SSE headers and the task.
#[derive(Clone, Copy)]
enum AfterFirstEvent {
    /// Sends nothing more and keeps the connection open: a peer gone silently.
    GoSilent,
    /// Sends this many keep-alive comments, 300 ms apart, then the completed status.
    CommentsThenComplete(usize),
}

const TASK: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t-idle-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}}"#;
const COMPLETED: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t-idle-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}}}"#;

/// A minimal A2A peer on loopback: serves a card whose JSON-RPC interface is itself,
/// answers every POST with an event stream, and records the JSON-RPC methods asked for.
/// Its base URL and the methods seen.
async fn fake_peer(after: AfterFirstEvent) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = serde_json::json!({
        "name": "silent", "description": "a peer that goes quiet", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"], "skills": [],
    })
    .to_string();
    let methods: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&methods);
    tokio::spawn(async move {
        // Bounded: the client makes two requests (card, stream) and at most a few more.
        for _ in 0..8 {
            let Ok((socket, _)) = listener.accept().await else { return };
            let (card, seen) = (card.clone(), Arc::clone(&seen));
            tokio::spawn(answer(socket, card, seen, after));
        }
    });
    (base, methods)
}

/// Reads one request and answers it: the card for a GET, a stream for a POST.
async fn answer(mut socket: TcpStream, card: String, seen: Arc<Mutex<Vec<String>>>, after: AfterFirstEvent) {
    let Some((head, body)) = read_request(&mut socket).await else { return };
    if head.starts_with("GET ") {
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{card}",
            card.len()
        );
        let _ = socket.write_all(reply.as_bytes()).await;
        return;
    }
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    seen.lock().unwrap().push(request["method"].as_str().unwrap_or("?").to_owned());
    let headers = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let _ = socket.write_all(format!("{headers}data: {TASK}\n\n").as_bytes()).await;
    match after {
        AfterFirstEvent::GoSilent => tokio::time::sleep(Duration::from_secs(60)).await,
        AfterFirstEvent::CommentsThenComplete(count) => {
            for _ in 0..count {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let _ = socket.write_all(b": keep-alive\n\n").await;
            }
            let _ = socket.write_all(format!("data: {COMPLETED}\n\n").as_bytes()).await;
        }
    }
}

/// The request head and its body (by `Content-Length`); `None` if the peer hung up.
async fn read_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let read = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        bytes.extend_from_slice(&chunk[..read]);
        if bytes.len() > 1 << 20 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(1 << 20);
    while bytes.len() < head_end + length {
        let read = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        bytes.extend_from_slice(&chunk[..read]);
    }
    Some((head, bytes[head_end..head_end + length].to_vec()))
}

#[actix_web::test]
async fn a_silent_stream_ends_the_client_with_the_transport_code_and_leaves_the_task_running() {
    let (url, methods) = fake_peer(AfterFirstEvent::GoSilent).await;
    let output = a2ad(&["call", &url, "hi", "--idle-timeout", "1s"], &[]).await;
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(7), "{err}");
    assert!(err.contains("the node sent nothing for 1s"), "{err}");
    assert!(err.contains(&format!("a2ad tasks watch {url} t-idle-1")), "how to resume: {err}");
    assert_eq!(*methods.lock().unwrap(), ["SendStreamingMessage"], "the task is not cancelled");

    let watched = a2ad(&["tasks", "watch", &url, "t-idle-1", "--idle-timeout", "1"], &[]).await;
    assert_eq!(watched.status.code(), Some(7), "{}", stderr(&watched));
    assert!(stderr(&watched).contains("sent nothing"), "{}", stderr(&watched));
}

#[actix_web::test]
async fn keep_alive_comments_keep_a_quiet_stream_alive() {
    // Ten comments 300 ms apart: the stream runs three times the idle timeout.
    let (url, _) = fake_peer(AfterFirstEvent::CommentsThenComplete(10)).await;
    let output = a2ad(&["call", &url, "hi", "--idle-timeout", "1s"], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("completed"), "{}", stderr(&output));
}

#[actix_web::test]
async fn a_bad_idle_timeout_names_the_flag() {
    let output = a2ad(&["call", "http://127.0.0.1:9", "hi", "--idle-timeout", "soon"], &[]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--idle-timeout"), "{}", stderr(&output));
}
