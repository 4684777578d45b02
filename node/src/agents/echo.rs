//! The `echo` agent: replies with what it was sent.
//!
//! The reply repeats the user's parts as the final status message and as an artifact
//! named `echo`. With `chunk-size` set, the text is streamed in chunks of that many
//! characters (each a WORKING status message and an artifact append), with `chunk-delay`
//! between chunks, so that streaming and cancellation have something to observe. The turn
//! ends in `end-state` (`completed`, or `input-required` for conversational use). The
//! reply's metadata says how many earlier messages of the context the agent was given
//! (`{"echo": {"sessionMessages": n}}`), which shows that a context keeps its session
//! across eviction and restarts.

use a2ad_actors::agent::{Agent, AgentError, AgentEvent, EventSink, TurnEnd, TurnInput};
use a2ad_protocol::{ids, Artifact, Message, Part, TaskState};
use futures_util::future::BoxFuture;
use serde_json::json;
use std::time::Duration;

/// How an echo agent behaves (from its config block).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct EchoSettings {
    #[serde(deserialize_with = "super::fields::end_state", serialize_with = "super::fields::show_end_state")]
    pub end_state: TaskState,
    /// Characters per streamed chunk; 0 sends the reply in one piece.
    pub chunk_size: usize,
    #[serde(deserialize_with = "crate::units::duration", serialize_with = "crate::units::show_duration")]
    pub chunk_delay: Duration,
}

impl Default for EchoSettings {
    fn default() -> Self {
        EchoSettings { end_state: TaskState::Completed, chunk_size: 0, chunk_delay: Duration::ZERO }
    }
}

/// The echo agent.
pub struct EchoAgent {
    settings: EchoSettings,
}

impl EchoAgent {
    /// An echo agent; its settings (end state, chunking) let tests and demos shape a turn.
    pub fn new(settings: EchoSettings) -> Self {
        EchoAgent { settings }
    }
}

impl Agent for EchoAgent {
    fn run(&self, input: TurnInput, events: EventSink) -> BoxFuture<'static, Result<TurnEnd, AgentError>> {
        let settings = self.settings.clone();
        Box::pin(async move {
            let text = input.message.text();
            if settings.chunk_size > 0 {
                stream_chunks(&text, &settings, &events).await?;
            } else {
                pause(settings.chunk_delay).await;
                let artifact = echo_artifact(input.message.parts.clone());
                events.send(AgentEvent::Artifact { artifact, append: false, last_chunk: true }).await?;
            }
            let mut reply = Message::agent_text(ids::new_id(), &input.context_id, Some(&input.task_id), "");
            reply.parts = input.message.parts.clone();
            reply.metadata = Some(
                json!({"echo": {"sessionMessages": input.history.len()}}).as_object().cloned().unwrap_or_default(),
            );
            Ok(TurnEnd::new(settings.end_state, Some(reply)))
        })
    }
}

/// Sends `text` in chunks: each as agent text and as an append to the `echo` artifact.
async fn stream_chunks(text: &str, settings: &EchoSettings, events: &EventSink) -> Result<(), AgentError> {
    let chars: Vec<char> = text.chars().collect();
    let chunks: Vec<String> = chars.chunks(settings.chunk_size).map(|c| c.iter().collect()).collect();
    let count = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        pause(settings.chunk_delay).await;
        events.send(AgentEvent::Text(chunk.clone())).await?;
        let artifact = echo_artifact(vec![Part::text(chunk)]);
        events.send(AgentEvent::Artifact { artifact, append: i > 0, last_chunk: i + 1 == count }).await?;
    }
    Ok(())
}

/// Sleeps, except for a zero delay: the timer wheel rounds even `sleep(0)` up to its next
/// tick (about a millisecond), which would dominate an instant echo.
async fn pause(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

fn echo_artifact(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: "echo".into(),
        name: Some("echo".into()),
        description: None,
        parts,
        metadata: None,
        extensions: Vec::new(),
    }
}
