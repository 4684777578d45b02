//! The extended card (`GetExtendedAgentCard`, authenticated callers only): the public card
//! plus what an operator wants to know about the node, as the extension
//! `urn:a2ad:runtime:v1` whose params hold the version, the agents, the limits and the
//! features that are on.

use crate::config::{AgentKind, Config};
use a2ad_protocol::{AgentCard, AgentExtension};
use serde_json::{json, Value};

/// The URI of the runtime-details extension.
pub const RUNTIME_EXTENSION: &str = "urn:a2ad:runtime:v1";

/// The public card with the node's runtime details added.
pub fn extended_card(public: &AgentCard, config: &Config) -> AgentCard {
    let mut card = public.clone();
    card.signatures.clear();
    let params = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "agents": config.agents.iter().map(agent_details).collect::<Vec<_>>(),
        "limits": {
            "ratePerSecond": config.limits.rate_per_second,
            "rateBurst": config.limits.rate_burst,
            "maxRunningTurns": config.limits.max_running_turns,
            "maxRunningTurnsPerTenant": config.limits.max_running_turns_per_tenant,
            "maxContexts": config.max_contexts,
            "idleTimeoutSeconds": config.idle_timeout.as_secs(),
            "jsonRpcBodyLimit": config.body_limit,
            "restBodyLimit": config.limits.rest_body_limit.unwrap_or(config.body_limit),
            "grpcMessageLimit": config.limits.grpc_message_limit.unwrap_or(config.body_limit),
            "streamBuffer": config.stream_buffer,
            "eventRetention": config.event_retention,
        },
        "features": {
            "streaming": config.streaming,
            "pushNotifications": config.push.enabled,
            "pushQueue": if config.push.enabled { json!(format!("{:?}", config.push.queue)) } else { Value::Null },
            "grpc": config.grpc_listen.is_some(),
            "restPrefix": config.rest_prefix,
        },
    });
    card.capabilities.extensions.push(AgentExtension {
        uri: RUNTIME_EXTENSION.into(),
        description: Some("Runtime details of this a2ad node, for operators".into()),
        required: false,
        params: params.as_object().cloned(),
    });
    card
}

fn agent_details(agent: &crate::config::AgentConfig) -> Value {
    let settings = match &agent.kind {
        AgentKind::Echo(echo) => json!({
            "kind": "echo",
            "endState": echo.end_state.as_str(),
            "chunkSize": echo.chunk_size,
            "chunkDelayMs": echo.chunk_delay.as_millis() as u64,
        }),
        // The program's name only: its arguments and environment may hold secrets.
        AgentKind::Command(command) => json!({
            "kind": "command",
            "program": std::path::Path::new(&command.argv[0]).file_name().map(|n| n.to_string_lossy().into_owned()),
            "timeoutSeconds": command.timeout.as_secs(),
            "maxOutputBytes": command.max_output,
        }),
        // The model only: the base URL may name internal hosts, the key is secret.
        AgentKind::OpenAi(openai) => json!({
            "kind": "openai",
            "model": openai.model,
            "timeoutSeconds": openai.timeout.as_secs(),
        }),
    };
    json!({"id": agent.id, "name": agent.name, "settings": settings})
}

/// Builds the extended card for a base URL (`http://<address>`); `None` if it cannot be
/// signed.
pub type CardBuilder = Box<dyn Fn(&str) -> Option<a2ad_protocol::AgentCard> + Send + Sync>;

/// The most base URLs whose extended cards are kept; past it a card is built per request
/// (and not kept), so that no stream of requests grows the map.
const MAX_BASES: usize = 64;

/// The extended cards of a node on a wildcard address, one per base URL requests came to,
/// as `a2ad`'s HTTP layer keeps the public ones.
pub struct CardsByBase {
    build: CardBuilder,
    cards: std::sync::Mutex<std::collections::HashMap<String, a2ad_protocol::AgentCard>>,
}

impl CardsByBase {
    pub fn new(build: CardBuilder) -> Self {
        CardsByBase { build, cards: Default::default() }
    }

    /// The extended card for requests that came to `base`.
    pub fn for_base(&self, base: &str) -> Option<a2ad_protocol::AgentCard> {
        if let Some(card) = self.cards.lock().ok()?.get(base) {
            return Some(card.clone());
        }
        let card = (self.build)(base)?;
        let mut cards = self.cards.lock().ok()?;
        if cards.len() < MAX_BASES {
            cards.insert(base.to_owned(), card.clone());
        }
        Some(card)
    }
}
