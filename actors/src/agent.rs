//! The agent plug-in interface.
//!
//! An agent runs one turn: it gets the user's message and the session so far, reports
//! progress as [`AgentEvent`]s, and ends with a [`TurnEnd`]. The context actor turns
//! those into task state, storage writes and (later) stream and push events, so an agent
//! never touches a task directly and cannot break the state machine.

use a2ad_protocol::{A2aError, Artifact, Message, Metadata, TaskState};
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What an agent is given for one turn.
#[derive(Debug, Clone)]
pub struct TurnInput {
    pub task_id: String,
    pub context_id: String,
    /// Who the turn runs for: the agents put its tenant and principal into the
    /// workspace roots (`allowed-cwds`), so a caller reaches only its own directories.
    pub owner: a2ad_storage::Owner,
    /// The skill id the context is bound to.
    pub skill: String,
    /// The message that started (or resumed) this turn, with its ids filled in.
    pub message: Message,
    /// The context's history before `message`, oldest first (shared, not copied).
    pub history: Arc<a2ad_storage::History>,
    /// The working directory the context is bound to (`message.metadata.a2ad.cwd` of
    /// its first message), exactly as the client sent it: unchecked. Agents that use a
    /// directory check it against their allowed roots before touching anything.
    pub cwd: Option<String>,
    /// Cancelled when the client cancels the task or the node shuts down. Agents that
    /// hold outside resources watch it to clean up; the turn future is also dropped.
    pub cancel: CancellationToken,
}

/// Progress reported during a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// Agent text, shown as a WORKING status message.
    Text(String),
    /// A piece of streamed text, shown as a WORKING status message but not kept in the
    /// history: the turn's final message carries the whole answer, so that the session
    /// holds one message per answer rather than one per token.
    Delta(String),
    /// A new artifact, or more parts of an earlier one when `append` is set.
    Artifact { artifact: Artifact, append: bool, last_chunk: bool },
    /// Node-specific progress (tool use, token usage, thinking, permission decisions): a
    /// WORKING status update without a message whose `metadata.a2ad` is this map.
    Progress(Metadata),
}

/// How a turn ends.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// Completed, input-required, auth-required, rejected or failed.
    pub state: TaskState,
    /// The status message of the final state.
    pub message: Option<Message>,
    /// The agent answered with a message only (A2A lets `SendMessage` return a Message
    /// instead of a Task). As the turn's first signal: the task is not kept, a blocking
    /// send answers with `message` and a stream is that one message. After other events:
    /// the final message of a normal task. See [`crate::context`]'s `reply` module.
    pub reply_only: bool,
    /// `message` says again what the turn's text events already put in the history (a
    /// text-mode program's output): it becomes the final status, not a second copy in
    /// the history.
    pub repeats_history: bool,
}

impl TurnEnd {
    /// A turn that ends in `state` with `message`.
    pub fn new(state: TaskState, message: Option<Message>) -> Self {
        TurnEnd { state, message, reply_only: false, repeats_history: false }
    }
}

/// A failure inside an agent. Its text reaches the client, so agents keep it free of
/// paths and secrets.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct AgentError(pub String);

/// Where an agent sends its events. Sending waits when the actor is behind, which is the
/// back-pressure an agent that streams fast needs.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::Sender<TurnSignal>,
    turn: u64,
}

impl EventSink {
    pub(crate) fn new(tx: mpsc::Sender<TurnSignal>, turn: u64) -> Self {
        EventSink { tx, turn }
    }

    /// Reports an event. Fails only when the turn is over (cancelled), which tells the
    /// agent to stop.
    pub async fn send(&self, event: AgentEvent) -> Result<(), AgentError> {
        let signal = TurnSignal { turn: self.turn, kind: SignalKind::Event(event) };
        self.tx.send(signal).await.map_err(|_| AgentError("the turn was stopped".into()))
    }
}

/// What flows from a running turn to its context actor, in order: events, then the end.
pub(crate) struct TurnSignal {
    pub turn: u64,
    pub kind: SignalKind,
}

pub(crate) enum SignalKind {
    Event(AgentEvent),
    Finished(Result<TurnEnd, AgentError>),
}

/// A pluggable agent.
pub trait Agent: Send + Sync + 'static {
    /// Runs one turn to its end.
    fn run(&self, input: TurnInput, events: EventSink) -> BoxFuture<'static, Result<TurnEnd, AgentError>>;

    /// Checks a message before any task is created for it (its parts, their media types
    /// and sizes), so that bad input is a request error and not a failed task.
    fn check_input(&self, _message: &Message) -> Result<(), A2aError> {
        Ok(())
    }

    /// Whether a turn of this agent may end as a Message-only reply
    /// ([`TurnEnd::reply_only`]). Only then does a new task's stream wait for the agent's
    /// first event before it sends the task: other agents' streams start with the task
    /// at once, so the client knows its id (to cancel it) however slow the first event.
    fn may_reply_only(&self) -> bool {
        false
    }
}

/// The node's agents by skill id, in configuration order: the first is the default.
#[derive(Clone, Default)]
pub struct AgentRegistry {
    order: Vec<String>,
    by_skill: HashMap<String, Arc<dyn Agent>>,
}

impl AgentRegistry {
    /// Adds an agent under its skill id. A repeated id replaces the earlier agent.
    pub fn register(&mut self, skill: impl Into<String>, agent: Arc<dyn Agent>) {
        let skill = skill.into();
        if self.by_skill.insert(skill.clone(), agent).is_none() {
            self.order.push(skill);
        }
    }

    /// The agent for `skill`.
    pub fn get(&self, skill: &str) -> Option<Arc<dyn Agent>> {
        self.by_skill.get(skill).cloned()
    }

    /// The skill id of the default (first) agent.
    pub fn default_skill(&self) -> Option<&str> {
        self.order.first().map(String::as_str)
    }

    /// Skill ids in configuration order.
    pub fn skills(&self) -> &[String] {
        &self.order
    }
}
