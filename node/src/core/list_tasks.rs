//! `ListTasks`: the caller's tasks, newest status first, with cursor pagination.

use super::{check_history_length, present, Core};
use a2ad_protocol::{ids, A2aError, ListTasksRequest, ListTasksResponse, TaskState};
use a2ad_storage::{decode_page_token, encode_page_token, Owner, TaskQuery};

/// The page size when the client names none.
pub const DEFAULT_PAGE_SIZE: i32 = 50;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: i32 = 100;

impl Core {
    pub async fn list_tasks(&self, owner: &Owner, req: ListTasksRequest) -> Result<ListTasksResponse, A2aError> {
        let query = build_query(owner, &req)?;
        let store = self.rt.store.clone();
        let page = tokio::task::spawn_blocking(move || store.list_tasks(&query))
            .await
            .map_err(|_| A2aError::internal("the listing was interrupted"))??;
        let include_artifacts = req.include_artifacts.unwrap_or(false);
        let tasks = page
            .records
            .into_iter()
            .map(|record| {
                let mut task = present(record.task, req.history_length);
                if !include_artifacts {
                    task.artifacts.clear();
                }
                task
            })
            .collect();
        Ok(ListTasksResponse {
            tasks,
            next_page_token: page.next_cursor.as_ref().map(encode_page_token).unwrap_or_default(),
            page_size: req.page_size.unwrap_or(DEFAULT_PAGE_SIZE),
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }
}

fn build_query(owner: &Owner, req: &ListTasksRequest) -> Result<TaskQuery, A2aError> {
    check_history_length("historyLength", req.history_length)?;
    let page_size = req.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(A2aError::invalid_field("pageSize", &format!("must be between 1 and {MAX_PAGE_SIZE}")));
    }
    if let Some(context_id) = &req.context_id {
        ids::validate_id("contextId", context_id)?;
    }
    let cursor = match req.page_token.as_deref() {
        None | Some("") => None,
        Some(token) => Some(
            decode_page_token(token)
                .ok_or_else(|| A2aError::invalid_field("pageToken", "is not a valid page token"))?,
        ),
    };
    Ok(TaskQuery {
        owner: owner.clone(),
        context_id: req.context_id.clone(),
        state: req.status.filter(|s| *s != TaskState::Unspecified),
        status_after_millis: req.status_timestamp_after.map(|t| t.timestamp_millis()),
        page_size: usize::try_from(page_size).unwrap_or(1),
        cursor,
    })
}
