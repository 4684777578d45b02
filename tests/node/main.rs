//! End-to-end tests of a node over real HTTP on loopback.
//!
//! Most tests start the app in-process on port 0 with a temp data dir ([`support::spawn_app`]);
//! restart and start-up tests run the real binary ([`support::NodeProcess`]).

mod support;

mod actors;
mod auth;
mod binary;
mod bindings;
mod card;
mod command;
mod errors;
mod extensions;
mod grpc;
mod interop;
mod interop_js;
mod list;
mod metrics;
mod push;
mod receiver;
mod redis;
mod redis_transport;
mod signing;
mod stdio;
mod streaming;
mod tasks;
mod unix;
mod websocket;
