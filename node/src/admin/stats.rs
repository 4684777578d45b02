//! What the store holds and how much disk it takes: `a2ad admin stats` reads it from a
//! stopped node's data dir, the admin API's status from the running node's store. One
//! count for both.

use a2ad_storage::{sled_files_size, tree_size, StoreError, TaskStore};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The report, as printed (text) or serialized (`--json`, the admin API).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StoreStats {
    /// Bytes of the task store's files (sled).
    pub store_bytes: u64,
    /// Bytes of artifact files (`<data-dir>/artifacts`).
    pub artifact_bytes: u64,
    /// Tasks with artifact files.
    pub artifact_dirs: u64,
    /// Tasks by tenant, then by state (`completed`, `input-required`, ...).
    pub tasks: BTreeMap<String, BTreeMap<String, u64>>,
    /// Tasks of every tenant and state, the sum of `tasks`.
    pub total_tasks: u64,
    /// Events kept in the task event logs.
    pub events: u64,
    /// Contexts with a stored session, and their messages.
    pub sessions: u64,
    /// Messages in those sessions: what an agent replays, so what grows without retention.
    pub session_messages: u64,
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`.
pub fn short_state(state: &str) -> String {
    state.strip_prefix("TASK_STATE_").unwrap_or(state).to_ascii_lowercase().replace('_', "-")
}

/// Counts what `store` holds (an index scan and the store's counts) and sizes the data
/// dir's files. Blocking: run it on the blocking pool in a running node.
pub fn collect(store: &dyn TaskStore, data_dir: &Path) -> Result<StoreStats, StoreError> {
    let mut tasks: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut total_tasks = 0;
    store.visit_tasks(&mut |entry| {
        let state = short_state(entry.state.as_str());
        *tasks.entry(entry.owner.tenant).or_default().entry(state).or_default() += 1;
        total_tasks += 1;
    })?;
    let counts = store.counts()?;
    let artifacts = data_dir.join("artifacts");
    let artifact_dirs = std::fs::read_dir(&artifacts).map(|d| d.flatten().count() as u64).unwrap_or(0);
    Ok(StoreStats {
        store_bytes: sled_files_size(data_dir)?,
        artifact_bytes: tree_size(&artifacts),
        artifact_dirs,
        tasks,
        total_tasks,
        events: counts.events,
        sessions: counts.sessions,
        session_messages: counts.session_messages,
    })
}

impl StoreStats {
    /// The report for people.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "store:     {}\nartifacts: {} in {} task(s)\ntasks:     {}\nevents:    {}\nsessions:  {} ({} messages)\n",
            human_bytes(self.store_bytes),
            human_bytes(self.artifact_bytes),
            self.artifact_dirs,
            self.total_tasks,
            self.events,
            self.sessions,
            self.session_messages,
        );
        for (tenant, states) in &self.tasks {
            let tenant = if tenant.is_empty() { "(default)" } else { tenant };
            let counts: Vec<String> = states.iter().map(|(state, n)| format!("{state}={n}")).collect();
            out.push_str(&format!("  tenant {tenant}: {}\n", counts.join(" ")));
        }
        out
    }
}

/// `12.3 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_for_people() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
    }

    #[test]
    fn states_read_short() {
        assert_eq!(short_state("TASK_STATE_INPUT_REQUIRED"), "input-required");
    }
}
