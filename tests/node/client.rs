//! The client commands (`a2ad call`, `a2ad tasks`) of the real binary against a node on
//! loopback.

use crate::support::{echo_agent, spawn_app, TestApp};
use a2ad::auth::AuthConfig;
use a2ad_protocol::TaskState;
use serde_json::{json, Value};
use std::process::Output;
use std::time::Duration;

/// Runs `a2ad <args>` with a clean environment for the client's variables.
pub(crate) async fn a2ad(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2ad"));
    command.args(args).env_remove("A2AD_TOKEN").env_remove("A2AD_API_KEY").env_remove("A2AD_BASIC");
    for (k, v) in env {
        command.env(k, v);
    }
    let run = command.kill_on_drop(true).output();
    tokio::time::timeout(Duration::from_secs(60), run).await.expect("the client ends").expect("the client runs")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON lines of a `--json` run.
fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// A node with three echo skills that end completed, input-required and failed.
async fn three_endings() -> TestApp {
    spawn_app(|c| {
        c.agents = vec![
            echo_agent("done", TaskState::Completed, 0, Duration::ZERO),
            echo_agent("ask", TaskState::InputRequired, 0, Duration::ZERO),
            echo_agent("fail", TaskState::Failed, 0, Duration::ZERO),
        ]
    })
    .await
}

#[actix_web::test]
async fn call_prints_the_answer_on_stdout_and_the_states_on_stderr() {
    let app = spawn_app(|_| {}).await;
    let output = a2ad(&["call", &app.url, "hello there"], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hello there\n", "the answer once, on stdout");
    let err = stderr(&output);
    assert!(err.contains("working") && err.contains("completed"), "{err}");
    assert!(!err.contains("hello there"), "no agent text on stderr: {err}");
}

#[actix_web::test]
async fn a_streamed_answer_arrives_in_pieces_and_prints_once_per_message() {
    let app =
        spawn_app(|c| c.agents = vec![echo_agent("slow", TaskState::Completed, 3, Duration::from_millis(5))]).await;
    let output = a2ad(&["call", &app.url, "abcdefg"], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "abc\ndef\ng\n", "each WORKING message once; mirrored artifact chunks skipped");
}

#[actix_web::test]
async fn the_exit_code_says_how_the_task_ended() {
    let app = three_endings().await;
    for (skill, code, state) in [("done", 0, "completed"), ("ask", 3, "input-required"), ("fail", 1, "failed")] {
        let output = a2ad(&["call", &app.url, "x", "--skill", skill], &[]).await;
        assert_eq!(output.status.code(), Some(code), "{skill}: {}", stderr(&output));
        assert!(stderr(&output).contains(state), "{skill}: {}", stderr(&output));
    }
}

#[actix_web::test]
async fn json_output_is_one_stream_response_per_line_and_files_and_data_reach_the_agent() {
    let app = spawn_app(|_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"file body").unwrap();
    let file_arg = file.to_str().unwrap();
    let output =
        a2ad(&["call", &app.url, "see attached", "--file", file_arg, "--data", r#"{"n": 7}"#, "--json"], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert!(lines[0].get("task").is_some(), "the first event is the task: {}", lines[0]);
    let last = lines.last().unwrap();
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    let echoed = &last["statusUpdate"]["status"]["message"]["parts"];
    assert_eq!(echoed[0]["text"], "see attached");
    assert_eq!(echoed[1]["filename"], "notes.txt");
    assert_eq!(echoed[1]["mediaType"], "text/plain");
    assert_eq!(echoed[1]["raw"], "ZmlsZSBib2R5", "base64 of the file");
    assert_eq!(echoed[2]["data"], json!({"n": 7}));
    assert_eq!(stderr(&output), "", "--json keeps stderr quiet");
}

#[actix_web::test]
async fn context_continues_a_conversation_and_task_answers_a_question() {
    let app = three_endings().await;
    let first = a2ad(&["call", &app.url, "one", "--skill", "ask", "--json"], &[]).await;
    assert_eq!(first.status.code(), Some(3));
    let task = json_lines(&first)[0]["task"].clone();
    let (task_id, context_id) = (task["id"].as_str().unwrap(), task["contextId"].as_str().unwrap());

    let answer = a2ad(&["call", &app.url, "two", "--task", task_id, "--context", context_id, "--json"], &[]).await;
    assert_eq!(answer.status.code(), Some(3), "{}", stderr(&answer));
    let last = json_lines(&answer).last().unwrap().clone();
    assert_eq!(last["statusUpdate"]["taskId"], task_id, "the same task went on");
    assert_eq!(last["statusUpdate"]["status"]["message"]["metadata"]["echo"]["sessionMessages"], 2);

    let other = a2ad(&["call", &app.url, "three", "--context", context_id, "--json"], &[]).await;
    let last = json_lines(&other).last().unwrap().clone();
    assert_eq!(last["statusUpdate"]["contextId"], context_id);
    assert_ne!(last["statusUpdate"]["taskId"], task_id, "a new task in the same context");
    assert_eq!(last["statusUpdate"]["status"]["message"]["metadata"]["echo"]["sessionMessages"], 4);
}

#[actix_web::test]
async fn sigint_cancels_the_running_task_on_the_node() {
    use tokio::io::AsyncBufReadExt as _;
    let app =
        spawn_app(|c| c.agents = vec![echo_agent("slow", TaskState::Completed, 1, Duration::from_millis(200))]).await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["call", &app.url, &"z".repeat(200)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let task_id = loop {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await.unwrap().unwrap().unwrap();
        if let Some(rest) = line.strip_prefix("a2ad: task ").filter(|l| l.ends_with(" working")) {
            break rest.trim_end_matches(" working").to_owned();
        }
    };
    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-s", "INT", &pid]).status().unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(6), "the canceled exit code");
    let task = app.ok("GetTask", json!({"id": task_id})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED");
}

#[actix_web::test]
async fn tasks_list_get_cancel_and_watch() {
    let app =
        spawn_app(|c| c.agents = vec![echo_agent("slow", TaskState::Completed, 1, Duration::from_millis(20))]).await;
    let started = app.send_text("abcd", json!({"configuration": {"returnImmediately": true}})).await;
    let id = started["id"].as_str().unwrap();
    let watched = a2ad(&["tasks", "watch", &app.url, id], &[]).await;
    assert_eq!(watched.status.code(), Some(0), "{}", stderr(&watched));
    assert!(stdout(&watched).contains('d'), "{}", stdout(&watched));

    let again = a2ad(&["tasks", "watch", &app.url, id], &[]).await;
    assert_eq!(again.status.code(), Some(0), "a finished task is shown, exit by how it ended: {}", stderr(&again));
    assert!(stdout(&again).contains('d'), "{}", stdout(&again));

    let listed = a2ad(&["tasks", "list", &app.url], &[]).await;
    assert_eq!(listed.status.code(), Some(0));
    let lines = stdout(&listed);
    let mut lines = lines.lines();
    assert_eq!(lines.next(), Some("ID\tSTATE\tAGENT\tAGE\tCONTEXT"), "a header first");
    let row: Vec<&str> = lines.next().unwrap().split('\t').collect();
    assert_eq!(row[..3], [id, "completed", "slow"], "the agent: the card's default skill");
    assert!(row[3].ends_with('s') && row[3].trim_end_matches('s').parse::<u64>().is_ok(), "the age: {row:?}");
    let bad = a2ad(&["tasks", "list", &app.url, "--state", "done"], &[]).await;
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let said = stderr(&bad);
    assert!(said.contains("`done`") && said.contains("submitted, working, input-required"), "the valid states: {said}");
    let got = a2ad(&["tasks", "get", &app.url, id], &[]).await;
    let task: Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");

    let running = app.send_text(&"y".repeat(500), json!({"configuration": {"returnImmediately": true}})).await;
    let running = running["id"].as_str().unwrap();
    let canceled = a2ad(&["tasks", "cancel", &app.url, running], &[]).await;
    assert_eq!(stdout(&canceled), format!("{running}\tcanceled\n"), "{}", stderr(&canceled));
    let missing = a2ad(&["tasks", "get", &app.url, "no-such-task"], &[]).await;
    assert_eq!(missing.status.code(), Some(8));
    assert!(stderr(&missing).contains("not found"), "{}", stderr(&missing));
    let piped = closed_stdout(&["tasks", "get", &app.url, id]).await;
    assert!(piped.is_empty(), "a closed stdout ends the client quietly (no panic, no backtrace): {piped}");
}

/// Runs `a2ad <args>` whose stdout is a pipe already closed (as in `a2ad tasks list | head`,
/// once `head` is done) with backtraces on; its stderr.
async fn closed_stdout(args: &[&str]) -> String {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2ad"));
    command.args(args).env("RUST_BACKTRACE", "1").stdout(std::process::Stdio::piped());
    let mut child = command.stderr(std::process::Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    drop(child.stdout.take());
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.unwrap().unwrap();
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[actix_web::test]
async fn auth_flags_and_variables_reach_a_node_with_auth() {
    let yaml = format!(
        "bearer-tokens: [{{token: tok-1, tenant: acme, principal: alice}}]\n\
         api-keys: [{{key: key-1, tenant: acme, principal: alice}}]\n\
         basic-users: [{{user: al, password-hash: \"{}\", tenant: acme, principal: alice}}]\n",
        a2ad::auth::hash_password("pw-1", 1000)
    );
    let app = spawn_app(|c| c.auth = serde_yaml_ng::from_str::<AuthConfig>(&yaml).unwrap()).await;
    let refused = a2ad(&["call", &app.url, "hi"], &[]).await;
    assert_eq!(refused.status.code(), Some(8));
    assert!(stderr(&refused).contains("--token"), "{}", stderr(&refused));
    let with_token = a2ad(&["call", &app.url, "hi", "--token", "tok-1"], &[]).await;
    assert_eq!(with_token.status.code(), Some(0), "{}", stderr(&with_token));
    let from_env = a2ad(&["tasks", "list", &app.url], &[("A2AD_API_KEY", "key-1")]).await;
    assert_eq!(from_env.status.code(), Some(0), "{}", stderr(&from_env));
    assert_eq!(
        stdout(&from_env).lines().count(),
        2,
        "the header and the one task of alice (token or key, the same principal)"
    );
    let basic = a2ad(&["tasks", "list", &app.url, "--basic", "al:pw-1"], &[]).await;
    assert_eq!(basic.status.code(), Some(0), "{}", stderr(&basic));
    let wrong = a2ad(&["call", &app.url, "hi", "--token", "nope"], &[]).await;
    assert_eq!(wrong.status.code(), Some(8));
    assert!(!stderr(&wrong).contains("nope"), "the secret is not echoed: {}", stderr(&wrong));
}

#[actix_web::test]
async fn bad_urls_and_arguments_give_a_clear_error_and_exit_code() {
    let not_a_url = a2ad(&["call", "not a url", "hi"], &[]).await;
    assert_eq!(not_a_url.status.code(), Some(2));
    assert!(stderr(&not_a_url).contains("is not a URL"), "{}", stderr(&not_a_url));

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let unreachable = a2ad(&["call", &url, "hi"], &[]).await;
    assert_eq!(unreachable.status.code(), Some(7));
    assert!(stderr(&unreachable).contains("cannot reach"), "{}", stderr(&unreachable));

    let app = spawn_app(|_| {}).await;
    let bad_data = a2ad(&["call", &app.url, "hi", "--data", "{nope"], &[]).await;
    assert_eq!(bad_data.status.code(), Some(2));
    assert!(stderr(&bad_data).contains("--data is not JSON"), "{}", stderr(&bad_data));
    let no_file = a2ad(&["call", &app.url, "hi", "--file", "/nonexistent/x.txt"], &[]).await;
    assert_eq!(no_file.status.code(), Some(2));
    let no_skill = a2ad(&["call", &app.url, "hi", "--skill", "nope"], &[]).await;
    assert_eq!(no_skill.status.code(), Some(8), "{}", stderr(&no_skill));
    // Like every enum error, it lists the valid values: the node's skills.
    assert!(stderr(&no_skill).contains("Unknown skill `nope`: this node's skills are `echo`"), "{}", stderr(&no_skill));
}

/// The node's card, edited by `edit`, served by a second server on loopback; its URL.
async fn serve_edited_card(app: &TestApp, edit: impl FnOnce(&mut Value)) -> String {
    let mut card = app.card().await;
    edit(&mut card);
    serve_card(&card)
}

/// Serves `card` at `/card.json` on a second loopback server; its URL.
fn serve_card(card: &Value) -> String {
    use actix_web::{web, App, HttpResponse, HttpServer};
    let body = card.to_string();
    let server = HttpServer::new(move || {
        let body = body.clone();
        App::new().route(
            "/card.json",
            web::get().to(move || {
                let body = body.clone();
                async move { HttpResponse::Ok().content_type("application/json").body(body) }
            }),
        )
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let url = format!("http://{}/card.json", server.addrs()[0]);
    actix_web::rt::spawn(server.run());
    url
}

/// A card that lists HTTP+JSON first: the client takes the first interface it runs, so
/// the node's HTTP+JSON binding carries the whole call.
#[actix_web::test]
async fn the_first_interface_of_the_card_is_used_http_json_too() {
    let app =
        spawn_app(|c| c.agents = vec![echo_agent("slow", TaskState::Completed, 2, Duration::from_millis(5))]).await;
    let card_url = serve_edited_card(&app, |card| {
        card["supportedInterfaces"].as_array_mut().unwrap().sort_by_key(|i| i["protocolBinding"] != "HTTP+JSON");
    })
    .await;

    let output = a2ad(&["call", &card_url, "abcd"], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "ab\ncd\n");
    let first_line = stderr(&output).lines().next().unwrap().to_owned();
    let id = first_line.trim_start_matches("a2ad: task ").split(' ').next().unwrap().to_owned();
    let got = a2ad(&["tasks", "get", &card_url, &id], &[]).await;
    assert_eq!(got.status.code(), Some(0), "{}", stderr(&got));
    let listed = a2ad(&["tasks", "list", &card_url, "--state", "completed"], &[]).await;
    assert!(stdout(&listed).contains(&id), "{}", stdout(&listed));
    let missing = a2ad(&["tasks", "cancel", &card_url, "nope"], &[]).await;
    assert_eq!(missing.status.code(), Some(8), "{}", stderr(&missing));
}

/// An agent whose card says it does not stream gets one SendMessage; the answer and the
/// exit code are the same.
#[actix_web::test]
async fn an_agent_without_streaming_is_called_with_send_message() {
    let app = three_endings().await;
    let card_url = serve_edited_card(&app, |card| card["capabilities"]["streaming"] = json!(false)).await;
    let done = a2ad(&["call", &card_url, "plain answer"], &[]).await;
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    assert_eq!(stdout(&done), "plain answer\n");
    assert!(stderr(&done).contains("completed"), "{}", stderr(&done));
    let asked = a2ad(&["call", &card_url, "q", "--skill", "ask"], &[]).await;
    assert_eq!(asked.status.code(), Some(3), "{}", stderr(&asked));
    let metrics = app.client.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    assert!(!metrics.contains(r#"method="SendStreamingMessage""#), "no stream was asked for: {metrics}");
}

/// A node that redirects a request to another origin: the client does not follow, so the
/// API key (which HTTP clients keep on redirects, unlike Authorization) goes nowhere else.
#[actix_web::test]
async fn credentials_do_not_follow_a_redirect_to_another_origin() {
    use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let record = Arc::clone(&seen);
    let elsewhere = HttpServer::new(move || {
        let record = Arc::clone(&record);
        App::new().default_service(web::to(move |req: HttpRequest| {
            let key = req.headers().get("x-api-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
            record.lock().unwrap().push(key);
            async { HttpResponse::Ok().content_type("application/json").body("{}") }
        }))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let target = format!("http://{}/steal", elsewhere.addrs()[0]);
    actix_web::rt::spawn(elsewhere.run());
    let app = three_endings().await;
    let mut card = app.card().await;
    let redirector = HttpServer::new(move || {
        let target = target.clone();
        App::new().route(
            "/rpc",
            web::post().to(move || {
                let target = target.clone();
                async move { HttpResponse::TemporaryRedirect().insert_header(("location", target)).finish() }
            }),
        )
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let rpc_url = format!("http://{}/rpc", redirector.addrs()[0]);
    actix_web::rt::spawn(redirector.run());
    card["supportedInterfaces"] = json!([{"url": rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]);
    card["capabilities"]["streaming"] = json!(false);
    let card_url = serve_card(&card);
    let output = a2ad(&["call", &card_url, "hi", "--api-key", "k-secret"], &[]).await;
    assert_ne!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(seen.lock().unwrap().is_empty(), "the other origin got a request: {:?}", seen.lock().unwrap());
}

#[actix_web::test]
async fn tasks_watch_on_an_input_required_task_says_it_waits_then_follows_the_next_turn() {
    use tokio::io::AsyncBufReadExt as _;
    let app = spawn_app(crate::support::asking_agent()).await;
    let asked = app.send_text("hi", json!({})).await;
    let id = asked["id"].as_str().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["tasks", "watch", &app.url, id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut err_lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let waiting = loop {
        let line = tokio::time::timeout(Duration::from_secs(20), err_lines.next_line()).await.unwrap().unwrap();
        let Some(line) = line else { panic!("stderr ended before the notice: {seen:?}") };
        if line.contains("waiting for its next turn") {
            break line;
        }
        seen.push(line);
    };
    assert!(waiting.contains(id) && waiting.contains("input-required") && waiting.contains("--task"), "{waiting}");

    app.send_text("done", json!({"taskId": id})).await;
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(output.status.code(), Some(0), "exits by the terminal state");
    assert!(stdout(&output).contains("finished"), "the next turn's text: {}", stdout(&output));
}

/// `tasks watch` joining a turn under way prints each of the agent's lines once: the ones
/// written before it subscribed (from the task it gets first), then the rest, and not the
/// final answer and the artifact that repeat them.
#[actix_web::test]
async fn tasks_watch_prints_each_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let script = format!("echo one; while [ ! -e '{}' ]; do sleep 0.02; done; echo two; echo three", go.display());
    let settings = crate::support::command_settings(&["sh", "-c", &script], a2ad::agents::command::OutputMode::Text);
    let app = spawn_app(move |c| c.agents = vec![crate::support::command_agent("lines", settings)]).await;
    let started = app.send_text("x", json!({"configuration": {"returnImmediately": true}})).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let wrote_one = crate::support::eventually(400, || async {
        let task = app.ok("GetTask", json!({"id": id})).await;
        task["history"].as_array().is_some_and(|h| h.iter().any(|m| m["parts"][0]["text"] == "one"))
    })
    .await;
    assert!(wrote_one);
    let mut watch = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(["tasks", "watch", &app.url, &id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = tokio::io::BufReader::new(watch.stdout.take().unwrap());
    let mut first = String::new();
    let read = tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut first);
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("a first line").unwrap();
    assert_eq!(first, "one\n", "the line written before the watch began");
    std::fs::write(&go, "").unwrap();
    let mut rest = String::new();
    let read = tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut rest);
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("the watch ends").unwrap();
    assert_eq!(rest, "two\nthree\n", "each line once");
    assert_eq!(watch.wait().await.unwrap().code(), Some(0));
}
