//! The `openai` agent: any OpenAI-compatible `/chat/completions` endpoint.
//!
//! Each turn POSTs `{base-url}/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, the configured `model` and `options` (temperature,
//! max_tokens, ...), the system prompt, the context's history and the new message. The
//! `data:` chunks of the SSE answer are streamed as WORKING status messages (deltas that
//! the session does not keep); the turn completes with one message holding the whole
//! answer, which is what the persisted session keeps, so the conversation survives
//! eviction and restarts. Token usage goes into `metadata.a2ad.usage`.
//!
//! Provider errors fail the task with a clean message: "provider authentication failed"
//! (401/403), "provider rate limited" (429), "provider unavailable" (5xx, connection
//! errors), never the key, the URL or the provider's own text. A stream line longer than
//! 4 MiB or an answer longer than 8 MiB fails the turn rather than growing the node's
//! memory. Cancelling drops the request, which closes the connection.

use super::AgentEnv;
use a2ad_actors::agent::{Agent, AgentError, AgentEvent, EventSink, TurnEnd, TurnInput};
use a2ad_protocol::{ids, A2aError, Message, Role, TaskState};
use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// An openai agent's settings (its config block).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct OpenAiSettings {
    /// Up to and including the version path: `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key, read at each turn; none sends no key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Extra request fields (`temperature`, `max_tokens`, ...), sent as given.
    #[serde(default)]
    pub options: Map<String, Value>,
    /// The longest a turn may take, streaming included.
    #[serde(
        default = "super::fields::default_timeout",
        deserialize_with = "crate::units::duration",
        serialize_with = "crate::units::show_duration"
    )]
    pub timeout: Duration,
}

/// The openai agent.
pub struct OpenAiAgent {
    settings: Arc<OpenAiSettings>,
    env: Arc<AgentEnv>,
    accepts: Vec<String>,
    client: reqwest::Client,
}

impl OpenAiAgent {
    /// One agent per configured provider, with its own HTTP client (a 10 s connect
    /// timeout, so an unreachable provider fails the turn instead of hanging it).
    pub fn new(settings: OpenAiSettings, env: Arc<AgentEnv>, accepts: Vec<String>) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        OpenAiAgent { settings: Arc::new(settings), env, accepts, client }
    }
}

impl Agent for OpenAiAgent {
    fn run(&self, input: TurnInput, events: EventSink) -> BoxFuture<'static, Result<TurnEnd, AgentError>> {
        let settings = Arc::clone(&self.settings);
        let env = Arc::clone(&self.env);
        let client = self.client.clone();
        Box::pin(async move {
            let cwd = env.workspace(&input).await?;
            let prompt = env.prompt(&input, cwd).await?;
            let body = request_body(&settings, &input, prompt);
            let cancel = input.cancel.clone();
            let exposure = env.thinking_exposure;
            let turn = tokio::time::timeout(settings.timeout, complete(&client, &settings, body, &events, exposure));
            let (answer, usage) = tokio::select! {
                result = turn => result.map_err(|_| AgentError("provider timed out".into()))??,
                () = cancel.cancelled() => return Err(AgentError("the turn was cancelled".into())),
            };
            let mut message = Message::agent_text(ids::new_id(), &input.context_id, Some(&input.task_id), &answer);
            if let Some(usage) = usage {
                let details = Map::from_iter([("usage".to_owned(), usage.clone())]);
                events.send(AgentEvent::Progress(details)).await?;
                message.metadata = Some(Map::from_iter([("a2ad".to_owned(), json!({ "usage": usage }))]));
            }
            Ok(TurnEnd::new(TaskState::Completed, Some(message)))
        })
    }

    fn check_input(&self, message: &Message) -> Result<(), A2aError> {
        self.env.check_input(message, &self.accepts)
    }
}

/// The chat request: system prompt, history, then the new message, as rendered prompts.
fn request_body(settings: &OpenAiSettings, input: &TurnInput, prompt: String) -> Value {
    let mut messages = Vec::with_capacity(input.history.len() + 2);
    if let Some(system) = &settings.system_prompt {
        messages.push(json!({"role": "system", "content": system}));
    }
    for earlier in input.history.iter() {
        let content = earlier.text();
        if content.is_empty() {
            continue;
        }
        let role = if earlier.role == Role::Agent { "assistant" } else { "user" };
        messages.push(json!({"role": role, "content": content}));
    }
    messages.push(json!({"role": "user", "content": prompt}));
    let mut body = settings.options.clone();
    body.insert("model".into(), json!(settings.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

/// Sends the request and streams the answer; returns the whole text and the usage.
async fn complete(
    client: &reqwest::Client,
    settings: &OpenAiSettings,
    body: Value,
    events: &EventSink,
    thinking_exposure: bool,
) -> Result<(String, Option<Value>), AgentError> {
    let url = format!("{}/chat/completions", settings.base_url.trim_end_matches('/'));
    let mut request = client.post(url).json(&body).header("accept", "text/event-stream");
    if let Some(key) = settings.api_key_env.as_deref().and_then(|name| std::env::var(name).ok()) {
        request = request.bearer_auth(key);
    }
    let mut response = request.send().await.map_err(|_| provider_unavailable())?;
    check_status(response.status())?;
    let mut stream = ChunkParser::default();
    while let Some(bytes) = response.chunk().await.map_err(|_| provider_unavailable())? {
        for piece in stream.feed(&bytes)? {
            match piece {
                Piece::Answer(delta) => events.send(AgentEvent::Delta(delta)).await?,
                Piece::Reasoning(text) if thinking_exposure => {
                    let details = Map::from_iter([("thinking".to_owned(), json!({"text": text}))]);
                    events.send(AgentEvent::Progress(details)).await?;
                }
                Piece::Reasoning(_) => {}
            }
        }
        if stream.done {
            break;
        }
    }
    Ok((stream.answer, stream.usage))
}

fn provider_unavailable() -> AgentError {
    AgentError("provider unavailable".into())
}

/// The clean message for a provider's HTTP status.
fn check_status(status: reqwest::StatusCode) -> Result<(), AgentError> {
    let message = match status.as_u16() {
        200..=299 => return Ok(()),
        401 | 403 => "provider authentication failed".to_owned(),
        429 => "provider rate limited".to_owned(),
        500..=599 => "provider unavailable".to_owned(),
        other => format!("provider refused the request (HTTP {other})"),
    };
    Err(AgentError(message))
}

/// What a chunk adds: answer text, or reasoning (`delta.reasoning_content` or
/// `delta.reasoning`, as some compatible servers send), shown only with
/// `thinking-exposure`.
#[derive(Debug, PartialEq)]
enum Piece {
    Answer(String),
    Reasoning(String),
}

/// The longest line of the provider's stream: one chunk is a few hundred bytes, so this
/// only stops a broken or hostile endpoint from making the node buffer without end.
const MAX_LINE: usize = 4 << 20;

/// The longest answer kept: it becomes a message of the task and of the session.
const MAX_ANSWER: usize = 8 << 20;

/// Reads the SSE stream: `data:` lines of JSON chunks, until `data: [DONE]`.
#[derive(Default)]
struct ChunkParser {
    pending: Vec<u8>,
    /// How much of `pending` was already searched for a line end (each byte once).
    scanned: usize,
    answer: String,
    usage: Option<Value>,
    done: bool,
}

impl ChunkParser {
    /// Takes more bytes; returns the pieces of every complete line.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Piece>, AgentError> {
        self.pending.extend_from_slice(bytes);
        let mut pieces = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.pending[self.scanned..].iter().position(|b| *b == b'\n') {
            let end = self.scanned + offset;
            let line = String::from_utf8_lossy(&self.pending[start..end]).into_owned();
            (start, self.scanned) = (end + 1, end + 1);
            self.line(&line, &mut pieces)?;
            if self.done {
                break;
            }
        }
        self.pending.drain(..start);
        self.scanned -= start;
        if self.pending.len() > MAX_LINE {
            return Err(AgentError("provider sent an invalid stream".into()));
        }
        Ok(pieces)
    }

    /// One line of the stream: a `data:` chunk adds its pieces; other lines are skipped.
    fn line(&mut self, line: &str, pieces: &mut Vec<Piece>) -> Result<(), AgentError> {
        let Some(data) = line.trim_end().strip_prefix("data:") else { return Ok(()) };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|_| AgentError("provider sent an invalid stream".into()))?;
        if chunk.get("error").is_some() {
            return Err(AgentError("provider reported an error".into()));
        }
        let delta = chunk.pointer("/choices/0/delta");
        let text = |key: &str| delta.and_then(|d| d.get(key)).and_then(Value::as_str).filter(|t| !t.is_empty());
        if let Some(reasoning) = text("reasoning_content").or_else(|| text("reasoning")) {
            pieces.push(Piece::Reasoning(reasoning.to_owned()));
        }
        if let Some(answer) = text("content") {
            if self.answer.len() + answer.len() > MAX_ANSWER {
                return Err(AgentError(format!("provider's answer is longer than {} MiB", MAX_ANSWER >> 20)));
            }
            self.answer.push_str(answer);
            pieces.push(Piece::Answer(answer.to_owned()));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage_metadata(usage));
        }
        Ok(())
    }
}

/// `{prompt_tokens, completion_tokens, total_tokens}` as `metadata.a2ad.usage`.
fn usage_metadata(usage: &Value) -> Value {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (count("prompt_tokens"), count("completion_tokens"));
    let total = usage.get("total_tokens").and_then(Value::as_u64).unwrap_or(input.saturating_add(output));
    json!({"inputTokens": input, "outputTokens": output, "totalTokens": total})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_anywhere_are_parsed() {
        let stream = "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\",\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":\
                      {\"content\":\"lo\"}}]}\r\n\r\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\
                      \"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n";
        let mut parser = ChunkParser::default();
        let mut deltas = Vec::new();
        for piece in stream.as_bytes().chunks(7) {
            deltas.extend(parser.feed(piece).unwrap());
        }
        let expected = [Piece::Reasoning("hmm".into()), Piece::Answer("Hel".into()), Piece::Answer("lo".into())];
        assert_eq!(deltas, expected);
        assert_eq!(parser.answer, "Hello");
        assert!(parser.done);
        assert_eq!(parser.usage.unwrap(), json!({"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}));
        let huge = usage_metadata(&json!({"prompt_tokens": u64::MAX, "completion_tokens": 1}));
        assert_eq!(huge["totalTokens"], u64::MAX, "no overflow panic on a provider's numbers");
        assert_eq!(check_status(reqwest::StatusCode::UNAUTHORIZED).unwrap_err().0, "provider authentication failed");
    }

    #[test]
    fn an_endless_line_or_answer_fails_the_turn_instead_of_growing() {
        let mut parser = ChunkParser::default();
        let mut failed = None;
        for _ in 0..5 {
            if let Err(e) = parser.feed(&vec![b'x'; 1 << 20]) {
                failed = Some(e);
                break;
            }
        }
        assert_eq!(failed.map(|e| e.0).as_deref(), Some("provider sent an invalid stream"));
        let mut parser = ChunkParser::default();
        let chunk = format!("data: {}\n", json!({"choices": [{"delta": {"content": "y".repeat(1 << 20)}}]}));
        let results: Vec<_> = (0..9).map(|_| parser.feed(chunk.as_bytes()).map(|_| ())).collect();
        assert!(results[..8].iter().all(Result::is_ok));
        assert!(results[8].as_ref().unwrap_err().0.contains("longer than 8 MiB"));
    }
}
