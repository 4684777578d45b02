//! The agent card (`lf.a2a.v1.AgentCard`) and everything in it.
//!
//! Required fields are always written, even when empty; optional ones only when set, so
//! that the JSON we sign is the JSON the spec's canonical form (§8.4) describes.

use super::protojson;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a node says about itself at `/.well-known/agent-card.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    pub version: String,
    #[serde(default, alias = "documentation_url", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    pub capabilities: AgentCapabilities,
    /// Written as 1.0 oneof wrappers; with [`SecuritySchemes::v03_shapes`] also in the 0.3
    /// shape, for 0.3 clients (`dialect::v03_security`).
    #[serde(default, alias = "security_schemes", skip_serializing_if = "SecuritySchemes::is_empty")]
    pub security_schemes: SecuritySchemes,
    #[serde(
        default,
        alias = "security_requirements",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "protojson::vec_or_null"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "protojson::vec_or_null")]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(default, alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// The fields 0.3 clients discover a node by; 1.0 clients ignore them.
    #[serde(flatten, default)]
    pub v03: CardV03Fields,
}

/// A card's `securitySchemes` by name, and the shape they are written in. A strict 1.0
/// reader refuses unknown members, so the 0.3 fields beside each wrapper are written only
/// when a node serves 0.3 clients too (`card.compat-v03`); the map itself derefs to the
/// schemes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecuritySchemes {
    pub schemes: BTreeMap<String, SecurityScheme>,
    /// Each entry also carries its 0.3 fields (`{"type": "http", "scheme": …}`). Set when
    /// read from a card whose entries had them, so a card is written back as it was read.
    pub v03_shapes: bool,
}

impl SecuritySchemes {
    /// 1.0 wrappers only.
    pub fn new(schemes: BTreeMap<String, SecurityScheme>) -> Self {
        SecuritySchemes { schemes, v03_shapes: false }
    }

    /// No scheme: the card leaves `securitySchemes` out.
    pub fn is_empty(&self) -> bool {
        self.schemes.is_empty()
    }
}

impl std::ops::Deref for SecuritySchemes {
    type Target = BTreeMap<String, SecurityScheme>;

    fn deref(&self) -> &Self::Target {
        &self.schemes
    }
}

impl std::ops::DerefMut for SecuritySchemes {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.schemes
    }
}

/// The 0.3 fields a card also carries (see `dialect::v03::add_compat_fields`), all optional:
/// a card without them is a plain 1.0 card.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CardV03Fields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_transport: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_interfaces: Option<Vec<CardV03Interface>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_authenticated_extended_card: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<Vec<BTreeMap<String, Vec<String>>>>,
}

/// A 0.3 `AgentInterface`: `{url, transport}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CardV03Interface {
    pub url: String,
    pub transport: String,
}

/// One way to reach the agent (`lf.a2a.v1.AgentInterface`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
}

/// `lf.a2a.v1.AgentProvider`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

/// `lf.a2a.v1.AgentCapabilities`. Every flag has presence: `Some(false)` is written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, alias = "push_notifications", skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, alias = "extended_agent_card", skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "protojson::vec_or_null")]
    pub extensions: Vec<AgentExtension>,
}

/// `lf.a2a.v1.AgentExtension`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not", deserialize_with = "protojson::bool_or_null")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Map<String, Value>>,
}

/// `lf.a2a.v1.AgentSkill`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "protojson::vec_or_null")]
    pub examples: Vec<String>,
    #[serde(
        default,
        alias = "input_modes",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "protojson::vec_or_null"
    )]
    pub input_modes: Vec<String>,
    #[serde(
        default,
        alias = "output_modes",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "protojson::vec_or_null"
    )]
    pub output_modes: Vec<String>,
    #[serde(
        default,
        alias = "security_requirements",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "protojson::vec_or_null"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// `{"schemes":{"<name>":{"list":["scope",…]}}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecurityRequirement {
    pub schemes: BTreeMap<String, StringList>,
}

/// The proto's `StringList` wrapper.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StringList {
    #[serde(default, deserialize_with = "protojson::vec_or_null")]
    pub list: Vec<String>,
}

/// `lf.a2a.v1.SecurityScheme`: exactly one member. In a card, each entry also carries
/// the 0.3 fields (`dialect::v03_security`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    #[serde(alias = "api_key_security_scheme")]
    ApiKeySecurityScheme(ApiKeySecurityScheme),
    #[serde(alias = "http_auth_security_scheme")]
    HttpAuthSecurityScheme(HttpAuthSecurityScheme),
    #[serde(rename = "oauth2SecurityScheme", alias = "oauth2_security_scheme")]
    OAuth2SecurityScheme(OAuth2SecurityScheme),
    #[serde(alias = "open_id_connect_security_scheme")]
    OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme),
    #[serde(alias = "mtls_security_scheme")]
    MtlsSecurityScheme(MtlsSecurityScheme),
}

/// An API key in a header, query parameter or cookie.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub location: String,
    pub name: String,
}

/// HTTP authentication (`Bearer`, `Basic`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub scheme: String,
    #[serde(default, alias = "bearer_format", skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
}

/// OAuth 2.0. The flows are kept as JSON: a2ad announces them but does not run them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub flows: serde_json::Map<String, Value>,
    #[serde(default, alias = "oauth2_metadata_url", skip_serializing_if = "Option::is_none")]
    pub oauth2_metadata_url: Option<String>,
}

/// OpenID Connect discovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(alias = "open_id_connect_url")]
    pub open_id_connect_url: String,
}

/// Mutual TLS.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MtlsSecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A JWS over the card (§8.4): `protected` and `signature` are base64url.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    pub protected: String,
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<serde_json::Map<String, Value>>,
}
