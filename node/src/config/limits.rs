//! Limits, extensions and the extended card: the parts of the config that decide what a
//! caller may do beyond authentication.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Per-principal request rate, and how many turns may run at once.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct Limits {
    /// Requests per second per owner (token bucket): per principal, or per tenant with
    /// `tenancy.visibility: tenant`; 0 turns the limit off.
    pub rate_per_second: f64,
    /// How many requests an owner may make at once above the rate.
    pub rate_burst: u32,
    /// Turns running at once on the node; 0 is no limit.
    pub max_running_turns: usize,
    /// Turns running at once per tenant; 0 is no limit.
    pub max_running_turns_per_tenant: usize,
    /// The largest HTTP+JSON request body (the JSON-RPC one is `body-limit`).
    #[serde(deserialize_with = "crate::units::optional_byte_size")]
    pub rest_body_limit: Option<usize>,
    /// The largest gRPC message.
    #[serde(deserialize_with = "crate::units::optional_byte_size")]
    pub grpc_message_limit: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rate_per_second: 0.0,
            rate_burst: 20,
            max_running_turns: 0,
            max_running_turns_per_tenant: 0,
            rest_body_limit: None,
            grpc_message_limit: None,
        }
    }
}

/// An A2A extension the node announces in its card.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ExtensionConfig {
    pub uri: String,
    #[serde(default)]
    pub description: Option<String>,
    /// Clients must activate it (`A2A-Extensions`), or get ExtensionSupportRequired.
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
}
