//! Push delivery through Redis Streams, with a real redis-server started by the test.

use crate::receiver::Receiver;
use crate::shared_redis::{redis_server_binary, spawn_server, start_server};
use crate::support::{eventually, send_params, NodeProcess};
use serde_json::json;
use std::path::PathBuf;
use std::process::{Child, Command};

/// A redis-server on a free loopback port; killed on drop.
pub(crate) struct RedisServer {
    child: Child,
    pub(crate) port: u16,
    binary: PathBuf,
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// `None` (skip) when no redis-server is found and the run does not require one.
    /// It keeps nothing on disk.
    pub(crate) fn start() -> Option<RedisServer> {
        Self::start_with(&["--appendonly", "no"])
    }

    /// [`RedisServer::start`] with the server options `extra` (persistence).
    pub(crate) fn start_with(extra: &[&str]) -> Option<RedisServer> {
        let Some(binary) = redis_server_binary() else {
            let how = "install one (scripts/redis.sh) or name it in A2AD_REDIS_SERVER";
            crate::skip::skip_for_want_of("redis-server", "A2AD_REQUIRE_REDIS", how);
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        match start_server(&binary, dir.path(), extra) {
            Ok((child, port)) => Some(RedisServer { child, port, binary, dir }),
            Err(e) => panic!("could not start {}: {e}", binary.display()),
        }
    }

    /// SIGKILL: an outage.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port and directory, with the options `extra`.
    pub(crate) fn restart(&mut self, extra: &[&str]) {
        self.child = spawn_server(&self.binary, self.port, self.dir.path(), extra).expect("redis-server restarts");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(crate) fn config(dir: &std::path::Path, redis_port: u16, consumer: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{consumer}.yml"));
    let text = format!(
        "push-notifications: true\npush-allow: [127.0.0.1/32]\npush-terminal-only: true\npush-queue: redis-streams\n\
         push-redis-url: redis://127.0.0.1:{redis_port}/\npush-consumer-name: {consumer}\npush-lease-timeout-ms: 800\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[actix_web::test]
async fn a_worker_killed_mid_lease_is_replaced_by_another_that_reclaims_the_job() {
    let Some(redis) = RedisServer::start() else { return };
    let receiver = Receiver::start();
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    let data = data.to_str().unwrap();
    let a = config(cwd.path(), redis.port, "worker-a");
    let node_a = NodeProcess::start(cwd.path(), &["--config", a.to_str().unwrap(), "--data-dir", data]);
    let hook = json!({"url": format!("{}/slow", receiver.base)});
    node_a
        .app_view()
        .ok("SendMessage", send_params("x", json!({"configuration": {"taskPushNotificationConfig": hook}})))
        .await;
    assert!(eventually(400, || async { !receiver.received().is_empty() }).await, "worker a took the job");
    node_a.crash(); // its lease on the job is now orphaned

    // Another worker of the same group (here on the same store, so it knows the config).
    let b = config(cwd.path(), redis.port, "worker-b");
    let _node_b = NodeProcess::start(cwd.path(), &["--config", b.to_str().unwrap(), "--data-dir", data]);
    let reclaimed = eventually(400, || async { receiver.received().len() >= 2 }).await;
    assert!(reclaimed, "{:?}", receiver.received());
    let got = receiver.received();
    assert_eq!(got[0].event_id(), got[1].event_id());
    assert_eq!(got[1].status, 200);
    // Either way is at least once under the same event id: worker b claims the orphaned
    // entry once its lease runs out, or, when the job's step was still in the log at the
    // crash, its replay puts the job in the outbox again and the forwarder sends it anew.
}

#[actix_web::test]
async fn a_node_starts_while_redis_is_down_and_says_so_without_the_password() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        cwd.path().join("r.yml"),
        "push-notifications: true\npush-queue: redis-streams\npush-redis-url: redis://:hunter2@127.0.0.1:1/\n",
    )
    .unwrap();
    let log = cwd.path().join("node.log");
    let node = NodeProcess::start_logging(cwd.path(), &["--config", "r.yml"], &log);
    let ready = reqwest::get(format!("{}/ready", node.url)).await.unwrap();
    assert_eq!(ready.status(), 200, "pushes wait in the outbox; the node is ready");
    assert_eq!(node.terminate().code(), Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("Redis push queue cannot be reached") && text.contains("127.0.0.1:1"), "{text}");
    assert!(!text.contains("hunter2"), "no password in logs: {text}");
}

#[test]
fn a_push_queue_url_that_is_not_redis_stops_start_up() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        cwd.path().join("r.yml"),
        "push-notifications: true\npush-queue: redis-streams\npush-redis-url: http://:hunter2@127.0.0.1:1/\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["serve", "--config", "r.yml", "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Redis URL"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "no password in errors: {stderr}");
}
