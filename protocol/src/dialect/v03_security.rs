//! The security schemes of a card in both generations' shapes at once.
//!
//! 1.0 writes a scheme as a oneof wrapper (`{"httpAuthSecurityScheme": {"scheme":
//! "bearer"}}`); 0.3 as a flat object with a `type` (`{"type": "http", "scheme":
//! "bearer"}`). a2a-sdk 0.3 reads a 1.0-only entry as `mutualTLS` (its default `type`), so
//! a card for 0.3 clients too ([`SecuritySchemes::v03_shapes`], `card.compat-v03`) writes
//! each entry with the 0.3 fields beside the wrapper: `{"httpAuthSecurityScheme": {…},
//! "type": "http", "scheme": "bearer", …}`. Lenient 1.0 clients ignore the extra members
//! and 0.3 clients ignore the wrapper; a strict 1.0 schema refuses them, which is why the
//! default card has the wrapper only. Card signatures cover what is written, as the card is
//! signed as served.
//!
//! Reading, the 1.0 member wins and the 0.3 fields beside it are not checked; an entry
//! with only the 0.3 fields (a 0.3 card) is read from them; an entry with neither, or with
//! two 1.0 members, is refused naming the scheme.

use crate::{
    ApiKeySecurityScheme, HttpAuthSecurityScheme, MtlsSecurityScheme, OAuth2SecurityScheme,
    OpenIdConnectSecurityScheme, SecurityScheme, SecuritySchemes,
};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The names of the 1.0 oneof members, as written and in their snake_case aliases.
const ONE_OF_MEMBERS: &[&str] = &[
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
    "api_key_security_scheme",
    "http_auth_security_scheme",
    "oauth2_security_scheme",
    "open_id_connect_security_scheme",
    "mtls_security_scheme",
];

/// The 0.3 fields of a scheme (`type` and the fields of that type, `description`).
pub fn scheme_fields(scheme: &SecurityScheme) -> Map<String, Value> {
    let (kind, description, mut fields) = match scheme {
        SecurityScheme::ApiKeySecurityScheme(s) => {
            ("apiKey", &s.description, json!({"in": s.location, "name": s.name}))
        }
        SecurityScheme::HttpAuthSecurityScheme(s) => {
            let mut fields = json!({"scheme": s.scheme});
            if let Some(format) = &s.bearer_format {
                fields["bearerFormat"] = json!(format);
            }
            ("http", &s.description, fields)
        }
        SecurityScheme::OAuth2SecurityScheme(s) => {
            let mut fields = json!({"flows": s.flows});
            if let Some(url) = &s.oauth2_metadata_url {
                fields["oauth2MetadataUrl"] = json!(url);
            }
            ("oauth2", &s.description, fields)
        }
        SecurityScheme::OpenIdConnectSecurityScheme(s) => {
            ("openIdConnect", &s.description, json!({"openIdConnectUrl": s.open_id_connect_url}))
        }
        SecurityScheme::MtlsSecurityScheme(s) => ("mutualTLS", &s.description, json!({})),
    };
    fields["type"] = json!(kind);
    if let Some(description) = description {
        fields["description"] = json!(description);
    }
    match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A scheme as written on the wire: the 1.0 wrapper and the 0.3 fields in one object.
pub fn scheme_to_wire(scheme: &SecurityScheme) -> Value {
    let mut entry = match serde_json::to_value(scheme) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    entry.extend(scheme_fields(scheme));
    Value::Object(entry)
}

/// A scheme read from the wire (see the module docs); the error says what is wrong.
pub fn scheme_from_wire(entry: Map<String, Value>) -> Result<SecurityScheme, String> {
    let members: Map<String, Value> = entry
        .iter()
        .filter(|(k, _)| ONE_OF_MEMBERS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    match members.len() {
        1 => serde_json::from_value(Value::Object(members)).map_err(|e| e.to_string()),
        0 if entry.contains_key("type") => scheme_from_v03(entry),
        0 => Err("has no scheme member (e.g. httpAuthSecurityScheme) and no 0.3 `type`".into()),
        _ => Err("has more than one scheme member".into()),
    }
}

/// A 0.3-only entry (`{"type": "http", "scheme": "bearer"}`) as 1.0.
fn scheme_from_v03(mut entry: Map<String, Value>) -> Result<SecurityScheme, String> {
    let kind = entry.remove("type").and_then(|t| t.as_str().map(str::to_owned)).unwrap_or_default();
    let description = entry.get("description").and_then(Value::as_str).map(str::to_owned);
    let text = |entry: &Map<String, Value>, field: &str| -> Result<String, String> {
        entry.get(field).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| format!("{field} must be a string"))
    };
    Ok(match kind.as_str() {
        "http" => SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
            description,
            scheme: text(&entry, "scheme")?,
            bearer_format: entry.get("bearerFormat").and_then(Value::as_str).map(str::to_owned),
        }),
        "apiKey" => SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
            description,
            location: text(&entry, "in")?,
            name: text(&entry, "name")?,
        }),
        "oauth2" => SecurityScheme::OAuth2SecurityScheme(OAuth2SecurityScheme {
            description,
            flows: entry.get("flows").and_then(Value::as_object).cloned().ok_or("flows must be an object")?,
            oauth2_metadata_url: entry.get("oauth2MetadataUrl").and_then(Value::as_str).map(str::to_owned),
        }),
        "openIdConnect" => SecurityScheme::OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme {
            description,
            open_id_connect_url: text(&entry, "openIdConnectUrl")?,
        }),
        "mutualTLS" => SecurityScheme::MtlsSecurityScheme(MtlsSecurityScheme { description }),
        other => return Err(format!("unknown 0.3 type `{other}`")),
    })
}

/// A card's `securitySchemes`: 1.0 wrappers, with the 0.3 fields too when asked for.
impl Serialize for SecuritySchemes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.v03_shapes {
            return self.schemes.serialize(s);
        }
        let wire: BTreeMap<&String, Value> =
            self.schemes.iter().map(|(name, scheme)| (name, scheme_to_wire(scheme))).collect();
        wire.serialize(s)
    }
}

/// Either shape in; remembers whether the entries carried the 0.3 fields.
impl<'de> Deserialize<'de> for SecuritySchemes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire: Option<BTreeMap<String, Map<String, Value>>> = Option::deserialize(d)?;
        let wire = wire.unwrap_or_default();
        let v03_shapes = wire.values().any(|entry| entry.contains_key("type"));
        let schemes = wire
            .into_iter()
            .map(|(name, entry)| {
                let scheme =
                    scheme_from_wire(entry).map_err(|e| D::Error::custom(format!("securitySchemes.{name}: {e}")))?;
                Ok((name, scheme))
            })
            .collect::<Result<_, D::Error>>()?;
        Ok(SecuritySchemes { schemes, v03_shapes })
    }
}

#[cfg(test)]
#[path = "v03_security_tests.rs"]
mod tests;
