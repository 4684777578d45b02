//! Start-up recovery: a task left SUBMITTED or WORKING was running when the process died.
//! Its turn is gone, so it is marked FAILED, saying why, before the node serves anyone.

use crate::Runtime;
use a2ad_protocol::{ids, Message, StreamResponse, TaskState, TaskStatus};
use a2ad_storage::{LoggedEvent, StoreError};

/// The status message of a task that was running when the node stopped.
pub const RESTART_MESSAGE: &str = "The node restarted while this task was running.";

/// Marks every active task FAILED (an event, pushed like any other), numbered above the
/// task's stored events and its reserved ids. Returns how many there were. The caller
/// flushes.
pub fn fail_interrupted_turns(rt: &Runtime) -> Result<usize, StoreError> {
    let stale = rt.store.tasks_in_states(&[TaskState::Submitted, TaskState::Working])?;
    for mut record in stale.iter().cloned() {
        let message =
            Message::agent_text(ids::new_id(), &record.task.context_id, Some(&record.task.id), RESTART_MESSAGE);
        record.task.history.push(message.clone());
        record.task.status = TaskStatus::now(TaskState::Failed, Some(message));
        // Above every id a stream may have shown (streams reserve ids before sending).
        record.last_event_seq = record.last_event_seq.max(rt.store.reserved_event_seq(&record.task.id)?) + 1;
        let event = StreamResponse::status_of(&record.task);
        rt.persist(&record, &[LoggedEvent::encode(record.last_event_seq, &event)])?;
    }
    Ok(stale.len())
}
