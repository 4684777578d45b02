//! The 0.1 `tasks/sendSubscribe` stream's frames ([`super::Envelope::V01`]): `event: task`
//! with the whole task after every event, `event: error` with a 0.1 JSON-RPC error, and
//! `event: heartbeat` when the window ends first. A child of `stream` (not of `v01`,
//! which answers the 0.1 methods) so that framing depends on nothing that streams.

use super::Frame;
use a2ad_protocol::dialect::v01;
use a2ad_protocol::{A2aError, StreamResponse, Task};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The frame of an error inside a `tasks/sendSubscribe` stream.
pub(super) fn error_frame(id: &Value, error: &A2aError) -> Frame {
    Frame { seq: None, event: Some("error"), data: v01::error_response(id, error, true).to_string() }
}

/// Where a `tasks/sendSubscribe` stream stands.
struct Progress {
    items: BoxStream<'static, Result<a2ad_storage::LoggedEvent, A2aError>>,
    task: Option<Task>,
    done: bool,
}

/// The frames of a `tasks/sendSubscribe` stream: the whole task after every event, an
/// error, or a heartbeat when `window` ends first.
pub(super) fn frames(
    items: BoxStream<'static, Result<a2ad_storage::LoggedEvent, A2aError>>,
    id: Value,
    window: Duration,
    owner: Map<String, Value>,
) -> BoxStream<'static, Frame> {
    let deadline = tokio::time::Instant::now() + window;
    stream::unfold(Progress { items, task: None, done: false }, move |mut progress| {
        let (id, owner) = (id.clone(), owner.clone());
        async move {
            while !progress.done {
                let item = match tokio::time::timeout_at(deadline, progress.items.next()).await {
                    Err(_) => {
                        progress.done = true;
                        return Some((
                            Frame { seq: None, event: Some("heartbeat"), data: r#"{"ok":true}"#.into() },
                            progress,
                        ));
                    }
                    Ok(None) => return None,
                    Ok(Some(item)) => item,
                };
                let event = match item {
                    Ok(event) => event,
                    Err(error) => {
                        progress.done = true;
                        return Some((error_frame(&id, &error), progress));
                    }
                };
                if let Some(task) = apply(&mut progress.task, &event.json) {
                    let result = v01::task_to_v01(task, &owner);
                    let data = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                    return Some((Frame { seq: Some(event.seq), event: Some("task"), data }, progress));
                }
            }
            None
        }
    })
    .boxed()
}

/// Applies one stored event to the task being followed; the task, when it changed.
fn apply<'a>(task: &'a mut Option<Task>, event_json: &str) -> Option<&'a Task> {
    match serde_json::from_str::<StreamResponse>(event_json).ok()? {
        StreamResponse::Task(t) => *task = Some(t),
        StreamResponse::StatusUpdate(update) => task.as_mut()?.status = update.status,
        StreamResponse::ArtifactUpdate(update) => task.as_mut()?.apply_artifact(update.artifact, update.append),
        StreamResponse::Message(_) => return None,
    }
    task.as_ref()
}
