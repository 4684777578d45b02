//! The public agent card, built once at start-up from the config, signed with the
//! `card.signing-keys` ([`sign_with_config`]), with the validators (`ETag`,
//! `Last-Modified`) that let clients and proxies cache it.

use crate::card_signing::{self, KeySet, SigningError};
use crate::config::{CardConfig, Config};
use a2ad_protocol::{AgentCapabilities, AgentCard, AgentInterface, AgentProvider};
use std::time::SystemTime;

/// Where a node serves its public card.
pub const WELL_KNOWN_PATH: &str = "/.well-known/agent-card.json";

/// Announced by every node: node-specific data (tool status, permission decisions,
/// token usage, thinking) lives under `metadata.a2ad`.
pub const AGENT_METADATA_EXTENSION: &str = "urn:a2ad:agent-metadata:v1";

/// Announced when `thinking-exposure` is on: agents' thinking text reaches clients in
/// `metadata.a2ad.thinking`.
pub const THINKING_EXPOSURE_EXTENSION: &str = "urn:a2ad:thinking-exposure:v1";

/// The extensions a node supports: the configured ones, then the node's own (unless
/// configured already).
pub fn node_extensions(config: &Config) -> Vec<crate::config::ExtensionConfig> {
    let mut all = config.extensions.clone();
    let mut own = vec![crate::config::ExtensionConfig {
        uri: AGENT_METADATA_EXTENSION.into(),
        description: Some("Node-specific data under metadata.a2ad: tool, permission, usage, thinking".into()),
        required: false,
        params: None,
    }];
    if config.thinking_exposure {
        own.push(crate::config::ExtensionConfig {
            uri: THINKING_EXPOSURE_EXTENSION.into(),
            description: Some("Agents' thinking text in metadata.a2ad.thinking".into()),
            required: false,
            params: serde_json::json!({"enabledTypes": ["thinking"]}).as_object().cloned(),
        });
    }
    for extension in own {
        if !all.iter().any(|e| e.uri == extension.uri) {
            all.push(extension);
        }
    }
    all
}

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

/// One `supportedInterfaces` entry of this node (A2A 1.0).
pub fn interface(url: String, binding: &str) -> AgentInterface {
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
            streaming: Some(config.streaming),
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
        v03: Default::default(),
    }
}

/// Signs `card` with every key of `card.signing-keys`, one signature each, in order (any
/// signatures it had are replaced). With no keys the card is left unsigned. Sign last: any
/// later change to the card invalidates the signatures.
pub fn sign_with_config(card: &mut AgentCard, config: &CardConfig) -> Result<(), SigningError> {
    let keys: Vec<_> = config.signing_keys.iter().map(|k| k.signing_key()).collect();
    card_signing::sign_card(card, &keys)
}

/// The `card.signing-keys` as a verifier's key set.
pub fn verification_keys(config: &CardConfig) -> KeySet {
    let keys: Vec<_> = config.signing_keys.iter().map(|k| k.signing_key()).collect();
    KeySet::from_keys(&keys)
}

/// The card's address for a URL an operator gives: a base URL (`https://node.example/`)
/// gets [`WELL_KNOWN_PATH`] appended; a URL that already names a `.json` document or a
/// `/.well-known/` path is used as is. Only http and https.
pub fn card_url(input: &str) -> Result<String, String> {
    let mut url = reqwest::Url::parse(input.trim()).map_err(|e| format!("{input:?} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{input:?} is not an http:// or https:// URL"));
    }
    let path = url.path().to_owned();
    if !(path.ends_with(".json") || path.contains("/.well-known/")) {
        url.set_path(&format!("{}{WELL_KNOWN_PATH}", path.trim_end_matches('/')));
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CardSigningKey, ConfigError};
    use std::io::Write;

    const SECRET_A: &str = "card-secret-a-0123456789abcdef0123";
    const SECRET_B: &str = "card-secret-b-0123456789abcdef0123";

    fn load(yaml: &str) -> Result<Config, ConfigError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(yaml.as_bytes()).unwrap();
        Config::load(Some(file.path()), &[])
    }

    #[test]
    fn card_signing_config_signs_with_every_key() {
        let mut config = Config::default_node();
        let mut card = build_card(&config, "http://node.example", None);
        sign_with_config(&mut card, &config.card).unwrap();
        assert!(card.signatures.is_empty(), "no keys, no signatures");

        config.card.signing_keys =
            vec![CardSigningKey::new("a", SECRET_A).unwrap(), CardSigningKey::new("b", SECRET_B).unwrap()];
        sign_with_config(&mut card, &config.card).unwrap();
        assert_eq!(card.signatures.len(), 2);
        assert_eq!(card_signing::verify(&card, &verification_keys(&config.card)).unwrap(), "a");
        let only_b = KeySet::from_keys(&[CardSigningKey::new("b", SECRET_B).unwrap().signing_key()]);
        assert_eq!(card_signing::verify(&card, &only_b).unwrap(), "b");

        // The served body verifies as raw JSON, and its ETag differs from the unsigned one.
        let unsigned = CardDocument::new(build_card(&config, "http://node.example", None));
        let signed = CardDocument::new(card);
        assert_ne!(unsigned.etag, signed.etag);
        let raw: serde_json::Value = serde_json::from_slice(&signed.body).unwrap();
        assert_eq!(card_signing::verify_json(&raw, &only_b).unwrap(), "b");
    }

    #[test]
    fn card_signing_config_reads_keys_from_the_file_and_the_environment() {
        std::env::set_var("A2AD_TEST_CARD_SECRET_B", SECRET_B);
        let config = load(&format!(
            "card:\n  signing-keys:\n    - {{kid: a, secret: {SECRET_A}}}\n    - {{kid: b, secret-env: A2AD_TEST_CARD_SECRET_B}}\n"
        ))
        .unwrap();
        let keys = &config.card.signing_keys;
        assert_eq!(keys.iter().map(|k| k.kid.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(keys[1].secret_env.as_deref(), Some("A2AD_TEST_CARD_SECRET_B"));
        let mut card = build_card(&config, "http://node.example", None);
        sign_with_config(&mut card, &config.card).unwrap();
        let b = KeySet::from_keys(&[CardSigningKey::new("b", SECRET_B).unwrap().signing_key()]);
        assert_eq!(card_signing::verify(&card, &b).unwrap(), "b", "the secret is the variable's value");
        let shown = format!("{config:?}");
        assert!(!shown.contains(SECRET_A) && !shown.contains(SECRET_B), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn card_signing_config_errors_name_the_key_and_never_the_secret() {
        let short = "too-short-secret";
        for (yaml, key, message) in [
            (format!("{{kid: a, secret: {SECRET_A}, secret-env: X}}"), "card.signing-keys[0]", "exactly one"),
            ("{kid: a}".to_owned(), "card.signing-keys[0]", "exactly one"),
            (
                "{kid: a, secret-env: A2AD_TEST_CARD_SECRET_UNSET}".to_owned(),
                "card.signing-keys[0]",
                "secret-env: the environment variable A2AD_TEST_CARD_SECRET_UNSET is not set",
            ),
            (format!("{{kid: a, secret: {short}}}"), "card.signing-keys[0]", "at least 32 bytes"),
            ("{kid: a, secret: 12345678901234567}".to_owned(), "card.signing-keys[0].secret", "quote it"),
            (format!("{{kid: '', secret: {SECRET_A}}}"), "card.signing-keys[0]", "kid: must not be empty"),
            (format!("{{secret: {SECRET_A}}}"), "card.signing-keys[0]", "kid"),
            (format!("{{kid: a, secret: {SECRET_A}, alg: HS512}}"), "card.signing-keys[0].alg", "unknown key `alg`"),
        ] {
            let error = load(&format!("card:\n  signing-keys:\n    - {yaml}\n")).unwrap_err();
            let ConfigError::Invalid { key: at, message: text } = &error else { panic!("{error}") };
            assert_eq!(at, key, "{yaml}: {error}");
            assert!(text.contains(message), "{yaml}: {error}");
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains(SECRET_A) && !shown.contains(short) && !shown.contains("1234567890"), "{shown}");
        }
        let error = load(&format!(
            "card:\n  signing-keys:\n    - {{kid: a, secret: {SECRET_A}}}\n    - {{kid: a, secret: {SECRET_B}}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(error.contains("card.signing-keys") && error.contains("used twice"), "{error}");
        assert!(!error.contains(SECRET_B), "{error}");
    }

    #[test]
    fn card_url_appends_the_well_known_path_to_a_base_url() {
        for (input, expected) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/.well-known/agent-card.json"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/.well-known/agent-card.json"),
            ("https://node.example/t1/", "https://node.example/t1/.well-known/agent-card.json"),
            ("https://node.example/.well-known/agent-card.json", "https://node.example/.well-known/agent-card.json"),
            ("https://node.example/cards/agent.json", "https://node.example/cards/agent.json"),
        ] {
            assert_eq!(card_url(input).unwrap(), expected, "{input}");
        }
        assert!(card_url("ftp://node.example/").unwrap_err().contains("http"));
        assert!(card_url("not a url").is_err());
    }
}
