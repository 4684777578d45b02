//! The `openai` agent against a real HTTP server in the test that speaks the streaming
//! chat completions API.
//!
//! The provider decides by the `model` of the request: `ok` streams "Hel", "lo" and a
//! usage chunk; `denied` answers 401 (its body quotes the key, which must not reach the
//! client); `thinker` sends reasoning first; `limited` answers 429; `broken` answers 500; `endless` streams one delta, then one more every 50 ms
//! (at most 600) until the client goes away, which it records.

use crate::support::{eventually, spawn_app, NodeProcess, TestApp};
use a2ad::agents::openai::OpenAiSettings;
use a2ad::config::{AgentConfig, AgentKind};
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KEY_VAR: &str = "A2AD_TEST_OPENAI_KEY";
const KEY: &str = "sk-test-key-0123456789";

/// What the provider saw.
#[derive(Default)]
struct Seen {
    bodies: Mutex<Vec<Value>>,
    auth: Mutex<Vec<String>>,
    closed: AtomicBool,
}

struct Provider {
    url: String,
    seen: Arc<Seen>,
}

/// Sets `closed` when the response stream is dropped: the client went away.
struct CloseGuard(Arc<Seen>);

impl Drop for CloseGuard {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
    }
}

fn sse(chunk: Value) -> web::Bytes {
    web::Bytes::from(format!("data: {chunk}\n\n"))
}

fn delta(text: &str) -> web::Bytes {
    sse(json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}))
}

async fn completions(req: HttpRequest, body: web::Json<Value>, seen: web::Data<Arc<Seen>>) -> HttpResponse {
    let seen = seen.get_ref().clone();
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    seen.auth.lock().unwrap().push(auth);
    seen.bodies.lock().unwrap().push(body.0.clone());
    let chunks = |items: Vec<web::Bytes>| futures_util::stream::iter(items.into_iter().map(Ok::<_, actix_web::Error>));
    match body["model"].as_str().unwrap_or("") {
        "denied" => HttpResponse::Unauthorized().json(json!({"error": {"message": format!("bad key {KEY}")}})),
        "limited" => HttpResponse::TooManyRequests().body("slow down"),
        "broken" => HttpResponse::InternalServerError().body("upstream exploded at /srv/secret"),
        "endless" => {
            let guard = CloseGuard(seen);
            let stream = futures_util::stream::unfold((0u32, guard), |(n, guard)| async move {
                if n >= 600 {
                    return None;
                }
                if n > 0 {
                    actix_web::rt::time::sleep(Duration::from_millis(50)).await;
                }
                Some((Ok::<_, actix_web::Error>(delta("tick ")), (n + 1, guard)))
            });
            HttpResponse::Ok().content_type("text/event-stream").streaming(stream)
        }
        "thinker" => {
            let reasoning = sse(json!({"choices": [{"index": 0, "delta": {"reasoning_content": "pondering"}}]}));
            let items = vec![reasoning, delta("42"), web::Bytes::from("data: [DONE]\n\n")];
            HttpResponse::Ok().content_type("text/event-stream").streaming(chunks(items))
        }
        _ => {
            let usage =
                json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}});
            let items = vec![delta("Hel"), delta("lo"), sse(usage), web::Bytes::from("data: [DONE]\n\n")];
            HttpResponse::Ok().content_type("text/event-stream").streaming(chunks(items))
        }
    }
}

async fn start_provider() -> Provider {
    let seen = Arc::new(Seen::default());
    let data = web::Data::new(seen.clone());
    let server = HttpServer::new(move || {
        App::new().app_data(data.clone()).route("/v1/chat/completions", web::post().to(completions))
    })
    .workers(1)
    .disable_signals()
    .bind("127.0.0.1:0")
    .unwrap();
    let addr = server.addrs()[0];
    actix_web::rt::spawn(server.run());
    Provider { url: format!("http://{addr}/v1"), seen }
}

fn settings(provider: &Provider, model: &str) -> OpenAiSettings {
    OpenAiSettings {
        base_url: provider.url.clone(),
        model: model.into(),
        api_key_env: Some(KEY_VAR.into()),
        system_prompt: Some("You are terse.".into()),
        options: json!({"temperature": 0.2, "max_tokens": 64}).as_object().cloned().unwrap(),
        timeout: Duration::from_secs(20),
    }
}

async fn app_with(settings: OpenAiSettings, tweak: impl FnOnce(&mut a2ad::config::Config)) -> TestApp {
    std::env::set_var(KEY_VAR, KEY);
    spawn_app(move |c| {
        let mut agent = AgentConfig::default_echo();
        agent.id = "chat".into();
        agent.kind = AgentKind::OpenAi(settings);
        c.agents = vec![agent];
        tweak(c);
    })
    .await
}

fn status_text(task: &Value) -> &str {
    task["status"]["message"]["parts"][0]["text"].as_str().unwrap_or("")
}

#[actix_web::test]
async fn deltas_stream_and_the_answer_completes_with_usage() {
    let provider = start_provider().await;
    let app = app_with(settings(&provider, "ok"), |_| {}).await;
    let params = crate::support::send_params("Say hello", json!({"contextId": "chat-1"}));
    let events = app.stream("SendStreamingMessage", params, &[]).await.unwrap().rest().await;
    let results: Vec<Value> = events.iter().map(|e| e.result()).collect();
    let deltas: Vec<&str> = results
        .iter()
        .filter(|r| r["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING")
        .filter_map(|r| r["statusUpdate"]["status"]["message"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(deltas, ["Hel", "lo"], "{results:?}");
    let usage = results.iter().find_map(|r| r["statusUpdate"]["metadata"]["a2ad"].get("usage")).expect("usage event");
    assert_eq!(usage, &json!({"inputTokens": 11, "outputTokens": 2, "totalTokens": 13}));
    let last = &results.last().unwrap()["statusUpdate"]["status"];
    assert_eq!(last["state"], "TASK_STATE_COMPLETED");
    assert_eq!(last["message"]["parts"][0]["text"], "Hello");
    assert_eq!(last["message"]["metadata"]["a2ad"]["usage"]["totalTokens"], 13);

    let body = provider.seen.bodies.lock().unwrap()[0].clone();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello"},
        ])
    );
    assert_eq!(provider.seen.auth.lock().unwrap()[0], format!("Bearer {KEY}"));

    let task = app.ok("GetTask", json!({"id": results[0]["task"]["id"]})).await;
    let history: Vec<&str> =
        task["history"].as_array().unwrap().iter().filter_map(|m| m["parts"][0]["text"].as_str()).collect();
    assert_eq!(history, ["Say hello", "Hello"], "deltas are not kept, the whole answer is");
}

/// The history the provider got on its last request, without the system prompt.
fn last_history(provider: &Provider) -> Vec<Value> {
    let bodies = provider.seen.bodies.lock().unwrap();
    let messages = bodies.last().unwrap()["messages"].as_array().unwrap().clone();
    messages.into_iter().filter(|m| m["role"] != "system").collect()
}

#[actix_web::test]
async fn the_second_turn_sends_the_history_even_after_eviction() {
    let provider = start_provider().await;
    let app = app_with(settings(&provider, "ok"), |c| c.idle_timeout = Duration::from_millis(150)).await;
    let first = app.send_text("one", json!({"contextId": "chat-evict"})).await;
    assert_eq!(first["status"]["state"], "TASK_STATE_COMPLETED");
    let evicted = eventually(200, || async { app.probe.stats().await.unwrap().evicted_total >= 1 }).await;
    assert!(evicted);
    app.send_text("two", json!({"contextId": "chat-evict"})).await;
    assert_eq!(
        last_history(&provider),
        vec![
            json!({"role": "user", "content": "one"}),
            json!({"role": "assistant", "content": "Hello"}),
            json!({"role": "user", "content": "two"}),
        ]
    );
}

#[actix_web::test]
async fn the_history_survives_a_restart_of_the_node() {
    let provider = start_provider().await;
    std::env::set_var(KEY_VAR, KEY);
    let cwd = tempfile::tempdir().unwrap();
    let config = cwd.path().join("a2ad.yaml");
    let yaml = format!(
        "agents:\n  - id: chat\n    kind: openai\n    openai:\n      base-url: {}\n      model: ok\n      api-key-env: {KEY_VAR}\n",
        provider.url
    );
    std::fs::write(&config, yaml).unwrap();
    let args = ["--config", config.to_str().unwrap()];
    let node = NodeProcess::start(cwd.path(), &args);
    let params = |text: &str| crate::support::send_params(text, json!({"contextId": "chat-restart"}));
    node.app_view().ok("SendMessage", params("before")).await;
    assert!(node.terminate().success());

    let node = NodeProcess::start(cwd.path(), &args);
    let task = node.app_view().ok("SendMessage", params("after")).await;
    assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        last_history(&provider),
        vec![
            json!({"role": "user", "content": "before"}),
            json!({"role": "assistant", "content": "Hello"}),
            json!({"role": "user", "content": "after"}),
        ]
    );
}

#[actix_web::test]
async fn provider_errors_fail_the_task_with_clean_messages() {
    let provider = start_provider().await;
    let app = app_with(settings(&provider, "denied"), |_| {}).await;
    let task = app.send_text("hi", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(status_text(&task), "Agent failed: provider authentication failed");

    let app = app_with(settings(&provider, "limited"), |_| {}).await;
    let task = app.send_text("hi", json!({})).await;
    assert_eq!(status_text(&task), "Agent failed: provider rate limited");

    let app = app_with(settings(&provider, "broken"), |_| {}).await;
    let task = app.send_text("hi", json!({})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(status_text(&task), "Agent failed: provider unavailable");

    let mut gone = settings(&provider, "ok");
    gone.base_url = "http://127.0.0.1:9/v1".into();
    let app = app_with(gone, |_| {}).await;
    let task = app.send_text("hi", json!({})).await;
    assert_eq!(status_text(&task), "Agent failed: provider unavailable");
    assert!(!status_text(&task).contains(KEY) && !status_text(&task).contains("127.0.0.1"));
}

#[actix_web::test]
async fn cancel_mid_stream_closes_the_provider_connection() {
    let provider = start_provider().await;
    let app = app_with(settings(&provider, "endless"), |_| {}).await;
    let task = app.send_text("go on", json!({"configuration": {"returnImmediately": true}})).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let streaming = eventually(400, || async {
        let task = app.ok("GetTask", json!({"id": id})).await;
        status_text(&task).starts_with("tick")
    })
    .await;
    assert!(streaming, "the provider's deltas arrive");
    assert!(!provider.seen.closed.load(Ordering::SeqCst));
    let canceled = app.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let closed = eventually(400, || async { provider.seen.closed.load(Ordering::SeqCst) }).await;
    assert!(closed, "the provider saw the connection close");
}

#[actix_web::test]
async fn reasoning_is_thinking_only_when_exposed() {
    let provider = start_provider().await;
    for exposed in [true, false] {
        let app = app_with(settings(&provider, "thinker"), |c| c.thinking_exposure = exposed).await;
        let params = crate::support::send_params("think", json!({}));
        let events = app.stream("SendStreamingMessage", params, &[]).await.unwrap().rest().await;
        let thinking: Vec<Value> = events
            .iter()
            .filter_map(|e| e.result()["statusUpdate"]["metadata"]["a2ad"].get("thinking").cloned())
            .collect();
        let expected = if exposed { vec![json!({"text": "pondering"})] } else { Vec::new() };
        assert_eq!(thinking, expected, "exposed: {exposed}");
        let last = events.last().unwrap().result();
        assert_eq!(last["statusUpdate"]["status"]["message"]["parts"][0]["text"], "42", "reasoning is not the answer");
    }
}

#[actix_web::test]
async fn input_parts_reach_the_provider_as_one_prompt_and_unaccepted_types_are_refused() {
    let provider = start_provider().await;
    let app = app_with(settings(&provider, "ok"), |c| c.agents[0].input_modes = vec!["text/plain".into()]).await;
    let params = json!({"message": {
        "messageId": "m-parts", "role": "ROLE_USER",
        "parts": [{"text": "describe"}, {"raw": "YWJj", "mediaType": "image/png", "filename": "dot.png"}],
    }});
    let error = app.err("SendMessage", params.clone()).await;
    assert_eq!(crate::support::reason(&error), "CONTENT_TYPE_NOT_SUPPORTED");
    assert!(provider.seen.bodies.lock().unwrap().is_empty(), "nothing reached the provider");

    let app = app_with(settings(&provider, "ok"), |_| {}).await;
    app.ok("SendMessage", params).await;
    let prompt = last_history(&provider)[0]["content"].as_str().unwrap().to_owned();
    assert!(
        prompt.starts_with("describe\n\n[attachment] filename=dot.png mediaType=image/png byteSize=3 "),
        "{prompt}"
    );
}
