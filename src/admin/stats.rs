//! `a2ad admin stats`: what the store holds and how much disk it takes.

use super::{open_store, AdminError};
use crate::config::Config;
use a2ad_storage::{sled_files_size, tree_size, TaskStore};
use serde::Serialize;
use std::collections::BTreeMap;

/// The report, as printed (text) or serialized (`--json`).
#[derive(Debug, Serialize, PartialEq)]
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

/// Reads the stats of a stopped node's data dir.
pub fn collect(config: &Config) -> Result<StoreStats, AdminError> {
    let store = open_store(config)?;
    let mut tasks: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut total_tasks = 0;
    store.visit_tasks(&mut |entry| {
        let state = crate::client::short_state(entry.state.as_str());
        *tasks.entry(entry.owner.tenant).or_default().entry(state).or_default() += 1;
        total_tasks += 1;
    })?;
    let counts = store.counts()?;
    drop(store);
    let artifacts = config.data_dir.join("artifacts");
    let artifact_dirs = std::fs::read_dir(&artifacts).map(|d| d.flatten().count() as u64).unwrap_or(0);
    Ok(StoreStats {
        store_bytes: sled_files_size(&config.data_dir)?,
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
}
