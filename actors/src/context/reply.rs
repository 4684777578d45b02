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
//! * the task, written when the turn started, is removed with its indexes and event log
//!   in the same atomic write as the session (below), then its push configs and artifact
//!   files, if any ([`crate::Runtime::settle_reply`]), on the blocking pool;
//! * once that write is durable (a group commit), a blocking send gets the message and
//!   every stream gets it as its only and last event.
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
//! The session write and the task removal are ONE atomic store write
//! ([`crate::Runtime::settle_reply`]): a crash leaves either the settled reply (session
//! written, task gone) or the task as it was stored when the turn started (WORKING),
//! which start-up recovery marks FAILED like any turn a crash interrupted, with no reply
//! in the session. The actor waits for that write (on the blocking pool, not on its
//! thread) before it handles its next message, so no later turn, subscription or cancel
//! sees the task half settled, and no later session write can be overtaken by it.
//!
//! If that write fails, nothing of it happened: the turn ends as a normal task, FAILED,
//! with the reply kept in the task's history and a status message that says the reply
//! could not be stored (with the correlation id the log has the cause under). A blocking
//! send answers with that internal error; a stream gets the task and its FAILED status.

use super::actor::{answer_all, ContextActor, RunningTurn};
use crate::messages::TurnOutcome;
use a2ad_protocol::{A2aError, Message, StreamResponse, TaskState};
use a2ad_storage::{LoggedEvent, SessionRecord};
use actix::prelude::*;
use std::sync::Arc;

/// What the settling write gives back: its result, and the session it wrote.
type Settled = (Result<(), A2aError>, Box<SessionRecord>);

impl ContextActor {
    /// Ends the running turn with `reply` as a Message-only reply (see the module docs).
    pub(super) fn end_with_reply(&mut self, reply: Message, ctx: &mut Context<Self>) {
        let Some(mut turn) = self.turn.take() else { return };
        self.last_active = std::time::Instant::now();
        turn.stop(ctx);
        let task_id = turn.record.task.id.clone();
        let reply = self.own_message(reply, &task_id);
        let Some(mut session) = self.session.clone() else {
            let error = A2aError::internal("a Message-only reply's context has no session loaded");
            return self.fail_unsettled_reply(turn, reply, error, ctx);
        };
        let mut appended = self.pending.clone();
        appended.push(reply.clone());
        for message in &mut appended {
            message.task_id = None; // There is no task: the session keeps them without one.
        }
        session.append(&appended, self.rt.settings.session_history_limit);
        let rt = Arc::clone(&self.rt);
        let settle = async move {
            let work = tokio::task::spawn_blocking(move || {
                let result = rt.settle_reply(&task_id, &session, &appended).map(drop).map_err(A2aError::from);
                (result, session)
            });
            work.await.map_err(|e| A2aError::internal(format!("the settling of a Message-only reply stopped: {e}")))
        };
        ctx.wait(settle.into_actor(self).map(move |settled, act, ctx| act.after_settle(settled, turn, reply, ctx)));
    }

    /// Answers the turn once the settling write is done (or failed).
    fn after_settle(
        &mut self,
        settled: Result<Settled, A2aError>,
        turn: Box<RunningTurn>,
        mut reply: Message,
        ctx: &mut Context<Self>,
    ) {
        let session = match settled {
            Ok((Ok(()), session)) => session,
            Ok((Err(error), _)) | Err(error) => return self.fail_unsettled_reply(turn, reply, error, ctx),
        };
        self.session = Some(session);
        self.pending.clear();
        self.give_back_lease();
        self.schedule_hibernation(ctx);
        reply.task_id = None;
        let answer = TurnOutcome::Reply(reply.clone());
        let event = LoggedEvent::encode(turn.record.last_event_seq + 1, &StreamResponse::Message(reply));
        let commit = self.rt.commit.clone();
        let RunningTurn { waiters, mut subscribers, mark, .. } = *turn;
        actix::spawn(async move {
            let result = commit.commit().await.map(|()| answer).map_err(A2aError::from);
            if result.is_ok() {
                mark.advance(event.seq);
                subscribers.publish_final(&event);
            }
            drop(subscribers);
            answer_all(waiters, result);
        });
    }

    /// The reply could not be settled (nothing of it was written): the turn ends as a
    /// kept task, FAILED, with the reply in its history (see the module docs).
    fn fail_unsettled_reply(
        &mut self,
        mut turn: Box<RunningTurn>,
        reply: Message,
        error: A2aError,
        ctx: &mut Context<Self>,
    ) {
        let correlation = error.metadata.get("correlationId").cloned().unwrap_or_default();
        let detail = error.detail.as_deref().unwrap_or(&error.message);
        tracing::error!(task_id = %turn.record.task.id, correlation_id = %correlation, detail, "could not settle a Message-only reply");
        let waiters = std::mem::take(&mut turn.waiters);
        turn.record.task.history.push(reply.clone());
        self.pending.push(reply);
        self.turn = Some(turn);
        let text = format!("The agent's reply could not be stored (internal error, correlation id {correlation}).");
        let message = self.agent_message(&text);
        if let Err(e) = self.end_turn(TaskState::Failed, Some(message), ctx) {
            tracing::error!(context_id = %self.key.context_id, error = %e, "could not record a reply's failure");
        }
        answer_all(waiters, Err(error));
    }
}
