//! Exposure: listeners that other hosts can reach on a node without authentication.
//!
//! Without `auth:` every caller is the one anonymous owner: anyone who reaches the port
//! runs the agents and reads every task. That is right for a local tool on 127.0.0.1, and
//! a surprise on `0.0.0.0`. The node says so at start-up (a `warn` line per listener) and
//! on `GET /admin/v1/status` (`warnings`), and starts anyway: a trusted network, or a
//! proxy in front that authenticates, are fine reasons to run it so.

use std::net::SocketAddr;

/// One warning per TCP listener (`key`: the config key that set it, `addr`: the address it
/// bound) that is not on a loopback address, when `authenticated` is false.
pub fn warnings(listeners: &[(&str, SocketAddr)], authenticated: bool) -> Vec<String> {
    if authenticated {
        return Vec::new();
    }
    listeners
        .iter()
        .filter(|(_, addr)| !addr.ip().to_canonical().is_loopback())
        .map(|(key, addr)| {
            format!(
                "`{key}` {addr} is reachable from other hosts and authentication is off: anyone who can reach it runs the agents and reads every task; configure `auth` (docs/security.md) or listen on 127.0.0.1"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reachable_listeners_without_auth_are_warned_of() {
        let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
        let local = [("listen", addr("127.0.0.1:8080")), ("grpc-listen", addr("[::1]:8081"))];
        assert!(warnings(&local, false).is_empty());
        let open = [("listen", addr("0.0.0.0:8080")), ("grpc-listen", addr("127.0.0.1:8081"))];
        let found = warnings(&open, false);
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("`listen` 0.0.0.0:8080 is reachable"), "{found:?}");
        assert_eq!(warnings(&[("listen", addr("[::]:1"))], false).len(), 1);
        assert_eq!(warnings(&[("listen", addr("10.0.0.5:1"))], false).len(), 1);
        assert!(warnings(&open, true).is_empty(), "authentication on: nothing to say");
    }
}
