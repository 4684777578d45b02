//! Test harness: an app on port 0, JSON-RPC helpers, and the real binary.

use a2ad::agents::command::{CommandSettings, InputMode, OutputMode};
use a2ad::agents::echo::EchoSettings;
use a2ad::config::{AgentConfig, AgentKind, Config};
use a2ad::startup::{Application, StatsProbe};
use a2ad_protocol::TaskState;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running in-process node.
pub struct TestApp {
    pub url: String,
    /// `http://127.0.0.1:<port>` of the gRPC server.
    pub grpc_url: String,
    pub client: reqwest::Client,
    pub probe: StatsProbe,
    /// The node's temp dir (removed once the node stops, see [`spawn_app`]).
    pub _dir: NodeDir,
}

/// Where a test node's temp dir is; the dir itself is owned by the node's task.
pub struct NodeDir(std::path::PathBuf);

impl NodeDir {
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

/// Starts a node on 127.0.0.1:0 with a fresh data dir; `tweak` edits the config first.
pub async fn spawn_app(tweak: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::default_node();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.data_dir = dir.path().join("data");
    config.workers = 2;
    config.grpc_listen = Some("127.0.0.1:0".parse().unwrap());
    tweak(&mut config);
    on_shared_store_if_asked(&mut config);
    let app = Application::build(config).await.expect("the app starts");
    let url = app.local_url();
    let grpc_url = format!("http://{}", app.grpc_addr().expect("gRPC runs in tests"));
    let probe = app.stats_probe();
    let data_dir = dir.path().to_path_buf();
    actix_web::rt::spawn(async move {
        // The data dir goes when the node has stopped, not before: the node's last
        // checkpoint flushes sled, and sled can hang on a write into a removed directory
        // (a blob file it cannot create), which its process-wide lock makes a hang of
        // every other node in this test binary.
        let _dir = dir;
        app.run_until_stopped().await
    });
    TestApp { url, grpc_url, client: reqwest::Client::new(), probe, _dir: NodeDir(data_dir) }
}

/// With `A2AD_TEST_STORE=redis`, the node runs on the shared store (`store: redis`) of
/// one redis-server this test binary starts, under a key prefix of its own, so that the
/// suite's scenarios run against both backends (`scripts/test.sh` runs it both ways);
/// with `A2AD_TEST_STORE=redis-cluster`, on a Redis Cluster of three primaries (16 shards).
fn on_shared_store_if_asked(config: &mut Config) {
    // A test that put the node on a Redis of its own, or in memory, keeps it.
    if !on_shared_store() || matches!(config.store, a2ad::config::StoreKind::Redis | a2ad::config::StoreKind::Memory) {
        return;
    }
    static SERVER: std::sync::OnceLock<crate::shared_redis::SharedRedis> = std::sync::OnceLock::new();
    let server = SERVER.get_or_init(|| {
        crate::shared_redis::SharedRedis::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
            .expect("A2AD_TEST_STORE=redis needs a redis-server (scripts/redis.sh)")
    });
    config.store = a2ad::config::StoreKind::Redis;
    config.redis.url = server.url();
    config.redis.cluster = crate::shared_redis::on_a_cluster();
    config.redis.prefix = format!("t{}", a2ad_protocol::ids::new_id());
    // The push queue's keys too: the test binary's nodes share the one server.
    config.push.stream = format!("{}:push", config.redis.prefix);
    config.push.retry_key = format!("{}:push:retry", config.redis.prefix);
    config.push.dead_stream = format!("{}:push:dead", config.redis.prefix);
}

/// Whether the suite runs on the shared store (see [`on_shared_store_if_asked`]).
pub fn on_shared_store() -> bool {
    matches!(std::env::var("A2AD_TEST_STORE").as_deref(), Ok("redis" | "redis-cluster"))
}

/// An echo agent with the given settings.
pub fn echo_agent(id: &str, end_state: TaskState, chunk_size: usize, chunk_delay: Duration) -> AgentConfig {
    let mut agent = AgentConfig::default_echo();
    agent.id = id.to_owned();
    agent.name = format!("Echo {id}");
    agent.kind = AgentKind::Echo(EchoSettings { end_state, chunk_size, chunk_delay });
    agent
}

/// Command-agent settings the command tests start from, so each test states only what it
/// is about: `argv` gets the prompt as text, PATH is the only inherited variable, 20 s
/// timeout, 1 MiB of output. Change a field with `CommandSettings { .., ..command_settings(..) }`.
pub fn command_settings(argv: &[&str], output: OutputMode) -> CommandSettings {
    CommandSettings {
        argv: argv.iter().map(|a| (*a).to_owned()).collect(),
        input: InputMode::Text,
        output,
        end_state: TaskState::Completed,
        env: BTreeMap::new(),
        env_allow: vec!["PATH".into()],
        cwd: None,
        timeout: Duration::from_secs(20),
        max_output: 1 << 20,
        cancel_grace: Duration::from_millis(200),
    }
}

/// A command agent `id` running `settings`.
pub fn command_agent(id: &str, settings: CommandSettings) -> AgentConfig {
    let mut agent = AgentConfig::default_echo();
    agent.id = id.to_owned();
    agent.kind = AgentKind::Command(settings);
    agent
}

/// A node whose only agent asks for more (INPUT_REQUIRED, "more?") until a message says
/// `done`, then completes saying `finished`: a task that resumes over several turns.
pub fn asking_agent() -> impl FnOnce(&mut Config) {
    let script = r#"read -r line; case "$line" in
  done) echo '{"type":"text","text":"finished"}' ;;
  *) echo '{"type":"final","state":"input-required","text":"more?"}' ;;
esac"#;
    let settings = command_settings(&["sh", "-c", script], OutputMode::Jsonl);
    move |c| c.agents = vec![command_agent("ask", settings)]
}

/// A node whose only agent (`gated`) says twelve lines at once, then waits until a file
/// named after its task appears in the returned directory ([`open_gate`]; 30 s at most,
/// so that a failed test leaves no program behind), and completes:
/// a task that is surely still running while a test drops and resumes its stream,
/// however slow the machine or its disk.
pub fn gated_agent() -> (impl FnOnce(&mut Config), tempfile::TempDir) {
    let gates = tempfile::tempdir().expect("the gates' dir");
    let script = format!(
        r#"cat >/dev/null; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "{{"type":"text","text":"line $i"}}"; done
n=0; while [ ! -e '{}/'"$A2A_TASK_ID" ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done
echo '{{"type":"text","text":"through"}}'"#,
        gates.path().display()
    );
    let settings = command_settings(&["sh", "-c", &script], OutputMode::Jsonl);
    (move |c: &mut Config| c.agents = vec![command_agent("gated", settings)], gates)
}

/// Lets the [`gated_agent`]'s task `task_id` complete.
pub fn open_gate(gates: &tempfile::TempDir, task_id: &str) {
    std::fs::write(gates.path().join(task_id), "").expect("the gate opens");
}

/// A node whose only agent is a slow echo (one chunk per character, `delay` each).
pub fn slow_echo(delay: Duration) -> impl FnOnce(&mut Config) {
    move |c| c.agents = vec![echo_agent("slow", TaskState::Completed, 1, delay)]
}

/// Sends a request and parses its JSON body, panicking on a transport or JSON error: the
/// one-liner behind the tests' direct REST, card and cross-transport checks.
pub trait JsonBody {
    fn json_body(self) -> impl Future<Output = Value>;
}

impl JsonBody for reqwest::RequestBuilder {
    async fn json_body(self) -> Value {
        let response = self.send().await.expect("request sent");
        response.json().await.expect("a JSON body")
    }
}

impl TestApp {
    /// The public agent card (`/.well-known/agent-card.json`) as JSON.
    pub async fn card(&self) -> Value {
        self.client.get(format!("{}/.well-known/agent-card.json", self.url)).json_body().await
    }

    /// Calls a JSON-RPC method and returns the whole response object.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_with_id(json!(1), method, params).await
    }

    pub async fn rpc_with_id(&self, id: Value, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.client.post(&self.url).json(&body).send().await.expect("request sent");
        assert_eq!(response.status(), 200, "JSON-RPC answers with HTTP 200");
        response.json().await.expect("a JSON body")
    }

    /// Calls a method that must succeed and returns its `result`.
    pub async fn ok(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// Calls a method that must fail and returns its `error`.
    pub async fn err(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response.get("result").is_none(), "{method} should fail: {response}");
        response["error"].clone()
    }

    /// Sends a text message and returns the `task` of the result.
    pub async fn send_text(&self, text: &str, extra: Value) -> Value {
        let result = self.ok("SendMessage", send_params(text, extra)).await;
        result["task"].clone()
    }

    pub async fn post_raw(&self, body: impl Into<reqwest::Body>, content_type: &str) -> reqwest::Response {
        self.client.post(&self.url).header("content-type", content_type).body(body).send().await.expect("request sent")
    }
}

/// One Server-Sent Event as a client sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// A comment line (`: ...`), such as a keep-alive.
    pub comment: Option<String>,
}

impl SseEvent {
    /// `data` as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.data))
    }

    /// The StreamResponse of a JSON-RPC event.
    pub fn result(&self) -> Value {
        self.json()["result"].clone()
    }

    pub fn seq(&self) -> u64 {
        self.id.as_deref().and_then(|id| id.parse().ok()).unwrap_or_else(|| panic!("no numeric id: {self:?}"))
    }
}

/// Reads SSE events from a streaming response.
pub struct SseReader {
    pub response_headers: reqwest::header::HeaderMap,
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<actix_web::web::Bytes>>>>,
    buffer: String,
    scanned: usize,
}

impl SseReader {
    /// The next event or comment, or `None` at the end of the stream. Panics after 10 s.
    pub async fn next(&mut self) -> Option<SseEvent> {
        use futures_util::StreamExt as _;
        loop {
            // Only the newly read tail can complete an event: rescanning the whole buffer
            // would make one large event quadratic.
            let mut from = self.scanned.min(self.buffer.len());
            while !self.buffer.is_char_boundary(from) {
                from -= 1;
            }
            if let Some(end) = self.buffer[from..].find("\n\n").map(|i| i + from) {
                let block: String = self.buffer.drain(..end + 2).collect();
                self.scanned = 0;
                return Some(parse_block(&block));
            }
            self.scanned = self.buffer.len().saturating_sub(1);
            let chunk = actix_web::rt::time::timeout(Duration::from_secs(10), self.body.next())
                .await
                .expect("an SSE event within 10 s");
            match chunk {
                Some(Ok(bytes)) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }

    /// The next data event (comments skipped).
    pub async fn next_data(&mut self) -> Option<SseEvent> {
        loop {
            let event = self.next().await?;
            if event.comment.is_none() {
                return Some(event);
            }
        }
    }

    /// Every remaining data event until the stream ends.
    pub async fn rest(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Some(event) = self.next_data().await {
            out.push(event);
        }
        out
    }
}

fn parse_block(block: &str) -> SseEvent {
    let mut event = SseEvent::default();
    let mut data = Vec::new();
    for line in block.lines() {
        if let Some(comment) = line.strip_prefix(':') {
            event.comment = Some(comment.trim().to_owned());
        } else if let Some((field, value)) = line.split_once(':') {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => event.id = Some(value.to_owned()),
                "event" => event.event = Some(value.to_owned()),
                "data" => data.push(value.to_owned()),
                _ => {}
            }
        }
    }
    event.data = data.join("\n");
    event
}

impl SseReader {
    /// Wraps a response if it is an event stream; otherwise returns its JSON body.
    pub async fn from_response(response: reqwest::Response) -> Result<SseReader, Value> {
        let is_sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
        if !is_sse {
            return Err(response.json().await.expect("a JSON error body"));
        }
        let response_headers = response.headers().clone();
        Ok(SseReader { response_headers, body: Box::pin(response.bytes_stream()), buffer: String::new(), scanned: 0 })
    }
}

impl TestApp {
    /// Calls a streaming method; returns the reader, or the plain JSON-RPC error body.
    pub async fn stream(&self, method: &str, params: Value, headers: &[(&str, &str)]) -> Result<SseReader, Value> {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = self.client.post(&self.url).json(&body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        SseReader::from_response(request.send().await.expect("request sent")).await
    }
}

/// SendMessage params for a user text message; `extra` is merged into the message
/// (`contextId`, `taskId`, `metadata`) or, under `"configuration"`, into the params.
pub fn send_params(text: &str, extra: Value) -> Value {
    let mut message = json!({
        "messageId": a2ad_protocol::ids::new_id(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    let mut params = json!({});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            if k == "configuration" {
                params["configuration"] = v;
            } else {
                message[k] = v;
            }
        }
    }
    params["message"] = message;
    params
}

/// The `ErrorInfo.reason` of a JSON-RPC error.
pub fn reason(error: &Value) -> &str {
    error["data"][0]["reason"].as_str().unwrap_or("")
}

/// Polls `check` every 25 ms until it returns true, at most `tries` times.
pub async fn eventually<F, Fut>(tries: usize, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..tries {
        if check().await {
            return true;
        }
        actix_web::rt::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

/// The real binary, running `a2ad serve` on port 0. Killed on drop.
pub struct NodeProcess {
    pub child: Child,
    pub url: String,
    /// `http://<addr>` of its gRPC server, from the "listening" line.
    pub grpc_url: String,
}

impl NodeProcess {
    /// Starts `a2ad serve --listen 127.0.0.1:0 <args>` in `cwd` and waits for its
    /// "listening on" line.
    pub fn start(cwd: &Path, args: &[&str]) -> NodeProcess {
        Self::start_with_stderr(cwd, args, Stdio::null())
    }

    /// Like [`NodeProcess::start`], with the node's logs (stderr) written to `log`.
    pub fn start_logging(cwd: &Path, args: &[&str], log: &Path) -> NodeProcess {
        Self::start_with_stderr(cwd, args, std::fs::File::create(log).expect("the log file").into())
    }

    /// Like [`NodeProcess::start_logging`], started with the process umask `umask` (the
    /// test process's own may differ).
    pub fn start_logging_with_umask(cwd: &Path, args: &[&str], log: &Path, umask: u32) -> NodeProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_a2ad"));
        with_umask(&mut command, umask);
        Self::spawn(command, cwd, args, std::fs::File::create(log).expect("the log file").into())
    }

    /// Like [`NodeProcess::start_logging`], with the variables `env` set for the node.
    pub fn start_logging_with_env(cwd: &Path, args: &[&str], log: &Path, env: &[(&str, &str)]) -> NodeProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_a2ad"));
        command.envs(env.iter().copied());
        Self::spawn(command, cwd, args, std::fs::File::create(log).expect("the log file").into())
    }

    /// Like [`NodeProcess::start_logging`], with HTTP on `listen` (port 0) instead of
    /// 127.0.0.1 (gRPC stays on loopback).
    pub fn start_logging_on(cwd: &Path, listen: &str, args: &[&str], log: &Path) -> NodeProcess {
        let stderr = std::fs::File::create(log).expect("the log file").into();
        Self::spawn_on(Command::new(env!("CARGO_BIN_EXE_a2ad")), cwd, listen, args, stderr)
    }

    /// Like [`NodeProcess::start`], run by `wrapper` (a program that runs its arguments,
    /// such as `strace … -o FILE`): the node's binary and arguments follow the wrapper's.
    pub fn start_under(mut wrapper: Command, cwd: &Path, args: &[&str]) -> NodeProcess {
        wrapper.arg(env!("CARGO_BIN_EXE_a2ad"));
        Self::spawn(wrapper, cwd, args, Stdio::null())
    }

    fn start_with_stderr(cwd: &Path, args: &[&str], stderr: Stdio) -> NodeProcess {
        Self::spawn(Command::new(env!("CARGO_BIN_EXE_a2ad")), cwd, args, stderr)
    }

    fn spawn(command: Command, cwd: &Path, args: &[&str], stderr: Stdio) -> NodeProcess {
        Self::spawn_on(command, cwd, "127.0.0.1:0", args, stderr)
    }

    fn spawn_on(mut command: Command, cwd: &Path, listen: &str, args: &[&str], stderr: Stdio) -> NodeProcess {
        let mut child = command
            .arg("serve")
            .args(["--listen", listen, "--grpc-listen", "127.0.0.1:0"])
            .args(args)
            .current_dir(cwd)
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("a line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned();
        let grpc = line.split("gRPC on ").nth(1).and_then(|rest| rest.split(')').next()).unwrap_or_default();
        NodeProcess { child, url, grpc_url: format!("http://{grpc}") }
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        signal(&self.child, "TERM");
        self.child.wait().expect("the node exits")
    }

    /// Kills the process outright (SIGKILL), as a crash would.
    pub fn crash(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("the node exits");
    }

    /// A client bound to this node.
    pub fn app_view(&self) -> RemoteNode {
        RemoteNode { url: self.url.clone(), client: reqwest::Client::new() }
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill").args(["-s", name, &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
}

/// Starts `command` with the process umask `umask`.
pub fn with_umask(command: &mut Command, umask: u32) {
    // SAFETY: umask is async-signal-safe and touches no memory.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            libc::umask(umask as libc::mode_t);
            Ok(())
        });
    }
}

/// JSON-RPC against a node in another process.
pub struct RemoteNode {
    pub url: String,
    pub client: reqwest::Client,
}

impl RemoteNode {
    pub async fn ok(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response: Value =
            self.client.post(&self.url).json(&body).send().await.expect("sent").json().await.expect("json");
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }
}

impl RemoteNode {
    /// A JSON-RPC call with `Authorization: Bearer <token>`; the whole response body.
    pub async fn rpc_as(&self, token: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let request = self.client.post(&self.url).bearer_auth(token).json(&body);
        request.send().await.expect("sent").json().await.expect("json")
    }
}
