//! The artifact files an answer links (parts with a `url`): `a2ad call --save DIR` downloads
//! them into DIR and names each on stderr; without `--save` their URLs are printed on
//! stdout, one line each (`file report.md (5000 bytes, text/markdown): URL`).
//!
//! Only files on the node's own origin are downloaded, with the credentials of the call:
//! a link elsewhere (or a `file://` link to the node's disk) is named, not fetched, so an
//! answer cannot send the credentials to another host. A download is checked against
//! `metadata.a2ad` (its size bounds what is read; its SHA-256 must match) and written to
//! a `.partial` file renamed into place, so DIR never holds half a file under the name.
//! A name already taken in DIR gets a `-1`, `-2`, ... before its extension.

use super::render::for_terminal;
use super::transport::Endpoint;
use super::ClientError;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// The most read of a file whose part gives no `byteSize`.
const UNSIZED_LIMIT: u64 = 256 << 20;

/// Saves (into `save`) or prints the linked files; with `--json` and no `--save` the JSON
/// lines carry the links already.
pub async fn deliver(endpoint: &Endpoint, files: &[Value], save: Option<&Path>, json: bool) -> Result<(), ClientError> {
    for part in files {
        let url = part["url"].as_str().unwrap_or_default();
        match save {
            None if json => {}
            None => println!("{}", for_terminal(&link_line(part, url), false)),
            Some(_) if !endpoint.serves(url) => {
                eprintln!("a2ad: not saved (not a file of this node): {}", for_terminal(url, false));
            }
            Some(dir) => {
                let (path, size) = save_one(endpoint, part, url, dir).await?;
                eprintln!("a2ad: saved {} ({size} bytes)", for_terminal(&path.display().to_string(), false));
            }
        }
    }
    Ok(())
}

/// `file NAME (SIZE bytes, TYPE): URL`.
fn link_line(part: &Value, url: &str) -> String {
    let name = part["filename"].as_str().map(|n| format!(" {n}")).unwrap_or_default();
    let mut about = Vec::new();
    if let Some(size) = part["metadata"]["a2ad"]["byteSize"].as_u64() {
        about.push(format!("{size} bytes"));
    }
    if let Some(media_type) = part["mediaType"].as_str() {
        about.push(media_type.to_owned());
    }
    let about = if about.is_empty() { String::new() } else { format!(" ({})", about.join(", ")) };
    format!("file{name}{about}: {url}")
}

/// Downloads one file into `dir`; where it went and its size.
async fn save_one(endpoint: &Endpoint, part: &Value, url: &str, dir: &Path) -> Result<(PathBuf, u64), ClientError> {
    let failed = |what: &str, e: std::io::Error| ClientError::Usage(format!("--save {}: {what}: {e}", dir.display()));
    tokio::fs::create_dir_all(dir).await.map_err(|e| failed("cannot create it", e))?;
    let expected_size = part["metadata"]["a2ad"]["byteSize"].as_u64();
    let expected_hash = part["metadata"]["a2ad"]["sha256"].as_str();
    let mut response = endpoint.fetch_file(url).await?;
    let path = free_name(dir, &file_name(part, url));
    let mut partial = path.clone().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let mut out = tokio::fs::File::create(&partial).await.map_err(|e| failed("cannot write", e))?;
    let limit = expected_size.unwrap_or(UNSIZED_LIMIT);
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut size = 0u64;
    let outcome = async {
        while let Some(chunk) =
            response.chunk().await.map_err(|e| ClientError::Transport(format!("cannot download {url}: {e}")))?
        {
            size += chunk.len() as u64;
            if size > limit {
                return Err(ClientError::Transport(format!("{url}: larger than the {limit} bytes announced")));
            }
            hash.update(&chunk);
            out.write_all(&chunk).await.map_err(|e| failed("cannot write", e))?;
        }
        out.flush().await.map_err(|e| failed("cannot write", e))?;
        let got: String = hash.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect();
        if expected_hash.is_some_and(|want| want != got) || expected_size.is_some_and(|want| want != size) {
            return Err(ClientError::Transport(format!("{url}: the download does not match its size and sha256")));
        }
        tokio::fs::rename(&partial, &path).await.map_err(|e| failed("cannot write", e))
    }
    .await;
    if outcome.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    outcome.map(|()| (path, size))
}

/// The part's `filename`, else the URL's last segment, as one safe path component.
fn file_name(part: &Value, url: &str) -> String {
    let named = part["filename"].as_str().unwrap_or_else(|| url.rsplit('/').next().unwrap_or(""));
    let last = named.rsplit(['/', '\\']).next().unwrap_or("");
    let safe: String = last.chars().map(|c| if c.is_control() { '_' } else { c }).collect();
    let safe = safe.trim_start_matches('.');
    if safe.is_empty() {
        "artifact".into()
    } else {
        safe.to_owned()
    }
}

/// `dir/name`, or `dir/stem-N.ext` with the first N not taken.
fn free_name(dir: &Path, name: &str) -> PathBuf {
    let candidate = dir.join(name);
    if !candidate.exists() {
        return candidate;
    }
    let (stem, extension) = match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => (stem, format!(".{extension}")),
        _ => (name, String::new()),
    };
    (1..).map(|n| dir.join(format!("{stem}-{n}{extension}"))).find(|p| !p.exists()).unwrap_or(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_stay_in_the_directory_and_do_not_overwrite() {
        assert_eq!(file_name(&json!({"filename": "../../etc/passwd"}), "x"), "passwd");
        assert_eq!(file_name(&json!({}), "http://n/a2a/tasks/t/artifacts/abc-out.txt"), "abc-out.txt");
        assert_eq!(file_name(&json!({"filename": ".."}), "x"), "artifact");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        std::fs::write(dir.path().join("a-1.txt"), "").unwrap();
        assert_eq!(free_name(dir.path(), "a.txt"), dir.path().join("a-2.txt"));
        assert_eq!(free_name(dir.path(), "b"), dir.path().join("b"));
        let line = link_line(
            &json!({"filename": "r.md", "mediaType": "text/markdown", "metadata": {"a2ad": {"byteSize": 5}}}),
            "u",
        );
        assert_eq!(line, "file r.md (5 bytes, text/markdown): u");
    }
}
