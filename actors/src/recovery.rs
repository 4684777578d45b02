//! Start-up recovery: a task left SUBMITTED or WORKING was running when the process died.
//! Its turn is gone, so it is marked FAILED, saying why, before the node serves anyone.

use crate::Runtime;
use a2ad_protocol::{ids, Message, StreamResponse, TaskState, TaskStatus};
use a2ad_storage::{LoggedEvent, StoreError};

/// The status message of a task that was running when the node stopped.
pub const RESTART_MESSAGE: &str = "The node restarted while this task was running.";

/// Marks every active task FAILED (an event, pushed like any other), numbered above the
/// task's stored events (streams show durable events only, so no id above them was
/// shown). Returns how many there were. The caller
/// flushes.
///
/// On a store shared by several nodes, an active task is interrupted only once no node
/// holds its context's lease (its node died, and the lease expired): a leased one is
/// running, and is left alone. Every node runs this at start-up and then every lease TTL
/// ([`fail_abandoned_turns`]); two nodes that fail the same task race on its
/// generation, and the loser's write is refused and skipped.
pub fn fail_interrupted_turns(rt: &Runtime) -> Result<usize, StoreError> {
    let stale = rt.store.tasks_in_states(&[TaskState::Submitted, TaskState::Working])?;
    let mut failed = 0;
    for mut record in stale {
        if let Some(cluster) = rt.store.cluster() {
            if cluster.lease_holder(&record.context_key())?.is_some() {
                continue;
            }
        }
        let message =
            Message::agent_text(ids::new_id(), &record.task.context_id, Some(&record.task.id), RESTART_MESSAGE);
        record.task.history.push(message.clone());
        record.task.status = TaskStatus::now(TaskState::Failed, Some(message));
        record.last_event_seq += 1;
        let event = StreamResponse::status_of(&record.task);
        // Recovery runs on a blocking thread: it may wait for the write's answer.
        match rt.persist(&record, &[LoggedEvent::encode(record.last_event_seq, &event)]).and_then(|w| w.wait()) {
            Ok(()) => failed += 1,
            // Another node took the context, or failed the task, first.
            Err(StoreError::Conflict { .. } | StoreError::LeaseLost { .. }) if rt.store.cluster().is_some() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(failed)
}

/// The periodic form of [`fail_interrupted_turns`] on a shared store: the turns of nodes
/// that died are failed by the nodes still running, once their leases expire. Logs what
/// it did; a failure is logged too, and the next round tries again.
pub fn fail_abandoned_turns(rt: &Runtime) {
    match fail_interrupted_turns(rt) {
        Ok(0) => {}
        Ok(failed) => tracing::warn!(failed, "failed the turns of a node whose leases expired"),
        Err(e) => tracing::warn!(error = %e, "cannot look for the turns of nodes that died"),
    }
}
