//! `a2ad tasks list|get|cancel|watch`: the caller's tasks on a node.

use super::call::{follow, FollowUntil};
use super::render::Renderer;
use super::transport::Endpoint;
use super::{exit, short_state, ClientError, TasksCommand};
use serde_json::{json, Value};

/// Runs the command; the process exit code.
pub async fn run(command: TasksCommand) -> Result<i32, ClientError> {
    match command {
        TasksCommand::List { url, context, state, limit, json, auth } => {
            let endpoint = Endpoint::discover(&url, &auth).await?;
            let mut params = json!({"pageSize": limit});
            if let Some(context) = context {
                params["contextId"] = json!(context);
            }
            if let Some(state) = state {
                params["status"] = json!(state_name(&state));
            }
            let listed = endpoint.call("ListTasks", params).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&listed).unwrap_or_default());
            } else {
                print!("{}", format_list(&listed));
            }
            Ok(exit::COMPLETED)
        }
        TasksCommand::Get { url, id, history, auth } => {
            let endpoint = Endpoint::discover(&url, &auth).await?;
            let mut params = json!({"id": id});
            if let Some(history) = history {
                params["historyLength"] = json!(history);
            }
            let task = endpoint.call("GetTask", params).await?;
            println!("{}", serde_json::to_string_pretty(&task).unwrap_or_default());
            Ok(exit::COMPLETED)
        }
        TasksCommand::Cancel { url, id, auth } => {
            let endpoint = Endpoint::discover(&url, &auth).await?;
            let task = endpoint.call("CancelTask", json!({"id": id})).await?;
            println!("{id}\t{}", short_state(task["status"]["state"].as_str().unwrap_or("?")));
            Ok(exit::COMPLETED)
        }
        TasksCommand::Watch { url, id, json, idle_timeout, auth } => {
            let endpoint = Endpoint::discover(&url, &auth).await?;
            let mut renderer = Renderer::new(json);
            renderer.task_id = Some(id.clone());
            match endpoint.stream("SubscribeToTask", json!({"id": id})).await {
                Ok(stream) => {
                    let stream = stream.with_idle_timeout(idle_timeout);
                    follow(&endpoint, stream, &mut renderer, FollowUntil::TaskEnd).await
                }
                Err(refused) => show_finished(&endpoint, &id, &mut renderer, refused).await,
            }
        }
    }
}

/// `tasks watch` on a task that already ended (the node refuses to subscribe to it):
/// shows it as a stream would have, and exits by how it ended. Any other refusal stands.
async fn show_finished(
    endpoint: &Endpoint,
    id: &str,
    renderer: &mut Renderer,
    refused: ClientError,
) -> Result<i32, ClientError> {
    let Ok(task) = endpoint.call("GetTask", json!({"id": id})).await else {
        return Err(refused);
    };
    let state = task["status"]["state"].as_str().unwrap_or_default().to_owned();
    let terminal = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"];
    if !terminal.contains(&state.as_str()) {
        return Err(refused);
    }
    renderer.snapshot(&json!({"task": task}));
    renderer.finish();
    Ok(super::exit::for_state(&state))
}

/// `input-required` → `TASK_STATE_INPUT_REQUIRED`; a full name is kept.
fn state_name(state: &str) -> String {
    if state.starts_with("TASK_STATE_") {
        return state.to_owned();
    }
    format!("TASK_STATE_{}", state.to_ascii_uppercase().replace('-', "_"))
}

/// One line per task: id, state, context, last update.
fn format_list(listed: &Value) -> String {
    let mut out = String::new();
    for task in listed["tasks"].as_array().into_iter().flatten() {
        // One line per task whatever the node sends: no tab, newline or escape sequence.
        let field = |v: &Value| super::render::for_terminal(v.as_str().unwrap_or("-"), false);
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            field(&task["id"]),
            super::render::for_terminal(&short_state(task["status"]["state"].as_str().unwrap_or("?")), false),
            field(&task["contextId"]),
            field(&task["status"]["timestamp"]),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_state_names_are_accepted() {
        assert_eq!(state_name("input-required"), "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(state_name("TASK_STATE_WORKING"), "TASK_STATE_WORKING");
        let listed =
            serde_json::json!({"tasks": [{"id": "t\n1\t\u{1b}[2J", "status": {"state": "TASK_STATE_WORKING"}}]});
        assert_eq!(format_list(&listed), "t 1  [2J\tworking\t-\t-\n");
    }
}
