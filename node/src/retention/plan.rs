//! Which tasks a sweep removes and which it expires: a pure function of the store's index
//! entries, the `retention:` config and the time.

use crate::config::RetentionConfig;
use a2ad_protocol::TaskState;
use a2ad_storage::{Owner, TaskEntry};
use std::collections::BTreeMap;

/// What one sweep does.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Terminal tasks to remove, oldest first.
    pub remove: Vec<String>,
    /// Interrupted tasks whose timeout passed: (owner, task id, status time seen), to be
    /// CANCELED if still unchanged.
    pub expire: Vec<(Owner, String, i64)>,
}

/// Decides a sweep. At most `max_removals` tasks are removed (the oldest); the next sweep
/// goes on where this one stopped, so that one sweep never holds the store for long.
pub fn plan(
    entries: impl IntoIterator<Item = TaskEntry>,
    config: &RetentionConfig,
    now_ms: i64,
    max_removals: usize,
) -> Plan {
    let mut planner = Planner::new(config, now_ms);
    entries.into_iter().for_each(|entry| planner.add(entry));
    planner.finish(max_removals)
}

/// Builds a [`Plan`] one index entry at a time, keeping only what it must: the tasks past
/// their age at once, and every terminal task only for tenants with a count limit.
pub struct Planner<'a> {
    config: &'a RetentionConfig,
    now_ms: i64,
    /// Terminal tasks of tenants with `max-tasks`, to rank by age at the end.
    counted: BTreeMap<String, Vec<(i64, String)>>,
    remove: Vec<(i64, String)>,
    expire: Vec<(Owner, String, i64)>,
}

impl<'a> Planner<'a> {
    /// A plan against one clock reading, so every task of a sweep is judged at the same
    /// instant.
    pub fn new(config: &'a RetentionConfig, now_ms: i64) -> Self {
        Planner { config, now_ms, counted: BTreeMap::new(), remove: Vec::new(), expire: Vec::new() }
    }

    /// Judges one task under its tenant's limits: interrupted ones past the timeout are to
    /// expire, terminal ones past their age to go; the rest are counted for `max-tasks`,
    /// which can only be decided once every task was seen.
    pub fn add(&mut self, entry: TaskEntry) {
        let limits = self.config.for_tenant(&entry.owner.tenant);
        let age = self.now_ms.saturating_sub(entry.status_millis);
        if is_interrupted(entry.state) {
            if limits.interrupted_timeout.is_some_and(|t| age >= millis(t)) {
                self.expire.push((entry.owner, entry.task_id, entry.status_millis));
            }
        } else if entry.state.is_terminal() {
            if limits.max_age.is_some_and(|max| age > millis(max)) {
                self.remove.push((entry.status_millis, entry.task_id));
            } else if limits.max_tasks.is_some() {
                self.counted.entry(entry.owner.tenant).or_default().push((entry.status_millis, entry.task_id));
            }
        }
    }

    /// The plan: the oldest removals first, at most `max_removals`, so one sweep stays
    /// bounded and the rest wait for the next.
    pub fn finish(mut self, max_removals: usize) -> Plan {
        for (tenant, mut tasks) in std::mem::take(&mut self.counted) {
            let keep = self.config.for_tenant(&tenant).max_tasks.unwrap_or(usize::MAX);
            // The tasks past their age go anyway; the newest `keep` of the rest stay.
            tasks.sort_unstable_by(|a, b| b.cmp(a));
            self.remove.extend(tasks.into_iter().skip(keep));
        }
        self.remove.sort_unstable();
        Plan { remove: self.remove.into_iter().take(max_removals).map(|(_, id)| id).collect(), expire: self.expire }
    }
}

fn is_interrupted(state: TaskState) -> bool {
    matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

fn millis(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(tenant: &str, id: &str, ms: i64, state: TaskState) -> TaskEntry {
        TaskEntry {
            owner: Owner { tenant: tenant.into(), principal: "p".into() },
            task_id: id.into(),
            status_millis: ms,
            state,
        }
    }

    fn config(yaml: &str) -> RetentionConfig {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn age_and_count_apply_per_tenant_and_running_tasks_stay() {
        let config = config("max-age: 10s\nmax-tasks: 2\ntenants: {big: {max-tasks: never}}\n");
        let now = 100_000;
        let entries = vec![
            entry("t", "old", now - 11_000, TaskState::Completed),
            entry("t", "a", now - 3_000, TaskState::Failed),
            entry("t", "b", now - 2_000, TaskState::Canceled),
            entry("t", "c", now - 1_000, TaskState::Rejected),
            entry("t", "run", now - 50_000, TaskState::Working),
            entry("big", "x", now - 5_000, TaskState::Completed),
            entry("big", "y", now - 4_000, TaskState::Completed),
            entry("big", "z", now - 3_000, TaskState::Completed),
        ];
        let plan = plan(entries, &config, now, 100);
        assert_eq!(plan.remove, vec!["old", "a"], "too old, then over the count (oldest first)");
        assert!(plan.expire.is_empty());
    }

    #[test]
    fn unanswered_interrupted_tasks_expire_after_their_timeout() {
        let config = config("interrupted-timeout: 1m\ntenants: {patient: {interrupted-timeout: never}}\n");
        let now = 1_000_000;
        let entries = vec![
            entry("t", "waiting", now - 61_000, TaskState::InputRequired),
            entry("t", "fresh", now - 1_000, TaskState::AuthRequired),
            entry("patient", "forever", now - 900_000, TaskState::InputRequired),
        ];
        let plan = plan(entries, &config, now, 100);
        let expired: Vec<&str> = plan.expire.iter().map(|(_, id, _)| id.as_str()).collect();
        assert_eq!(expired, ["waiting"]);
    }

    #[test]
    fn a_sweep_removes_at_most_its_quota_oldest_first() {
        let config = RetentionConfig { max_age: Some(Duration::from_secs(1)), ..RetentionConfig::default() };
        let entries = (0..10).map(|i| entry("t", &format!("t{i}"), i, TaskState::Completed));
        assert_eq!(plan(entries, &config, 1_000_000, 3).remove, vec!["t0", "t1", "t2"]);
    }
}
