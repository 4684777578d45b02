//! The jsonl output protocol of the command agent: one event object per line.
//!
//! | `type` | fields | becomes |
//! |---|---|---|
//! | `text` | `text` | agent text: a WORKING status message, kept in the history |
//! | `delta` | `text` | streamed text: a WORKING status message, not kept |
//! | `artifact` | `artifactId`, `name`, one of `text`/`raw` (base64)/`path`/`url`/`data`, `filename`, `mediaType`, `append`, `lastChunk` | a TaskArtifactUpdateEvent (large payloads stored, see [`crate::artifacts`]) |
//! | `reply` | `text` | the turn ends with this message: as the first event a Message-only reply (no task is kept), later the COMPLETED final message |
//! | `final` | `state`, `text` | the turn's end state and message |
//! | `tool` | `status` (started, input_delta, input_complete, completed, failed; `event` is read too), `toolUseId`, `name`, `input`, `result` | `metadata.a2ad.tool` |
//! | `permission` | `toolUseId`, `name`, `decision` (allowed, denied, asked), `reason` | `metadata.a2ad.permission` |
//! | `usage` | `inputTokens`, `outputTokens`, `totalTokens` | `metadata.a2ad.usage` |
//! | `thinking` | `text` | `metadata.a2ad.thinking` when `thinking-exposure` is on, else dropped |
//!
//! A file the program wrote (`path`, relative to its working directory, or a `file://`
//! `url`) is read, within the allowed roots and [`MAX_FILE_ARTIFACT`], and kept like raw
//! bytes: the node's copy outlives the workspace. Other URLs are passed on as they are.
//!
//! The `metadata.a2ad` rows are WORKING status updates without a message. A tool event
//! without a `name` gets the name its `toolUseId` was started with, so every update can
//! be shown on its own. Every tool and
//! permission field is cut to [`FIELD_LIMIT`] characters. A line that is not JSON is agent
//! text; an object of an unknown type is ignored, so programs may carry more than we read.

use super::AgentEnv;
use a2ad_actors::agent::{AgentError, AgentEvent, EventSink, TurnEnd, TurnInput};
use a2ad_protocol::{decode_base64, ids, Artifact, Message, Metadata, Part, PartContent, TaskState};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;

/// The largest file an artifact may name.
pub const MAX_FILE_ARTIFACT: u64 = 25 * 1024 * 1024;

/// The most characters a tool or permission field carries.
pub const FIELD_LIMIT: usize = 4000;

const TOOL_EVENTS: &[&str] = &["started", "input_delta", "input_complete", "completed", "failed"];
const DECISIONS: &[&str] = &["allowed", "denied", "asked"];

/// Reads one turn's events.
pub(crate) struct JsonlReader<'a> {
    env: &'a AgentEnv,
    input: &'a TurnInput,
    events: &'a EventSink,
    /// The program's working directory, for artifact files it names.
    cwd: Option<&'a Path>,
    /// Whether `cwd` is the task's private working directory (which lies in the data dir).
    private: bool,
    /// Tool names by `toolUseId`, from the events that named them.
    tool_names: HashMap<String, Value>,
}

impl<'a> JsonlReader<'a> {
    /// A reader for one turn's output; `cwd` is the workspace relative artifact paths are
    /// read from; `private` when it is the task's private working directory.
    pub fn new(
        env: &'a AgentEnv,
        input: &'a TurnInput,
        events: &'a EventSink,
        cwd: Option<&'a Path>,
        private: bool,
    ) -> Self {
        JsonlReader { env, input, events, cwd, private, tool_names: HashMap::new() }
    }

    /// Handles one line; returns the turn's end if the line named one.
    pub async fn line(&mut self, line: &str) -> Result<Option<TurnEnd>, AgentError> {
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(line) else {
            self.events.send(AgentEvent::Text(line.to_owned())).await?;
            return Ok(None);
        };
        let text = || event.get("text").and_then(Value::as_str).unwrap_or("").to_owned();
        let progress = match event.get("type").and_then(Value::as_str) {
            Some("text") => Some(AgentEvent::Text(text())),
            Some("delta") => Some(AgentEvent::Delta(text())),
            Some("artifact") => Some(self.artifact(&event).await?),
            Some("reply") => {
                let mut end = TurnEnd::new(TaskState::Completed, Some(self.message(&text())));
                end.reply_only = true;
                return Ok(Some(end));
            }
            Some("final") => return self.final_state(&event).map(Some),
            Some("tool") => Some(AgentEvent::Progress(self.tool(&event)?)),
            Some("permission") => Some(AgentEvent::Progress(permission(&event)?)),
            Some("usage") => Some(AgentEvent::Progress(usage(&event))),
            Some("thinking") if self.env.thinking_exposure => {
                Some(AgentEvent::Progress(single("thinking", json!({"text": cut(&text())}))))
            }
            Some("thinking") => None,
            _ => {
                tracing::debug!("ignored a jsonl event of an unknown type");
                None
            }
        };
        if let Some(progress) = progress {
            self.events.send(progress).await?;
        }
        Ok(None)
    }

    /// `metadata.a2ad.tool`, with the name remembered by `toolUseId`.
    fn tool(&mut self, event: &Map<String, Value>) -> Result<Metadata, AgentError> {
        let mut details = tool(event)?;
        let Some(Value::Object(tool)) = details.get_mut("tool") else { return Ok(details) };
        if let Some(Value::String(id)) = tool.get("toolUseId").cloned() {
            match tool.get("name") {
                Some(name) => {
                    self.tool_names.insert(id, name.clone());
                }
                None => {
                    if let Some(name) = self.tool_names.get(&id) {
                        tool.insert("name".into(), name.clone());
                    }
                }
            }
        }
        Ok(details)
    }

    fn message(&self, text: &str) -> Message {
        Message::agent_text(ids::new_id(), &self.input.context_id, Some(&self.input.task_id), text)
    }

    fn final_state(&self, event: &Map<String, Value>) -> Result<TurnEnd, AgentError> {
        let state = match event.get("state").and_then(Value::as_str) {
            Some("completed") | None => TaskState::Completed,
            Some("input-required") => TaskState::InputRequired,
            Some("auth-required") => TaskState::AuthRequired,
            Some("rejected") => TaskState::Rejected,
            Some("failed") => TaskState::Failed,
            Some(other) => return Err(AgentError(format!("the agent named an unknown final state `{other}`"))),
        };
        let message = event.get("text").and_then(Value::as_str).map(|t| self.message(t));
        Ok(TurnEnd::new(state, message))
    }

    async fn artifact(&self, event: &Map<String, Value>) -> Result<AgentEvent, AgentError> {
        let text = |key: &str| event.get(key).and_then(Value::as_str).map(str::to_owned);
        let file = text("path").or_else(|| text("url").filter(|u| u.to_ascii_lowercase().starts_with("file://")));
        let mut filename = text("filename");
        let content = match (event.get("data"), text("text"), text("raw"), file, text("url")) {
            (Some(data), ..) => PartContent::Data(data.clone()),
            (_, Some(t), ..) => PartContent::Text(t),
            (_, _, Some(raw), ..) => PartContent::Raw(
                decode_base64(&raw).ok_or_else(|| AgentError("an artifact's `raw` is not valid base64".into()))?,
            ),
            (_, _, _, Some(file), _) => {
                let (bytes, name) = self.produced_file(&file).await?;
                filename = filename.or(name);
                PartContent::Raw(bytes)
            }
            (.., Some(url)) => PartContent::Url(url),
            _ => return Err(AgentError("an artifact needs one of `text`, `raw`, `path`, `url` or `data`".into())),
        };
        let part = Part { content, metadata: None, filename, media_type: text("mediaType") };
        let artifact = Artifact {
            artifact_id: text("artifactId").unwrap_or_else(|| "output".into()),
            name: text("name"),
            description: text("description"),
            parts: vec![part],
            metadata: None,
            extensions: Vec::new(),
        };
        let artifact =
            self.env.artifacts.keep(&self.input.task_id, artifact).await.map_err(|e| AgentError(e.to_string()))?;
        let flag = |key: &str| event.get(key).and_then(Value::as_bool).unwrap_or(false);
        Ok(AgentEvent::Artifact { artifact, append: flag("append"), last_chunk: flag("lastChunk") })
    }
}

impl JsonlReader<'_> {
    /// The bytes and file name of a file the program wrote, named by a path (relative to
    /// its working directory) or a `file://` URL; it must lie in the caller's roots or in
    /// the directory the program ran in (the caller's workspace, the agent's `cwd` the
    /// operator set, or the task's private working directory), and never elsewhere in the
    /// data dir.
    async fn produced_file(&self, named: &str) -> Result<(Vec<u8>, Option<String>), AgentError> {
        let path = match named.strip_prefix("file://") {
            Some(_) => reqwest::Url::parse(named)
                .ok()
                .and_then(|u| u.to_file_path().ok())
                .ok_or_else(|| AgentError(format!("the artifact file `{named}` is not a valid file:// URL")))?,
            None => match self.cwd {
                Some(cwd) => cwd.join(named),
                None => std::path::absolute(named).map_err(|_| AgentError(format!("`{named}` is not a valid path")))?,
            },
        };
        let (policy, owner) = (self.env.roots.clone(), self.input.owner.clone());
        let (cwd, private) = (self.cwd.map(Path::to_owned), self.private);
        let shown = named.to_owned();
        let read = move || -> Result<(Vec<u8>, Option<String>), String> {
            let mut roots = policy.for_owner(&owner);
            if let Some(cwd) = cwd.and_then(|cwd| cwd.canonicalize().ok()) {
                roots = if private { roots.with_private_dir(&cwd) } else { roots.with_root(&cwd) };
            }
            let bytes = roots.read_file(&path, None, &shown, MAX_FILE_ARTIFACT).map_err(|e| e.to_string())?;
            Ok((bytes, path.file_name().map(|n| n.to_string_lossy().into_owned())))
        };
        tokio::task::spawn_blocking(read)
            .await
            .map_err(|_| AgentError("the artifact file could not be read".into()))?
            .map_err(AgentError)
    }
}

fn single(key: &str, value: Value) -> Metadata {
    Map::from_iter([(key.to_owned(), value)])
}

/// `value` cut to [`FIELD_LIMIT`] characters: a string directly, other JSON when its text
/// is longer than the limit (then it becomes the cut text).
fn cut_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(cut(s)),
        other => {
            let text = other.to_string();
            if text.chars().count() > FIELD_LIMIT {
                Value::String(cut(&text))
            } else {
                other.clone()
            }
        }
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(FIELD_LIMIT) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// Copies the listed fields that are present, each cut.
fn fields(event: &Map<String, Value>, names: &[&str]) -> Map<String, Value> {
    names.iter().filter_map(|name| event.get(*name).map(|v| ((*name).to_owned(), cut_value(v)))).collect()
}

/// `metadata.a2ad.tool`: `status` (the kind of tool event) and the other fields, cut.
fn tool(event: &Map<String, Value>) -> Result<Metadata, AgentError> {
    let status = event.get("status").or_else(|| event.get("event")).and_then(Value::as_str).unwrap_or("");
    if !TOOL_EVENTS.contains(&status) {
        return Err(AgentError(format!("a tool event needs `status`, one of {}", TOOL_EVENTS.join(", "))));
    }
    let mut details = fields(event, &["toolUseId", "name", "input", "result"]);
    details.insert("status".into(), Value::String(status.to_owned()));
    Ok(single("tool", Value::Object(details)))
}

fn permission(event: &Map<String, Value>) -> Result<Metadata, AgentError> {
    let decision = event.get("decision").and_then(Value::as_str).unwrap_or("");
    if !DECISIONS.contains(&decision) {
        return Err(AgentError(format!("a permission event needs `decision`, one of {}", DECISIONS.join(", "))));
    }
    Ok(single("permission", Value::Object(fields(event, &["toolUseId", "name", "decision", "reason"]))))
}

fn usage(event: &Map<String, Value>) -> Metadata {
    let count = |key: &str| event.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (count("inputTokens"), count("outputTokens"));
    let total = event.get("totalTokens").and_then(Value::as_u64).unwrap_or(input.saturating_add(output));
    single("usage", json!({"inputTokens": input, "outputTokens": output, "totalTokens": total}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_fields_are_cut_to_the_limit() {
        let long = "é".repeat(FIELD_LIMIT + 10);
        let event = json!({"status": "completed", "toolUseId": "t1", "result": long, "input": {"q": "x".repeat(5000)}});
        let meta = tool(event.as_object().unwrap()).unwrap();
        assert_eq!(meta["tool"]["result"].as_str().unwrap().chars().count(), FIELD_LIMIT);
        assert_eq!(meta["tool"]["input"].as_str().unwrap().chars().count(), FIELD_LIMIT);
        assert_eq!(meta["tool"]["toolUseId"], "t1");
        assert_eq!(meta["tool"]["status"], "completed");
        assert!(tool(json!({"event": "exploded"}).as_object().unwrap()).is_err());
        let huge = usage(json!({"inputTokens": u64::MAX, "outputTokens": 2}).as_object().unwrap());
        assert_eq!(huge["usage"]["totalTokens"], u64::MAX, "no overflow panic on a program's numbers");
    }
}
