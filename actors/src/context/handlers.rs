//! The messages a context actor answers.

use super::actor::ContextActor;
use super::cluster;
use super::fanout::Subscriber;
use super::stream::{first_events, status_event};
use crate::messages::{
    CancelTask, ExpireTask, ForgetSession, Shutdown, StartTurn, Subscribe, Subscription, TryEvict, TurnTicket,
};
use crate::RuntimeError;
use a2ad_protocol::{A2aError, Task, TaskState, TaskStatus};
use a2ad_storage::{LoggedEvent, Scope};
use actix::prelude::*;
use std::sync::Arc;
use std::time::Instant;

impl Handler<StartTurn> for ContextActor {
    type Result = Result<TurnTicket, A2aError>;

    fn handle(&mut self, msg: StartTurn, ctx: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        self.start_turn(msg, ctx)
    }
}

impl Handler<CancelTask> for ContextActor {
    type Result = ResponseFuture<Result<Task, A2aError>>;

    /// The running task is stopped and marked CANCELED; an interrupted one is marked
    /// CANCELED; a terminal one cannot be canceled. On a shared store, a task whose turn
    /// runs on another node is cancelled there (`super::cluster`).
    fn handle(&mut self, msg: CancelTask, ctx: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        match self.cancel_here(msg, ctx) {
            Ok(Cancel::Done(task)) => Box::pin(std::future::ready(Ok(task))),
            Ok(Cancel::Elsewhere(node, record)) => Box::pin(cluster::cancel_on(Arc::clone(&self.rt), node, record)),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

/// Where a cancel ended up.
enum Cancel {
    Done(Task),
    /// The task's turn runs on this other node.
    Elsewhere(String, a2ad_storage::TaskRecord),
}

impl ContextActor {
    fn cancel_here(&mut self, msg: CancelTask, ctx: &mut Context<Self>) -> Result<Cancel, A2aError> {
        let scope = Scope::Owner(&msg.owner);
        let running = self.turn.as_ref().map(|t| (t.record.task.id == msg.task_id, scope.admits(&t.record.owner)));
        match running {
            Some((true, true)) => return self.end_turn(TaskState::Canceled, None, ctx).map(Cancel::Done),
            Some((true, false)) => return Err(RuntimeError::TaskNotFound(msg.task_id).into()),
            _ => {}
        }
        let mut record = self.stored_task(&msg.owner, &msg.task_id)?;
        if record.state().is_terminal() {
            return Err(RuntimeError::NotCancelable(msg.task_id, record.state()).into());
        }
        if let Some(node) = self.running_elsewhere(&record)? {
            return Ok(Cancel::Elsewhere(node, record));
        }
        record.task.status = TaskStatus::now(TaskState::Canceled, None);
        record.last_event_seq += 1;
        let event = LoggedEvent::encode(record.last_event_seq, &status_event(&record));
        self.rt.persist(&record, std::slice::from_ref(&event)).map_err(RuntimeError::from)?;
        self.close_watchers(&msg.task_id, event);
        Ok(Cancel::Done(record.task))
    }
}

impl Handler<ExpireTask> for ContextActor {
    type Result = Result<bool, A2aError>;

    fn handle(&mut self, msg: ExpireTask, _ctx: &mut Self::Context) -> Self::Result {
        if self.turn.as_ref().is_some_and(|t| t.record.task.id == msg.task_id) {
            return Ok(false); // Answered since the sweep looked: running again.
        }
        let mut record = self.stored_task(&msg.owner, &msg.task_id)?;
        let unchanged = record.status_millis() == msg.status_millis;
        if !unchanged || !matches!(record.state(), TaskState::InputRequired | TaskState::AuthRequired) {
            return Ok(false);
        }
        let mut message = self.agent_message(&msg.reason);
        message.task_id = Some(record.task.id.clone());
        record.task.status = TaskStatus::now(TaskState::Canceled, Some(message));
        record.last_event_seq += 1;
        let event = LoggedEvent::encode(record.last_event_seq, &status_event(&record));
        self.rt.persist(&record, std::slice::from_ref(&event)).map_err(RuntimeError::from)?;
        self.close_watchers(&msg.task_id, event);
        Ok(true)
    }
}

impl Handler<ForgetSession> for ContextActor {
    type Result = bool;

    fn handle(&mut self, _: ForgetSession, _ctx: &mut Self::Context) -> bool {
        if self.turn.is_some() {
            return false;
        }
        match self.rt.store.forget_session_if_unused(&self.key) {
            Ok(removed) => {
                if removed {
                    self.session = None;
                }
                removed
            }
            Err(e) => {
                tracing::error!(context_id = %self.key.context_id, error = %e, "could not remove a session");
                false
            }
        }
    }
}

impl Handler<Subscribe> for ContextActor {
    type Result = Result<Subscription, A2aError>;

    fn handle(&mut self, msg: Subscribe, ctx: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        self.subscribe(msg, ctx)
    }
}

impl Handler<TryEvict> for ContextActor {
    type Result = bool;

    fn handle(&mut self, msg: TryEvict, ctx: &mut Self::Context) -> bool {
        if self.turn.is_some() || self.has_watchers() || self.last_active.elapsed() < msg.min_idle {
            return false;
        }
        ctx.stop();
        true
    }
}

impl Handler<Shutdown> for ContextActor {
    type Result = ();

    /// Ends a running turn honestly (FAILED, saying why), ends the streams that wait for
    /// an interrupted task's next turn, and stops.
    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        self.end_watchers_at_shutdown();
        if self.turn.is_some() {
            let end = self.failed_end("The node shut down while this task was running.");
            if let Err(e) = self.end_turn(end.state, end.message, ctx) {
                tracing::error!(context_id = %self.key.context_id, error = %e, "could not record a shutdown");
            }
        }
        ctx.stop();
    }
}

impl ContextActor {
    /// Handles [`Subscribe`]: the first events (snapshot or replay), and live events if the
    /// task is running here.
    /// A stream that joins a running turn waits for that turn's next progress write to be
    /// durable (scheduled here), if the snapshot it starts from is not yet.
    pub(super) fn subscribe(&mut self, msg: Subscribe, ctx: &mut Context<Self>) -> Result<Subscription, A2aError> {
        if self.shared() {
            return self.subscribe_shared(msg, ctx);
        }
        let buffer = self.rt.settings.stream_buffer;
        if let Some(turn) = watched_turn(&mut self.turn, &msg)? {
            let initial = match msg.after {
                None => vec![turn.current_snapshot()],
                after => first_events(&self.rt, &turn.record, &turn.unsaved_events, after)?,
            };
            let (subscriber, subscription) = Subscriber::new(buffer, initial, true, &turn.mark);
            turn.subscribers.add(subscriber);
            self.schedule_progress_save(ctx);
            return Ok(subscription);
        }
        let record = self.subscribable_task(&msg)?;
        // Not running: an interrupted task. The stream says where it stands, then waits
        // for the turn that answers it.
        let initial = first_events(&self.rt, &record, &[], msg.after)?;
        let mark = self.marks.of(&msg.task_id, record.last_event_seq);
        let (subscriber, subscription) = Subscriber::new(buffer, initial, true, &mark);
        self.watch(msg.task_id, subscriber);
        Ok(subscription)
    }
}

impl ContextActor {
    /// [`Self::subscribe`] on a shared store: the stream follows the task in the store,
    /// whichever node runs its turns (`super::cluster`). A turn running here keeps its
    /// task (someone watches it now) and writes its progress promptly.
    fn subscribe_shared(&mut self, msg: Subscribe, ctx: &mut Context<Self>) -> Result<Subscription, A2aError> {
        if let Some(turn) = watched_turn(&mut self.turn, &msg)? {
            turn.visible = true;
            self.schedule_progress_save(ctx);
        }
        let record = self.subscribable_task(&msg)?;
        let initial = first_events(&self.rt, &record, &[], msg.after)?;
        let cluster = self.rt.store.cluster().ok_or(RuntimeError::ContextUnavailable)?;
        Ok(cluster::follow(cluster, &record, initial, self.rt.settings.stream_buffer)?)
    }

    /// The stored task a subscription starts from: the caller's, and not terminal.
    fn subscribable_task(&self, msg: &Subscribe) -> Result<a2ad_storage::TaskRecord, A2aError> {
        let record = self.stored_task(&msg.owner, &msg.task_id)?;
        match record.state().is_terminal() {
            true => Err(RuntimeError::SubscribeTerminal(msg.task_id.clone(), record.state()).into()),
            false => Ok(record),
        }
    }
}

/// The running turn of the task `msg` subscribes to, if it runs here, now watched by
/// someone else: it is kept, whatever the agent answers. Another owner's is TaskNotFound.
fn watched_turn<'t>(
    turn: &'t mut Option<Box<super::actor::RunningTurn>>,
    msg: &Subscribe,
) -> Result<Option<&'t mut super::actor::RunningTurn>, A2aError> {
    let Some(turn) = turn.as_deref_mut().filter(|t| t.record.task.id == msg.task_id) else { return Ok(None) };
    if !Scope::Owner(&msg.owner).admits(&turn.record.owner) {
        return Err(RuntimeError::TaskNotFound(msg.task_id.clone()).into());
    }
    turn.reply_allowed = false;
    turn.release_snapshot();
    Ok(Some(turn))
}
