//! `a2ad call URL TEXT`: send one message with SendStreamingMessage and follow the answer.
//!
//! Ctrl-C (SIGINT) while the task runs cancels it on the node (CancelTask) and exits with
//! [`exit::CANCELED`]; the exit code otherwise says how the task ended. An agent whose card
//! says `capabilities.streaming: false` gets one SendMessage instead.

use super::render::Renderer;
use super::sse::SseStream;
use super::transport::Endpoint;
use super::{ends_stream, exit, CallArgs, ClientError};
use base64::Engine as _;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;

/// Runs the command; the process exit code. The files the answer links are saved
/// (`--save`) or named once it ends ([`super::files`]).
pub async fn run(args: CallArgs) -> Result<i32, ClientError> {
    let params = send_params(&args)?;
    let endpoint = Endpoint::discover(&args.url, &args.auth).await?;
    let mut renderer = Renderer::new(args.json);
    let code = if endpoint.streaming {
        let stream = endpoint.stream("SendStreamingMessage", params).await?;
        follow(&endpoint, stream.with_idle_timeout(args.idle_timeout), &mut renderer, FollowUntil::TurnEnd).await?
    } else {
        // An agent without streaming: one SendMessage, shown like a stream that ended.
        let result = endpoint.call("SendMessage", params).await?;
        renderer.snapshot(&result);
        renderer.finish();
        renderer.state.as_deref().map_or(exit::COMPLETED, exit::for_state)
    };
    super::files::deliver(&endpoint, &renderer.files, args.save.as_deref(), args.json).await?;
    Ok(code)
}

/// Where following a stream stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowUntil {
    /// The end of the turn, interrupted or terminal (`call`: its one turn).
    TurnEnd,
    /// A terminal state (`tasks watch`): past an input-required or auth-required state the
    /// node keeps the subscription open for the next turn, and so does the client.
    TaskEnd,
}

/// Shows a stream until it ends; Ctrl-C cancels the task. The exit code.
pub async fn follow(
    endpoint: &Endpoint,
    mut stream: SseStream,
    renderer: &mut Renderer,
    until: FollowUntil,
) -> Result<i32, ClientError> {
    // Registered before the first event is shown: a Ctrl-C from then on cancels the task.
    let mut interrupted = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| ClientError::Transport(format!("cannot watch for Ctrl-C: {e}")))?;
    let mut spinner = tokio::time::interval(Duration::from_millis(120));
    loop {
        tokio::select! {
            next = stream.next() => match next {
                Some(Ok(event)) => {
                    let before = renderer.state.clone();
                    renderer.event(&event);
                    let Some(state) = renderer.state.clone().filter(|s| ends_stream(s)) else { continue };
                    if until == FollowUntil::TurnEnd || is_terminal(&state) {
                        break;
                    }
                    if before.as_deref() != Some(state.as_str()) {
                        renderer.notice(&waiting_notice(endpoint, renderer, &state));
                    }
                }
                Some(Err(ClientError::StreamIdle(limit))) => {
                    renderer.finish();
                    return Err(went_silent(endpoint, renderer, limit));
                }
                Some(Err(e)) => {
                    renderer.finish();
                    return Err(e);
                }
                None => break,
            },
            _ = interrupted.recv() => {
                renderer.finish();
                return cancel(endpoint, renderer).await;
            }
            _ = spinner.tick() => renderer.tick(),
        }
    }
    renderer.finish();
    match renderer.state.as_deref() {
        Some(state) if ends_stream(state) => Ok(exit::for_state(state)),
        None if renderer.answered_with_message => Ok(exit::COMPLETED),
        _ => Err(ClientError::Transport("the stream ended before the task did".into())),
    }
}

/// Whether a state ends the task (not only its turn).
fn is_terminal(state: &str) -> bool {
    ends_stream(state) && !matches!(state, "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED")
}

/// What `tasks watch` says when the task waits for its client: it goes on watching.
fn waiting_notice(endpoint: &Endpoint, renderer: &Renderer, state: &str) -> String {
    let id = renderer.task_id.as_deref().unwrap_or("?");
    format!(
        "task {id} is {}; waiting for its next turn (answer it with: a2ad call {} --task {id} TEXT)",
        super::short_state(state),
        endpoint.node_url
    )
}

/// A stream that went silent: the task is not cancelled (it may well still run on the
/// node), and the user is told how to pick it up again.
fn went_silent(endpoint: &Endpoint, renderer: &Renderer, limit: Duration) -> ClientError {
    let silent = ClientError::StreamIdle(limit);
    let resume = match renderer.task_id.as_deref() {
        Some(id) => format!(
            "task {} may still be running; follow it with: a2ad tasks watch {} {}",
            super::render::for_terminal(id, false),
            endpoint.node_url,
            super::render::for_terminal(id, false)
        ),
        None => "the node named no task before it went silent".to_owned(),
    };
    ClientError::Transport(format!("{silent}; {resume}"))
}

/// Cancels the task being followed after Ctrl-C.
async fn cancel(endpoint: &Endpoint, renderer: &Renderer) -> Result<i32, ClientError> {
    let Some(id) = renderer.task_id.clone() else {
        eprintln!("a2ad: interrupted before the node named the task");
        return Ok(exit::CANCELED);
    };
    let task = endpoint.call("CancelTask", json!({"id": id})).await?;
    let state = task["status"]["state"].as_str().unwrap_or("?");
    eprintln!("a2ad: task {id} {}", super::short_state(state));
    Ok(exit::CANCELED)
}

/// The SendMessage params: the message and, with `--push-url`, the push config the node
/// delivers the task's updates to.
fn send_params(args: &CallArgs) -> Result<Value, ClientError> {
    let mut params = json!({"message": build_message(args)?});
    if let Some(url) = &args.push_url {
        let mut config = json!({"url": url});
        if let Some(token) = &args.push_token {
            config["token"] = json!(token);
        }
        params["configuration"] = json!({"taskPushNotificationConfig": config});
    }
    Ok(params)
}

/// The user message: the text, then the files and data parts, with the context, task and
/// skill asked for.
fn build_message(args: &CallArgs) -> Result<Value, ClientError> {
    let mut parts = vec![json!({"text": args.text})];
    for path in &args.file {
        parts.push(file_part(path)?);
    }
    for data in &args.data {
        let value: Value = serde_json::from_str(data)
            .map_err(|e| ClientError::Usage(format!("--data is not JSON ({e}): {}", preview(data))))?;
        parts.push(json!({"data": value}));
    }
    let mut message = Map::new();
    message.insert("messageId".into(), json!(uuid::Uuid::new_v4().to_string()));
    message.insert("role".into(), json!("ROLE_USER"));
    message.insert("parts".into(), Value::Array(parts));
    if let Some(context) = &args.context {
        message.insert("contextId".into(), json!(context));
    }
    if let Some(task) = &args.task {
        message.insert("taskId".into(), json!(task));
    }
    if let Some(skill) = &args.skill {
        message.insert("metadata".into(), json!({"skill": skill}));
    }
    Ok(Value::Object(message))
}

/// The largest `--file`: far above what a node takes in one request (`body-limit`), so it
/// only keeps a mistaken path (a disk image, a device) from filling the client's memory.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// A raw part with the file's name and a media type guessed from its extension.
fn file_part(path: &Path) -> Result<Value, ClientError> {
    use std::io::Read;
    let failed = |e: std::io::Error| ClientError::Usage(format!("--file {}: {e}", path.display()));
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(failed)?.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(failed)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ClientError::Usage(format!("--file {}: larger than 64 MiB", path.display())));
    }
    let filename = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
    Ok(json!({
        "mediaType": media_type(path, &bytes),
        "raw": base64::engine::general_purpose::STANDARD.encode(bytes),
        "filename": filename,
    }))
}

/// A media type for common extensions. A file with another extension (or none: source
/// code, `README`, `Makefile`) is `text/plain` when its content is UTF-8 text without NUL
/// bytes, so it goes into an agent's prompt; anything else is `application/octet-stream`.
pub fn media_type(path: &Path, content: &[u8]) -> &'static str {
    match media_type_of_extension(path) {
        Some(known) => known,
        None if !content.contains(&0) && std::str::from_utf8(content).is_ok() => "text/plain",
        None => "application/octet-stream",
    }
}

fn media_type_of_extension(path: &Path) -> Option<&'static str> {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match extension.as_str() {
        "txt" | "log" => Some("text/plain"),
        "md" => Some("text/markdown"),
        "csv" => Some("text/csv"),
        "html" | "htm" => Some("text/html"),
        "json" => Some("application/json"),
        "bin" | "exe" | "so" | "o" => Some("application/octet-stream"),
        "yaml" | "yml" => Some("application/yaml"),
        "xml" => Some("application/xml"),
        "pdf" => Some("application/pdf"),
        "zip" => Some("application/zip"),
        "gz" => Some("application/gzip"),
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "svg" => Some("image/svg+xml"),
        "webp" => Some("image/webp"),
        "wav" => Some("audio/wav"),
        "mp3" => Some("audio/mpeg"),
        "mp4" => Some("video/mp4"),
        _ => None,
    }
}

/// The start of a long argument, for an error message.
fn preview(text: &str) -> String {
    let short: String = text.chars().take(40).collect();
    if short.len() < text.len() {
        format!("{short}…")
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_come_from_the_extension() {
        assert_eq!(media_type(Path::new("a/report.PDF"), b"%PDF"), "application/pdf");
        assert_eq!(media_type(Path::new("notes.txt"), b"hi"), "text/plain");
        assert_eq!(media_type(Path::new("blob"), &[0, 159, 146, 150]), "application/octet-stream");
        assert_eq!(media_type(Path::new("src/main.rs"), b"fn main() {}"), "text/plain", "text by content");
        assert_eq!(media_type(Path::new("Makefile"), b"all:\n"), "text/plain");
        assert_eq!(media_type(Path::new("zeros.bin"), b""), "application/octet-stream");
    }

    #[test]
    fn a_file_past_the_limit_is_refused_and_read_no_further() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.bin");
        std::fs::File::create(&big).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
        let error = file_part(&big).unwrap_err().to_string();
        assert!(error.contains("larger than 64 MiB"), "{error}");
        let small = dir.path().join("small.txt");
        std::fs::write(&small, "hi").unwrap();
        assert_eq!(file_part(&small).unwrap()["raw"], "aGk=");
    }
}
