//! Dead letters: `GET /admin/v1/push/dead`, `POST /admin/v1/push/dead/retry` and
//! `POST /admin/v1/push/dead/purge`. The same queue calls as the offline `a2ad push dead`
//! ([`JobQueue::dead`], [`JobQueue::revive`], [`JobQueue::purge`]), on the running node's
//! queue: a revived job is due at once and the push worker delivers it.

use super::{AdminError, Operator, Role};
use crate::core::Core;
use a2ad_storage::{DeadJob, JobQueue};
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
        }
    }
}

/// The queue push delivers from, or PushOff.
fn queue(core: &Core) -> Result<Arc<dyn JobQueue>, AdminError> {
    core.runtime().push.as_ref().map(|p| Arc::clone(&p.queue)).ok_or(AdminError::PushOff)
}

/// Every dead letter. Blocking (the queue may be sled or Redis).
pub fn list(core: &Core) -> Result<Vec<DeadLetter>, AdminError> {
    Ok(queue(core)?.dead()?.iter().map(DeadLetter::from).collect())
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
}
