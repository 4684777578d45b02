//! Sending one job and settling it: ack, retry later, or the dead letters; and putting a
//! deferred job back in the queue.

use super::actor::{now_ms, PushWorker};
use super::lanes::{Deferral, Ready};
use super::{backoff, Attempt, Delivery, SendOutcome};
use a2ad_storage::PushJob;
use futures_util::future::BoxFuture;
use std::sync::Arc;

impl PushWorker {
    /// Builds the request for a job from its config and sends it.
    pub(super) fn attempt(&self, ready: Ready) -> BoxFuture<'static, (Ready, Attempt)> {
        let sender = Arc::clone(&self.sender);
        Box::pin(async move {
            let config = &ready.config;
            let mut headers = vec![
                ("Content-Type".to_owned(), "application/json".to_owned()),
                ("X-A2A-Event-Id".to_owned(), ready.job.event_id()),
            ];
            if let Some(auth) = &config.authentication {
                let value = match &auth.credentials {
                    Some(credentials) => format!("{} {credentials}", auth.scheme),
                    None => auth.scheme.clone(),
                };
                headers.push(("Authorization".to_owned(), value));
            }
            if let Some(token) = &config.token {
                headers.push(("X-A2A-Notification-Token".to_owned(), token.clone()));
                headers.push(("A2A-Notification-Token".to_owned(), token.clone()));
            }
            let delivery = Delivery { url: config.url.clone(), headers, body: ready.job.body.clone() };
            let outcome = sender.send(delivery).await;
            (ready, Attempt::Sent(outcome))
        })
    }

    /// Puts a deferred job back in the queue, due at its time, its attempts unchanged; or
    /// buries it when it has outlived `max_age` (off the actor thread, like settling).
    pub(super) fn put_back(&self, deferral: Deferral) -> BoxFuture<'static, ()> {
        let queue = Arc::clone(&self.queue);
        let max_age_ms = self.settings.max_age.as_millis() as i64;
        Box::pin(async move {
            let result = tokio::task::spawn_blocking(move || {
                let Deferral { job, until_ms, reason } = deferral;
                let now = now_ms();
                if now.saturating_sub(job.first_enqueued_ms) >= max_age_ms {
                    return queue.bury(&job, &format!("gave up after {} attempts: {reason}", job.attempts), now);
                }
                let mut next = job.clone();
                next.next_attempt_ms = until_ms;
                next.last_error = Some(reason);
                queue.reschedule(&job, &next)
            })
            .await;
            match result {
                Ok(Err(e)) => tracing::error!(error = %e, "could not defer a push job"),
                Err(e) => tracing::error!(error = %e, "deferring a push job was interrupted"),
                Ok(Ok(())) => {}
            }
        })
    }

    /// Records the outcome in the queue (off the actor thread: the queue may be remote).
    /// The job stays in flight until this is done, so no poll hands it out again.
    pub(super) fn settle(&self, job: PushJob, attempt: Attempt) -> BoxFuture<'static, ()> {
        let queue = Arc::clone(&self.queue);
        let settings = self.settings.clone();
        Box::pin(async move {
            let result = tokio::task::spawn_blocking(move || {
                let now = now_ms();
                match attempt {
                    Attempt::Sent(SendOutcome::Delivered) | Attempt::Gone => queue.ack(&job),
                    Attempt::Sent(SendOutcome::Permanent(reason)) => queue.bury(&job, &reason, now),
                    Attempt::Sent(SendOutcome::Retry { reason, after }) => {
                        retry(&*queue, &settings, job, reason, after, now)
                    }
                    Attempt::Unreadable(reason) => retry(&*queue, &settings, job, reason, None, now),
                }
            })
            .await;
            match result {
                Ok(Err(e)) => tracing::error!(error = %e, "could not settle a push job"),
                Err(e) => tracing::error!(error = %e, "settling a push job was interrupted"),
                Ok(Ok(())) => {}
            }
        })
    }
}

/// Schedules the next attempt, or buries the job once it has had its attempts or its time.
fn retry(
    queue: &dyn a2ad_storage::JobQueue,
    settings: &super::PushSettings,
    job: PushJob,
    reason: String,
    after: Option<std::time::Duration>,
    now: i64,
) -> Result<(), a2ad_storage::StoreError> {
    let attempts = job.attempts + 1;
    let age_ms = now.saturating_sub(job.first_enqueued_ms);
    if attempts >= settings.max_attempts || age_ms >= settings.max_age.as_millis() as i64 {
        let why = format!("gave up after {attempts} attempts: {reason}");
        return queue.bury(&job, &why, now);
    }
    let wait = backoff(attempts, settings.retry_base, settings.retry_max).max(after.unwrap_or_default());
    let mut next = job.clone();
    next.attempts = attempts;
    next.next_attempt_ms = now + wait.as_millis() as i64;
    next.last_error = Some(reason);
    queue.reschedule(&job, &next)
}
