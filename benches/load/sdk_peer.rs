//! The official Rust A2A SDK's in-memory server (`benches/rust-sdk-peer`, on
//! `a2a-server-lf`) as a peer of a2ad in the core part: the same `SendMessage` load on the
//! same one pinned core, so that a2ad's figure can be read against a known A2A server
//! that keeps its tasks in memory only.

use crate::client::Target;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The one command that builds the peer (BENCHMARKS.md says the same).
pub const BUILD: &str = "cargo build --release --manifest-path benches/rust-sdk-peer/Cargo.toml";

/// The peer's binary: `A2AD_SDK_PEER_BIN`, else the release build in the peer's own
/// target dir; when it is not there, the line to print in place of the peer's figures.
pub fn binary() -> Result<PathBuf, String> {
    let path = std::env::var_os("A2AD_SDK_PEER_BIN").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/rust-sdk-peer/target/release/rust-sdk-peer")
    });
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("rust SDK peer: skipped ({} is missing; build it with `{BUILD}`)", path.display()))
    }
}

/// The core part's JSON-RPC `SendMessage` load, for the peer. The SDK reads a request
/// without `A2A-Version` as 0.3 and refuses it (-32009), so this one says 1.0; the body and
/// the answer (a task in `TASK_STATE_COMPLETED`) are the same as a2ad's.
pub fn target(addr: SocketAddr) -> Target {
    Target { addr, path: "/", body_for: crate::send_body, expect: "TASK_STATE_COMPLETED", a2a_version: Some("1.0") }
}
