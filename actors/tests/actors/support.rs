//! What the actor tests share: a node without sockets (the runtime over a
//! [`MemoryStore`], its group commit and supervisor, built as `src/startup.rs` builds
//! them), a scripted agent whose turns the test drives step by step, and readers that
//! turn a subscription into `seq kind STATE` lines.
//!
//! Nothing here sleeps to let something happen: a test waits for the event it expects
//! (a turn starting, a stream item), each wait bounded by [`WAIT`] so that a missing
//! event fails the test instead of hanging it.

use a2ad_actors::agent::{Agent, AgentError, AgentEvent, AgentRegistry, EventSink, TurnEnd, TurnInput};
use a2ad_actors::context::ContextActor;
use a2ad_actors::limits::TurnLimits;
use a2ad_actors::messages::{StartTurn, Subscribe, Subscription, TurnOutcome, TurnTicket};
use a2ad_actors::push::PushHooks;
use a2ad_actors::supervisor::Route;
use a2ad_actors::supervisor::{LiveContexts, Supervisor};
use a2ad_actors::{Runtime, RuntimeSettings};
use a2ad_protocol::{ids, A2aError, Message, Role, StreamResponse, Task, TaskState};
use a2ad_storage::{ContextKey, GroupCommit, LoggedEvent, MemoryStore, Owner, TaskStore};
use actix::prelude::*;
use futures_util::future::BoxFuture;
use futures_util::stream::{BoxStream, StreamExt};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The longest any single wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// Awaits `future`, failing the test if it takes longer than [`WAIT`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Polls `check` until it holds, for state that no event announces (a stopped actor,
/// the supervisor's counters); fails after [`WAIT`].
pub async fn until<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    within(what, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// What the test tells a running turn to do next.
enum Step {
    Event(AgentEvent),
    End(Result<TurnEnd, AgentError>),
}

/// An agent that announces each turn to the test ([`Turns::next`]) and then plays the
/// steps the test sends it, in order. A turn whose [`Turn`] is dropped without an end
/// waits until it is cancelled, like an agent that is still thinking.
pub struct ScriptedAgent {
    turns: mpsc::UnboundedSender<Turn>,
    may_reply_only: bool,
}

/// The test's side of a [`ScriptedAgent`]: the turns it starts, in order.
pub struct Turns(mpsc::UnboundedReceiver<Turn>);

/// One running turn of the scripted agent, as the test drives it.
pub struct Turn {
    pub input: TurnInput,
    steps: mpsc::UnboundedSender<Step>,
}

impl ScriptedAgent {
    pub fn new(may_reply_only: bool) -> (ScriptedAgent, Turns) {
        let (turns, rx) = mpsc::unbounded_channel();
        (ScriptedAgent { turns, may_reply_only }, Turns(rx))
    }
}

impl Agent for ScriptedAgent {
    fn run(&self, input: TurnInput, events: EventSink) -> BoxFuture<'static, Result<TurnEnd, AgentError>> {
        let (steps, mut script) = mpsc::unbounded_channel();
        let announced = self.turns.send(Turn { input, steps });
        Box::pin(async move {
            if announced.is_err() {
                return Err(AgentError("no test drives this agent any more".into()));
            }
            while let Some(step) = script.recv().await {
                match step {
                    Step::Event(event) => events.send(event).await?,
                    Step::End(end) => return end,
                }
            }
            std::future::pending().await
        })
    }

    fn may_reply_only(&self) -> bool {
        self.may_reply_only
    }
}

impl Turns {
    /// The next turn the agent was asked to run.
    pub async fn next(&mut self) -> Turn {
        within("the agent's next turn", self.0.recv()).await.expect("the agent is alive")
    }
}

impl Turn {
    /// The agent reports `event`.
    pub fn event(&self, event: AgentEvent) {
        let _ = self.steps.send(Step::Event(event));
    }

    /// The agent says `text` (a WORKING status message).
    pub fn say(&self, text: &str) {
        self.event(AgentEvent::Text(text.to_owned()));
    }

    /// The turn ends as `end`.
    pub fn end_with(self, end: Result<TurnEnd, AgentError>) {
        let _ = self.steps.send(Step::End(end));
    }

    /// The turn ends in `state`, saying `text`.
    pub fn end(self, state: TaskState, text: Option<&str>) {
        let message = text.map(|t| Message::agent_text(String::new(), "", None, t));
        self.end_with(Ok(TurnEnd::new(state, message)));
    }

    /// Resolves once the node cancelled the turn.
    pub async fn cancelled(&self) {
        within("the turn's cancellation", self.input.cancel.cancelled()).await;
    }
}

/// A node's actor runtime without sockets.
pub struct Node {
    pub rt: Arc<Runtime>,
    pub store: Arc<MemoryStore>,
    pub supervisor: Addr<Supervisor>,
    /// The supervisor's live contexts, as the node's requests find them.
    pub live: Arc<LiveContexts>,
    pub turns: Turns,
}

/// The settings of the tests: nothing is evicted or swept unless a test asks for it.
pub fn settings() -> RuntimeSettings {
    RuntimeSettings {
        idle_timeout: Duration::from_secs(3600),
        sweep_interval: Duration::from_secs(3600),
        ..RuntimeSettings::default()
    }
}

impl Node {
    /// A node with the default test settings and one scripted agent, `chat`.
    pub fn start() -> Node {
        Node::with(settings(), None, false)
    }

    /// A node with `settings`, push hooks and an agent that may answer Message-only.
    /// Must run inside an actix system.
    pub fn with(settings: RuntimeSettings, push: Option<PushHooks>, may_reply_only: bool) -> Node {
        let store = match &push {
            Some(push) => MemoryStore::new().with_push_queue(Arc::clone(&push.queue)),
            None => MemoryStore::new(),
        };
        let store = Arc::new(store);
        let (agent, turns) = ScriptedAgent::new(may_reply_only);
        let mut agents = AgentRegistry::default();
        agents.register("chat", Arc::new(agent));
        let rt = Arc::new(Runtime {
            store: Arc::clone(&store) as Arc<dyn TaskStore>,
            // The commit path of `store: memory`: a write is done once it returns.
            commit: GroupCommit::immediate(Arc::clone(&store) as Arc<dyn TaskStore>),
            agents,
            settings,
            push,
            turn_limits: TurnLimits::new(0, 0),
            data_dir: std::env::temp_dir().join("a2ad-actor-tests-no-files"),
            feed: Default::default(),
        });
        let supervisor = Supervisor::new(Arc::clone(&rt));
        let live = supervisor.live_contexts();
        Node { rt, store, supervisor: supervisor.start(), live, turns }
    }

    /// The actor of context `context_id` (anonymous owner), started if need be.
    pub async fn context(&self, context_id: &str) -> Result<Addr<ContextActor>, A2aError> {
        let key = ContextKey::new(Owner::anonymous(), context_id);
        within("a route", self.supervisor.send(Route { key })).await.expect("the supervisor is alive")
    }

    /// Starts a turn of `turn` in its context.
    pub async fn start_turn(&self, turn: StartTurn) -> Result<TurnTicket, A2aError> {
        let context_id = turn.message.context_id.clone().expect("the message names its context");
        let addr = self.context(&context_id).await?;
        within("a turn to start", addr.send(turn)).await.expect("the context is alive")
    }

    /// Subscribes to `task_id` of `context_id`, replaying after `after` if given.
    pub async fn subscribe(&self, context_id: &str, task_id: &str, after: Option<u64>) -> Result<Events, A2aError> {
        let addr = self.context(context_id).await?;
        let subscribe = Subscribe { owner: Owner::anonymous(), task_id: task_id.to_owned(), after };
        let subscription = within("a subscription", addr.send(subscribe)).await.expect("the context is alive")?;
        Ok(Events::of(subscription))
    }
}

/// A user's message `text` to `context_id`, as a new task (no stream).
pub fn send(context_id: &str, text: &str) -> StartTurn {
    let message = Message {
        message_id: ids::new_id(),
        context_id: Some(context_id.to_owned()),
        task_id: None,
        role: Role::User,
        parts: vec![a2ad_protocol::Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    StartTurn {
        owner: Owner::anonymous(),
        message,
        skill: None,
        task_id: None,
        stream: false,
        keep_task: false,
        new_task_id: None,
    }
}

/// The same, as an answer to the context's interrupted task `task_id`.
pub fn answer(context_id: &str, task_id: &str, text: &str) -> StartTurn {
    StartTurn { task_id: Some(task_id.to_owned()), ..send(context_id, text) }
}

/// The same, streamed.
pub fn streamed(turn: StartTurn) -> StartTurn {
    StartTurn { stream: true, ..turn }
}

/// How a finished turn resolves (once its end is durable).
pub async fn outcome(ticket: TurnTicket) -> Result<TurnOutcome, A2aError> {
    within("the turn's end", ticket.done).await.expect("the turn answers its waiter")
}

/// The task a finished turn resolves with (once its end is durable).
pub async fn done(ticket: TurnTicket) -> Result<Task, A2aError> {
    outcome(ticket).await.map(|outcome| match outcome {
        TurnOutcome::Task(task) => task,
        TurnOutcome::Reply(reply) => panic!("a Message-only reply, not a task: {reply:?}"),
    })
}

/// A subscription read one item at a time, as `seq kind STATE` lines.
pub struct Events(BoxStream<'static, Result<LoggedEvent, A2aError>>);

impl Events {
    /// Each event is read only once the task's durable mark has reached it, as the node's
    /// stream forwarder sends it: an event whose commit never raises the mark times out
    /// here as it would hang a client's stream.
    pub fn of(mut subscription: Subscription) -> Self {
        let durable = subscription.durable.take();
        let items = subscription.into_items().then(move |item| {
            let mut durable = durable.clone();
            async move {
                if let (Ok(event), Some(mark)) = (&item, durable.as_mut()) {
                    let reached = within("the event's commit", mark.wait_for(|seq| *seq >= event.seq)).await;
                    assert!(reached.is_ok(), "the context went away before event {} was durable", event.seq);
                }
                item
            }
        });
        Events(items.boxed())
    }

    /// The caller's stream of a streamed turn.
    pub fn of_ticket(ticket: &mut TurnTicket) -> Self {
        Events::of(ticket.subscription.take().expect("a streamed turn has a subscription"))
    }

    /// The next item; `None` when the stream has ended.
    pub async fn next(&mut self) -> Option<String> {
        within("the next stream item", self.0.next()).await.map(|item| line(&item))
    }

    /// Every item until the stream ends.
    pub async fn rest(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(line) = self.next().await {
            lines.push(line);
        }
        lines
    }
}

/// `seq kind STATE` of an event (`task`, `status`, `artifact`, `message`), or `error
/// CODE key=value…` for the error that ends a stream.
pub fn line(item: &Result<LoggedEvent, A2aError>) -> String {
    let event = match item {
        Ok(event) => event,
        Err(error) => {
            let mut meta: Vec<String> = error.metadata.iter().map(|(k, v)| format!("{k}={v}")).collect();
            meta.sort();
            return format!("error {} {}", error.code.info().reason, meta.join(" ")).trim_end().to_owned();
        }
    };
    let parsed: StreamResponse = serde_json::from_str(&event.json).expect("an event is a StreamResponse");
    let (kind, state) = match parsed {
        StreamResponse::Task(task) => ("task", Some(task.status.state)),
        StreamResponse::StatusUpdate(update) => ("status", Some(update.status.state)),
        StreamResponse::ArtifactUpdate(_) => ("artifact", None),
        StreamResponse::Message(_) => ("message", None),
    };
    let state = state.map(|s| format!(" {}", short(s))).unwrap_or_default();
    format!("{} {kind}{state}", event.seq)
}

/// `COMPLETED` for `TASK_STATE_COMPLETED`.
pub fn short(state: TaskState) -> String {
    state.as_str().trim_start_matches("TASK_STATE_").to_owned()
}
