//! Tasks across tenants: `GET /admin/v1/tasks` (filtered, paginated), `GET
//! /admin/v1/tasks/{id}` (snapshot, event log, push configs without secrets, dead
//! deliveries) and `POST /admin/v1/tasks/{id}/cancel`. Reads use [`Scope::Node`]; the
//! cancel goes to the task's context actor on behalf of the task's owner, exactly as the
//! owner's own `CancelTask` would, so a cancel and a follow-up message cannot race.

use super::{AdminError, Operator, Role};
use crate::core::Core;
use a2ad_protocol::{CancelTaskRequest, Task, TaskState};
use a2ad_storage::TaskStoreExt;
use a2ad_storage::{decode_page_token, encode_page_token, Cursor, Scope, TaskEntry, TaskRecord};
use serde::Serialize;
use serde_json::Value;

/// The most tasks on one page, and the default.
pub const MAX_PAGE_SIZE: usize = 200;
const DEFAULT_PAGE_SIZE: usize = 50;
/// The most events one task's detail carries (the newest are kept by `event-retention`).
const MAX_EVENTS: usize = 10_000;

/// `GET /admin/v1/tasks`'s query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskFilter {
    pub tenant: Option<String>,
    pub state: Option<TaskState>,
    pub context_id: Option<String>,
    pub agent: Option<String>,
    /// Text to find (lower-cased): a substring, so also a prefix, of the task id, the
    /// context id, the tenant, the agent or the first user message's text.
    pub q: Option<String>,
    /// Status time at or after, in milliseconds.
    pub since_ms: Option<i64>,
    /// Status time before, in milliseconds.
    pub until_ms: Option<i64>,
    pub page_size: usize,
    pub cursor: Option<Cursor>,
}

impl TaskFilter {
    /// Reads the query's pairs (`tenant`, `state` short or long, `contextId`, `agent`,
    /// `since`/`until` as RFC 3339 or milliseconds, `pageSize`, `pageToken`); a bad or
    /// unknown one is named.
    pub fn from_query(pairs: &[(String, String)]) -> Result<TaskFilter, AdminError> {
        let mut filter = TaskFilter { page_size: DEFAULT_PAGE_SIZE, ..TaskFilter::default() };
        let invalid = |field: &'static str, problem: &str| AdminError::Invalid { field, problem: problem.into() };
        for (key, value) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
            match key.as_str() {
                "tenant" => filter.tenant = Some(value.clone()),
                "contextId" => filter.context_id = Some(value.clone()),
                "agent" => filter.agent = Some(value.clone()),
                "q" => filter.q = Some(value.to_lowercase()),
                "state" => {
                    filter.state = Some(parse_state(value).ok_or_else(|| invalid("state", "is not a task state"))?)
                }
                "since" => filter.since_ms = Some(parse_time(value).ok_or_else(|| invalid("since", TIME_FORMS))?),
                "until" => filter.until_ms = Some(parse_time(value).ok_or_else(|| invalid("until", TIME_FORMS))?),
                "pageSize" => {
                    filter.page_size = value
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_PAGE_SIZE).contains(n))
                        .ok_or_else(|| invalid("pageSize", "must be 1 to 200"))?
                }
                "pageToken" => {
                    filter.cursor =
                        Some(decode_page_token(value).ok_or_else(|| invalid("pageToken", "is not a page token"))?)
                }
                _ => {
                    return Err(AdminError::Invalid {
                        field: "query",
                        problem: format!("has an unknown parameter `{key}`"),
                    })
                }
            }
        }
        Ok(filter)
    }

    fn keeps_entry(&self, entry: &TaskEntry) -> bool {
        self.tenant.as_ref().is_none_or(|t| *t == entry.owner.tenant)
            && self.state.is_none_or(|s| s == entry.state)
            && self.since_ms.is_none_or(|t| entry.status_millis >= t)
            && self.until_ms.is_none_or(|t| entry.status_millis < t)
            && self
                .cursor
                .as_ref()
                .is_none_or(|c| (entry.status_millis, entry.task_id.as_str()) < (c.ts, c.id.as_str()))
    }

    fn keeps_record(&self, record: &TaskRecord) -> bool {
        self.context_id.as_ref().is_none_or(|c| *c == record.task.context_id)
            && self.agent.as_ref().is_none_or(|a| *a == record.agent)
            && self.q.as_ref().is_none_or(|q| finds(q, record))
    }
}

/// Whether `q` (lower-cased) is in the task's id, context id, tenant, agent, or the text
/// of its first user message.
fn finds(q: &str, record: &TaskRecord) -> bool {
    let task = &record.task;
    let first_user = task.history.iter().find(|m| m.role == a2ad_protocol::Role::User).map(texts).unwrap_or_default();
    [task.id.as_str(), task.context_id.as_str(), record.owner.tenant.as_str(), record.agent.as_str(), &first_user]
        .iter()
        .any(|field| field.to_lowercase().contains(q))
}

const TIME_FORMS: &str = "must be an RFC 3339 time or milliseconds since the epoch";

fn parse_state(value: &str) -> Option<TaskState> {
    TaskState::from_name(value)
        .or_else(|| TaskState::from_name(&format!("TASK_STATE_{}", value.to_ascii_uppercase().replace('-', "_"))))
}

fn parse_time(value: &str) -> Option<i64> {
    value.parse::<i64>().ok().or_else(|| chrono::DateTime::parse_from_rfc3339(value).ok().map(|t| t.timestamp_millis()))
}

/// One task in a list.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRow {
    pub id: String,
    pub tenant: String,
    pub principal: String,
    pub context_id: String,
    pub agent: String,
    pub state: String,
    pub updated_ms: i64,
    pub last_event_seq: u64,
    /// The start of the task's last message's text, as the tenant wrote it (the console
    /// shows it as text).
    pub preview: String,
    /// A failed or rejected task's reason: the first line of its status message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The correlation id a failed turn's status message carries
    /// (`metadata.a2ad.correlationId`), which finds its cause in the node's log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

/// One page of tasks, newest status first.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskList {
    pub tasks: Vec<TaskRow>,
    pub next_page_token: Option<String>,
}

/// A page of tasks across tenants. Blocking (an index scan, then the page's records):
/// the edge runs it on the blocking pool. The index filters (tenant, state, time) cost no
/// record read; `contextId`, `agent` and `q` read each candidate.
pub fn list(core: &Core, filter: &TaskFilter) -> Result<TaskList, AdminError> {
    let store = &core.runtime().store;
    let mut entries = Vec::new();
    store.visit_tasks(&mut |entry| {
        if filter.keeps_entry(&entry) {
            entries.push((entry.status_millis, entry.task_id));
        }
    })?;
    entries.sort_unstable_by(|a, b| b.cmp(a));
    let mut tasks = Vec::new();
    let mut next_page_token = None;
    for (millis, id) in entries {
        let Some(record) = store.get_task(Scope::Node, &id)? else { continue };
        if !filter.keeps_record(&record) {
            continue;
        }
        if tasks.len() == filter.page_size {
            let last: &TaskRow = &tasks[tasks.len() - 1];
            next_page_token = Some(encode_page_token(&Cursor { ts: last.updated_ms, id: last.id.clone() }));
            break;
        }
        tasks.push(row(record, millis));
    }
    Ok(TaskList { tasks, next_page_token })
}

fn row(record: TaskRecord, updated_ms: i64) -> TaskRow {
    let preview = last_text(&record.task).chars().take(120).collect();
    let failed = matches!(record.task.status.state, TaskState::Failed | TaskState::Rejected);
    let status_message = record.task.status.message.as_ref().filter(|_| failed);
    let error = status_message.map(|m| texts(m).lines().next().unwrap_or("").chars().take(200).collect());
    let correlation_id = status_message
        .and_then(|m| m.metadata.as_ref()?.get("a2ad")?.get("correlationId")?.as_str().map(str::to_owned));
    TaskRow {
        id: record.task.id,
        tenant: record.owner.tenant,
        principal: record.owner.principal,
        context_id: record.task.context_id,
        agent: record.agent,
        state: super::stats::short_state(record.task.status.state.as_str()),
        updated_ms,
        last_event_seq: record.last_event_seq,
        preview,
        error,
        correlation_id,
    }
}

/// The text of the task's latest message: its status message, else its last history entry.
fn last_text(task: &Task) -> String {
    task.status.message.as_ref().or(task.history.last()).map(texts).unwrap_or_default()
}

/// A message's text parts, joined by spaces.
fn texts(message: &a2ad_protocol::Message) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            a2ad_protocol::PartContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join(" ")
}

/// One task as the console's Task page shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskDetail {
    pub tenant: String,
    pub principal: String,
    pub agent: String,
    pub last_event_seq: u64,
    /// The snapshot: status, history, artifacts.
    pub task: Task,
    /// Each artifact part's size in bytes, by artifact id, in part order
    /// ([`super::download::part_sizes`]); `null` for a link to elsewhere.
    pub artifact_sizes: std::collections::BTreeMap<String, Vec<Option<u64>>>,
    /// The event log, oldest first: `{seq, event}` with the `StreamResponse` as logged.
    pub events: Vec<Value>,
    /// The task's push configs, their token and credentials left out.
    pub push_configs: Vec<Value>,
    /// The deliveries of this task that ended in the dead letters, with their attempts
    /// and why (durable).
    pub dead_deliveries: Vec<super::dead::DeadLetter>,
    /// Each delivery attempt of this task and its outcome, oldest first: kept in memory,
    /// the newest 64 of each recent task, since the node started
    /// ([`a2ad_actors::push::attempts`]).
    pub deliveries: Vec<a2ad_actors::push::DeliveryAttempt>,
}

/// One task, with its event log, push configs and dead deliveries. Blocking.
pub fn detail(core: &Core, task_id: &str) -> Result<TaskDetail, AdminError> {
    let rt = core.runtime();
    let record =
        rt.store.get_task(Scope::Node, task_id)?.ok_or_else(|| a2ad_protocol::A2aError::task_not_found(task_id))?;
    let events = rt
        .store
        .events_after(Scope::Node, task_id, 0, MAX_EVENTS)?
        .into_iter()
        .map(|e| serde_json::json!({"seq": e.seq, "event": serde_json::from_str::<Value>(&e.json).unwrap_or(Value::Null)}))
        .collect();
    let (push_configs, dead_deliveries, deliveries) = match &rt.push {
        Some(push) => {
            let configs =
                push.configs.list(Scope::Node, task_id)?.into_iter().map(|c| without_secrets(c.config)).collect();
            let dead = super::dead::list(core)?.into_iter().filter(|d| d.task_id == task_id).collect();
            (configs, dead, push.deliveries.of_task(task_id))
        }
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    Ok(TaskDetail {
        artifact_sizes: super::download::part_sizes(&rt.data_dir, &record.task),
        tenant: record.owner.tenant,
        principal: record.owner.principal,
        agent: record.agent,
        last_event_seq: record.last_event_seq,
        task: record.task,
        events,
        push_configs,
        dead_deliveries,
        deliveries,
    })
}

/// A push config as the admin API shows it: its URL and ids, and only whether it has a
/// token or credentials (and the scheme), never their values.
fn without_secrets(config: a2ad_protocol::TaskPushNotificationConfig) -> Value {
    let auth = config.authentication.as_ref();
    serde_json::json!({
        "id": config.id,
        "url": config.url,
        "hasToken": config.token.is_some(),
        "authScheme": auth.map(|a| a.scheme.clone()),
        "hasCredentials": auth.is_some_and(|a| a.credentials.is_some()),
    })
}

/// Cancels a task of any tenant (operator role), as its owner's `CancelTask` would.
pub async fn cancel(core: &Core, operator: &Operator, task_id: &str) -> Result<Task, AdminError> {
    super::require(operator, Role::Operator)?;
    // Through the seam: on the shared store a Redis read this worker does not wait on.
    let read = core.runtime().store.read_task(Scope::Node, task_id).await;
    let record = read?.ok_or_else(|| a2ad_protocol::A2aError::task_not_found(task_id))?;
    let request = CancelTaskRequest { tenant: None, id: task_id.to_owned(), metadata: None };
    let result = core.cancel_task(&record.owner, request).await;
    operator.log_action("cancel", task_id, if result.is_ok() { "canceled" } else { "refused" });
    Ok(result?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_filter_reads_short_or_long_states_and_times_and_names_what_is_wrong() {
        let filter =
            TaskFilter::from_query(&pairs(&[("state", "input-required"), ("since", "1000"), ("tenant", "acme")]))
                .unwrap();
        assert_eq!(filter.state, Some(TaskState::InputRequired));
        assert_eq!((filter.since_ms, filter.tenant.as_deref()), (Some(1000), Some("acme")));
        let long =
            TaskFilter::from_query(&pairs(&[("state", "TASK_STATE_WORKING"), ("until", "2026-01-01T00:00:00Z")]));
        assert_eq!(long.unwrap().until_ms, Some(1_767_225_600_000));
        for (bad, field) in [
            (("state", "sleeping"), "state"),
            (("pageSize", "0"), "pageSize"),
            (("pageSize", "201"), "pageSize"),
            (("since", "yesterday"), "since"),
            (("pageToken", "%%"), "pageToken"),
            (("owner", "x"), "query"),
        ] {
            let error = TaskFilter::from_query(&pairs(&[bad])).unwrap_err();
            assert!(matches!(&error, AdminError::Invalid { field: f, .. } if *f == field), "{bad:?}: {error}");
        }
    }
}
