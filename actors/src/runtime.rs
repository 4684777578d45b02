//! What every actor shares: the store, group commit, the agents and the settings.

use crate::agent::AgentRegistry;
use crate::limits::TurnLimits;
use crate::push::PushHooks;
use a2ad_protocol::Message;
use a2ad_storage::{
    GroupCommit, LoggedEvent, SessionRecord, SessionWrite, Step, StoreError, TaskRecord, TaskStore, Written,
};
use std::sync::Arc;
use std::time::Duration;

/// Tunables of the actor runtime (from the node's config).
#[derive(Debug, Clone)]
pub struct RuntimeSettings {
    /// A context actor with no turn running is evicted after this long.
    pub idle_timeout: Duration,
    /// How often the supervisor looks for idle contexts.
    pub sweep_interval: Duration,
    /// The most context actors alive at once; past it, new contexts are refused.
    pub max_contexts: usize,
    /// The most messages a context keeps in its session history.
    pub session_history_limit: usize,
    /// Arbiters (threads) the context actors are spread over.
    pub worker_threads: usize,
    /// Events a stream subscriber may have in flight before it is dropped as too slow.
    pub stream_buffer: usize,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        RuntimeSettings {
            idle_timeout: Duration::from_secs(300),
            sweep_interval: Duration::from_secs(5),
            max_contexts: 1_000_000,
            session_history_limit: 200,
            worker_threads: 2,
            stream_buffer: 256,
        }
    }
}

/// Shared, immutable dependencies of the actors.
pub struct Runtime {
    pub store: Arc<dyn TaskStore>,
    pub commit: GroupCommit,
    pub agents: AgentRegistry,
    pub settings: RuntimeSettings,
    /// Set when push notifications are on.
    pub push: Option<PushHooks>,
    /// Running turns per tenant and per node.
    pub turn_limits: Arc<TurnLimits>,
    /// The node's data directory: a task's artifact files are under
    /// [`a2ad_storage::artifact_dir`] of it, and go with the task.
    pub data_dir: std::path::PathBuf,
    /// The node's live feed of task changes (the admin API's); the write-ahead log
    /// offers it every durable step, at the cost of one atomic load while nobody
    /// watches.
    pub feed: Arc<crate::feed::NodeFeed>,
}

impl Runtime {
    /// Stores a task with its new events and their push deliveries as one step
    /// ([`TaskStore::commit`]): one log record, with the jobs going into the node's
    /// local queue (the local-file queue, or the outbox the forwarder empties into Redis
    /// Streams), so no crash separates an event from its push job and no job leaves the
    /// node before the group commit made its step durable.
    pub fn persist(&self, record: &TaskRecord, events: &[LoggedEvent]) -> Result<Written, StoreError> {
        self.persist_step(record, events, None)
    }

    /// [`Runtime::persist`], with the context's session in the same commit when `session`
    /// is given (the end of a turn: the [`a2ad_storage::Step`]'s session). Submitted through
    /// the store's seam ([`TaskStore::commit`]): on a node's own store it is done when this
    /// returns; on Redis it is in flight, and [`Written::answered`] resolves with Redis's
    /// answer. Either way, what depends on it waits for that, then for the group commit.
    pub fn persist_step(
        &self,
        record: &TaskRecord,
        events: &[LoggedEvent],
        session: Option<SessionWrite<'_>>,
    ) -> Result<Written, StoreError> {
        let jobs = match &self.push {
            Some(push) => push.jobs_for(&record.task.id, events, chrono::Utc::now().timestamp_millis())?,
            None => Vec::new(),
        };
        Written::of(self.store.commit(Step { record, events, jobs, session }))
    }

    /// Removes a task's record, indexes and event log, and returns the removed record
    /// (`None` if there was no such task). Its push configs and files stay until
    /// [`Runtime::remove_task_files`]: the caller removes them once the removal is
    /// committed, so that no read finds the task without its files. Blocking (sled work):
    /// callers run it on the blocking pool, never on an actor thread.
    pub fn remove_task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.store.delete_task(task_id)
    }

    /// The push configs, artifact files and private working directory of a removed task
    /// ([`Runtime::remove_task`]), once its removal is committed. A directory that cannot
    /// be removed is logged, not an error: the task itself is gone. Blocking.
    pub fn remove_task_files(&self, record: &TaskRecord) -> Result<(), StoreError> {
        self.remove_push_configs_and_files(&record.task.id, &record.owner)
    }

    /// Settles a Message-only reply: the session write and the task removal as one
    /// atomic store write ([`TaskStore::settle_reply`]), then the task's push configs and
    /// artifact files. Those follow the atomic write and are idempotent; a reply's task
    /// has none in practice (an artifact event, a push config or a client that saw the
    /// task each make the turn a kept task), so a failure there is logged, not an error:
    /// the reply is settled. Blocking, like [`Runtime::remove_task`].
    pub fn settle_reply(
        &self,
        task_id: &str,
        session: &SessionRecord,
        appended: &[Message],
    ) -> Result<Option<TaskRecord>, StoreError> {
        let limit = self.settings.session_history_limit;
        let removed = self.store.settle_reply(task_id, session, appended, limit)?;
        if let Err(e) = self.remove_push_configs_and_files(task_id, &session.key.owner) {
            tracing::warn!(task_id, error = %e, "could not remove the push configs of a Message-only reply's task");
        }
        Ok(removed)
    }

    /// The task's push configs, its artifact files and its private working directory
    /// ([`crate::workdirs`]).
    fn remove_push_configs_and_files(&self, task_id: &str, owner: &a2ad_storage::Owner) -> Result<(), StoreError> {
        if let Some(push) = &self.push {
            push.configs.delete_task(task_id)?;
        }
        if let Some(dir) = a2ad_storage::artifact_dir(&self.data_dir, task_id).filter(|d| d.exists()) {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                tracing::warn!(task_id, error = %e, "could not remove a task's artifact files");
            }
        }
        crate::workdirs::remove_private_dir(&self.data_dir, owner, task_id);
        Ok(())
    }
}
