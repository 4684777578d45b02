//! Where agent artifacts are kept, and how clients reach them.
//!
//! An artifact part an agent emits with text or raw bytes larger than `artifacts.inline-max`
//! is written to `<data-dir>/artifacts/<task-id>/<unique>-<name>` and replaced by a part
//! whose `url` names that file, with the `mediaType`, the `filename` and
//! `metadata.a2ad = {byteSize, sha256}`: clients get a reference, not the content, and
//! events and stored tasks stay small. Smaller parts stay inline. Each chunk of an
//! appended artifact is a part (and, if large, a file) of its own, so `append` and
//! `lastChunk` mean what A2A says. Removing a task removes its directory (retention).
//!
//! The URL is the node's own artifact route, `<public-url><rest-prefix>/tasks/<task-id>/
//! artifacts/<file>` (`artifacts.links: http`, the default), which serves the file to the
//! task's owner only ([`crate::core::Core::artifact_file`]); or, for a single-user local
//! setup, the file's `file://` URL (`artifacts.links: file`), which reveals the node's path.

use a2ad_protocol::{ids, Artifact, Part, PartContent, Task};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Why an artifact could not be kept. The text reaches the client: no paths.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("the artifact could not be stored")]
    Write(#[source] std::io::Error),
    #[error("the artifact id `{0}` is not valid (1-128 characters of A-Z a-z 0-9 _ . : -)")]
    BadId(String),
}

/// How a stored artifact is linked (`artifacts.links`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArtifactLinks {
    /// The node's artifact route, an absolute `http(s)://` URL from `public-url`.
    #[default]
    Http,
    /// The file's `file://` URL on the node's disk (single-user local setups).
    File,
}

/// The artifact directory of a node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArtifactStore {
    root: PathBuf,
    inline_max: usize,
    /// `<public-url><rest-prefix>` for [`ArtifactLinks::Http`]; `None`: `file://` links.
    route_base: Option<String>,
}

impl ArtifactStore {
    /// Artifacts under `<data_dir>/artifacts`, inline up to `inline_max` bytes, linked by
    /// the artifact route under `route_base` (`<public-url><rest-prefix>`) or, when it is
    /// `None`, by `file://` URLs. A relative data dir is taken from the node's working
    /// directory (a `file://` URL is absolute).
    pub fn new(data_dir: &Path, inline_max: usize, route_base: Option<String>) -> Self {
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_owned());
        ArtifactStore { root: data_dir.join("artifacts"), inline_max, route_base }
    }

    /// The directory of one task's artifacts.
    pub fn task_dir(&self, task_id: &str) -> PathBuf {
        self.root.join(task_id)
    }

    /// The URL of a stored file: the artifact route, or the file's own `file://` URL.
    fn link(&self, task_id: &str, path: &Path) -> Result<String, ArtifactError> {
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        match &self.route_base {
            Some(base) => Ok(format!("{base}/tasks/{task_id}/artifacts/{file}")),
            None => reqwest::Url::from_file_path(path)
                .map(String::from)
                .map_err(|()| ArtifactError::Write(std::io::ErrorKind::InvalidInput.into())),
        }
    }

    /// The artifact as the task records it: each large text or raw part stored as a file.
    pub async fn keep(&self, task_id: &str, mut artifact: Artifact) -> Result<Artifact, ArtifactError> {
        ids::validate_id("artifactId", &artifact.artifact_id)
            .map_err(|_| ArtifactError::BadId(artifact.artifact_id.clone()))?;
        let mut parts = Vec::with_capacity(artifact.parts.len());
        for part in std::mem::take(&mut artifact.parts) {
            parts.push(self.keep_part(task_id, &artifact.artifact_id, part).await?);
        }
        artifact.parts = parts;
        Ok(artifact)
    }

    async fn keep_part(&self, task_id: &str, artifact_id: &str, part: Part) -> Result<Part, ArtifactError> {
        let bytes = match &part.content {
            PartContent::Text(text) if text.len() > self.inline_max => text.as_bytes(),
            PartContent::Raw(raw) if raw.len() > self.inline_max => raw.as_slice(),
            _ => return Ok(part),
        };
        let default_type =
            if matches!(part.content, PartContent::Text(_)) { "text/plain" } else { "application/octet-stream" };
        let media_type = part.media_type.clone().unwrap_or_else(|| default_type.to_owned());
        let dir = self.task_dir(task_id);
        tokio::fs::create_dir_all(&dir).await.map_err(ArtifactError::Write)?;
        let name = safe_name(part.filename.as_deref().unwrap_or(artifact_id));
        let path = dir.join(format!("{}-{name}", ids::new_id()));
        tokio::fs::write(&path, bytes).await.map_err(ArtifactError::Write)?;
        let url = self.link(task_id, &path)?;
        let mut metadata = part.metadata.clone().unwrap_or_default();
        metadata.insert("a2ad".into(), json!({"byteSize": bytes.len(), "sha256": sha256_hex(bytes)}));
        Ok(Part {
            content: PartContent::Url(url),
            metadata: Some(metadata),
            filename: part.filename.clone(),
            media_type: Some(media_type),
        })
    }
}

/// A stored artifact file, as the task that lists it describes it: what the artifact
/// route serves.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFile {
    /// Where the file is (`<data-dir>/artifacts/<task-id>/<file>`).
    pub path: PathBuf,
    /// The part's `mediaType`.
    pub media_type: String,
    /// The part's `filename`, if it has one.
    pub filename: Option<String>,
    /// `metadata.a2ad.sha256`: the file's hash, which is its entity tag.
    pub sha256: Option<String>,
}

/// The stored file `name` of `task`: only a name this store writes, and only when one of
/// the task's artifact parts links it (by the artifact route or by `file://`), so the
/// route serves nothing the task does not list.
pub fn stored_file(data_dir: &Path, task: &Task, name: &str) -> Option<StoredFile> {
    let stored_name = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !stored_name {
        return None;
    }
    let by_route = format!("/tasks/{}/artifacts/{name}", task.id);
    let by_file = format!("/artifacts/{}/{name}", task.id);
    let part = task.artifacts.iter().flat_map(|a| a.parts.iter()).find(|part| match &part.content {
        PartContent::Url(url) => url.ends_with(&by_route) || (url.starts_with("file://") && url.ends_with(&by_file)),
        _ => false,
    })?;
    let sha256 = part.metadata.as_ref().and_then(|m| m.get("a2ad")).and_then(|a| a.get("sha256"));
    Some(StoredFile {
        path: a2ad_storage::artifact_dir(data_dir, &task.id)?.join(name),
        media_type: part.media_type.clone().unwrap_or_else(|| "application/octet-stream".into()),
        filename: part.filename.clone(),
        sha256: sha256.and_then(|s| s.as_str()).map(str::to_owned),
    })
}

/// The stored file a part's `url` links (the artifact route's URL or the file's
/// `file://` URL), as [`stored_file`] judges its last path segment: `None` for any URL
/// that names no file of this task's own directory that the task lists.
pub fn stored_file_at(data_dir: &Path, task: &Task, url: &str) -> Option<StoredFile> {
    let name = url.rsplit('/').next()?;
    stored_file(data_dir, task, name)
}

/// The one filename rule of both artifact routes (the A2A route and the admin API's
/// download): `attachment` with the file name: quoted in ASCII (anything else as `_`) and, exactly,
/// as RFC 5987 `filename*`.
pub fn content_disposition(name: &str) -> String {
    let ascii: String =
        name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' }).collect();
    let encoded: String = name
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

/// A file name that stays inside its directory: the last path component, with anything
/// but letters, digits, `.`, `-` and `_` replaced, and no leading dot.
fn safe_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).take(100).collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "artifact".into()
    } else {
        cleaned.to_owned()
    }
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_name_is_quoted_safely() {
        assert_eq!(content_disposition("report.md"), "attachment; filename=\"report.md\"; filename*=UTF-8''report.md");
        let odd = content_disposition("a\"b\r\nc é.txt");
        assert!(
            odd.starts_with("attachment; filename=\"a_b__c _.txt\"; filename*=UTF-8''a%22b%0D%0Ac%20%C3%A9.txt"),
            "{odd}"
        );
    }

    #[test]
    fn only_files_of_the_tasks_own_directory_that_it_lists_are_found() {
        let data = Path::new("/data");
        let linked = |url: &str| -> Task {
            serde_json::from_value(json!({"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
                "artifacts": [{"artifactId": "a", "parts": [{"url": url}]}]}))
            .unwrap()
        };
        let by_file = linked("file:///data/artifacts/t1/0001-a.txt");
        let found = stored_file_at(data, &by_file, "file:///data/artifacts/t1/0001-a.txt").unwrap();
        assert_eq!(found.path, Path::new("/data/artifacts/t1/0001-a.txt"));
        let by_route = linked("http://node/a2a/tasks/t1/artifacts/0001-a.txt");
        assert!(stored_file_at(data, &by_route, "http://node/a2a/tasks/t1/artifacts/0001-a.txt").is_some());
        for url in [
            "file:///etc/passwd",
            "file:///data/artifacts/t2/0001-a.txt",
            "file:///data/artifacts/t1/..",
            "https://x/y",
        ] {
            assert!(stored_file_at(data, &linked(url), url).is_none(), "{url}");
        }
        assert!(stored_file_at(data, &by_file, "file:///data/artifacts/t1/other.txt").is_none(), "not listed");
    }

    #[test]
    fn names_stay_inside_the_directory() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..hidden"), "hidden");
        assert_eq!(safe_name("a b?.txt"), "a_b_.txt");
        assert_eq!(safe_name(".."), "artifact");
    }
}
