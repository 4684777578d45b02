//! # a2ad
//!
//! An A2A 1.0 task orchestration server. This crate holds the edges: the listeners and
//! the commands. The node core (config, the request core, JSON-RPC, auth, agents, push,
//! retention, the card, metrics) is the `a2ad-node` crate, re-exported below under the
//! same paths (`a2ad::config`, `a2ad::core`, ...) so that embedders and tests have one
//! crate to name. The binary (`src/main.rs`) is a thin CLI over this library, and the
//! tests start the same [`startup::Application`] on port 0. See `ARCHITECTURE.md`.
//!
//! * [`startup`]: opens the store, recovers, starts the actors and the listeners.
//! * [`http`]: the HTTP surface (JSON-RPC, HTTP+JSON, the card, health, the WebSocket upgrade).
//! * [`grpc`]: the gRPC binding (tonic, on its own port).
//! * [`transports`]: JSON-RPC over WebSocket, a Unix socket, stdio and Redis Streams.
//! * [`client`]: the client commands (`a2ad call`, `a2ad tasks`, `a2ad card`).
//! * [`admin`]: the offline admin commands (`a2ad admin`, `a2ad push dead`).

pub mod admin;
pub mod client;
pub mod connection;
pub mod grpc;
pub mod http;
mod os_error;
pub mod setup;
pub mod startup;
pub mod transports;

pub use a2ad_node::{
    agents, artifacts, auth, card, card_signing, config, core, extended_card, metrics, private_files, push, retention,
    rpc,
};
