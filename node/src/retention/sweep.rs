//! The sweeper: runs the retention plan every `sweep-interval`.

use super::{Planner, MAX_REMOVALS_PER_SWEEP};
use crate::config::RetentionConfig;
use crate::core::Core;
use a2ad_actors::messages::{ExpireTask, ForgetSessions};
use a2ad_storage::TaskStoreExt;
use a2ad_storage::{ContextKey, StoreError, TaskRecord};
use std::collections::HashSet;
use std::sync::Arc;

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    /// Terminal tasks removed (past `max-age` or beyond `max-tasks`).
    pub removed: usize,
    /// Interrupted tasks canceled after `interrupted-timeout`.
    pub expired: usize,
    /// Sessions removed because their context had no task left.
    pub sessions_removed: usize,
}

/// Runs retention in the background.
pub struct Sweeper {
    core: Arc<Core>,
    config: RetentionConfig,
}

/// Why a sweep stopped early. Logged; the next sweep tries again.
#[derive(Debug, thiserror::Error)]
enum SweepError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("the blocking pool is gone")]
    Blocking,
}

impl Sweeper {
    /// A sweeper over the node's core, so that removals go through the same paths as
    /// requests (`Runtime::remove_task` also deletes the task's artifact files).
    pub fn new(core: Arc<Core>, config: RetentionConfig) -> Self {
        Sweeper { core, config }
    }

    /// Sweeps every `sweep-interval` (the first one a full interval after start) until
    /// `stop` is cancelled (the node begins to shut down); a sweep under way finishes.
    pub fn start(self, stop: tokio_util::sync::CancellationToken) {
        actix::spawn(async move {
            self.remove_orphans().await;
            let mut interval = tokio::time::interval(self.config.sweep_interval);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval.tick().await;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = interval.tick() => {}
                }
                match self.sweep().await {
                    Ok(report) if report != SweepReport::default() => {
                        tracing::info!(
                            removed = report.removed,
                            expired = report.expired,
                            sessions = report.sessions_removed,
                            "retention sweep"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "retention sweep failed"),
                }
            }
        });
    }

    /// Removes the artifact and private working directories a crash left without their
    /// task (once, at start).
    async fn remove_orphans(&self) {
        let rt = Arc::clone(self.core.runtime());
        let swept = blocking(move || {
            let artifacts = super::remove_orphan_artifact_dirs(rt.store.as_ref(), &rt.data_dir)?;
            Ok(artifacts + super::remove_orphan_workdirs(rt.store.as_ref(), &rt.data_dir)?)
        })
        .await;
        match swept {
            Ok(0) => {}
            Ok(removed) => tracing::info!(removed, "removed artifact and private working dirs whose task was gone"),
            Err(e) => tracing::error!(error = %e, "could not sweep orphaned artifact dirs"),
        }
    }

    /// One sweep: plan, expire, remove, forget emptied sessions, commit.
    async fn sweep(&self) -> Result<SweepReport, SweepError> {
        let store = Arc::clone(&self.core.runtime().store);
        let config = self.config.clone();
        let plan = blocking(move || {
            let mut planner = Planner::new(&config, chrono::Utc::now().timestamp_millis());
            store.visit_tasks(&mut |entry| planner.add(entry))?;
            Ok(planner.finish(MAX_REMOVALS_PER_SWEEP))
        })
        .await?;
        let mut report = SweepReport::default();
        for (owner, task_id, status_millis) in plan.expire {
            report.expired += usize::from(self.expire(owner, task_id, status_millis).await);
        }
        let (removed, contexts) = self.remove(plan.remove).await?;
        report.removed = removed;
        if !contexts.is_empty() {
            // A session is judged unused on committed steps only (a context with a queued
            // step is in use), so the removals are committed first.
            self.core.runtime().commit.commit().await?;
            let keys = contexts.into_iter().collect();
            report.sessions_removed = self.core.supervisor().send(ForgetSessions { keys }).await.unwrap_or(0);
        }
        self.core.runtime().commit.commit().await?;
        self.core.metrics().retention_swept(report.removed, report.expired);
        Ok(report)
    }

    /// Cancels one unanswered interrupted task through its context's actor.
    async fn expire(&self, owner: a2ad_storage::Owner, task_id: String, status_millis: i64) -> bool {
        let store = Arc::clone(&self.core.runtime().store);
        let (id, whose) = (task_id.clone(), owner.clone());
        let scoped = move || Ok(store.get_task(a2ad_storage::Scope::Owner(&whose), &id)?);
        let Ok(Some(record)) = blocking(scoped).await else { return false };
        let timeout = self.config.for_tenant(&owner.tenant).interrupted_timeout.unwrap_or_default();
        let reason =
            format!("The task expired: no answer within {} (retention.interrupted-timeout).", humanize(timeout));
        let expire = ExpireTask { owner, task_id, status_millis, reason };
        match self.core.call(&record.context_key(), expire).await {
            Ok(Ok(expired)) => expired,
            Ok(Err(e)) | Err(e) => {
                tracing::warn!(task_id = %record.task.id, error = %e.message, "could not expire a task");
                false
            }
        }
    }

    /// Removes tasks with their push configs and artifact files; returns how many, and
    /// the contexts that may now be empty.
    async fn remove(&self, ids: Vec<String>) -> Result<(usize, HashSet<ContextKey>), SweepError> {
        if ids.is_empty() {
            return Ok((0, HashSet::new()));
        }
        let rt = Arc::clone(self.core.runtime());
        let removed = blocking(move || {
            let mut removed = Vec::new();
            for id in ids {
                removed.extend(rt.remove_task(&id)?);
            }
            Ok(removed)
        })
        .await?;
        // The files go once the removals are committed: a read in between still finds
        // the task, and must find its artifacts with it.
        self.core.runtime().commit.commit().await?;
        let contexts = removed.iter().map(TaskRecord::context_key).collect();
        let (rt, count) = (Arc::clone(self.core.runtime()), removed.len());
        blocking(move || {
            for record in &removed {
                rt.remove_task_files(record)?;
            }
            Ok(())
        })
        .await?;
        Ok((count, contexts))
    }
}

/// Runs store work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SweepError> + Send + 'static,
) -> Result<T, SweepError> {
    tokio::task::spawn_blocking(work).await.map_err(|_| SweepError::Blocking)?
}

/// `7d`, `90m`, `1500ms`: the largest whole unit.
fn humanize(duration: std::time::Duration) -> String {
    let ms = duration.as_millis();
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] {
        if ms >= size && (ms / size) * size == ms {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}
