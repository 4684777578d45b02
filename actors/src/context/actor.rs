//! The context actor's state and its session bookkeeping.

use super::durable::{DurableMark, DurableMarks};
use super::fanout::Fanout;
use super::stream::snapshot;
use crate::agent::TurnSignal;
use crate::messages::TurnOutcome;
use crate::{Runtime, RuntimeError};
use a2ad_protocol::{A2aError, Message, StreamResponse};
use a2ad_storage::TaskStoreExt;
use a2ad_storage::{ContextKey, LoggedEvent, Owner, Scope, SessionRecord, SessionWrite, TaskRecord, Written};
use actix::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Owns one context's session and runs its turns, one at a time.
pub struct ContextActor {
    pub(super) key: ContextKey,
    pub(super) rt: Arc<Runtime>,
    /// Loaded from the store on the first message, so that a rebuilt actor picks up
    /// where the evicted one stopped.
    pub(super) session: Option<Box<SessionRecord>>,
    /// Messages of the running turn, folded into the session when the turn ends (so
    /// that the agent's view of the history is never copied mid-turn).
    pub(super) pending: Vec<Message>,
    /// Boxed: most actors are idle, and an idle actor should be small.
    pub(super) turn: Option<Box<RunningTurn>>,
    /// Streams that follow an interrupted task of this context until its next turn
    /// ([`super::watch`]), by task id.
    pub(super) watchers: HashMap<String, Fanout>,
    /// The durable marks of the tasks that streams follow here ([`super::durable`]).
    pub(super) marks: DurableMarks,
    /// The last turn to end, until its end is durable ([`EndingTurn`]).
    pub(super) ending: Option<EndingTurn>,
    pub(super) turns_started: u64,
    /// A hibernation timer is pending (`ContextActor::schedule_hibernation`).
    pub(super) hibernation_armed: bool,
    /// When the actor last started, ended or cancelled something; eviction waits for
    /// the idle timeout to pass since then.
    pub(super) last_active: Instant,
}

/// A turn that ended here whose end is not durable yet: the store still shows it running
/// (a sled node reads durable steps only). A subscription to its task waits for `ended`
/// (the end's commit, answered or failed), then reads the store again, so that it never
/// starts from the stale record: no gap in a resumed stream, and no snapshot of a turn
/// that is already over.
pub(super) struct EndingTurn {
    pub task_id: String,
    pub ended: futures_util::future::Shared<oneshot::Receiver<()>>,
}

/// The turn in progress.
pub(super) struct RunningTurn {
    pub id: u64,
    pub record: TaskRecord,
    pub cancel: CancellationToken,
    pub join: tokio::task::JoinHandle<()>,
    pub waiters: Vec<oneshot::Sender<Result<TurnOutcome, A2aError>>>,
    /// Streams watching the turn.
    pub subscribers: Fanout,
    /// Events emitted since the last write: the next progress write logs them.
    pub unsaved_events: Vec<LoggedEvent>,
    /// A progress write is scheduled, or its commit is awaited.
    pub save_scheduled: bool,
    /// How long the last progress write took (see `ContextActor::schedule_progress_save`).
    pub save_cost: std::time::Duration,
    /// The pending progress write's timer, cancelled when the turn ends first.
    pub save_timer: Option<SpawnHandle>,
    /// The new task's first event, kept from the caller's stream until the agent's first
    /// event shows that the turn is a task and not a Message-only reply (see
    /// [`super::reply`]).
    pub held_snapshot: Option<LoggedEvent>,
    /// The turn may still end as a Message-only reply: its task is new, the client has
    /// not been handed it, and the agent has not sent any event yet.
    pub reply_allowed: bool,
    /// The task is in the store from the turn's start (its id may be known to others):
    /// on a shared store, its progress is then written as promptly as for a live stream.
    pub visible: bool,
    /// The last encoded task snapshot, reused while no new event has happened.
    pub snapshot_cache: Option<LoggedEvent>,
    /// The task's durable mark, which its streams wait for.
    pub mark: Arc<DurableMark>,
    /// This turn's place under the turn limits; released when the turn is dropped.
    pub _permit: crate::limits::TurnPermit,
}

impl RunningTurn {
    /// Stops the agent and the turn's pending progress timer (the turn's end writes
    /// what it would have written).
    pub(super) fn stop(&mut self, ctx: &mut Context<ContextActor>) {
        self.cancel.cancel();
        self.join.abort();
        if let Some(timer) = self.save_timer.take() {
            ctx.cancel_future(timer);
        }
    }

    /// Records a change of the running task as its next event: logged with the next
    /// progress write, and handed to every subscriber now (whose stream sends it once
    /// that write is durable: [`super::durable`]).
    pub(super) fn emit(&mut self, event: StreamResponse) {
        self.release_snapshot();
        self.record.last_event_seq += 1;
        let logged = LoggedEvent::encode(self.record.last_event_seq, &event);
        self.subscribers.publish(&logged);
        self.unsaved_events.push(logged);
    }

    /// Sends the held-back task snapshot (see [`super::reply`]) to the subscribers, once:
    /// the turn is a task after all.
    pub(super) fn release_snapshot(&mut self) {
        if let Some(held) = self.held_snapshot.take() {
            self.subscribers.publish(&held);
        }
    }

    /// The running task as a stream's first event, encoded once per event sequence
    /// number: a thousand subscribers joining at once share one encoding.
    pub(super) fn current_snapshot(&mut self) -> LoggedEvent {
        match &self.snapshot_cache {
            Some(cached) if cached.seq == self.record.last_event_seq => cached.clone(),
            _ => {
                let fresh = snapshot(&self.record, None);
                self.snapshot_cache = Some(fresh.clone());
                fresh
            }
        }
    }
}

impl Actor for ContextActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Requests are few per context (a busy context refuses at once), so a small
        // bounded mailbox suffices; senders wait rather than queue without limit.
        ctx.set_mailbox_capacity(64);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if let Some(turn) = self.turn.take() {
            turn.cancel.cancel();
            turn.join.abort();
            self.give_back_lease();
        }
    }
}

impl ContextActor {
    pub fn new(key: ContextKey, rt: Arc<Runtime>) -> Self {
        ContextActor {
            key,
            rt,
            session: None,
            pending: Vec::new(),
            turn: None,
            watchers: HashMap::new(),
            marks: DurableMarks::default(),
            turns_started: 0,
            hibernation_armed: false,
            ending: None,
            last_active: Instant::now(),
        }
    }

    /// Loads the session, or creates it bound to the agent the message asks for.
    pub(super) fn ensure_session(&mut self, skill: Option<&str>) -> Result<&mut SessionRecord, RuntimeError> {
        let limit = self.rt.settings.session_history_limit;
        if self.session.is_none() {
            self.session = self.rt.store.get_session(&self.key, limit)?.map(Box::new);
        }
        self.bind_session(skill)
    }

    /// The session as loaded (a new one if there is none), bound to the agent the message
    /// asks for.
    pub(super) fn bind_session(&mut self, skill: Option<&str>) -> Result<&mut SessionRecord, RuntimeError> {
        let agents = &self.rt.agents;
        if let Some(asked) = skill {
            if agents.get(asked).is_none() {
                return Err(RuntimeError::UnknownSkill { asked: asked.to_owned(), known: agents.skills().to_vec() });
            }
        }
        let session = match self.session.take() {
            Some(session) => session,
            None => {
                let bound = skill
                    .or(agents.default_skill())
                    .ok_or_else(|| RuntimeError::UnknownSkill { asked: String::new(), known: Vec::new() })?;
                Box::new(SessionRecord::new(self.key.clone(), bound))
            }
        };
        if let Some(asked) = skill.filter(|asked| *asked != session.agent) {
            let bound = session.agent.clone();
            self.session = Some(session);
            return Err(RuntimeError::SkillMismatch { bound, asked: asked.to_owned() });
        }
        Ok(self.session.insert(session))
    }

    /// The working directory of the context: the `message.metadata.a2ad.cwd` of its first
    /// message binds it; a later message may repeat it but not change it.
    pub(super) fn bind_workspace(&mut self, message: &Message) -> Result<Option<String>, RuntimeError> {
        let asked = requested_cwd(message)?;
        let Some(session) = self.session.as_mut() else { return Ok(asked) };
        if session.message_count == 0 && session.cwd.is_none() {
            session.cwd = asked.clone();
        }
        match asked {
            Some(asked) if session.cwd.as_deref() != Some(asked.as_str()) => Err(RuntimeError::CwdMismatch),
            _ => Ok(session.cwd.clone()),
        }
    }

    /// The step that ends a turn: writes the task with `events`, and folds the turn's
    /// messages into the session with the task as the context's latest, in ONE commit.
    pub(super) fn save_turn_end(
        &mut self,
        record: &TaskRecord,
        events: &[LoggedEvent],
    ) -> Result<Written, RuntimeError> {
        let history_limit = self.rt.settings.session_history_limit;
        let appended = std::mem::take(&mut self.pending);
        let Some(session) = self.session.as_mut() else { return self.save(record, events) };
        session.append(&appended, history_limit);
        session.last_task_id = Some(record.task.id.clone());
        let write = SessionWrite { session, appended: &appended, history_limit };
        Ok(self.rt.persist_step(record, events, Some(write))?)
    }

    /// This context's task `task_id` as stored, if `owner` owns it; else TaskNotFound, so
    /// that another owner's task is never revealed (the store's read is owner-scoped).
    /// A read on this thread: for a node's own store only, where it is local; on a shared
    /// store callers read through the seam ([`a2ad_storage::TaskStore::read_task`]).
    pub(super) fn stored_task(&self, owner: &Owner, task_id: &str) -> Result<TaskRecord, RuntimeError> {
        self.own_context_task(self.rt.store.get_task(Scope::Owner(owner), task_id)?, task_id)
    }

    /// `read` (task `task_id` as the caller's scope read it) if it is this context's.
    pub(super) fn own_context_task(&self, read: Option<TaskRecord>, task_id: &str) -> Result<TaskRecord, RuntimeError> {
        read.filter(|r| r.task.context_id == self.key.context_id)
            .ok_or_else(|| RuntimeError::TaskNotFound(task_id.to_owned()))
    }

    /// Writes the task and logs `events`. Durability comes from the write's answer and
    /// the group commit after it, which callers await before answering.
    pub(super) fn save(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Written, RuntimeError> {
        Ok(self.rt.persist(record, events)?)
    }
}

/// `message.metadata.a2ad.cwd`, if the client named a working directory.
fn requested_cwd(message: &Message) -> Result<Option<String>, RuntimeError> {
    let a2ad = message.metadata.as_ref().and_then(|m| m.get("a2ad"));
    match a2ad.and_then(|a| a.get("cwd")) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(cwd)) => Ok(Some(cwd.clone())),
        Some(_) => Err(RuntimeError::BadCwd),
    }
}

impl StreamHandler<TurnSignal> for ContextActor {
    fn handle(&mut self, signal: TurnSignal, ctx: &mut Self::Context) {
        self.on_turn_signal(signal, ctx);
    }

    /// A turn's channel closes after its last signal; the actor lives on.
    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

/// Hands every waiter of a turn its answer: a copy to each but the last, which gets the
/// answer itself (a blocking send is the one waiter of its turn, and a task is a deep
/// clone: its history, artifacts and status message).
pub(super) fn answer_all(
    waiters: Vec<oneshot::Sender<Result<TurnOutcome, A2aError>>>,
    answer: Result<TurnOutcome, A2aError>,
) {
    let mut waiters = waiters.into_iter();
    let Some(last) = waiters.next_back() else { return };
    for waiter in waiters {
        let _ = waiter.send(answer.clone());
    }
    let _ = last.send(answer);
}
