//! The `allowed-cwds` of a node, and their expansion for one caller.
//!
//! An entry may hold `{tenant}` and `{principal}`, each as a whole path component
//! (`/srv/ws/{tenant}`, `/home/{tenant}/{principal}`): a caller's roots are the entries with
//! its own tenant and principal put in, so tenant B's roots never name A's directories. A
//! name that could not be one path component (empty, `.`, `..`, with a `/`, a NUL or a
//! control character) expands to nothing: that entry gives the caller no root. With
//! authentication off every caller is the anonymous owner, whose names are empty, so
//! templated entries give no root there.
//!
//! Without `allowed-cwds`, a node without authentication takes the node's working directory
//! and the system temp dir (a single-user local tool); a node with authentication takes
//! none: workspaces and `file://` parts are refused as switched off, never defaulted to
//! directories that every tenant shares.

use super::workspace::{normalize, AllowedRoots};
use a2ad_storage::Owner;
use std::path::{Path, PathBuf};

/// The placeholder of the caller's tenant in an `allowed-cwds` entry.
pub const TENANT: &str = "{tenant}";
/// The placeholder of the caller's principal.
pub const PRINCIPAL: &str = "{principal}";

/// The node's workspace roots before they are expanded for a caller.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkspacePolicy {
    /// The entries (configured or defaults); `None`: workspaces are off (also the
    /// `Default`, so a policy built without the config allows nothing).
    templates: Option<Vec<PathBuf>>,
    /// The data dir, as configured (made absolute) and canonical: refused even in a root.
    data_dir: Vec<PathBuf>,
}

impl WorkspacePolicy {
    /// The policy of a node: `configured` (`allowed-cwds`), else the defaults when
    /// `authenticated` is off, else none. Nothing inside `data_dir` is ever allowed.
    pub fn new(configured: &[PathBuf], data_dir: &Path, authenticated: bool) -> Self {
        let templates = match (configured.is_empty(), authenticated) {
            (false, _) => Some(configured.to_vec()),
            (true, false) => {
                Some([std::env::current_dir().ok(), Some(std::env::temp_dir())].into_iter().flatten().collect())
            }
            (true, true) => None,
        };
        let mut data = Vec::new();
        if let Ok(absolute) = std::path::absolute(data_dir) {
            data.push(normalize(&absolute));
        }
        if let Ok(canonical) = data_dir.canonicalize() {
            data.push(canonical);
        }
        WorkspacePolicy { templates, data_dir: data }
    }

    /// Whether workspaces and `file://` parts are switched off (authentication on and no
    /// `allowed-cwds`).
    pub fn is_off(&self) -> bool {
        self.templates.is_none()
    }

    /// `owner`'s roots: every entry with the owner's names put in, canonicalised where it
    /// exists. Touches the file system (the roots only, never a path a client named):
    /// call it on the blocking pool.
    pub fn for_owner(&self, owner: &Owner) -> AllowedRoots {
        let Some(templates) = &self.templates else { return AllowedRoots::off(self.data_dir.clone()) };
        let roots = templates.iter().filter_map(|template| expand(template, owner)).collect();
        AllowedRoots::new(roots, self.data_dir.clone())
    }
}

/// `template` with the owner's names put in; `None` when a name cannot be one component.
fn expand(template: &Path, owner: &Owner) -> Option<PathBuf> {
    let mut expanded = PathBuf::new();
    for component in template.components() {
        match component.as_os_str().to_str() {
            Some(TENANT) => expanded.push(one_component(&owner.tenant)?),
            Some(PRINCIPAL) => expanded.push(one_component(&owner.principal)?),
            _ => expanded.push(component),
        }
    }
    Some(normalize(&expanded))
}

/// `name` when it is one plain path component.
fn one_component(name: &str) -> Option<&str> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && !name.chars().any(|c| c == '/' || c.is_control());
    plain.then_some(name)
}

/// Why an `allowed-cwds` entry is refused: a brace that is not a whole `{tenant}` or
/// `{principal}` component.
pub fn check_entry(entry: &Path) -> Result<(), String> {
    for component in entry.components() {
        let text = component.as_os_str().to_string_lossy();
        if (text.contains('{') || text.contains('}')) && text != TENANT && text != PRINCIPAL {
            return Err(format!(
                "`{}`: only {TENANT} and {PRINCIPAL} may be put in, each as a whole path component",
                entry.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(tenant: &str, principal: &str) -> Owner {
        Owner { tenant: tenant.into(), principal: principal.into() }
    }

    #[test]
    fn entries_expand_to_the_callers_own_names_only() {
        let template = Path::new("/srv/ws/{tenant}/{principal}");
        assert_eq!(expand(template, &owner("acme", "ci")), Some(PathBuf::from("/srv/ws/acme/ci")));
        for (tenant, principal) in [("..", "x"), ("a/b", "x"), ("", "x"), ("acme", "."), ("acme", "a\nb")] {
            assert_eq!(expand(template, &owner(tenant, principal)), None, "{tenant:?} {principal:?}");
        }
        assert_eq!(expand(Path::new("/srv/shared"), &Owner::anonymous()), Some(PathBuf::from("/srv/shared")));
        assert!(check_entry(Path::new("/srv/{tenant}")).is_ok());
        assert!(check_entry(Path::new("/srv/ws-{tenant}")).is_err());
        assert!(check_entry(Path::new("/srv/{user}")).is_err());
    }

    #[test]
    fn with_authentication_and_no_entries_workspaces_are_off() {
        let data = tempfile::tempdir().unwrap();
        assert!(WorkspacePolicy::new(&[], data.path(), true).is_off());
        assert!(!WorkspacePolicy::new(&[], data.path(), false).is_off());
        assert!(!WorkspacePolicy::new(&["/srv".into()], data.path(), true).is_off());
    }
}
