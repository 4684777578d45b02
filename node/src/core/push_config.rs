//! The four push-config methods. A config belongs to its task's owner: another owner's
//! task (or a missing config) is TaskNotFound. A config may be created on a task in any
//! state; its id defaults to a new id; its URL must pass the node's webhook policy, and a
//! host name must not resolve only to forbidden addresses (both are judged again at every
//! delivery); delete is idempotent.

use super::Core;
use crate::push::url_guard::UrlPolicy;
use a2ad_actors::push::PushHooks;
use a2ad_protocol::{
    ids, A2aError, ErrorCode, ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
use a2ad_storage::{Owner, Scope};

impl Core {
    /// The push stack, or PushNotificationNotSupported when push is off.
    fn push(&self) -> Result<(&PushHooks, &UrlPolicy), A2aError> {
        match (&self.rt.push, &self.push_policy) {
            (Some(hooks), Some(policy)) => Ok((hooks, policy)),
            _ => Err(A2aError::of(ErrorCode::PushNotificationNotSupported)),
        }
    }

    /// Checks a config a client sent (with or without its task id), filling in its id.
    pub fn checked_push_config(
        &self,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let (_, policy) = self.push()?;
        policy.check_url(&config.url)?;
        match &config.id {
            Some(id) => ids::validate_id("id", id)?,
            None => config.id = Some(ids::new_id()),
        }
        if config.authentication.as_ref().is_some_and(|a| a.scheme.trim().is_empty()) {
            return Err(A2aError::invalid_field("authentication.scheme", "must not be empty"));
        }
        Ok(config)
    }

    /// The create-time lookup of a checked config's host name: a name that resolves only
    /// to forbidden addresses is refused now, not dead-lettered at its first delivery
    /// ([`UrlPolicy::check_resolved`]; the push allowlist applies as at delivery).
    pub(super) async fn check_push_host(&self, config: &TaskPushNotificationConfig) -> Result<(), A2aError> {
        let (_, policy) = self.push()?;
        let url = policy.check_url(&config.url)?;
        policy.check_resolved(&url).await?;
        Ok(())
    }

    pub async fn create_push_config(
        &self,
        owner: &Owner,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.push()?;
        let task_id = config
            .task_id
            .clone()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| A2aError::invalid_field("taskId", "is required"))?;
        self.owned_task(owner, &task_id).await?;
        let mut config = self.checked_push_config(config)?;
        config.task_id = Some(task_id);
        self.check_push_host(&config).await?;
        self.store_push_config(owner, &config).await?;
        Ok(config)
    }

    /// Stores a checked config, durably: push configs bypass the write-ahead log, so a
    /// checkpoint of the store makes them durable before the caller goes on.
    pub(super) async fn store_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
    ) -> Result<(), A2aError> {
        let (hooks, _) = self.push()?;
        let (configs, owner, config) = (hooks.configs.clone(), owner.clone(), config.clone());
        off_the_workers(move || configs.put(&owner, &config)).await?;
        self.rt.commit.commit_unlogged().await?;
        Ok(())
    }

    pub async fn get_push_config(
        &self,
        owner: &Owner,
        req: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let (hooks, _) = self.push()?;
        self.owned_task(owner, &req.task_id).await?;
        let (configs, who, task_id, id) = (hooks.configs.clone(), owner.clone(), req.task_id.clone(), req.id.clone());
        match off_the_workers(move || configs.get(Scope::Owner(&who), &task_id, &id)).await? {
            Some(stored) => Ok(stored.config),
            None => Err(A2aError::task_not_found(&req.task_id).with_meta("configId", req.id)),
        }
    }

    pub async fn list_push_configs(
        &self,
        owner: &Owner,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        let (hooks, _) = self.push()?;
        self.owned_task(owner, &req.task_id).await?;
        let (configs, who, task_id) = (hooks.configs.clone(), owner.clone(), req.task_id.clone());
        let stored = off_the_workers(move || configs.list(Scope::Owner(&who), &task_id)).await?;
        let configs = stored.into_iter().map(|s| s.config).collect();
        Ok(ListTaskPushNotificationConfigsResponse { configs, next_page_token: String::new() })
    }

    pub async fn delete_push_config(&self, owner: &Owner, req: TaskPushNotificationConfigRef) -> Result<(), A2aError> {
        let (hooks, _) = self.push()?;
        self.owned_task(owner, &req.task_id).await?;
        let (configs, who, task_id, id) = (hooks.configs.clone(), owner.clone(), req.task_id.clone(), req.id.clone());
        off_the_workers(move || configs.delete(Scope::Owner(&who), &task_id, &id)).await?;
        self.rt.commit.commit_unlogged().await?;
        Ok(())
    }

    /// Removes a config stored for a turn that was then refused (no flush: should a crash
    /// keep it, start-up sweeps configs whose task is gone), on the blocking pool.
    pub(super) async fn forget_push_config(&self, task_id: &str, config_id: &str) {
        let Ok((hooks, _)) = self.push() else { return };
        let (configs, task, id) = (hooks.configs.clone(), task_id.to_owned(), config_id.to_owned());
        if let Err(e) = off_the_workers(move || configs.delete(Scope::Node, &task, &id)).await {
            tracing::warn!(task_id, error = %e, "could not remove the push config of a refused turn");
        }
    }
}

/// Runs a push-config read or write on the blocking pool: on the shared store it is a
/// Redis round trip, which no HTTP worker waits for (ARCHITECTURE.md, "What may block").
async fn off_the_workers<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, a2ad_storage::StoreError> + Send + 'static,
) -> Result<T, A2aError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(A2aError::internal("a push-config call stopped before it answered")),
    }
}
