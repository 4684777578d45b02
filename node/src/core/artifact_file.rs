//! The artifact route's read: a stored artifact file of the caller's task.

use super::Core;
use crate::artifacts::StoredFile;
use a2ad_protocol::{A2aError, ErrorCode};
use a2ad_storage::Owner;

impl Core {
    /// The stored file `name` of the caller's task `task_id`, as the task's artifacts list
    /// it. Admitted and read like GetTask: the rate limit, then the owner-scoped store
    /// read, so another owner's task answers TaskNotFound exactly like an unknown one. A
    /// name the task does not link is ArtifactNotFound.
    pub async fn artifact_file(&self, owner: &Owner, task_id: &str, name: &str) -> Result<StoredFile, A2aError> {
        self.admit(owner)?;
        let record = self.owned_task(owner, task_id).await?;
        crate::artifacts::stored_file(&self.rt.data_dir, &record.task, name)
            .ok_or_else(|| A2aError::of(ErrorCode::ArtifactNotFound).with_meta("taskId", task_id))
    }
}
