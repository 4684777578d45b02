//! `GET /admin/v1/status`: the node at a glance. The scrape-time gauges are the same
//! ones `GET /metrics` shows ([`gauges`]); the store counts are `a2ad admin stats`'s
//! ([`super::stats::collect`]), read from the running node's store.

use super::stats::StoreStats;
use super::AdminError;
use crate::core::Core;
use crate::metrics::Gauges;
use a2ad_actors::messages::GetStats;
use a2ad_protocol::TaskState;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The status document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    pub version: &'static str,
    pub uptime_seconds: u64,
    /// `ready`, `draining` or `store-unavailable`.
    pub health: &'static str,
    /// The URLs the card announces, one per binding.
    pub bindings: Vec<serde_json::Value>,
    /// The skill ids, the default first.
    pub agents: Vec<String>,
    pub limits: Limits,
    pub store: StoreStats,
    pub running_turns: usize,
    pub live_contexts: usize,
    pub open_streams: i64,
    /// `None` when push notifications are off.
    pub push_queue_depth: Option<usize>,
    pub push_outbox_depth: Option<usize>,
    pub dead_letters: i64,
    /// Requests answered since start, by A2A method.
    pub requests: BTreeMap<&'static str, u64>,
    /// Live feed watchers (open consoles) now.
    pub feed_watchers: usize,
    /// What the operator should know about how the node runs: a listener other hosts
    /// reach without authentication ([`crate::exposure`]). Empty when all is well.
    pub warnings: Vec<String>,
}

/// The limits the node runs under.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub max_contexts: usize,
    pub session_history_limit: usize,
    pub stream_buffer: usize,
    pub idle_timeout_seconds: u64,
}

/// The gauges `GET /metrics` and the status share: live contexts (asked of the
/// supervisor), running turns, queue depths and the store's size (read on the blocking
/// pool: the queue and the store may block on I/O), and the authenticator's counters.
pub async fn gauges(core: &Core) -> Gauges {
    let live_contexts = core.supervisor().send(GetStats).await.map(|s| s.live_contexts);
    let rt = Arc::clone(core.runtime());
    let (push_queue_depth, push_outbox_depth, store_size_bytes) = tokio::task::spawn_blocking(move || {
        let depth = rt.push.as_ref().map(|p| p.queue.depth().unwrap_or(0));
        let outbox = rt.push.as_ref().and_then(|p| p.outbox.as_ref()).map(|o| o.depth().unwrap_or(0));
        (depth, outbox, rt.store.size_on_disk().ok())
    })
    .await
    .unwrap_or((None, None, None));
    Gauges {
        live_contexts: live_contexts.unwrap_or(0),
        running_turns: core.runtime().turn_limits.running(),
        push_queue_depth,
        push_outbox_depth,
        store_size_bytes,
        password_checks: core.auth().password_checks_run(),
        auth_throttled: core.auth().throttled(),
    }
}

/// The status, with `bindings` and `warnings` as the edge knows them (the card's
/// interfaces, the exposure of its listeners).
pub async fn status(
    core: &Core,
    bindings: Vec<serde_json::Value>,
    warnings: Vec<String>,
) -> Result<NodeStatus, AdminError> {
    let gauges = gauges(core).await;
    let rt = Arc::clone(core.runtime());
    let store = tokio::task::spawn_blocking(move || super::stats::collect(rt.store.as_ref(), &rt.data_dir))
        .await
        .map_err(|e| a2ad_protocol::A2aError::internal(format!("status: {e}")))??;
    let rt = core.runtime();
    let settings = &rt.settings;
    Ok(NodeStatus {
        version: env!("CARGO_PKG_VERSION"),
        uptime_seconds: core.uptime().as_secs(),
        health: core.ready().err().unwrap_or("ready"),
        bindings,
        agents: rt.agents.skills().to_vec(),
        limits: Limits {
            max_contexts: settings.max_contexts,
            session_history_limit: settings.session_history_limit,
            stream_buffer: settings.stream_buffer,
            idle_timeout_seconds: settings.idle_timeout.as_secs(),
        },
        store,
        running_turns: gauges.running_turns,
        live_contexts: gauges.live_contexts,
        open_streams: core.metrics().open_streams(),
        push_queue_depth: gauges.push_queue_depth,
        push_outbox_depth: gauges.push_outbox_depth,
        dead_letters: core.metrics().dead_letters(),
        requests: core.metrics().requests_by_method(),
        feed_watchers: rt.feed.watchers(),
        warnings,
    })
}

/// The running turns per agent: the tasks submitted or working, by skill id. Blocking.
pub fn running_by_agent(core: &Core) -> Result<BTreeMap<String, Vec<String>>, AdminError> {
    let records = core.runtime().store.tasks_in_states(&[TaskState::Submitted, TaskState::Working])?;
    let mut by_agent: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for record in records {
        by_agent.entry(record.agent).or_default().push(record.task.id);
    }
    Ok(by_agent)
}
