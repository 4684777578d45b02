//! A hint for old clients: a node whose card is strict A2A 1.0 (`card.compat-v03` off)
//! cannot be read by a 0.3 SDK (a2a-sdk 0.3.x fails on the card with `Field required:
//! url`) and says nothing of it by itself, since the client gives up before it calls. So
//! a request that looks like 0.3 (a 0.3 method name, or no `A2A-Version`: a card fetch or
//! a call) gets one `warn` line per client address naming `card.compat-v03`.
//!
//! Bounded: at most [`MAX_ADDRESSES`] addresses are remembered; past that the set starts
//! over, so a stream of new addresses costs a line each time the set fills, never memory.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Mutex;

/// The most client addresses remembered at once.
pub const MAX_ADDRESSES: usize = 4096;

/// The addresses already told, for one node.
#[derive(Debug, Default)]
pub struct OldClientHints {
    told: Mutex<HashSet<IpAddr>>,
}

impl OldClientHints {
    /// Logs the hint for `client` unless it was logged for that address before; `why`
    /// says what looked like 0.3. Returns whether it logged.
    pub fn saw(&self, client: IpAddr, why: &str) -> bool {
        let client = client.to_canonical();
        let Ok(mut told) = self.told.lock() else { return false };
        if told.contains(&client) {
            return false;
        }
        if told.len() >= MAX_ADDRESSES {
            told.clear();
        }
        told.insert(client);
        drop(told);
        tracing::warn!(
            client = %client,
            "a request from {client} looks like an A2A 0.3 client ({why}), and this node's card is A2A 1.0 only: 0.3 SDKs (a2a-sdk 0.3.x) cannot read it (`Field required: url`); set `card.compat-v03: true` to serve them too (docs/older-clients.md)"
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_is_told_once() {
        let hints = OldClientHints::default();
        let a: IpAddr = "10.0.0.5".parse().unwrap();
        assert!(hints.saw(a, "no A2A-Version"));
        assert!(!hints.saw(a, "the 0.3 method `message/send`"));
        assert!(!hints.saw("::ffff:10.0.0.5".parse().unwrap(), "x"), "the same address over IPv6");
        assert!(hints.saw("10.0.0.6".parse().unwrap(), "x"));
    }
}
