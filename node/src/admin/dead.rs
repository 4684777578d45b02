//! Dead letters: `GET /admin/v1/push/dead`, `POST /admin/v1/push/dead/retry` and
//! `POST /admin/v1/push/dead/purge`. The same queue calls as the offline `a2ad push dead`
//! ([`JobQueue::dead`], [`JobQueue::revive`], [`JobQueue::purge`]), on the running node's
//! queue: a revived job is due at once and the push worker delivers it.

use super::{AdminError, Operator, Role};
use crate::core::Core;
use a2ad_storage::{DeadJob, JobQueue, Scope};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One dead job as the admin API shows it (its body, the event, is left out: the task's
/// event log has it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
    /// The job id (`task:seq:config`), what retry and purge name.
    pub id: String,
    pub task_id: String,
    pub config_id: String,
    pub event_seq: u64,
    pub attempts: u32,
    pub reason: String,
    pub died_ms: i64,
    /// The `host:port` of the push config's URL, never its path or query (they may hold a
    /// secret): kept with the job at its last attempt, else read from the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The HTTP status of the last response that came back, if any did (a refused URL
    /// or network errors have none; jobs buried by older versions neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<u16>,
    /// That status's standard reason phrase (`Not Found`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status_text: Option<String>,
}

impl From<&DeadJob> for DeadLetter {
    fn from(dead: &DeadJob) -> DeadLetter {
        DeadLetter {
            id: dead.job.id(),
            task_id: dead.job.task_id.clone(),
            config_id: dead.job.config_id.clone(),
            event_seq: dead.job.event_seq,
            attempts: dead.job.attempts,
            reason: dead.reason.clone(),
            died_ms: dead.died_ms,
            host: dead.job.host.clone(),
            last_status: dead.job.last_status,
            last_status_text: dead.job.last_status.and_then(status_text),
        }
    }
}

/// `Not Found` for 404; `None` for a status without a standard phrase.
fn status_text(status: u16) -> Option<String> {
    reqwest::StatusCode::from_u16(status).ok()?.canonical_reason().map(str::to_owned)
}

/// The queue push delivers from, or PushOff.
fn queue(core: &Core) -> Result<Arc<dyn JobQueue>, AdminError> {
    core.runtime().push.as_ref().map(|p| Arc::clone(&p.queue)).ok_or(AdminError::PushOff)
}

/// Every dead letter. Blocking (the queue may be sled or Redis). A job buried without
/// its host (before its first attempt, or by an older version) takes it from its push
/// config, when that is still there.
pub fn list(core: &Core) -> Result<Vec<DeadLetter>, AdminError> {
    let mut dead: Vec<DeadLetter> = queue(core)?.dead()?.iter().map(DeadLetter::from).collect();
    let Some(push) = core.runtime().push.as_ref() else { return Ok(dead) };
    for letter in dead.iter_mut().filter(|d| d.host.is_none()) {
        let config = push.configs.get(Scope::Node, &letter.task_id, &letter.config_id)?;
        letter.host = config.map(|c| a2ad_actors::push::lanes::destination_of(&c.config.url));
    }
    Ok(dead)
}

/// What `retry` and `purge` act on: one job by id, or all (`{"all": true}`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeadSelection {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub all: bool,
}

impl DeadSelection {
    /// The id to act on (`None`: all), or what is wrong with the selection.
    fn target(&self) -> Result<Option<&str>, AdminError> {
        match (&self.id, self.all) {
            (Some(id), false) if !id.is_empty() => Ok(Some(id)),
            (None, true) => Ok(None),
            _ => Err(AdminError::Invalid { field: "id", problem: "name one job id, or send {\"all\": true}".into() }),
        }
    }
}

/// How many jobs an action moved.
#[derive(Debug, Serialize, PartialEq)]
pub struct Moved {
    pub count: usize,
}

/// Queues dead jobs again, due now with fresh attempts (operator role). Blocking.
pub fn retry(core: &Core, operator: &Operator, selection: &DeadSelection) -> Result<Moved, AdminError> {
    act(core, operator, selection, "retry", |queue, id| queue.revive(id, chrono::Utc::now().timestamp_millis()))
}

/// Drops dead jobs for good (operator role). Blocking.
pub fn purge(core: &Core, operator: &Operator, selection: &DeadSelection) -> Result<Moved, AdminError> {
    act(core, operator, selection, "purge", |queue, id| queue.purge(id))
}

fn act(
    core: &Core,
    operator: &Operator,
    selection: &DeadSelection,
    action: &str,
    apply: impl Fn(&dyn JobQueue, Option<&str>) -> Result<usize, a2ad_storage::StoreError>,
) -> Result<Moved, AdminError> {
    super::require(operator, Role::Operator)?;
    let target = selection.target()?;
    let queue = queue(core)?;
    let count = apply(queue.as_ref(), target)?;
    operator.log_action(action, target.unwrap_or("all dead letters"), &format!("{count} job(s)"));
    match target {
        Some(id) if count == 0 => Err(AdminError::NoDeadJob(id.to_owned())),
        _ => Ok(Moved { count }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_names_one_job_or_all_never_both_or_neither() {
        let one = DeadSelection { id: Some("t:1:c".into()), all: false };
        assert_eq!(one.target().unwrap(), Some("t:1:c"));
        assert_eq!(DeadSelection { id: None, all: true }.target().unwrap(), None);
        for bad in [DeadSelection { id: None, all: false }, DeadSelection { id: Some("x".into()), all: true }] {
            assert!(matches!(bad.target(), Err(AdminError::Invalid { field: "id", .. })));
        }
        assert!(serde_json::from_str::<DeadSelection>(r#"{"ids": []}"#).is_err(), "unknown fields are refused");
    }

    #[test]
    fn a_dead_letter_shows_the_last_status_with_its_phrase_and_the_host() {
        let mut job = a2ad_storage::PushJob::new("t", "c", 3, "{}".into(), 1);
        job.last_status = Some(404);
        job.host = Some("hooks.example:443".into());
        let letter = DeadLetter::from(&DeadJob { job, reason: "HTTP 404".into(), died_ms: 2 });
        assert_eq!(letter.last_status_text.as_deref(), Some("Not Found"));
        assert_eq!(letter.host.as_deref(), Some("hooks.example:443"));
        let older: DeadLetter = serde_json::from_str(
            r#"{"id":"t:3:c","taskId":"t","configId":"c","eventSeq":3,"attempts":1,"reason":"x","diedMs":2}"#,
        )
        .unwrap();
        assert_eq!((older.host, older.last_status), (None, None), "an older node's answer still reads");
    }
}
