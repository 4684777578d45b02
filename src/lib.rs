//! # a2ad
//!
//! An A2A 1.0 task orchestration server. The binary (`src/main.rs`) is a thin CLI over
//! this library, and the tests start the same [`startup::Application`] on port 0.
//!
//! * [`config`]: the one config struct (YAML, `A2AD_*` env, flags).
//! * [`startup`]: opens the store, recovers, starts the actors and the HTTP server.
//! * [`core`]: the request handler every binding calls.
//! * [`rpc`]: JSON-RPC over any transport (one request in, one response or a stream of frames out).
//! * [`http`]: the HTTP surface (JSON-RPC, HTTP+JSON, the card, health).
//! * [`grpc`]: the gRPC binding (tonic, on its own port).
//! * [`metrics`]: the Prometheus metrics (`GET /metrics`) and the store and queue wrappers that feed them.
//! * [`retention`]: removes old tasks and expires unanswered ones in the background.
//! * [`transports`]: JSON-RPC over WebSocket, a Unix socket, stdio and Redis Streams.
//! * [`agents`]: the built-in agents.
//! * [`client`]: the client commands (`a2ad call`, `a2ad tasks`).

pub mod admin;
pub mod agents;
pub mod artifacts;
pub mod auth;
pub mod card;
pub mod card_signing;
pub mod client;
pub mod config;
pub mod core;
pub mod extended_card;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod push;
pub mod retention;
pub mod rpc;
pub mod startup;
pub mod transports;
