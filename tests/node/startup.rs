//! Start-up failures of the real binary: one line naming the config key and the cause,
//! a non-zero exit, no panic or backtrace (with `RUST_BACKTRACE=1`), nothing left behind.
//! And the HTTP listener's accepted connections have `TCP_NODELAY`.

use crate::support::{spawn_app, NodeProcess};
use serde_json::json;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// `a2ad serve <args>` in `cwd`, on free ports unless `args` name them.
fn serve(cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_a2ad"));
    command.arg("serve").args(args).current_dir(cwd);
    command
}

/// Runs `command` (which must fail to start) with backtraces on and returns its one
/// line of stderr, after checking there is no panic, no backtrace and nothing on stdout.
fn the_one_line(mut command: Command) -> String {
    let output = command
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "start-up failed with a non-zero exit: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "no panic: {stderr}");
    assert!(output.stdout.is_empty(), "no listening line: {}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(stderr.lines().count(), 1, "exactly one line: {stderr}");
    stderr.trim_end().to_owned()
}

#[test]
fn a_taken_http_port_is_one_line_naming_listen_and_creates_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let line = the_one_line(serve(cwd.path(), &["--listen", &addr, "--grpc-listen", "127.0.0.1:0"]));
    assert_eq!(line, format!("a2ad: listen {addr}: address in use"));
    assert!(!cwd.path().join("a2ad-data").exists(), "no data dir was created");
}

#[test]
fn a_taken_grpc_port_is_one_line_naming_grpc_listen_and_creates_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let line = the_one_line(serve(cwd.path(), &["--listen", "127.0.0.1:0", "--grpc-listen", &addr]));
    assert_eq!(line, format!("a2ad: grpc-listen {addr}: address in use"));
    assert!(!cwd.path().join("a2ad-data").exists(), "no data dir was created");
}

#[actix_web::test]
async fn a_data_dir_held_by_a_running_node_is_one_line_and_the_node_keeps_serving() {
    let cwd = tempfile::tempdir().unwrap();
    let first = NodeProcess::start(cwd.path(), &["--data-dir", "data"]);
    let free = ["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--data-dir", "data"];
    let line = the_one_line(serve(cwd.path(), &free));
    assert_eq!(line, "a2ad: data-dir data: locked by another process");
    first.app_view().ok("ListTasks", json!({})).await;
    let exit = first.terminate();
    assert!(exit.success(), "the first node was not disturbed: {exit:?}");
}

/// An existing store on a read-only mount: the data dir is bind-mounted onto itself and
/// remounted read-only in a private mount namespace (`unshare --mount` in a user
/// namespace, which needs no root), so the node really gets EROFS and nothing outside the
/// namespace sees the mount, which goes with the process.
#[actix_web::test]
async fn a_data_dir_on_a_read_only_file_system_is_named_so() {
    let cwd = tempfile::tempdir().unwrap();
    let node = NodeProcess::start(cwd.path(), &["--data-dir", "data"]);
    // Answered: the node serves, and its SIGTERM handler is set.
    node.app_view().ok("ListTasks", json!({})).await;
    assert!(node.terminate().success(), "a store exists");
    let data = cwd.path().join("data");
    let data = data.to_str().unwrap();
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--map-root-user", "sh", "-c"])
        .arg(r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@""#)
        .arg(data)
        .arg(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--data-dir", data])
        .current_dir(cwd.path());
    let line = the_one_line(command);
    assert_eq!(line, format!("a2ad: data-dir {data}: read-only file system"));
}

/// A data dir the node's user may not create. Root is not stopped by file modes, so as
/// root the node runs as `nobody` (uid 65534); otherwise the mode alone stops it.
#[test]
fn a_data_dir_the_user_may_not_create_is_permission_denied_and_nothing_is_left() {
    use std::os::unix::fs::PermissionsExt;
    let cwd = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cwd.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let closed = cwd.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut command =
        serve(cwd.path(), &["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--data-dir", "closed/data"]);
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        command.uid(65534).gid(65534);
    }
    let line = the_one_line(command);
    assert_eq!(line, "a2ad: data-dir closed/data: permission denied");
    assert!(!closed.join("data").exists());
}

/// A failure after the store opened and the actors started (here: no Redis to connect
/// to) stops them inside the runtime, so it is an error line, not a panic, and the data
/// dir this start created is removed again.
#[test]
fn a_failure_after_the_core_started_is_no_panic_and_removes_the_new_data_dir() {
    let cwd = tempfile::tempdir().unwrap();
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let config = format!("log-level: error\nredis-transport: {{url: 'redis://{unused}/'}}\n");
    std::fs::write(cwd.path().join("a2ad.yml"), config).unwrap();
    let args = ["--config", "a2ad.yml", "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"];
    let line = the_one_line(serve(cwd.path(), &args));
    assert!(line.starts_with(&format!("a2ad: redis-transport.url: cannot connect to redis://{unused}/")), "{line}");
    assert!(!cwd.path().join("a2ad-data").exists(), "the data dir this start created is gone");
}

/// The server side of an HTTP connection has Nagle off. Observed from outside the
/// server code: the node runs in this process, so the accepted socket is one of this
/// process's file descriptors, found by its two addresses and asked for TCP_NODELAY.
#[actix_web::test]
async fn accepted_http_connections_have_tcp_nodelay() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app(|_| {}).await;
    let server: std::net::SocketAddr = app.url.trim_start_matches("http://").parse().unwrap();
    let mut client = tokio::net::TcpStream::connect(server).await.unwrap();
    let request = "GET /.well-known/agent-card.json HTTP/1.1\r\nhost: a2ad\r\n\r\n";
    client.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    client.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "the connection was accepted and served");
    let accepted = server_side_nodelay(client.local_addr().unwrap(), server).expect("the accepted socket is found");
    assert!(accepted, "TCP_NODELAY is set on the accepted connection");
}

/// TCP_NODELAY of this process's socket whose local address is `server` and whose peer
/// is `peer`: each fd is duplicated (a socket another test closes meanwhile is skipped).
fn server_side_nodelay(peer: std::net::SocketAddr, server: std::net::SocketAddr) -> Option<bool> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let fds = std::fs::read_dir("/proc/self/fd").ok()?;
    for fd in fds.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
        // SAFETY: F_DUPFD_CLOEXEC only reads `fd`; a new descriptor (or -1) comes back.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if copy < 0 {
            continue;
        }
        // SAFETY: `copy` was just returned by fcntl and is owned by nothing else.
        let socket = socket2::Socket::from(unsafe { OwnedFd::from_raw_fd(copy) });
        let addrs =
            (socket.local_addr().ok().and_then(|a| a.as_socket()), socket.peer_addr().ok().and_then(|a| a.as_socket()));
        if addrs == (Some(server), Some(peer)) {
            return socket.tcp_nodelay().ok();
        }
    }
    None
}
