//! `GET /admin/v1/tasks/{id}/artifacts/{artifactId}/parts/{n}`: one artifact part's
//! content, for download. Inline text, bytes and data are answered as they are; a part
//! stored as a file (`artifacts.inline-max`) is found as the A2A artifact route finds it
//! ([`crate::artifacts::stored_file_at`]: the one reader of stored files, with one file
//! name rule): only a file of the task's own artifact directory that the task lists. Any
//! other URL (an agent may name any) is refused, never read.

use super::AdminError;
use crate::core::Core;
use a2ad_protocol::{A2aError, PartContent};
use a2ad_storage::Scope;
use a2ad_storage::TaskStoreExt;
use std::collections::BTreeMap;

/// A part's bytes, its media type and its file name (for `Content-Disposition`, through
/// [`crate::artifacts::content_disposition`]).
#[derive(Debug, PartialEq)]
pub struct Download {
    pub bytes: Vec<u8>,
    pub media_type: String,
    pub filename: String,
}

/// The content of part `index` of artifact `artifact_id` of task `task_id`. Blocking.
pub fn artifact_part(core: &Core, task_id: &str, artifact_id: &str, index: usize) -> Result<Download, AdminError> {
    let rt = core.runtime();
    let record = rt.store.get_task(Scope::Node, task_id)?.ok_or_else(|| A2aError::task_not_found(task_id))?;
    let not_found =
        || AdminError::Invalid { field: "artifactId", problem: "names no artifact part of this task".into() };
    let artifact = record.task.artifacts.iter().find(|a| a.artifact_id == artifact_id).ok_or_else(not_found)?;
    let part = artifact.parts.get(index).ok_or_else(not_found)?;
    let media = |default: &str| part.media_type.clone().unwrap_or_else(|| default.to_owned());
    let (bytes, media_type) = match &part.content {
        PartContent::Text(text) => (text.clone().into_bytes(), media("text/plain; charset=utf-8")),
        PartContent::Raw(bytes) => (bytes.clone(), media("application/octet-stream")),
        PartContent::Data(value) => (value.to_string().into_bytes(), "application/json".to_owned()),
        PartContent::Url(url) => (stored_file(&rt.data_dir, &record.task, url)?, media("application/octet-stream")),
    };
    let filename = part.filename.clone().or_else(|| artifact.name.clone()).unwrap_or_else(|| artifact_id.to_owned());
    Ok(Download { bytes, media_type, filename })
}

/// The size in bytes of each part of each of the task's artifacts, by artifact id: what
/// an operator sees before downloading. An inline part is the bytes of its content (a
/// data part, of its JSON); a part stored as a file is that file's size on disk (or, if
/// it is gone, the `metadata.a2ad.byteSize` it was stored with); a link to elsewhere is
/// `None`. Blocking (a `stat` per stored file).
pub fn part_sizes(data_dir: &std::path::Path, task: &a2ad_protocol::Task) -> BTreeMap<String, Vec<Option<u64>>> {
    let size = |part: &a2ad_protocol::Part| match &part.content {
        PartContent::Text(text) => Some(text.len() as u64),
        PartContent::Raw(bytes) => Some(bytes.len() as u64),
        PartContent::Data(value) => Some(value.to_string().len() as u64),
        PartContent::Url(url) => {
            let on_disk = crate::artifacts::stored_file_at(data_dir, task, url)
                .and_then(|file| std::fs::metadata(file.path).ok())
                .map(|m| m.len());
            let recorded = || part.metadata.as_ref()?.get("a2ad")?.get("byteSize")?.as_u64();
            on_disk.or_else(recorded)
        }
    };
    task.artifacts.iter().map(|a| (a.artifact_id.clone(), a.parts.iter().map(size).collect())).collect()
}

/// The bytes of the stored file `url` links, found as the A2A artifact route finds it.
fn stored_file(data_dir: &std::path::Path, task: &a2ad_protocol::Task, url: &str) -> Result<Vec<u8>, AdminError> {
    let refused =
        || AdminError::Invalid { field: "url", problem: "is not a file this node stored for the task".into() };
    let stored = crate::artifacts::stored_file_at(data_dir, task, url).ok_or_else(refused)?;
    std::fs::read(&stored.path).map_err(|_| refused())
}
