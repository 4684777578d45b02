//! # a2ad-protocol
//!
//! The A2A 1.0 wire format, and nothing else: no I/O, no runtime.
//!
//! * [`types`] holds every message of `lf.a2a.v1` as ProtoJSON. Responses are written in
//!   lowerCamelCase with enums as names and timestamps as `…sssZ`; requests are accepted in
//!   lowerCamelCase or the proto's snake_case, with enums as names or numbers, and unknown
//!   fields are ignored (see `shared/a2a/spec-1.0.md`, "Decisions").
//! * [`error`] is the single error-code table: every error a2ad can return, with its
//!   JSON-RPC code, HTTP status, gRPC status and `google.rpc.ErrorInfo` reason.
//! * [`jsonrpc`] is the JSON-RPC 2.0 envelope.
//! * [`ids`] validates client-supplied ids and mints server ids.
//! * [`method`] names every method once, with its REST routes and its 0.3/0.1 names.

pub mod dialect;
pub mod error;
pub mod ids;
pub mod jcs;
pub mod jsonrpc;
pub mod method;
pub mod strict_json;
pub mod timestamp;
pub mod types;

pub use error::{A2aError, ErrorCode};
pub use method::Method;
pub use types::*;
