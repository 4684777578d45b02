//! Sending one job and settling it: ack, retry later, or the dead letters; and putting a
//! deferred job back in the queue.

use super::actor::{now_ms, PushWorker};
use super::attempts::{AttemptOutcome, DeliveryAttempt};
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
                let Deferral { job, until_ms, reason, destination } = deferral;
                let now = now_ms();
                if now.saturating_sub(job.first_enqueued_ms) >= max_age_ms {
                    let why = format!("gave up after {} attempts: {reason}", job.attempts);
                    tracing::warn!(
                        task_id = %job.task_id,
                        config_id = %job.config_id,
                        host = %destination,
                        attempts = job.attempts,
                        reason = %why,
                        "push delivery is dead: moved to the dead letters"
                    );
                    return queue.bury(&job, &why, now);
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

    /// Records the outcome in the queue (off the actor thread: the queue may be remote),
    /// in the delivery log, and, for a failed or dead delivery, in the node's log at
    /// `warn` (`host`: the `host:port` of the config's URL, never its path or query,
    /// which may hold a secret). The job stays in flight until this is done, so no poll
    /// hands it out again.
    pub(super) fn settle(&self, job: PushJob, attempt: Attempt, host: Option<String>) -> BoxFuture<'static, ()> {
        let queue = Arc::clone(&self.queue);
        let now = now_ms();
        let verdict = verdict(&self.settings, &job, attempt, now, host.clone());
        let entry = verdict.log_entry(&job, now);
        verdict.log(&job, entry.attempt, host.as_deref().unwrap_or("-"));
        self.deliveries.record(&job.task_id, entry);
        Box::pin(async move {
            let result = tokio::task::spawn_blocking(move || match verdict {
                Verdict::Ack { .. } => queue.ack(&job),
                // The dead letter counts the attempt that killed it, as the delivery log
                // does: one attempt count everywhere (the id and receipt do not change);
                // it keeps that attempt's status and host for the operator.
                Verdict::Bury { why, last, .. } => queue.bury(&last, &why, now),
                Verdict::Reschedule { next, .. } => queue.reschedule(&job, &next),
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

/// What settling a job does to the queue, and what the delivery log says of it.
enum Verdict {
    /// Delivered, or its config is gone (`delivered: false`: nothing was sent).
    Ack { delivered: bool },
    /// To the dead letters as `last` (the job after this attempt); `reason` is the
    /// attempt's own failure.
    Bury { why: String, reason: String, last: PushJob },
    /// Another attempt later.
    Reschedule { next: PushJob, reason: String },
}

impl Verdict {
    /// A failed attempt (to be retried) or a dead delivery, at `warn`: the task, the
    /// config id, the URL's host and the reason. A delivered or dropped one says nothing.
    fn log(&self, job: &PushJob, attempt: u32, host: &str) {
        let (task_id, config_id) = (&job.task_id, &job.config_id);
        match self {
            Verdict::Ack { .. } => {}
            Verdict::Bury { why, .. } => tracing::warn!(
                task_id = %task_id, config_id = %config_id, host, attempt, reason = %why,
                "push delivery is dead: moved to the dead letters"
            ),
            Verdict::Reschedule { next, reason } => tracing::warn!(
                task_id = %task_id, config_id = %config_id, host, attempt, reason = %reason,
                retry_in_ms = next.next_attempt_ms.saturating_sub(now_ms()),
                "push delivery failed: will retry"
            ),
        }
    }

    /// The attempt as the delivery log keeps it.
    fn log_entry(&self, job: &PushJob, now: i64) -> DeliveryAttempt {
        let (outcome, detail) = match self {
            Verdict::Ack { delivered: true } => (AttemptOutcome::Delivered, None),
            Verdict::Ack { delivered: false } => (AttemptOutcome::Dropped, Some("the push config was deleted".into())),
            Verdict::Bury { reason, .. } => (AttemptOutcome::Dead, Some(reason.clone())),
            Verdict::Reschedule { reason, .. } => (AttemptOutcome::Retry, Some(reason.clone())),
        };
        DeliveryAttempt {
            at_ms: now,
            config_id: job.config_id.clone(),
            event_id: job.event_seq,
            attempt: job.attempts + 1,
            outcome,
            detail,
        }
    }
}

/// Decides what becomes of a job after an attempt to `host` (`None`: nothing was sent).
fn verdict(settings: &super::PushSettings, job: &PushJob, attempt: Attempt, now: i64, host: Option<String>) -> Verdict {
    let tried = |reason: &str, status: Option<u16>| PushJob {
        attempts: job.attempts + 1,
        last_error: Some(reason.to_owned()),
        last_status: status.or(job.last_status),
        host: host.clone().or_else(|| job.host.clone()),
        ..job.clone()
    };
    match attempt {
        Attempt::Sent(SendOutcome::Delivered) => Verdict::Ack { delivered: true },
        Attempt::Gone => Verdict::Ack { delivered: false },
        Attempt::Sent(SendOutcome::Permanent { reason, status }) => {
            Verdict::Bury { why: reason.clone(), last: tried(&reason, status), reason }
        }
        Attempt::Sent(SendOutcome::Retry { reason, after, status }) => {
            retry(settings, tried(&reason, status), reason, after, now)
        }
        Attempt::Unreadable(reason) => retry(settings, tried(&reason, None), reason, None, now),
    }
}

/// Schedules the next attempt of `tried` (the job with this attempt counted), or buries
/// it once it has had its attempts or its time.
fn retry(
    settings: &super::PushSettings,
    tried: PushJob,
    reason: String,
    after: Option<std::time::Duration>,
    now: i64,
) -> Verdict {
    let attempts = tried.attempts;
    let age_ms = now.saturating_sub(tried.first_enqueued_ms);
    if attempts >= settings.max_attempts || age_ms >= settings.max_age.as_millis() as i64 {
        return Verdict::Bury { why: format!("gave up after {attempts} attempts: {reason}"), reason, last: tried };
    }
    let wait = backoff(attempts, settings.retry_base, settings.retry_max).max(after.unwrap_or_default());
    let next = PushJob { next_attempt_ms: now + wait.as_millis() as i64, ..tried };
    Verdict::Reschedule { next, reason }
}
