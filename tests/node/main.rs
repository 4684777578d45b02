//! End-to-end tests of a node over real HTTP on loopback.
//!
//! Most tests start the app in-process on port 0 with a temp data dir ([`support::spawn_app`]);
//! restart and start-up tests run the real binary ([`support::NodeProcess`]).

mod support;

mod actors;
mod admin;
mod admin_api;
mod artifacts;
mod auth;
mod auth_throttle;
mod binary;
mod bindings;
mod card;
mod client;
mod client_idle;
mod command;
mod console;
mod crash;
mod dialect_v01;
mod dialect_v03;
mod errors;
mod examples;
mod extensions;
mod follow;
mod grpc;
mod hostile_load;
mod input_parts;
mod interop;
mod interop_js;
mod interop_v03;
mod jsonl_events;
mod list;
mod metrics;
mod openai;
mod push;
mod push_isolation;
mod receiver;
mod redis;
mod redis_outage;
mod redis_transport;
mod reply_only;
mod retention;
mod retention_tenants;
mod signing;
mod startup;
mod stdio;
mod stream_failure;
mod streaming;
mod streaming_off;
mod strict_parsing;
mod tasks;
mod unix;
mod websocket;
mod workspace;
