//! HTTP on a Unix domain socket (`listen-unix`), with raw HTTP/1.1 over a real socket.

use crate::support::send_params;
use crate::support::JsonBody as _;
use a2ad::config::Config;
use a2ad::startup::Application;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A node listening on TCP and on `socket`.
struct UnixNode {
    url: String,
    socket: PathBuf,
    handle: actix_web::dev::ServerHandle,
    stopped: tokio::task::JoinHandle<std::io::Result<()>>,
}

fn config(dir: &Path, socket: &Path) -> Config {
    let mut config = Config::default_node();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.grpc_listen = None;
    config.data_dir = dir.join("data");
    config.workers = 2;
    config.listen_unix = Some(socket.to_owned());
    config
}

async fn start(config: Config) -> Result<UnixNode, String> {
    let socket = config.listen_unix.clone().unwrap();
    let app = Application::build(config).await.map_err(|e| e.to_string())?;
    let url = app.local_url();
    let handle = app.server_handle();
    let stopped = actix_web::rt::spawn(app.run_until_stopped());
    Ok(UnixNode { url, socket, handle, stopped })
}

/// One HTTP/1.1 exchange over the socket; returns (status, headers, decoded body).
async fn exchange(socket: &Path, method: &str, path: &str, body: Option<&Value>) -> (u16, String, String) {
    let mut stream = tokio::net::UnixStream::connect(socket).await.expect("the socket accepts");
    let body = body.map(Value::to_string).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), stream.read_to_end(&mut raw)).await.unwrap().unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(body) } else { body.to_owned() };
    (status, head.to_owned(), body)
}

/// Decodes a chunked body.
fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
        if size == 0 {
            return body;
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

fn rpc(id: u32, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[actix_web::test]
async fn every_route_is_served_on_the_socket_with_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("a2ad.sock");
    let mut config = config(dir.path(), &socket);
    config.listen_unix_mode = 0o600;
    let node = start(config).await.unwrap();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "listen-unix-mode applied: {mode:o}");

    let (status, _, health) = exchange(&socket, "GET", "/health", None).await;
    assert_eq!((status, health.as_str()), (200, r#"{"status":"healthy"}"#));
    let (status, _, card) = exchange(&socket, "GET", "/.well-known/agent-card.json", None).await;
    assert_eq!(status, 200);
    assert!(!card.contains("a2ad.sock"), "the socket is not advertised in the card");

    let (status, _, sent) =
        exchange(&socket, "POST", "/", Some(&rpc(1, "SendMessage", send_params("hi", json!({}))))).await;
    assert_eq!(status, 200);
    let sent: Value = serde_json::from_str(&sent).unwrap();
    let task_id = sent["result"]["task"]["id"].as_str().unwrap();
    let over_tcp: Value =
        reqwest::Client::new().post(&node.url).json(&rpc(2, "GetTask", json!({"id": task_id}))).json_body().await;
    assert_eq!(over_tcp["result"]["status"]["state"], "TASK_STATE_COMPLETED", "one node behind both");

    let (status, _, rest) = exchange(&socket, "GET", &format!("/a2a/tasks/{task_id}"), None).await;
    assert_eq!(status, 200, "HTTP+JSON too: {rest}");
    node.handle.stop(true).await;
}

#[actix_web::test]
async fn a_streaming_method_works_over_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("a2ad.sock");
    let node = start(config(dir.path(), &socket)).await.unwrap();
    let (status, head, body) =
        exchange(&socket, "POST", "/", Some(&rpc(9, "SendStreamingMessage", send_params("abc", json!({}))))).await;
    assert_eq!(status, 200);
    assert!(head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{head}");
    let events: Vec<Value> =
        body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect();
    assert!(events.len() >= 3, "{body}");
    assert!(events.iter().all(|e| e["id"] == 9));
    let last = events.last().unwrap();
    assert_eq!(last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{last}");
    node.handle.stop(true).await;
}

#[actix_web::test]
async fn a_stale_socket_is_replaced_and_a_clean_stop_removes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("a2ad.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap()); // as a crashed node leaves it
    assert!(socket.exists());
    let node = start(config(dir.path(), &socket)).await.expect("the stale file is replaced");
    let (status, _, _) = exchange(&node.socket, "GET", "/health", None).await;
    assert_eq!(status, 200);
    node.handle.stop(true).await;
    node.stopped.await.unwrap().unwrap();
    assert!(!socket.exists(), "removed on a clean stop");
}

#[actix_web::test]
async fn a_path_that_is_not_a_free_socket_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.txt");
    std::fs::write(&file, "keep me").unwrap();
    let error = start(config(dir.path(), &file)).await.err().expect("refused");
    assert!(error.contains("listen-unix") && error.contains("not a socket"), "{error}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me", "the file is left alone");

    let live = dir.path().join("live.sock");
    let _other = std::os::unix::net::UnixListener::bind(&live).unwrap();
    let error = start(config(dir.path(), &live)).await.err().expect("refused");
    assert!(error.contains("listen-unix") && error.contains("another process"), "{error}");
    assert!(live.exists(), "another node's socket is left alone");
}

/// One HTTP/1.1 exchange over the socket with a raw body and extra header lines.
async fn exchange_raw(socket: &Path, headers: &str, body: &str) -> (u16, String) {
    let mut stream = tokio::net::UnixStream::connect(socket).await.expect("the socket accepts");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The node may answer (413) before it has read everything; that is fine.
    let _ = stream.write_all(body.as_bytes()).await;
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), stream.read_to_end(&mut raw)).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    (head.split_whitespace().nth(1).unwrap().parse().unwrap(), body.to_owned())
}

#[actix_web::test]
async fn errors_over_the_socket_are_those_of_http() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("a2ad.sock");
    let mut config = config(dir.path(), &socket);
    config.auth = serde_yaml_ng::from_str("bearer-tokens:\n  - {token: tok-u, tenant: t, principal: u}\n").unwrap();
    config.body_limit = 2048;
    let node = start(config).await.unwrap();
    let auth = "Authorization: Bearer tok-u\r\n";

    let (status, body) = exchange_raw(&socket, "", &rpc(1, "ListTasks", json!({})).to_string()).await;
    assert_eq!((status, body.as_str()), (401, r#"{"error":"Unauthorized"}"#), "no credential");
    let (status, body) = exchange_raw(&socket, "Authorization: Bearer nope\r\n", "{}").await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = exchange_raw(&socket, auth, "{not json").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], -32700);
    let (_, body) = exchange_raw(&socket, auth, &rpc(2, "NoSuchMethod", json!({})).to_string()).await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], -32601, "{body}");
    let (_, body) = exchange_raw(&socket, auth, &rpc(3, "GetTask", json!({"id": "nope"})).to_string()).await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], -32001, "{body}");
    let huge = rpc(4, "SendMessage", send_params(&"x".repeat(4096), json!({}))).to_string();
    let (status, _) = exchange_raw(&socket, auth, &huge).await;
    assert_eq!(status, 413, "over body-limit");
    node.handle.stop(true).await;
}
