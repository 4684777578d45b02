//! `SendMessage`: start a task, or continue an interrupted one.
//!
//! Validation here, before anything is stored:
//! * ids the client chose (`messageId`, `contextId`, `taskId`, `referenceTaskIds`) are
//!   1-128 characters of `A-Z a-z 0-9 _ . : -`;
//! * the message has a role and at least one part; `historyLength` is not negative;
//! * a `taskId` must name one of the caller's tasks (else TaskNotFound), and a
//!   `contextId` sent with it must be that task's context (else InvalidParams).
//!
//! The context's actor then refuses a busy context (`Task is already working.`) or a
//! terminal task (UnsupportedOperation). The new task is durable before we answer; a
//! blocking call (`returnImmediately` false) answers when the turn has ended durably,
//! with the agent's message alone when the agent made it a Message-only reply.

use super::{check_history_length, present, Core};
use a2ad_actors::messages::{StartTurn, Subscription, TurnOutcome, TurnTicket};
use a2ad_protocol::{
    ids, A2aError, Message, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    TaskPushNotificationConfig,
};
use a2ad_storage::{ContextKey, Owner};

impl Core {
    pub async fn send_message(&self, owner: &Owner, req: SendMessageRequest) -> Result<SendMessageResponse, A2aError> {
        let (key, start, config, push) = prepare_turn(self, owner, req, false).await?;
        let ticket = self.start_turn(owner, &key, start, push).await?;
        let task = if config.return_immediately {
            self.rt.commit.commit().await?;
            ticket.task
        } else {
            // The end of the turn is made durable before `done` resolves, and that flush
            // covers the creation written before it: one flush serves both.
            match ticket.done.await.map_err(|_| A2aError::internal("The turn ended without a result"))?? {
                TurnOutcome::Task(task) => task,
                TurnOutcome::Reply(reply) => return Ok(SendMessageResponse::Message(reply)),
            }
        };
        Ok(SendMessageResponse::Task(present(task, config.history_length)))
    }

    /// `SendStreamingMessage`: the same checks and turn, answered with the turn's events.
    /// The task is durable before the first event goes out.
    pub async fn send_streaming_message(
        &self,
        owner: &Owner,
        req: SendMessageRequest,
    ) -> Result<Subscription, A2aError> {
        let (key, start, _, push) = prepare_turn(self, owner, req, true).await?;
        let ticket = self.start_turn(owner, &key, start, push).await?;
        self.rt.commit.commit().await?;
        let subscription =
            ticket.subscription.ok_or_else(|| A2aError::internal("The turn started without its stream"))?;
        Ok(self.durable_stream(subscription))
    }
}

impl Core {
    /// Starts the turn. An inline push config (`configuration.taskPushNotificationConfig`)
    /// is stored first (its host name looked up first, see [`Core::check_push_host`]),
    /// under the task's id (minted here for a new task), and made durable
    /// before the turn starts: push configs bypass the write-ahead log (a checkpoint makes
    /// them durable), so a config stored with the turn could still be missing after a crash
    /// while the task's end, already in the log, was not, and that end would never be
    /// pushed. If the turn is refused, the config goes again.
    async fn start_turn(
        &self,
        owner: &Owner,
        key: &ContextKey,
        mut start: StartTurn,
        push: Option<TaskPushNotificationConfig>,
    ) -> Result<TurnTicket, A2aError> {
        let Some(mut push) = push else { return self.call(key, start).await? };
        let task_id = start.task_id.clone().unwrap_or_else(|| ids::new_task_id(owner.shard_hash()));
        push.task_id = Some(task_id.clone());
        let config_id = push.id.get_or_insert_with(ids::new_id).clone();
        self.check_push_host(&push).await?;
        self.store_push_config(owner, &push).await?;
        if start.task_id.is_none() {
            start.new_task_id = Some(task_id.clone());
        }
        // A client that asked for the task's pushes holds on to it (no Message-only reply).
        start.keep_task = true;
        let started = self.call(key, start).await.and_then(|r| r);
        if started.is_err() {
            self.forget_push_config(&task_id, &config_id).await;
        }
        started
    }
}

/// What a validated send starts: its context, the turn, the send's configuration, and the
/// inline push config (checked), which [`Core::start_turn`] stores first.
type PreparedTurn = (ContextKey, StartTurn, SendMessageConfiguration, Option<TaskPushNotificationConfig>);

/// Validates a send and works out its context and the turn to start.
async fn prepare_turn(
    core: &Core,
    owner: &Owner,
    req: SendMessageRequest,
    stream: bool,
) -> Result<PreparedTurn, A2aError> {
    let config = req.configuration.unwrap_or_default();
    check_history_length("configuration.historyLength", config.history_length)?;
    validate_message(&req.message)?;
    let skill = requested_skill(&req.message)?;
    let mut message = req.message;
    let (context_id, task_id) = match message.task_id.clone() {
        Some(task_id) => {
            let record = core.owned_task(owner, &task_id).await?;
            if message.context_id.as_ref().is_some_and(|c| *c != record.task.context_id) {
                return Err(A2aError::invalid_field("message.contextId", "does not match the task's context")
                    .with_meta("taskId", task_id));
            }
            (record.task.context_id, Some(task_id))
        }
        None => (message.context_id.clone().unwrap_or_else(ids::new_id), None),
    };
    message.context_id = Some(context_id.clone());
    let push_config = config.task_push_notification_config.clone().map(|c| core.checked_push_config(c)).transpose()?;
    let key = ContextKey::new(owner.clone(), context_id);
    let keep_task = config.return_immediately;
    let start = StartTurn { owner: owner.clone(), message, skill, task_id, new_task_id: None, stream, keep_task };
    Ok((key, start, config, push_config))
}

fn validate_message(message: &Message) -> Result<(), A2aError> {
    ids::validate_id("message.messageId", &message.message_id)?;
    if let Some(context_id) = &message.context_id {
        ids::validate_id("message.contextId", context_id)?;
    }
    if let Some(task_id) = &message.task_id {
        ids::validate_id("message.taskId", task_id)?;
    }
    for reference in &message.reference_task_ids {
        ids::validate_id("message.referenceTaskIds", reference)?;
    }
    if message.role == Role::Unspecified {
        return Err(A2aError::invalid_field("message.role", "must be ROLE_USER or ROLE_AGENT"));
    }
    if message.parts.is_empty() {
        return Err(A2aError::invalid_field("message.parts", "must have at least one part"));
    }
    Ok(())
}

/// `message.metadata.skill`, which routes a new context to an agent.
fn requested_skill(message: &Message) -> Result<Option<String>, A2aError> {
    match message.metadata.as_ref().and_then(|m| m.get("skill")) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(skill)) => Ok(Some(skill.clone())),
        Some(_) => Err(A2aError::invalid_field("message.metadata.skill", "must be a string (a skill id)")),
    }
}
