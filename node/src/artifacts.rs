//! Where agent artifacts are kept.
//!
//! An artifact part an agent emits with text or raw bytes larger than `artifacts.inline-max`
//! is written to `<data-dir>/artifacts/<task-id>/<unique>-<name>` and replaced by a part
//! whose `url` is that file's `file://` URL, with the `mediaType` and
//! `metadata.a2ad = {byteSize, sha256}`: clients get a reference, not the content, and
//! events and stored tasks stay small. Smaller parts stay inline. Each chunk of an
//! appended artifact is a part (and, if large, a file) of its own, so `append` and
//! `lastChunk` mean what A2A says. Removing a task removes its directory (retention).

use a2ad_protocol::{ids, Artifact, Part, PartContent};
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

/// The artifact directory of a node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArtifactStore {
    root: PathBuf,
    inline_max: usize,
}

impl ArtifactStore {
    /// Artifacts under `<data_dir>/artifacts`, inline up to `inline_max` bytes. A relative
    /// data dir is taken from the node's working directory (a `file://` URL is absolute).
    pub fn new(data_dir: &Path, inline_max: usize) -> Self {
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_owned());
        ArtifactStore { root: data_dir.join("artifacts"), inline_max }
    }

    /// The directory of one task's artifacts.
    pub fn task_dir(&self, task_id: &str) -> PathBuf {
        self.root.join(task_id)
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
        let url = reqwest::Url::from_file_path(&path)
            .map_err(|()| ArtifactError::Write(std::io::ErrorKind::InvalidInput.into()))?;
        let mut metadata = part.metadata.clone().unwrap_or_default();
        metadata.insert("a2ad".into(), json!({"byteSize": bytes.len(), "sha256": sha256_hex(bytes)}));
        Ok(Part {
            content: PartContent::Url(url.to_string()),
            metadata: Some(metadata),
            filename: part.filename.clone(),
            media_type: Some(media_type),
        })
    }
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
    fn names_stay_inside_the_directory() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..hidden"), "hidden");
        assert_eq!(safe_name("a b?.txt"), "a_b_.txt");
        assert_eq!(safe_name(".."), "artifact");
    }
}
