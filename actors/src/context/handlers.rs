//! The messages a context actor answers.

use super::actor::ContextActor;
use super::cluster;
use super::fanout::Subscriber;
use super::stream::{first_events, first_events_read, status_event};
use crate::messages::{
    CancelTask, ExpireTask, ForgetSession, Shutdown, StartTurn, Subscribe, Subscription, TryEvict, TurnTicket,
};
use crate::RuntimeError;
use a2ad_protocol::{A2aError, Task, TaskState, TaskStatus};
use a2ad_storage::TaskStoreExt;
use a2ad_storage::{LoggedEvent, Scope, Written};
use actix::prelude::*;
use std::sync::Arc;
use std::time::Instant;

impl Handler<StartTurn> for ContextActor {
    type Result = ActorResponse<Self, Result<TurnTicket, A2aError>>;

    /// On a node's own store the answer is at once. On a shared store the start waits for
    /// Redis (`start_shared_turn`) with the context's mailbox held (`ctx.wait`: a second
    /// message finds the turn running) but not its thread, which serves other contexts.
    fn handle(&mut self, msg: StartTurn, ctx: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        if !self.shared() {
            return ActorResponse::reply(self.start_turn(msg, ctx));
        }
        let (answer, answered) = tokio::sync::oneshot::channel();
        ctx.wait(self.start_shared_turn(msg).map(move |started, _, _| {
            let _ = answer.send(started);
        }));
        ActorResponse::r#async(
            async move { answered.await.unwrap_or_else(|_| Err(RuntimeError::ContextUnavailable.into())) }
                .into_actor(self),
        )
    }
}

impl Handler<CancelTask> for ContextActor {
    type Result = ResponseFuture<Result<Task, A2aError>>;

    /// The running task is stopped and marked CANCELED; an interrupted one is marked
    /// CANCELED; a terminal one cannot be canceled. On a shared store, a task whose turn
    /// runs on another node is cancelled there (`super::cluster`).
    fn handle(&mut self, msg: CancelTask, ctx: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        let runs_here = self.turn.as_ref().is_some_and(|t| t.record.task.id == msg.task_id);
        let Some(cluster) = self.rt.store.cluster().filter(|_| !runs_here) else {
            let cancel = self.cancel_here(msg, ctx);
            return self.answer_cancel(cancel);
        };
        // On a shared store the task and its context's lease are read through the seam,
        // with the mailbox held (`ctx.wait`: no turn starts in between) but not the thread.
        let reads =
            (self.rt.store.read_task(Scope::Owner(&msg.owner), &msg.task_id), cluster.read_lease_holder(&self.key));
        let (answer, answered) = tokio::sync::oneshot::channel();
        let read = async move { (reads.0.await, reads.1.await) };
        ctx.wait(read.into_actor(self).map(move |(task, holder), act, ctx| {
            let stored = task.map_err(RuntimeError::from).and_then(|read| act.own_context_task(read, &msg.task_id));
            let holder = holder.map_err(RuntimeError::from);
            let cancel = match (stored, holder) {
                (Ok(record), Ok(holder)) => act.cancel_stored(record, holder, ctx),
                (Err(e), _) | (_, Err(e)) => Err(e.into()),
            };
            let _ = answer.send(act.answer_cancel(cancel));
        }));
        Box::pin(async move {
            match answered.await {
                Ok(cancel) => cancel.await,
                Err(_) => Err(RuntimeError::ContextUnavailable.into()),
            }
        })
    }
}

impl ContextActor {
    /// What a cancel answers once it ended up somewhere: its write, or the other node's
    /// answer.
    fn answer_cancel(&self, cancel: Result<Cancel, A2aError>) -> ResponseFuture<Result<Task, A2aError>> {
        match cancel {
            Ok(Cancel::Done(task, stored)) => Box::pin(async move {
                stored.answered().await.map_err(RuntimeError::from)?;
                Ok(task)
            }),
            Ok(Cancel::Elsewhere(node, record)) => Box::pin(cluster::cancel_on(Arc::clone(&self.rt), node, record)),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

/// Where a cancel ended up.
enum Cancel {
    /// Canceled here, with the write of its end (answered first).
    Done(Task, Written),
    /// The task's turn runs on this other node.
    Elsewhere(String, a2ad_storage::TaskRecord),
}

impl ContextActor {
    fn cancel_here(&mut self, msg: CancelTask, ctx: &mut Context<Self>) -> Result<Cancel, A2aError> {
        let scope = Scope::Owner(&msg.owner);
        let running = self.turn.as_ref().map(|t| (t.record.task.id == msg.task_id, scope.admits(&t.record.owner)));
        match running {
            Some((true, true)) => {
                return self.end_turn(TaskState::Canceled, None, ctx).map(|task| Cancel::Done(task, Written::Done))
            }
            Some((true, false)) => return Err(RuntimeError::TaskNotFound(msg.task_id).into()),
            _ => {}
        }
        let record = self.stored_task(&msg.owner, &msg.task_id)?;
        let holder = match self.rt.store.cluster() {
            Some(cluster) if record.state().is_active() => {
                cluster.lease_holder(&self.key).map_err(RuntimeError::from)?
            }
            _ => None,
        };
        self.cancel_stored(record, holder, ctx)
    }

    /// Cancels the stored task `record` (not running here), whose context's lease
    /// `holder` holds: there if it is another node, else here.
    fn cancel_stored(
        &mut self,
        mut record: a2ad_storage::TaskRecord,
        holder: Option<String>,
        _ctx: &mut Context<Self>,
    ) -> Result<Cancel, A2aError> {
        let task_id = record.task.id.clone();
        if record.state().is_terminal() {
            return Err(RuntimeError::NotCancelable(task_id, record.state()).into());
        }
        if let Some(node) = self.elsewhere(&record, holder) {
            return Ok(Cancel::Elsewhere(node, record));
        }
        record.task.status = TaskStatus::now(TaskState::Canceled, None);
        record.last_event_seq += 1;
        let event = LoggedEvent::encode(record.last_event_seq, &status_event(&record));
        let (stored, for_watchers) =
            self.rt.persist(&record, std::slice::from_ref(&event)).map_err(RuntimeError::from)?.split();
        self.close_watchers(&task_id, event, for_watchers);
        Ok(Cancel::Done(record.task, stored))
    }
}

impl Handler<ExpireTask> for ContextActor {
    type Result = ResponseFuture<Result<bool, A2aError>>;

    /// Answered once the expiry's write is. On a shared store the task is read through
    /// the seam, with the mailbox held (`ctx.wait`: no turn starts in between) but not the
    /// thread; on a node's own store the read is local.
    fn handle(&mut self, msg: ExpireTask, ctx: &mut Self::Context) -> Self::Result {
        if self.turn.as_ref().is_some_and(|t| t.record.task.id == msg.task_id) {
            return Box::pin(std::future::ready(Ok(false))); // Answered since the sweep looked: running again.
        }
        if !self.shared() {
            let read = self.rt.store.get_task(Scope::Owner(&msg.owner), &msg.task_id).map_err(RuntimeError::from);
            return expiry_answer(read.map_err(A2aError::from).and_then(|read| self.expire(msg, read)));
        }
        let read = self.rt.store.read_task(Scope::Owner(&msg.owner), &msg.task_id);
        let (answer, answered) = tokio::sync::oneshot::channel();
        ctx.wait(read.into_actor(self).map(move |read, act, _| {
            let read = read.map_err(|e| A2aError::from(RuntimeError::from(e)));
            let _ = answer.send(read.and_then(|read| act.expire(msg, read)));
        }));
        Box::pin(async move {
            match answered.await {
                Ok(expired) => expiry_answer(expired).await,
                Err(_) => Err(RuntimeError::ContextUnavailable.into()),
            }
        })
    }
}

/// An expiry's answer: `true` once its write is answered, `false` if it left the task.
fn expiry_answer(expired: Result<Option<Written>, A2aError>) -> ResponseFuture<Result<bool, A2aError>> {
    Box::pin(async move {
        match expired? {
            Some(stored) => {
                stored.answered().await.map_err(RuntimeError::from)?;
                Ok(true)
            }
            None => Ok(false),
        }
    })
}

impl ContextActor {
    /// Cancels an interrupted task whose wait ran out, unless it changed since the sweep
    /// looked (`read`: the task as stored now, in the sweep's owner's scope); the
    /// expiry's write, or `None` if it was left alone.
    fn expire(&mut self, msg: ExpireTask, read: Option<a2ad_storage::TaskRecord>) -> Result<Option<Written>, A2aError> {
        let mut record = self.own_context_task(read, &msg.task_id)?;
        let unchanged = record.status_millis() == msg.status_millis;
        if !unchanged || !matches!(record.state(), TaskState::InputRequired | TaskState::AuthRequired) {
            return Ok(None);
        }
        let mut message = self.agent_message(&msg.reason);
        message.task_id = Some(record.task.id.clone());
        record.task.status = TaskStatus::now(TaskState::Canceled, Some(message));
        record.last_event_seq += 1;
        let event = LoggedEvent::encode(record.last_event_seq, &status_event(&record));
        let (stored, for_watchers) =
            self.rt.persist(&record, std::slice::from_ref(&event)).map_err(RuntimeError::from)?.split();
        self.close_watchers(&msg.task_id, event, for_watchers);
        Ok(Some(stored))
    }
}

impl Handler<ForgetSession> for ContextActor {
    type Result = ActorResponse<Self, bool>;

    /// On a shared store the store's script runs on the blocking pool (a Redis round trip
    /// on a connection of its own), with the mailbox held (`ctx.wait`: no turn starts in
    /// between) but not the thread; on a node's own store it is local.
    fn handle(&mut self, _: ForgetSession, ctx: &mut Self::Context) -> Self::Result {
        if self.turn.is_some() {
            return ActorResponse::reply(false);
        }
        if !self.shared() {
            let removed = self.rt.store.forget_session_if_unused(&self.key);
            return ActorResponse::reply(self.session_forgotten(removed));
        }
        let (store, key) = (Arc::clone(&self.rt.store), self.key.clone());
        let forget = tokio::task::spawn_blocking(move || store.forget_session_if_unused(&key));
        let (answer, answered) = tokio::sync::oneshot::channel();
        ctx.wait(forget.into_actor(self).map(move |done, act, _| {
            let removed = done.unwrap_or_else(|_| Err(a2ad_storage::StoreError::Closed));
            let _ = answer.send(act.session_forgotten(removed));
        }));
        ActorResponse::r#async(async move { answered.await.unwrap_or(false) }.into_actor(self))
    }
}

impl ContextActor {
    /// Drops the session held here once the store removed it; whether it did.
    fn session_forgotten(&mut self, removed: Result<bool, a2ad_storage::StoreError>) -> bool {
        match removed {
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
    type Result = ResponseFuture<Result<Subscription, A2aError>>;

    /// On a node's own store, answered at once; on a shared store, once its reads are in;
    /// for a task whose turn just ended here, once that end is durable
    /// ([`super::actor::EndingTurn`]).
    fn handle(&mut self, msg: Subscribe, ctx: &mut Self::Context) -> Self::Result {
        self.last_active = Instant::now();
        if let Some(ended) = self.ending_of(&msg.task_id) {
            let again = ctx.address();
            return Box::pin(async move {
                let _ = ended.await;
                again.send(msg).await.unwrap_or_else(|_| Err(RuntimeError::ContextUnavailable.into()))
            });
        }
        match self.shared() {
            true => self.subscribe_shared(msg, ctx),
            false => Box::pin(std::future::ready(self.subscribe(msg, ctx))),
        }
    }
}

impl ContextActor {
    /// The end to wait for before a subscription to `task_id` reads the store: its last
    /// turn's, while that end is not durable and no newer turn of it runs here.
    fn ending_of(&self, task_id: &str) -> Option<futures_util::future::Shared<tokio::sync::oneshot::Receiver<()>>> {
        if self.turn.as_ref().is_some_and(|t| t.record.task.id == task_id) {
            return None;
        }
        let ending = self.ending.as_ref().filter(|e| e.task_id == task_id && e.ended.peek().is_none())?;
        Some(ending.ended.clone())
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
    /// task (someone watches it now) and writes its progress promptly. The task and its
    /// first events are read through the seam, and the actor goes on meanwhile: the
    /// stream follows the store from the generation it read, not the actor.
    fn subscribe_shared(
        &mut self,
        msg: Subscribe,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<Subscription, A2aError>> {
        match watched_turn(&mut self.turn, &msg) {
            Ok(Some(turn)) => {
                turn.visible = true;
                self.schedule_progress_save(ctx);
            }
            Ok(None) => {}
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        }
        let read = self.rt.store.read_task(Scope::Owner(&msg.owner), &msg.task_id);
        let (rt, context_id) = (Arc::clone(&self.rt), self.key.context_id.clone());
        Box::pin(async move {
            let read = read.await.map_err(RuntimeError::from)?.filter(|r| r.task.context_id == context_id);
            let record = subscribable(read, &msg)?;
            let initial = first_events_read(&rt, &record, msg.after).await?;
            let cluster = rt.store.cluster().ok_or(RuntimeError::ContextUnavailable)?;
            Ok(cluster::follow(cluster, &record, initial, rt.settings.stream_buffer)?)
        })
    }

    /// The stored task a subscription starts from: the caller's, and not terminal.
    fn subscribable_task(&self, msg: &Subscribe) -> Result<a2ad_storage::TaskRecord, A2aError> {
        let read = self.rt.store.get_task(Scope::Owner(&msg.owner), &msg.task_id).map_err(RuntimeError::from)?;
        subscribable(read.filter(|r| r.task.context_id == self.key.context_id), msg)
    }
}

/// `read` (the caller's task of this context, as read) if a subscription may start from
/// it: known, and not terminal.
fn subscribable(read: Option<a2ad_storage::TaskRecord>, msg: &Subscribe) -> Result<a2ad_storage::TaskRecord, A2aError> {
    let record = read.ok_or_else(|| RuntimeError::TaskNotFound(msg.task_id.clone()))?;
    match record.state().is_terminal() {
        true => Err(RuntimeError::SubscribeTerminal(msg.task_id.clone(), record.state()).into()),
        false => Ok(record),
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
