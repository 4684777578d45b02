//! A node's duties on a store shared by several nodes (`store: redis`): it cancels the
//! turns other nodes ask it to (the requests come by the store's cancel channel), and
//! every lease TTL it fails the turns of nodes that died, once their leases have expired
//! ([`a2ad_actors::recovery::fail_abandoned_turns`]).

use super::Core;
use a2ad_actors::messages::CancelTask;
use a2ad_storage::{CancelRequest, ContextKey};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Cancel requests that may wait for the node before newer ones are dropped (a request
/// that is dropped is logged; its sender's answer shows the task still running).
const CANCEL_QUEUE: usize = 1024;

impl Core {
    /// Starts the cluster duties, if the store is shared, until `stop` is cancelled. Must
    /// run inside an actix system.
    pub fn start_cluster_duties(self: &Arc<Self>, lease_ttl: Duration, stop: CancellationToken) {
        let Some(cluster) = self.rt.store.cluster() else { return };
        let (tx, mut requests) = tokio::sync::mpsc::channel::<CancelRequest>(CANCEL_QUEUE);
        let handler = Box::new(move |request: CancelRequest| {
            if tx.try_send(request).is_err() {
                tracing::warn!("too many cancel requests from other nodes at once: one was dropped");
            }
        });
        if let Err(e) = cluster.on_cancel_request(handler) {
            tracing::error!(error = %e, "cannot listen for cancel requests from other nodes");
        }
        let core = Arc::clone(self);
        let stopped = stop.clone();
        actix::spawn(async move {
            loop {
                let request = tokio::select! {
                    request = requests.recv() => request,
                    () = stopped.cancelled() => None,
                };
                let Some(request) = request else { return };
                core.cancel_for_another_node(request).await;
            }
        });
        let rt = Arc::clone(&self.rt);
        actix::spawn(async move {
            let mut every = tokio::time::interval(lease_ttl);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => {}
                    () = stop.cancelled() => return,
                }
                let rt = Arc::clone(&rt);
                let _ = tokio::task::spawn_blocking(move || a2ad_actors::recovery::fail_abandoned_turns(&rt)).await;
            }
        });
    }

    /// Cancels a turn this node runs, as another node asked (its own caller waits for the
    /// task's end in the store).
    async fn cancel_for_another_node(&self, request: CancelRequest) {
        let key = ContextKey::new(request.owner.clone(), request.context_id);
        let cancel = CancelTask { owner: request.owner, task_id: request.task_id.clone() };
        match self.call(&key, cancel).await {
            Ok(Ok(_)) => tracing::info!(task_id = %request.task_id, "cancelled a turn as another node asked"),
            Ok(Err(e)) | Err(e) => {
                tracing::info!(task_id = %request.task_id, error = %e.message, "another node's cancel request was not applied")
            }
        }
    }
}
