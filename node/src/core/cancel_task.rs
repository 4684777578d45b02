//! `CancelTask`: a running task stops and becomes CANCELED, as does an interrupted one; a
//! terminal task is TaskNotCancelable. The context's actor decides, so that a cancel and
//! a follow-up message cannot race.

use super::Core;
use a2ad_actors::messages::CancelTask;
use a2ad_protocol::{A2aError, CancelTaskRequest, Task};
use a2ad_storage::Owner;

impl Core {
    pub async fn cancel_task(&self, owner: &Owner, req: CancelTaskRequest) -> Result<Task, A2aError> {
        let record = self.owned_task(owner, &req.id).await?;
        let cancel = CancelTask { owner: owner.clone(), task_id: req.id };
        let task = self.call(&record.context_key(), cancel).await??;
        self.rt.commit.commit().await?;
        Ok(task)
    }
}
