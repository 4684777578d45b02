//! Message-only replies: a turn the agent answers with a Message instead of a Task.
//!
//! A2A lets `SendMessage` return a Message, and a streaming send whose answer is a
//! Message-only reply is exactly one `message` event, then the end of the stream. A turn
//! becomes one when the agent's FIRST signal is its reply ([`crate::agent::TurnEnd::reply_only`]),
//! the task is new (not a resumed input-required one), the client was not handed it
//! (`returnImmediately`, and every 0.1 send), did not ask for its push notifications, and
//! nobody subscribed to it meanwhile. Then:
//!
//! * the session keeps the user's message and the reply (without a `taskId`: there is no
//!   task), so the context's next turn sees both; its last-task pointer is not moved;
//! * the task, written when the turn started, is removed with its indexes, event log,
//!   push configs and artifact files ([`crate::Runtime::remove_task`], the retention
//!   path), on the blocking pool, not on the actor's thread;
//! * once the session and the removal are durable (one group commit), a blocking send
//!   gets the message and every stream gets it as its only and last event.
//!
//! Streams: when the turn may still become a reply (and its agent can send one,
//! [`crate::agent::Agent::may_reply_only`]), the task snapshot that opens a new task's
//! stream is held back until the agent's first event ([`super::actor::RunningTurn::held_snapshot`]). Any other first
//! event (text, artifact, progress) releases it ahead of that event, so such a stream is
//! exactly what it was: the task (event 1), then its updates. Event ids stay the task's
//! sequence numbers, so `Last-Event-ID` resumption is unchanged; the reply's event id is
//! the next number, but there is nothing to resume after it.
//!
//! A reply that comes after other events, or for a task the client already holds, is
//! the final message of a normal task: COMPLETED, the reply as its status message, and
//! the task is kept. Nothing the agent said is lost, and the client that saw a task keeps
//! seeing one (rather than an InvalidAgentResponse error that would throw the work away).
//!
//! A crash between the session write and the removal leaves the task as it was stored
//! when the turn started (WORKING), which start-up recovery marks FAILED like any turn a
//! crash interrupted.

use super::actor::{ContextActor, RunningTurn};
use super::stream::publish;
use crate::agent::mark_reply_only;
use crate::Runtime;
use a2ad_protocol::{A2aError, Message, StreamResponse, TaskState, TaskStatus};
use a2ad_storage::LoggedEvent;
use actix::prelude::*;
use std::sync::Arc;

impl ContextActor {
    /// Ends the running turn with `reply` as a Message-only reply (see the module docs).
    /// Waiters get the task marked by [`mark_reply_only`], in memory only, so that a
    /// blocking send answers with the message.
    pub(super) fn end_with_reply(&mut self, reply: Message, ctx: &mut Context<Self>) {
        let Some(turn) = self.turn.take() else { return };
        self.last_active = std::time::Instant::now();
        turn.cancel.cancel();
        turn.join.abort();
        let task_id = turn.record.task.id.clone();
        let mut reply = self.own_message(reply, &task_id);
        reply.task_id = None;
        for message in &mut self.pending {
            message.task_id = None;
        }
        self.pending.push(reply.clone());
        let saved = self.save_session(None).map_err(A2aError::from);
        self.schedule_hibernation(ctx);

        let mut answer = turn.record.task.clone();
        answer.status = TaskStatus::now(TaskState::Completed, Some(reply.clone()));
        mark_reply_only(&mut answer);
        let event = LoggedEvent::encode(turn.record.last_event_seq + 1, &StreamResponse::Message(reply));
        let rt = Arc::clone(&self.rt);
        let RunningTurn { waiters, mut subscribers, .. } = *turn;
        actix::spawn(async move {
            let result = match saved {
                Ok(()) => remove_durably(rt, task_id).await.map(|()| answer),
                Err(e) => Err(e),
            };
            if result.is_ok() {
                publish(&mut subscribers, &event, true);
            }
            drop(subscribers);
            for waiter in waiters {
                let _ = waiter.send(result.clone());
            }
        });
    }
}

/// Removes the reply's task on the blocking pool, then commits (which also makes the
/// session write durable). A failed removal is logged: the reply is in the session, and
/// the client still gets it.
async fn remove_durably(rt: Arc<Runtime>, task_id: String) -> Result<(), A2aError> {
    let store = Arc::clone(&rt);
    let id = task_id.clone();
    match tokio::task::spawn_blocking(move || store.remove_task(&id)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::error!(task_id, error = %e, "could not remove the task of a Message-only reply"),
        Err(e) => tracing::error!(task_id, error = %e, "the removal of a Message-only reply's task stopped"),
    }
    rt.commit.commit().await.map_err(A2aError::from)
}
