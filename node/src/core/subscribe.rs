//! `SubscribeToTask`: the current task, then its live events until the turn ends; or,
//! with `Last-Event-ID`, every event after that id first, with no gap and no duplicate.
//! A terminal task is UnsupportedOperation and an unknown one TaskNotFound, both before
//! any stream starts.

use super::Core;
use a2ad_actors::messages::{Subscribe, Subscription};
use a2ad_protocol::{A2aError, SubscribeToTaskRequest};
use a2ad_storage::Owner;

impl Core {
    /// `last_event_id` is the binding's `Last-Event-ID` header, which wins over the
    /// request's `lastEventId`.
    pub async fn subscribe_to_task(
        &self,
        owner: &Owner,
        req: SubscribeToTaskRequest,
        last_event_id: Option<u64>,
    ) -> Result<Subscription, A2aError> {
        let record = self.owned_task(owner, &req.id).await?;
        if record.state().is_terminal() {
            return Err(A2aError::unsupported(format!(
                "Task {} is in terminal state {}: there is nothing to subscribe to",
                req.id,
                record.state()
            )));
        }
        let subscribe = Subscribe { owner: owner.clone(), task_id: req.id, after: last_event_id.or(req.last_event_id) };
        self.call(&record.context_key(), subscribe).await?
    }
}
