//! End-to-end tests of a node over real HTTP on loopback.
//!
//! Most tests start the app in-process on port 0 with a temp data dir ([`support::spawn_app`]);
//! restart and start-up tests run the real binary ([`support::NodeProcess`]).

mod support;

mod actors;
mod admin;
mod admin_api;
mod agent_debug;
mod artifacts;
mod artifacts_http;
mod auth;
mod auth_throttle;
mod binary;
mod bindings;
mod card;
mod client;
mod client_idle;
mod cluster;
mod command;
mod console;
mod crash;
mod deployment;
mod dialect_v01;
mod dialect_v03;
mod errors;
mod examples;
mod exposure;
mod extensions;
mod follow;
mod grpc;
mod hostile_load;
mod input_parts;
mod interop;
mod interop_js;
mod interop_v03;
mod jsonl_events;
mod limits;
mod list;
mod log_order;
mod memory_store;
mod metrics;
mod openai;
mod operator_tools;
mod pipelined_store;
mod private_data;
mod private_dirs;
mod push;
mod push_cli;
mod push_isolation;
mod readme;
mod receiver;
mod redis;
mod redis_outage;
mod redis_transport;
mod replica_failover;
mod reply_only;
mod retention;
mod retention_tenants;
mod shared_redis;
mod signing;
/// Loud skips (`SKIPPED …` lines and their count; `A2AD_REQUIRE_ALL=1` fails instead): the
/// storage crate's own file, the very same.
#[path = "../../storage/src/test_skip.rs"]
mod skip;
mod startup;
mod stdio;
mod stream_failure;
mod streaming;
mod streaming_off;
mod strict_parsing;
mod tasks;
mod teams;
mod tenancy;
mod unix;
mod websocket;
mod workspace;
mod workspaces;
