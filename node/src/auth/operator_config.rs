//! The `admin:` block: who may use the admin API and the console, and where they are
//! served. Operator tokens are hashed (SHA-256) as they are read, like tenant tokens, and
//! are a credential of their own: they never authenticate an A2A call, and no tenant
//! credential reaches the admin API.
//!
//! ```yaml
//! admin:
//!   tokens:
//!     - { token-sha256: 9f86d0…, name: alice, role: operator }
//!     - { token: "a long random string", name: dashboard, role: viewer }
//!   listen: 127.0.0.1:9090     # or `main` (the default) or `unix`
//! ```

use super::{HashedSecret, Redacted};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::net::SocketAddr;

/// The whole `admin:` block. No token (the default) turns the admin API and the console
/// off: their routes are not mounted.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct AdminConfig {
    pub tokens: Vec<AdminTokenConfig>,
    /// Where the admin API and the console are served.
    pub listen: AdminListen,
}

/// One operator token: exactly one of `token-sha256` (hex) or `token` (plaintext, hashed
/// at once), the operator's name (written in the log of every action) and its role.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AdminTokenConfig {
    #[serde(default)]
    pub token_sha256: Option<Redacted<String>>,
    #[serde(default)]
    pub token: Option<HashedSecret>,
    pub name: String,
    pub role: Role,
}

/// What an operator may do: a viewer reads; an operator also cancels tasks and retries
/// or purges dead letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Viewer,
    Operator,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
        }
    }
}

/// `admin.listen`: `main` (the HTTP listener, and the Unix socket when there is one),
/// `unix` (the Unix socket only: `listen-unix` must be set), or an address of its own
/// (`127.0.0.1:9090`), where only the admin API and the console answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AdminListen {
    #[default]
    Main,
    Unix,
    Address(SocketAddr),
}

impl Serialize for AdminListen {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AdminListen::Main => serializer.serialize_str("main"),
            AdminListen::Unix => serializer.serialize_str("unix"),
            AdminListen::Address(addr) => serializer.collect_str(addr),
        }
    }
}

impl<'de> Deserialize<'de> for AdminListen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.trim() {
            "main" => Ok(AdminListen::Main),
            "unix" => Ok(AdminListen::Unix),
            other => other
                .parse()
                .map(AdminListen::Address)
                .map_err(|_| serde::de::Error::custom("must be `main`, `unix` or an address like 127.0.0.1:9090")),
        }
    }
}

impl AdminConfig {
    /// Whether the admin API and the console are on.
    pub fn enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The first bad value, as (key, message). Tokens are checked when the node builds
    /// its [`super::operators::Operators`] (which compares them with the tenants' credentials).
    pub fn check(&self, has_unix_socket: bool) -> Result<(), (String, &'static str)> {
        if self.listen == AdminListen::Unix && !has_unix_socket {
            return Err(("admin.listen".into(), "`unix` needs `listen-unix` (the socket to serve on)"));
        }
        for (i, token) in self.tokens.iter().enumerate() {
            let name = &token.name;
            if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
                return Err((format!("admin.tokens[{i}].name"), "must be 1-64 characters without control characters"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<AdminConfig, serde_yaml_ng::Error> {
        serde_yaml_ng::from_str(yaml)
    }

    #[test]
    fn listen_reads_main_unix_or_an_address_and_names_what_it_takes() {
        assert_eq!(read("listen: unix").unwrap().listen, AdminListen::Unix);
        assert_eq!(read("{}").unwrap().listen, AdminListen::Main);
        let addr = read("listen: 127.0.0.1:9090").unwrap().listen;
        assert_eq!(addr, AdminListen::Address("127.0.0.1:9090".parse().unwrap()));
        let error = read("listen: everywhere").unwrap_err().to_string();
        assert!(error.contains("must be `main`, `unix` or an address"), "{error}");
    }

    #[test]
    fn a_role_is_viewer_or_operator_and_a_plaintext_token_is_not_kept() {
        let config = read("tokens: [{token: s3cret, name: alice, role: operator}]").unwrap();
        assert_eq!(config.tokens[0].role, Role::Operator);
        assert!(!format!("{config:?}").contains("s3cret"));
        assert!(read("tokens: [{token: s, name: a, role: admin}]").is_err());
    }

    #[test]
    fn unix_needs_a_socket_and_a_name_must_be_printable() {
        let config = read("listen: unix").unwrap();
        assert_eq!(config.check(false).unwrap_err().0, "admin.listen");
        assert!(config.check(true).is_ok());
        let config = read("tokens: [{token: s, name: \"\", role: viewer}]").unwrap();
        assert_eq!(config.check(false).unwrap_err().0, "admin.tokens[0].name");
    }
}
