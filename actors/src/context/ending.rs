//! How a turn ends: the agent's end (or a failure, or a cancel) becomes the task's last
//! step, saved with the session, and everyone waiting hears of it once it is durable.

use super::actor::{ContextActor, RunningTurn};
use super::fanout::Fanout;
use super::stream::status_event;
use crate::agent::{AgentError, TurnEnd};
use crate::messages::TurnOutcome;
use crate::RuntimeError;
use a2ad_protocol::{ids, A2aError, Message, Role, Task, TaskState, TaskStatus};
use a2ad_storage::{LoggedEvent, Written};
use actix::prelude::*;
use tokio::sync::oneshot;

/// How long an idle context keeps its session in memory.
const SESSION_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(1);

impl ContextActor {
    /// Ends the running turn in the state the agent chose (or FAILED), durably, and
    /// answers everyone waiting for it.
    pub(super) fn finish_turn(&mut self, result: Result<TurnEnd, AgentError>, ctx: &mut Context<Self>) {
        let end = match result {
            Ok(end) if end.state.ends_turn() => end,
            Ok(end) => self.failed_end(&format!("The agent ended its turn in state {}", end.state)),
            Err(e) => self.failed_end(&format!("Agent failed: {e}")),
        };
        // A reply after other events (or for a task the client already holds) is the
        // final message of a normal task: see `super::reply`.
        if end.reply_only && self.turn.as_ref().is_some_and(|t| t.reply_allowed) {
            if let Some(reply) = end.message {
                return self.end_with_reply(reply, ctx);
            }
        }
        let ending = Ending { in_history: !end.repeats_history, copy_for_caller: false };
        if let Err(e) = self.end_turn_with(end.state, end.message, ending, ctx) {
            tracing::error!(context_id = %self.key.context_id, error = %e, "could not end a turn");
        }
    }

    /// A turn the agent failed (or timed out, or ended in a state that does not end a
    /// turn): FAILED with `text` as its status message, which carries a correlation id
    /// (`metadata.a2ad.correlationId`) that finds this warning in the node's log.
    pub(super) fn failed_end(&self, text: &str) -> TurnEnd {
        let correlation = uuid::Uuid::new_v4().simple().to_string();
        if let Some(turn) = &self.turn {
            // One record per line in a plain-text log: a multi-line stderr tail (or a
            // program's control characters) is escaped there, kept as is in the status.
            let mut cause = String::with_capacity(text.len());
            for c in text.chars() {
                match c.is_control() {
                    true => cause.extend(c.escape_default()),
                    false => cause.push(c),
                }
            }
            let task = &turn.record.task;
            tracing::warn!(
                task_id = %task.id,
                context_id = %task.context_id,
                agent = %turn.record.agent,
                correlation_id = %correlation,
                %cause,
                "turn failed"
            );
        }
        let mut message = self.agent_message(text);
        let mut a2ad = serde_json::Map::new();
        a2ad.insert("correlationId".into(), serde_json::Value::String(correlation));
        message.metadata.get_or_insert_with(Default::default).insert("a2ad".into(), serde_json::Value::Object(a2ad));
        TurnEnd::new(TaskState::Failed, Some(message))
    }

    /// Moves the running turn's task to `state` and releases the context. Everyone waiting
    /// for the turn gets the task once it is durable.
    pub(super) fn end_turn(
        &mut self,
        state: TaskState,
        message: Option<Message>,
        ctx: &mut Context<Self>,
    ) -> Result<Task, A2aError> {
        let copy = self.end_turn_with(state, message, Ending { in_history: true, copy_for_caller: true }, ctx)?;
        copy.ok_or_else(|| RuntimeError::ContextUnavailable.into())
    }

    /// [`Self::end_turn`], keeping `message` out of the history unless `in_history` (see
    /// [`crate::agent::TurnEnd::repeats_history`]); the task is copied for the caller only
    /// when it asks (`copy_for_caller`): an agent's end (most turns) needs none, and the
    /// copy was a task's whole history and artifacts each turn.
    fn end_turn_with(
        &mut self,
        state: TaskState,
        message: Option<Message>,
        ending: Ending,
        ctx: &mut Context<Self>,
    ) -> Result<Option<Task>, A2aError> {
        let Ending { in_history, copy_for_caller } = ending;
        let Some(mut turn) = self.turn.take() else {
            return Err(RuntimeError::ContextUnavailable.into());
        };
        self.last_active = std::time::Instant::now();
        turn.stop(ctx);
        turn.release_snapshot();
        let message = message.map(|m| self.own_message(m, &turn.record.task.id));
        if let Some(m) = message.as_ref().filter(|_| in_history) {
            turn.record.task.history.push(m.clone());
            self.pending.push(m.clone());
        }
        turn.record.task.status = TaskStatus::now(state, message);
        turn.record.last_event_seq += 1;
        let last = LoggedEvent::encode(turn.record.last_event_seq, &status_event(&turn.record));
        let mut events = std::mem::take(&mut turn.unsaved_events);
        events.push(last.clone());
        // The caller's copy (a cancel answers with it); the waiters get the turn's own.
        let task = copy_for_caller.then(|| turn.record.task.clone());
        let task_id = turn.record.task.id.clone();
        let saved = self.save_turn_end(&turn.record, &events);
        self.give_back_lease();
        self.schedule_hibernation(ctx);
        match saved {
            Ok(written) => {
                let (ended, ending) = oneshot::channel();
                let ending = futures_util::FutureExt::shared(ending);
                self.ending = Some(super::actor::EndingTurn { task_id, ended: ending });
                self.notify_when_durable(turn, last, written, ended, ctx);
                Ok(task)
            }
            Err(e) => {
                let error = A2aError::from(e);
                for waiter in std::mem::take(&mut turn.waiters) {
                    let _ = waiter.send(Err(error.clone()));
                }
                std::mem::take(&mut turn.subscribers).fail(&error);
                Err(error)
            }
        }
    }

    /// Drops the in-memory session of a context that stays idle for
    /// [`SESSION_CACHE_TTL`]: the store has all of it, and an idle context then costs
    /// little more than its actor. A quick follow-up still finds the session warm.
    ///
    /// One timer at a time: actix polls every pending timer of an actor at each of its
    /// wake-ups, so a timer per turn (a busy context runs dozens a second) made every
    /// message of the context pay for dozens of them. The timer that fires early (the
    /// context was active since it was armed) arms itself again for the rest.
    pub(super) fn schedule_hibernation(&mut self, ctx: &mut Context<Self>) {
        if !self.hibernation_armed {
            self.hibernation_armed = true;
            ctx.run_later(SESSION_CACHE_TTL, Self::hibernate_if_idle);
        }
    }

    fn hibernate_if_idle(&mut self, ctx: &mut Context<Self>) {
        self.hibernation_armed = false;
        if self.turn.is_some() {
            return; // The turn's end arms it again.
        }
        match SESSION_CACHE_TTL.checked_sub(self.last_active.elapsed()) {
            None => self.session = None,
            Some(rest) => {
                self.hibernation_armed = true;
                ctx.run_later(rest, Self::hibernate_if_idle);
            }
        }
    }

    /// An agent message of this context and its running task.
    pub(super) fn agent_message(&self, text: &str) -> Message {
        let task_id = self.turn.as_ref().map(|t| t.record.task.id.as_str());
        Message::agent_text(ids::new_id(), &self.key.context_id, task_id, text)
    }

    /// Fills in the ids and role of a message an agent produced.
    pub(super) fn own_message(&self, mut message: Message, task_id: &str) -> Message {
        message.role = Role::Agent;
        message.context_id = Some(self.key.context_id.clone());
        message.task_id = Some(task_id.to_owned());
        if message.message_id.is_empty() {
            message.message_id = ids::new_id();
        }
        message
    }
}

impl ContextActor {
    /// Makes what was saved durable, then hands the turn's task to every waiter and the final
    /// event to every subscriber. Their streams then end, but for the followers of a task
    /// the turn left interrupted: those go back to the actor to wait for the next turn
    /// ([`super::watch`]). If the commit fails, waiters get the error and every stream
    /// ends with it (not silently).
    pub(super) fn notify_when_durable(
        &self,
        turn: Box<RunningTurn>,
        last: LoggedEvent,
        written: Written,
        ended: oneshot::Sender<()>,
        ctx: &Context<Self>,
    ) {
        let commit = self.rt.commit.clone();
        let RunningTurn { waiters, mut subscribers, mark, record, .. } = *turn;
        let task = record.task;
        let home = (!task.status.state.is_terminal()).then(|| ctx.address());
        actix::spawn(async move {
            let task_id = task.id.clone();
            let result = super::durable::durable(written, &commit).await.map(|()| task).map_err(A2aError::from);
            let _ = ended.send(()); // Subscriptions that waited for the end read the store now.
            let followers = match &result {
                Ok(_) => {
                    mark.advance(last.seq);
                    subscribers.publish_final(&last);
                    subscribers.keep_followers();
                    subscribers
                }
                Err(error) => {
                    subscribers.fail(error);
                    Fanout::default()
                }
            };
            // The followers are queued back to the actor before anyone hears of the end,
            // so what a caller sends on that answer (a cancel, the next message) finds them
            // there (`Addr::send` queues at once when the mailbox has room).
            let rewatch = match (home, followers.is_empty()) {
                (Some(home), false) => {
                    Some(home.send(super::watch::Rewatch { task_id, after: last.seq, subscribers: followers }))
                }
                _ => None,
            };
            super::actor::answer_all(waiters, result.map(TurnOutcome::Task));
            if let Some(rewatch) = rewatch {
                if rewatch.await.is_err() {
                    tracing::debug!("a context stopped before its task's followers came back");
                }
            }
        });
    }
}

/// How [`ContextActor::end_turn_with`] ends a turn: whether the final message joins the
/// history, and whether the caller gets a copy of the task.
struct Ending {
    in_history: bool,
    copy_for_caller: bool,
}
