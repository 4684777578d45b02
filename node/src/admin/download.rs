//! `GET /admin/v1/tasks/{id}/artifacts/{artifactId}/parts/{n}`: one artifact part's
//! content, for download. Inline text, bytes and data are answered as they are; a part
//! stored as a file (`artifacts.inline-max`, `crate::artifacts`) is read from the task's
//! own artifact directory, and only from there: a `file://` URL anywhere else (an agent
//! may name any URL) is refused, never read.

use super::AdminError;
use crate::core::Core;
use a2ad_protocol::{A2aError, PartContent};
use a2ad_storage::Scope;
use a2ad_storage::TaskStoreExt;

/// A part's bytes, its media type and a file name safe for `Content-Disposition`.
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
        PartContent::Url(url) => (stored_file(&rt.data_dir, task_id, url)?, media("application/octet-stream")),
    };
    let name = part.filename.clone().or_else(|| artifact.name.clone()).unwrap_or_else(|| artifact_id.to_owned());
    Ok(Download { bytes, media_type, filename: safe_filename(&name) })
}

/// The bytes of a `file://` URL inside the task's artifact directory.
fn stored_file(data_dir: &std::path::Path, task_id: &str, url: &str) -> Result<Vec<u8>, AdminError> {
    let refused =
        || AdminError::Invalid { field: "url", problem: "is not a file this node stored for the task".into() };
    let dir = a2ad_storage::artifact_dir(data_dir, task_id).ok_or_else(refused)?;
    let dir = std::fs::canonicalize(std::path::absolute(&dir).map_err(|_| refused())?).map_err(|_| refused())?;
    let path = url.strip_prefix("file://").ok_or_else(refused)?;
    let path = std::fs::canonicalize(path).map_err(|_| refused())?;
    if !path.starts_with(&dir) {
        return Err(refused());
    }
    std::fs::read(&path).map_err(|e| A2aError::internal(format!("artifact read: {e}")).into())
}

/// `report.csv`; anything but letters, digits and `._-` becomes `_`.
fn safe_filename(name: &str) -> String {
    let clean: String =
        name.chars().take(100).map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    if clean.trim_matches('.').is_empty() {
        "artifact".to_owned()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_keeps_only_safe_characters() {
        assert_eq!(safe_filename("report.csv"), "report.csv");
        assert_eq!(safe_filename("../../etc/passwd\"\r\n"), ".._.._etc_passwd___");
        assert_eq!(safe_filename(".."), "artifact");
    }

    #[test]
    fn only_files_under_the_tasks_own_directory_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let task_dir = dir.path().join("artifacts").join("t1");
        std::fs::create_dir_all(&task_dir).unwrap();
        std::fs::write(task_dir.join("a.txt"), "inside").unwrap();
        std::fs::write(dir.path().join("secret"), "outside").unwrap();
        let inside = format!("file://{}", task_dir.join("a.txt").display());
        assert_eq!(stored_file(dir.path(), "t1", &inside).unwrap(), b"inside");
        for url in [
            format!("file://{}", dir.path().join("secret").display()),
            format!("file://{}/../../secret", task_dir.join("a.txt").display()),
            "https://example.com/a.txt".to_owned(),
        ] {
            assert!(stored_file(dir.path(), "t1", &url).is_err(), "{url}");
        }
        assert!(stored_file(dir.path(), "..", &inside).is_err());
    }
}
