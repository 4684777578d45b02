//! The public agent card, built once at start-up from the config, with the validators
//! (`ETag`, `Last-Modified`) that let clients and proxies cache it.

use crate::config::Config;
use a2ad_protocol::{AgentCapabilities, AgentCard, AgentInterface, AgentProvider};
use std::time::SystemTime;

/// The media types every built-in agent accepts and produces.
const DEFAULT_MODES: &[&str] = &["text/plain", "application/json"];

/// The card as served: its JSON body and cache validators.
pub struct CardDocument {
    pub card: AgentCard,
    pub body: Vec<u8>,
    /// A strong validator: a hash of the exact body.
    pub etag: String,
    /// When this card was built, to the second (HTTP dates have no finer resolution).
    pub last_modified: SystemTime,
}

impl CardDocument {
    pub fn new(card: AgentCard) -> Self {
        let body = serde_json::to_vec(&card).expect("a card always encodes");
        let digest = ring::digest::digest(&ring::digest::SHA256, &body);
        let etag = format!("\"{}\"", hex(&digest.as_ref()[..16]));
        let now = SystemTime::now();
        let secs = now.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let last_modified = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        CardDocument { card, body, etag, last_modified }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn interface(url: String, binding: &str) -> AgentInterface {
    AgentInterface { url, protocol_binding: binding.into(), tenant: None, protocol_version: "1.0".into() }
}

/// Builds the card: interfaces from the public URL (JSON-RPC first, then HTTP+JSON, then
/// gRPC at `grpc_address` when it runs), skills from the agents.
pub fn build_card(config: &Config, public_url: &str, grpc_address: Option<&str>) -> AgentCard {
    let mut interfaces = vec![
        interface(format!("{public_url}/"), "JSONRPC"),
        interface(format!("{public_url}{}", config.rest_prefix), "HTTP+JSON"),
    ];
    if let Some(address) = grpc_address {
        interfaces.push(interface(address.to_owned(), "GRPC"));
    }
    let modes: Vec<String> = DEFAULT_MODES.iter().map(|m| (*m).to_owned()).collect();
    AgentCard {
        name: config.card.name.clone(),
        description: config.card.description.clone(),
        supported_interfaces: interfaces,
        provider: config
            .card
            .provider
            .as_ref()
            .map(|p| AgentProvider { organization: p.organization.clone(), url: p.url.clone() }),
        version: config.card.version.clone(),
        documentation_url: config.card.documentation_url.clone(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(config.push.enabled),
            extended_agent_card: Some(false),
            extensions: Vec::new(),
        },
        security_schemes: Default::default(),
        security_requirements: Vec::new(),
        default_input_modes: modes.clone(),
        default_output_modes: modes,
        skills: config.agents.iter().map(|a| a.skill()).collect(),
        signatures: Vec::new(),
        icon_url: config.card.icon_url.clone(),
    }
}
