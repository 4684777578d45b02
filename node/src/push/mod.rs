//! Push notifications on the node's side: the SSRF guard for webhook URLs, the HTTP
//! sender, and starting the push stack (config store, queue, worker) from the config.

pub mod sender;
mod settings;
pub mod url_guard;

pub use settings::{PushConfig, PushQueueKind};

use a2ad_actors::push::{PushBoard, PushHooks, PushSettings, PushWorker};
use a2ad_storage::{
    JobQueue, PushConfigStore, PushQueue, RedisQueue, RedisQueueOptions, SecretKey, SledStore, StoreError,
};
use actix::prelude::*;
use std::path::Path;
use std::sync::Arc;
use url_guard::UrlPolicy;

/// The push stack of a node, before and after its worker starts.
pub struct PushStack {
    pub hooks: PushHooks,
    pub policy: Arc<UrlPolicy>,
    settings: PushSettings,
    timeout: std::time::Duration,
}

/// Why push could not start.
#[derive(Debug, thiserror::Error)]
pub enum PushSetupError {
    #[error("push: {0}")]
    Store(#[from] StoreError),
    #[error("push: {0}")]
    Config(String),
}

impl PushStack {
    /// Opens the config store (the key from `A2AD_PUSH_KEY`, else `push.key` in the data
    /// dir) and the queue.
    pub fn open(config: &PushConfig, sled: &SledStore, data_dir: &Path) -> Result<PushStack, PushSetupError> {
        let key = match std::env::var("A2AD_PUSH_KEY") {
            Ok(text) => SecretKey::from_base64(&text)?,
            Err(_) => SecretKey::load_or_create(data_dir)?,
        };
        let configs = PushConfigStore::new(sled.tree("push_configs")?, key);
        let queue = open_queue(config, Some(sled))?;
        let policy = Arc::new(UrlPolicy::new(&config.allow).map_err(PushSetupError::Config)?);
        let settings = PushSettings {
            max_attempts: config.max_attempts,
            max_age: config.max_age,
            retry_base: config.retry_base,
            retry_max: config.retry_max,
            concurrency: config.concurrency,
            destination_concurrency: config.destination_concurrency,
            tenant_concurrency: config.tenant_concurrency,
            circuit_failures: config.circuit_failures,
            circuit_open: config.circuit_open,
            ..PushSettings::default()
        };
        let hooks = PushHooks { configs, queue, terminal_only: config.terminal_only };
        Ok(PushStack { hooks, policy, settings, timeout: config.timeout })
    }

    /// Starts the delivery worker; its board shows its destinations to the metrics.
    pub fn start_worker(&self) -> (Addr<PushWorker>, PushBoard) {
        let sender = Arc::new(sender::HttpSender::new(Arc::clone(&self.policy), self.timeout));
        let worker =
            PushWorker::new(Arc::clone(&self.hooks.queue), self.hooks.configs.clone(), sender, self.settings.clone());
        let board = worker.board();
        (worker.start(), board)
    }
}

/// The queue `push-queue` names. The local-file queue lives in `sled` (the node's store).
pub fn open_queue(config: &PushConfig, sled: Option<&SledStore>) -> Result<Arc<dyn JobQueue>, PushSetupError> {
    match config.queue {
        PushQueueKind::LocalFile => {
            let sled = sled.ok_or_else(|| PushSetupError::Config("the local-file queue needs the data dir".into()))?;
            Ok(Arc::new(PushQueue::new(sled.tree(a2ad_storage::PUSH_QUEUE_TREE)?)))
        }
        PushQueueKind::RedisStreams => {
            let url =
                config.redis_url.clone().ok_or_else(|| PushSetupError::Config("push-redis-url is not set".into()))?;
            let mut options = RedisQueueOptions {
                url,
                stream: config.stream.clone(),
                retry_key: config.retry_key.clone(),
                dead_stream: config.dead_stream.clone(),
                group: config.consumer_group.clone(),
                lease_timeout: config.lease_timeout,
                ..RedisQueueOptions::default()
            };
            if let Some(name) = &config.consumer_name {
                options.consumer = name.clone();
            }
            Ok(Arc::new(RedisQueue::connect(options)?))
        }
    }
}
