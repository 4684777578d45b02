//! # a2ad-node
//!
//! The node core: everything a2ad does between a decoded request and the actors, with no
//! listener of its own. The edges (the HTTP server and its WebSocket, gRPC, the Unix
//! socket, stdio and Redis transports, the client and admin commands, start-up) live in
//! the root crate `a2ad` and depend on this crate, never the reverse. See
//! `ARCHITECTURE.md` at the repository root.
//!
//! * [`admin`]: the admin API's core: operators, node status, tasks across tenants, dead letters.
//! * [`config`]: the one config struct (YAML, `A2AD_*` env, flags).
//! * [`core`]: the request handler every binding calls.
//! * [`rpc`]: JSON-RPC over any transport (one request in, one response or a stream of frames out).
//! * [`auth`]: who the caller is, with failed attempts throttled.
//! * [`agents`]: the built-in agents (echo, command, openai).
//! * [`artifacts`]: artifact files under the data dir.
//! * [`push`]: push notification delivery (the webhook sender and its SSRF guard).
//! * [`retention`]: removes old tasks and expires unanswered ones in the background.
//! * [`card`], [`card_signing`], [`extended_card`]: the agent card.
//! * [`metrics`]: the Prometheus metrics and the store and queue wrappers that feed them.
//! * [`rate`]: token buckets by key in bounded memory (request rates, failed logins).
//! * [`units`]: durations and byte sizes as the config writes them, read and shown.

pub mod admin;
pub mod agents;
pub mod artifacts;
pub mod auth;
pub mod card;
pub mod card_signing;
pub mod config;
pub mod core;
pub mod exposure;
pub mod extended_card;
pub mod metrics;
pub mod old_clients;
pub mod private_files;
pub mod push;
pub mod rate;
pub mod retention;
pub mod rpc;
pub mod units;
