//! Keys about what agents take in and give out: `allowed-cwds`, `input-parts`,
//! `artifacts` and `thinking-exposure`.

use serde::{Deserialize, Deserializer, Serialize};
use std::path::PathBuf;

/// `artifacts:`: where and how agent artifacts are kept.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ArtifactsConfig {
    /// Text artifacts up to this size stay inline in the event; larger ones (and every
    /// file artifact above it) are stored under `<data-dir>/artifacts/<task-id>/` and sent
    /// as a URL.
    #[serde(deserialize_with = "crate::units::byte_size")]
    pub inline_max: usize,
    /// How a stored artifact is linked: `http` (the node's artifact route, from
    /// `public-url`) or `file` (the file's `file://` URL, for single-user local setups).
    pub links: crate::artifacts::ArtifactLinks,
}

impl Default for ArtifactsConfig {
    fn default() -> Self {
        ArtifactsConfig { inline_max: 4 * 1024, links: crate::artifacts::ArtifactLinks::Http }
    }
}

/// `input-parts:`: media types beyond the built-in ones.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct InputPartsConfig {
    /// More text-like types that go into the prompt as text (`text/csv`, ...).
    pub text_types: Vec<String>,
    /// More media types that become a manifest line (`application/pdf`, ...).
    pub media_types: Vec<String>,
}

/// `allowed-cwds`: a list of paths, or one `:`-separated string (as `A2AD_ALLOWED_CWDS`
/// gives it). Each must be absolute; `{tenant}` and `{principal}` may stand for whole
/// components (see [`crate::agents::roots`]).
pub(super) fn allowed_cwds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<PathBuf>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<PathBuf>),
        Joined(String),
    }
    let paths = match Form::deserialize(deserializer)? {
        Form::List(paths) => paths,
        Form::Joined(joined) => split_path_list(&joined),
    };
    if let Some(relative) = paths.iter().find(|p| !p.is_absolute()) {
        return Err(serde::de::Error::custom(format!("`{}` is not an absolute path", relative.display())));
    }
    for path in &paths {
        crate::agents::roots::check_entry(path).map_err(serde::de::Error::custom)?;
    }
    Ok(paths)
}

/// `allowed-cwds` as the environment gives it: a `:`-separated path list.
pub fn split_path_list(list: &str) -> Vec<std::path::PathBuf> {
    std::env::split_paths(list).filter(|p| !p.as_os_str().is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    #[test]
    fn a_path_list_skips_empty_entries() {
        assert_eq!(super::split_path_list("/a::/b"), vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    }
}
