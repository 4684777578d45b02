//! Every message the actors exchange, in one place.

use a2ad_protocol::{A2aError, Message, Task};
use a2ad_storage::{ContextKey, LoggedEvent, Owner};
use actix::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, oneshot};

/// Starts a turn in a context: a new task, or the continuation of the context's
/// interrupted task named by `task_id`. Answered at once; the turn runs on.
#[derive(Message, Clone)]
#[rtype(result = "Result<TurnTicket, A2aError>")]
pub struct StartTurn {
    pub owner: Owner,
    /// The user's message, validated, with `contextId` filled in.
    pub message: Message,
    /// `message.metadata.skill`, if the client named one.
    pub skill: Option<String>,
    /// The task to continue, if any (already checked to belong to this context).
    pub task_id: Option<String>,
    /// The id a new task gets, when the caller had to store something under it first (an
    /// inline push config, made durable before the turn can end); `None`: a fresh id.
    pub new_task_id: Option<String>,
    /// Subscribe the caller to the turn's events (`SendStreamingMessage`).
    pub stream: bool,
    /// The task is kept even if the agent answers with a Message only (see
    /// [`crate::agent::TurnEnd::reply_only`]): the client asked for `returnImmediately`,
    /// so it holds the task at once (0.1 sends always do: that dialect has no Message
    /// answers, and its streams follow a task), or asked for the task's push
    /// notifications (the caller stored that config under `new_task_id` first).
    pub keep_task: bool,
}

/// What [`StartTurn`] gives back.
pub struct TurnTicket {
    /// The task as stored when the turn started. Not yet durable: callers that answer
    /// the client first await `Runtime::commit`.
    pub task: Task,
    /// Resolves once the turn ends (terminal or interrupted) and that end is durable.
    pub done: oneshot::Receiver<Result<TurnOutcome, A2aError>>,
    /// With `stream`: the task first, then the turn's events until it ends.
    pub subscription: Option<Subscription>,
}

/// How a turn ended, for whoever waits for it.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    /// The task, as its end was stored.
    Task(Task),
    /// A Message-only reply: the agent answered with this message, and no task is kept
    /// (see the context actor's `reply` module).
    Reply(Message),
}

/// Subscribes to a task's events: the current task (or, with `after`, a replay of the
/// events since), then live events while the task runs here.
#[derive(Message, Clone)]
#[rtype(result = "Result<Subscription, A2aError>")]
pub struct Subscribe {
    pub owner: Owner,
    pub task_id: String,
    /// `Last-Event-ID`: replay the events after this sequence number.
    pub after: Option<u64>,
}

/// A stream of one task's events.
pub struct Subscription {
    /// Sent first: a task snapshot, or the replayed events.
    pub initial: Vec<LoggedEvent>,
    /// Live events, in order; ends after the turn's final event. `None` when the task is
    /// not running (the stream ends after `initial`).
    pub live: Option<mpsc::Receiver<LoggedEvent>>,
    /// Set when the subscriber fell behind and was dropped: the stream must end with an
    /// error that tells the client to resume.
    pub overflowed: Arc<AtomicBool>,
    /// Set when the turn's end could not be made durable: the stream ends with this
    /// error (an internal error with a correlation id) instead of a final event.
    pub failure: Arc<OnceLock<A2aError>>,
    /// The task's durable mark: an event may be sent once its id is at most this
    /// (`context/durable.rs`); every edge's stream passes through the node's forwarder,
    /// which holds the rest. `None`: nothing to wait for.
    pub durable: Option<tokio::sync::watch::Receiver<u64>>,
}

/// Cancels a task of this context. Answered with the task as stored (not yet durable).
#[derive(Message, Clone)]
#[rtype(result = "Result<Task, A2aError>")]
pub struct CancelTask {
    pub owner: Owner,
    pub task_id: String,
}

/// Retention: an interrupted task nobody answered becomes CANCELED with `reason` as its
/// status message, but only if it is still interrupted with the status time the sweep saw
/// (an answer that arrived in between wins). Answers whether it was expired.
#[derive(Message, Clone)]
#[rtype(result = "Result<bool, A2aError>")]
pub struct ExpireTask {
    pub owner: Owner,
    pub task_id: String,
    pub status_millis: i64,
    pub reason: String,
}

/// Retention: drops the context's session, in the store and in memory, when the context
/// has no task left. Runs on the context's actor so that no turn starts in between.
/// Answers whether the session was removed; never while a turn runs.
#[derive(Message, Clone)]
#[rtype(result = "bool")]
pub struct ForgetSession;

/// Retention, to the supervisor: forget the sessions of these contexts if they have no
/// task left. A live context's actor does it ([`ForgetSession`]); for the others the
/// supervisor does it itself, which no new actor can race (it alone starts them).
/// Answers how many sessions were removed.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct ForgetSessions {
    pub keys: Vec<ContextKey>,
}

/// Asks a context actor to stop if it has been idle (no turn, no message) for at least
/// `min_idle`. Answers whether it stopped.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct TryEvict {
    pub min_idle: std::time::Duration,
}

/// Cancels whatever turn runs and stops the actor (node shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// The supervisor's counters.
#[derive(Message)]
#[rtype(result = "SupervisorStats")]
pub struct GetStats;

/// What [`GetStats`] answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SupervisorStats {
    /// Context actors alive now.
    pub live_contexts: usize,
    /// Context actors stopped for being idle, since start.
    pub evicted_total: u64,
    /// Context actors started (including rebuilds), since start.
    pub started_total: u64,
}

/// Refuses new turns and waits, at most `grace`, until no turn runs.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drain {
    pub grace: std::time::Duration,
}

/// Stops every context actor, cancelling running turns, and refuses new routes.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopAll;
