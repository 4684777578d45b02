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
                params["status"] = json!(state_name(&state)?);
            }
            let listed = endpoint.call("ListTasks", params).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&listed).unwrap_or_default());
            } else {
                let now = chrono::Utc::now();
                print!("{}", format_list(&listed, endpoint.default_skill.as_deref(), now));
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

/// The states `--state` takes, as the node names them after `TASK_STATE_`.
const STATES: [&str; 8] =
    ["submitted", "working", "input-required", "auth-required", "completed", "failed", "canceled", "rejected"];

/// `input-required` → `TASK_STATE_INPUT_REQUIRED`; a full name is kept. Any other value
/// is refused with the list of valid ones.
fn state_name(state: &str) -> Result<String, ClientError> {
    let short =
        state.strip_prefix("TASK_STATE_").map_or(state.to_owned(), |s| s.to_ascii_lowercase().replace('_', "-"));
    let short = short.to_ascii_lowercase();
    if !STATES.contains(&short.as_str()) {
        return Err(ClientError::Usage(format!(
            "--state `{}` is not a task state: one of {}",
            super::render::for_terminal(state, false),
            STATES.join(", ")
        )));
    }
    Ok(format!("TASK_STATE_{}", short.to_ascii_uppercase().replace('-', "_")))
}

/// A header, then one line per task: id, state, agent, age of its last update, context.
/// The agent is the skill its first message named, else the card's first skill (where a
/// context that names none is bound).
fn format_list(listed: &Value, default_skill: Option<&str>, now: chrono::DateTime<chrono::Utc>) -> String {
    let mut out = String::from("ID\tSTATE\tAGENT\tAGE\tCONTEXT\n");
    for task in listed["tasks"].as_array().into_iter().flatten() {
        // One line per task whatever the node sends: no tab, newline or escape sequence.
        let field = |v: &Value| super::render::for_terminal(v.as_str().unwrap_or("-"), false);
        let named = task["history"][0]["metadata"]["skill"].as_str();
        let agent = named.or(default_skill).unwrap_or("-");
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            field(&task["id"]),
            super::render::for_terminal(&short_state(task["status"]["state"].as_str().unwrap_or("?")), false),
            super::render::for_terminal(agent, false),
            age(task["status"]["timestamp"].as_str(), now),
            field(&task["contextId"]),
        ));
    }
    out
}

/// How long ago `timestamp` (RFC 3339) was, in its largest whole unit: `42s`, `5m`, `3h`,
/// `2d`; `-` when there is none.
fn age(timestamp: Option<&str>, now: chrono::DateTime<chrono::Utc>) -> String {
    let Some(then) = timestamp.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()) else { return "-".into() };
    let seconds = (now - then.with_timezone(&chrono::Utc)).num_seconds().max(0);
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_state_names_are_accepted() {
        assert_eq!(state_name("input-required").unwrap(), "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(state_name("TASK_STATE_WORKING").unwrap(), "TASK_STATE_WORKING");
        let refused = state_name("done").unwrap_err().to_string();
        assert!(refused.contains("`done`") && refused.contains("working, input-required"), "{refused}");
        let now = chrono::Utc::now();
        let listed =
            serde_json::json!({"tasks": [{"id": "t\n1\t\u{1b}[2J", "status": {"state": "TASK_STATE_WORKING"}}]});
        assert_eq!(format_list(&listed, None, now), "ID\tSTATE\tAGENT\tAGE\tCONTEXT\nt 1  [2J\tworking\t-\t-\t-\n");
        let earlier = (now - chrono::Duration::seconds(150)).to_rfc3339();
        assert_eq!(age(Some(&earlier), now), "2m");
    }
}
