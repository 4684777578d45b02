//! `GetTask`: a task by id, with `historyLength` applied.

use super::{check_history_length, present, Core};
use a2ad_protocol::{A2aError, GetTaskRequest, Task};
use a2ad_storage::Owner;

impl Core {
    pub async fn get_task(&self, owner: &Owner, req: GetTaskRequest) -> Result<Task, A2aError> {
        check_history_length("historyLength", req.history_length)?;
        let record = self.owned_task(owner, &req.id).await?;
        Ok(present(record.task, req.history_length))
    }
}
