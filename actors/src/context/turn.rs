//! How a turn starts and progresses (its end is `ending.rs`).
//!
//! A turn runs as its own task on the actor's arbiter. The agent's events and, last, its
//! result flow back through one bounded channel that the actor consumes as a stream, so
//! the actor sees them in order and applies each to the task before the next. Cancelling
//! aborts the turn's task, which drops the agent future: the turn really stops.

use super::actor::{ContextActor, RunningTurn};
use super::durable::DurableMark;
use super::fanout::{Fanout, Subscriber};
use super::stream::{snapshot, status_event};
use crate::agent::{AgentEvent, EventSink, SignalKind, TurnInput, TurnSignal};
use crate::messages::{StartTurn, Subscription, TurnTicket};
use crate::RuntimeError;
use a2ad_protocol::{ids, A2aError, Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus};
use a2ad_storage::{LoggedEvent, Owner, Scope, TaskRecord, TurnLease, Written};
use actix::prelude::*;
use futures_util::stream;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// What a shared store's start of a turn read before the turn (`start_shared_turn`).
struct Prefetched {
    /// The task a resuming message names, as the caller's scope reads it.
    resumed: Option<Option<TaskRecord>>,
}

/// How many agent events may wait for the actor before the agent is slowed down.
const TURN_CHANNEL_CAPACITY: usize = 64;

/// Runs the agent as a task of its own on this arbiter; its events, then its result,
/// reach the actor through one bounded channel consumed as a stream.
fn spawn_agent(
    agent: &dyn crate::agent::Agent,
    input: TurnInput,
    turn_id: u64,
    ctx: &mut Context<ContextActor>,
) -> tokio::task::JoinHandle<()> {
    let (tx, rx) = mpsc::channel(TURN_CHANNEL_CAPACITY);
    let run = agent.run(input, EventSink::new(tx.clone(), turn_id));
    ctx.add_stream(stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|s| (s, rx)) }));
    actix::spawn(async move {
        let result = run.await;
        let _ = tx.send(TurnSignal { turn: turn_id, kind: SignalKind::Finished(result) }).await;
    })
}

/// How stale the stored progress of a running task may be.
const PROGRESS_SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// How soon a turn with live streams writes its progress (see
/// [`ContextActor::schedule_progress_save`]): long enough for an agent that answers at
/// once to end its turn first, so that its events go with the turn's end in one write.
const LIVE_SAVE_DELAY: std::time::Duration = std::time::Duration::from_millis(1);

impl ContextActor {
    /// Handles [`StartTurn`] on a node's own store: checks, stores the task, starts the
    /// agent. Every store call here answers at once.
    pub(super) fn start_turn(&mut self, msg: StartTurn, ctx: &mut Context<Self>) -> Result<TurnTicket, A2aError> {
        if self.turn.is_some() {
            return Err(RuntimeError::AlreadyWorking.into());
        }
        let permit = self.rt.turn_limits.acquire(&msg.owner.tenant)?;
        let (ticket, _stored) = self.start_leased_turn(msg, permit, None, ctx)?;
        Ok(ticket)
    }

    /// Handles [`StartTurn`] on a shared store: the context's lease and its session in one
    /// round trip ([`a2ad_storage::Cluster::begin_turn`]), with the resumed task read
    /// beside it on the same pipe, all awaited without holding the thread; then the turn
    /// as on a node's own store, answered once its start is written. The caller runs this
    /// future with `ctx.wait`: the context takes no other message meanwhile, so a turn
    /// still starts one at a time.
    pub(super) fn start_shared_turn(
        &mut self,
        msg: StartTurn,
    ) -> ResponseActFuture<Self, Result<TurnTicket, A2aError>> {
        let ready = |result| -> ResponseActFuture<Self, _> { Box::pin(actix::fut::ready(result)) };
        if self.turn.is_some() {
            return ready(Err(RuntimeError::AlreadyWorking.into()));
        }
        let (permit, cluster) = match (self.rt.turn_limits.acquire(&msg.owner.tenant), self.rt.store.cluster()) {
            (Ok(permit), Some(cluster)) => (permit, cluster),
            (Err(e), _) => return ready(Err(e.into())),
            (_, None) => return ready(Err(RuntimeError::ContextUnavailable.into())),
        };
        let known = self.session.as_deref();
        let lease = cluster.begin_turn(&self.key, self.rt.settings.session_history_limit, known);
        let resumed = msg.task_id.as_deref().map(|id| self.rt.store.read_task(Scope::Owner(&msg.owner), id));
        let reads = async move {
            let lease = lease.await;
            let resumed = match resumed {
                Some(read) => Some(read.await),
                None => None,
            };
            (lease, resumed)
        };
        Box::pin(reads.into_actor(self).then(move |(lease, resumed), act, ctx| {
            let started = act.start_after_lease(msg, permit, lease, resumed, ctx);
            async move {
                let (ticket, stored) = started?;
                stored.answered().await.map_err(RuntimeError::from)?;
                Ok(ticket)
            }
            .into_actor(act)
        }))
    }

    /// The turn once [`Self::start_shared_turn`]'s reads are in.
    fn start_after_lease(
        &mut self,
        msg: StartTurn,
        permit: crate::limits::TurnPermit,
        lease: Result<TurnLease, a2ad_storage::StoreError>,
        resumed: Option<Result<Option<TaskRecord>, a2ad_storage::StoreError>>,
        ctx: &mut Context<Self>,
    ) -> Result<(TurnTicket, Written), A2aError> {
        // The last turn may have run on another node: the stored session is the truth.
        match lease.map_err(RuntimeError::from)? {
            TurnLease::HeldElsewhere => return Err(RuntimeError::AlreadyWorking.into()),
            TurnLease::Taken(session) => self.session = session.map(Box::new),
            TurnLease::Current => {}
        }
        let resumed = match resumed {
            Some(read) => Some(read.map_err(RuntimeError::from)?),
            None => None,
        };
        let started = self.start_leased_turn(msg, permit, Some(Prefetched { resumed }), ctx);
        if started.is_err() {
            self.give_back_lease();
        }
        started
    }

    /// Starts the turn once the context is this node's. `prefetched`: what a shared store's
    /// start read already (the session, set on the actor, and the resumed task), which is
    /// then not read again. Returns the ticket and the start's write (done already but on
    /// a shared store, and when the new task is not written yet).
    fn start_leased_turn(
        &mut self,
        msg: StartTurn,
        permit: crate::limits::TurnPermit,
        prefetched: Option<Prefetched>,
        ctx: &mut Context<Self>,
    ) -> Result<(TurnTicket, Written), A2aError> {
        let skill = match prefetched.is_some() {
            true => self.bind_session(msg.skill.as_deref())?,
            false => self.ensure_session(msg.skill.as_deref())?,
        }
        .agent
        .clone();
        let agent = self.rt.agents.get(&skill).ok_or_else(|| RuntimeError::UnknownSkill {
            asked: skill.clone(),
            known: self.rt.agents.skills().to_vec(),
        })?;
        agent.check_input(&msg.message)?;
        let cwd = self.bind_workspace(&msg.message)?;
        let new_task = msg.task_id.is_none();
        // A client that holds the task, or asked for its push notifications, keeps it.
        let reply_allowed = new_task && !msg.keep_task && agent.may_reply_only();
        let (record, message, first) = self.open_task(&msg, &skill, prefetched.and_then(|p| p.resumed))?;
        // A new task that nobody can see yet (a blocking send without a stream, a push
        // config or `returnImmediately`: its id is in no answer until the turn ends) is
        // not written now. Its first event waits with the turn's progress, so a turn that
        // ends within the progress interval costs one write, not two, and the task is
        // written before that interval ends otherwise. A crash before then loses a task
        // whose id was never acknowledged to anyone.
        let unseen = new_task && !msg.stream && !msg.keep_task;
        self.marks.forget_unfollowed(None);
        let mark = self.marks.of(&record.task.id, first.seq - 1);
        let stored = match unseen {
            true => Written::Done,
            false => {
                let (stored, for_mark) = self.save(&record, std::slice::from_ref(&first))?.split();
                mark.advance_when_durable(for_mark, &self.rt.commit, first.seq);
                stored
            }
        };
        let history = self.session.as_ref().map(|s| s.history.clone()).unwrap_or_default();
        self.pending = vec![message.clone()];

        self.turns_started += 1;
        let turn_id = self.turns_started;
        let cancel = CancellationToken::new();
        let input = TurnInput {
            task_id: record.task.id.clone(),
            context_id: self.key.context_id.clone(),
            owner: msg.owner.clone(),
            skill,
            message,
            history,
            cwd,
            cancel: cancel.clone(),
        };
        let join = spawn_agent(agent.as_ref(), input, turn_id, ctx);

        let (done_tx, done) = oneshot::channel();
        let (subscribers, subscription, held_snapshot) = match msg.stream {
            true => self.open_stream(&record, reply_allowed, &mark),
            false => (Fanout::default(), None, None),
        };
        let task = record.task.clone();
        let mut subscribers = subscribers;
        if !new_task {
            // The streams that waited for this answer follow the turn from its first event.
            let mut followers = self.take_watchers(&task.id);
            followers.publish(&first);
            subscribers.extend(followers);
        }
        self.turn = Some(Box::new(RunningTurn {
            id: turn_id,
            record,
            cancel,
            join,
            waiters: vec![done_tx],
            subscribers,
            unsaved_events: if unseen { vec![first] } else { Vec::new() },
            save_scheduled: false,
            save_cost: std::time::Duration::ZERO,
            save_timer: None,
            held_snapshot,
            reply_allowed,
            visible: !unseen,
            snapshot_cache: None,
            mark,
            _permit: permit,
        }));
        if unseen {
            self.schedule_progress_save(ctx);
        }
        Ok((TurnTicket { task, done, subscription }, stored))
    }

    /// The caller's stream of a starting turn: its subscriber, its subscription, and the
    /// task snapshot held back from it. When the turn may still become a Message-only
    /// reply, the new task's first event waits for the agent's (see `super::reply`).
    fn open_stream(
        &self,
        record: &TaskRecord,
        reply_allowed: bool,
        mark: &DurableMark,
    ) -> (Fanout, Option<Subscription>, Option<LoggedEvent>) {
        let first = snapshot(record, None);
        let (initial, held) = if reply_allowed { (Vec::new(), Some(first)) } else { (vec![first], None) };
        let (subscriber, subscription) = Subscriber::new(self.rt.settings.stream_buffer, initial, false, mark);
        (Fanout::of(subscriber), Some(subscription), held)
    }

    /// The task the turn works on, WORKING with the user's message, and the turn's first
    /// event (the caller stores both): the new task itself, or the resumed task's WORKING
    /// status. The turn starts right away (a busy context refused earlier), so no
    /// SUBMITTED write that nobody could see.
    fn open_task(
        &self,
        msg: &StartTurn,
        skill: &str,
        resumed: Option<Option<TaskRecord>>,
    ) -> Result<(TaskRecord, Message, LoggedEvent), RuntimeError> {
        let mut record = match (&msg.task_id, resumed) {
            (Some(task_id), Some(read)) => self.resumable(task_id, self.own_context_task(read, task_id)?)?,
            (Some(task_id), None) => self.resumable(task_id, self.stored_task(&msg.owner, task_id)?)?,
            (None, _) => self.new_task(&msg.owner, skill, msg.new_task_id.clone()),
        };
        record.task.status = TaskStatus::now(TaskState::Working, None);
        let mut message = msg.message.clone();
        message.context_id = Some(self.key.context_id.clone());
        message.task_id = Some(record.task.id.clone());
        record.task.history.push(message.clone());
        record.last_event_seq += 1;
        let first =
            if msg.task_id.is_none() { StreamResponse::Task(record.task.clone()) } else { status_event(&record) };
        let first = LoggedEvent::encode(record.last_event_seq, &first);
        Ok((record, message, first))
    }

    fn new_task(&self, owner: &Owner, skill: &str, id: Option<String>) -> TaskRecord {
        TaskRecord {
            owner: owner.clone(),
            agent: skill.to_owned(),
            task: Task {
                id: id.unwrap_or_else(|| ids::new_task_id(owner.shard_hash())),
                context_id: self.key.context_id.clone(),
                status: TaskStatus::now(TaskState::Working, None),
                artifacts: Vec::new(),
                history: Vec::new(),
                metadata: None,
            },
            last_event_seq: 0,
        }
    }

    /// The context's interrupted task `task_id` (`record`, as stored), ready to continue.
    fn resumable(&self, task_id: &str, record: TaskRecord) -> Result<TaskRecord, RuntimeError> {
        let state = record.state();
        if state.is_terminal() {
            return Err(RuntimeError::TaskTerminal(task_id.to_owned(), state));
        }
        if state.is_active() {
            // Only the running turn may be active, and that case was refused above.
            return Err(RuntimeError::AlreadyWorking);
        }
        Ok(record)
    }

    pub(super) fn on_turn_signal(&mut self, signal: TurnSignal, ctx: &mut Context<Self>) {
        if self.turn.as_ref().map(|t| t.id) != Some(signal.turn) {
            return; // A cancelled turn's leftovers.
        }
        match signal.kind {
            SignalKind::Event(event) => {
                self.apply_event(event);
                self.schedule_progress_save(ctx);
            }
            SignalKind::Finished(result) => self.finish_turn(result, ctx),
        }
    }

    /// Applies an agent event to the running task, in memory, and emits it.
    fn apply_event(&mut self, event: AgentEvent) {
        let message = match &event {
            AgentEvent::Text(text) | AgentEvent::Delta(text) => Some(self.agent_message(text)),
            AgentEvent::Artifact { .. } | AgentEvent::Progress(_) => None,
        };
        let Some(turn) = self.turn.as_mut() else { return };
        turn.reply_allowed = false;
        match event {
            AgentEvent::Text(_) | AgentEvent::Delta(_) => {
                let message = message.expect("built above");
                if matches!(event, AgentEvent::Text(_)) {
                    self.pending.push(message.clone());
                    turn.record.task.history.push(message.clone());
                }
                turn.record.task.status = TaskStatus::now(TaskState::Working, Some(message));
                turn.emit(status_event(&turn.record));
            }
            AgentEvent::Artifact { artifact, append, last_chunk } => {
                turn.record.task.apply_artifact(artifact.clone(), append);
                turn.emit(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: turn.record.task.id.clone(),
                    context_id: turn.record.task.context_id.clone(),
                    artifact,
                    append,
                    last_chunk,
                    metadata: None,
                }));
            }
            AgentEvent::Progress(details) => {
                // The status as it is, without repeating its message: the update is news
                // about the work, not a new word from the agent.
                let mut status = turn.record.task.status.clone();
                status.message = None;
                let mut metadata = a2ad_protocol::Metadata::new();
                metadata.insert("a2ad".into(), serde_json::Value::Object(details));
                turn.emit(StreamResponse::StatusUpdate(a2ad_protocol::TaskStatusUpdateEvent {
                    task_id: turn.record.task.id.clone(),
                    context_id: turn.record.task.context_id.clone(),
                    status,
                    metadata: Some(metadata),
                }));
            }
        }
    }

    /// Progress is written at most once per [`PROGRESS_SAVE_INTERVAL`], not per event: an
    /// agent that streams many small events costs one write per interval, and a turn that
    /// ends sooner costs none (its end is written anyway). Progress is not durable by
    /// design; a crash fails the task at start-up.
    ///
    /// A turn that streams writes its progress within [`LIVE_SAVE_DELAY`] instead, one
    /// write at a time: its streams send an event only once it is durable
    /// ([`super::durable`]), so the next write waits for the commit of the one before
    /// (and takes every event emitted meanwhile). A stream's events then follow the agent
    /// by about one commit, whatever the agent's pace. Each write carries the whole task,
    /// so a task grown large (a long artifact: megabytes a write) is written less often:
    /// the actor spends at most a tenth of its time writing, and waits at most
    /// [`PROGRESS_SAVE_INTERVAL`] between writes, as a turn without streams does.
    pub(super) fn schedule_progress_save(&mut self, ctx: &mut Context<Self>) {
        let Some(turn) = self.turn.as_mut() else { return };
        if turn.save_scheduled {
            return;
        }
        turn.save_scheduled = true;
        // On a shared store, a visible task may have subscribers on any node.
        let followed = turn.visible && self.rt.store.cluster().is_some();
        let delay = match turn.subscribers.is_empty() && !followed {
            true => PROGRESS_SAVE_INTERVAL,
            false => (turn.save_cost * 10).clamp(LIVE_SAVE_DELAY, PROGRESS_SAVE_INTERVAL),
        };
        let turn_id = turn.id;
        turn.save_timer = Some(ctx.run_later(delay, move |act, ctx| act.save_progress(turn_id, ctx)));
    }

    /// Writes the turn's unsaved events; once their commit resolves, raises the task's
    /// durable mark and lets the next progress write be scheduled.
    fn save_progress(&mut self, turn_id: u64, ctx: &mut Context<Self>) {
        let rt = Arc::clone(&self.rt);
        let Some(turn) = self.turn.as_mut().filter(|t| t.id == turn_id) else { return };
        turn.save_timer = None;
        if turn.unsaved_events.is_empty() {
            turn.save_scheduled = false;
            return;
        }
        let events = std::mem::take(&mut turn.unsaved_events);
        let started = std::time::Instant::now();
        let saved = rt.persist(&turn.record, &events);
        turn.save_cost = started.elapsed();
        let written = match saved {
            Ok(written) => written,
            Err(e) => {
                tracing::error!(task_id = %turn.record.task.id, error = %e, "could not save task progress");
                turn.save_scheduled = false;
                return;
            }
        };
        let mark = Arc::clone(&turn.mark);
        let durable = mark.advance_after_commit(written, rt.commit.clone(), turn.record.last_event_seq);
        ctx.spawn(durable.into_actor(self).map(move |(), act, ctx| {
            let Some(turn) = act.turn.as_mut().filter(|t| t.id == turn_id) else { return };
            turn.save_scheduled = false;
            if !turn.unsaved_events.is_empty() {
                act.schedule_progress_save(ctx);
            }
        }));
    }
}
