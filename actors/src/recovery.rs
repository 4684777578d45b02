//! Start-up recovery: a task left SUBMITTED or WORKING was running when the process died.
//! Its turn is gone, so it is marked FAILED, saying why, before the node serves anyone.

use a2ad_protocol::{ids, Message, StreamResponse, TaskState, TaskStatus};
use a2ad_storage::{LoggedEvent, StoreError, TaskStore};

/// The status message of a task that was running when the node stopped.
pub const RESTART_MESSAGE: &str = "The node restarted while this task was running.";

/// Marks every active task FAILED. Returns how many there were. The caller flushes.
pub fn fail_interrupted_turns(store: &dyn TaskStore) -> Result<usize, StoreError> {
    let stale = store.tasks_in_states(&[TaskState::Submitted, TaskState::Working])?;
    for mut record in stale.iter().cloned() {
        let message =
            Message::agent_text(ids::new_id(), &record.task.context_id, Some(&record.task.id), RESTART_MESSAGE);
        record.task.history.push(message.clone());
        record.task.status = TaskStatus::now(TaskState::Failed, Some(message));
        record.last_event_seq += 1;
        let event = StreamResponse::status_of(&record.task);
        store.put_task(&record, &[LoggedEvent::encode(record.last_event_seq, &event)])?;
    }
    Ok(stale.len())
}
