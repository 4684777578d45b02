//! Agent card signatures (spec §8.4): a detached JWS, HS256, over the RFC 8785 canonical
//! card with `signatures` removed.
//!
//! * The payload is the card as we serialize it (unset optionals omitted, required fields
//!   kept even when empty), without `signatures`, in JCS form ([`signing_payload`]).
//! * The protected header is `{"alg":"HS256","kid":…,"typ":"JOSE"}` (JCS form);
//!   `protected = b64url(header)` and
//!   `signature = b64url(HMAC-SHA256(secret, protected + "." + b64url(payload)))`.
//! * Several keys, each with its `kid`, sign side by side for key rotation ([`sign_card`]).
//! * Verification ([`verify`], [`verify_json`]) finds the key by `kid` in a [`KeySet`] the
//!   caller built (configured secrets, a JWKS document with `oct` keys). A `jku` in the
//!   header is never followed, only `HS256` is accepted, and the MAC is compared in
//!   constant time.
//!
//! No error message contains secret material.

use a2ad_protocol::jcs::{self, JcsError};
use a2ad_protocol::{AgentCard, AgentCardSignature};
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use ring::hmac;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// The only algorithm a2ad signs with and accepts.
pub const ALGORITHM: &str = "HS256";

/// base64url that accepts a JWK `k` with or without padding.
const B64URL_LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_encode_padding(false).with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a card could not be signed or verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigningError {
    #[error("invalid signing key: {0}")]
    InvalidKey(&'static str),
    #[error("the card has no canonical form: {0}")]
    Canonicalization(#[from] JcsError),
    #[error("the card is not a JSON object")]
    NotAnObject,
    #[error("the card has no signatures")]
    NoSignatures,
    #[error("no key with kid {0} is known")]
    UnknownKid(String),
    #[error("signature algorithm {0} is not accepted (only HS256)")]
    UnsupportedAlgorithm(String),
    #[error("malformed signature header: {0}")]
    MalformedHeader(String),
    #[error("malformed signature: {0}")]
    MalformedSignature(&'static str),
    #[error("the signature with kid {0} does not match the card")]
    SignatureMismatch(String),
    #[error("malformed JWKS document: {0}")]
    MalformedJwks(String),
}

impl SigningError {
    /// When every signature fails, the most telling failure is reported: a known key that
    /// disagrees (a changed card or a wrong secret) first, an unknown kid last.
    fn rank(&self) -> u8 {
        match self {
            SigningError::SignatureMismatch(_) => 5,
            SigningError::UnsupportedAlgorithm(_) => 4,
            SigningError::MalformedHeader(_) | SigningError::MalformedSignature(_) => 3,
            SigningError::UnknownKid(_) => 2,
            _ => 1,
        }
    }
}

/// A value from an untrusted header, fit for an error message: quoted, escaped, capped.
fn shown(value: &str) -> String {
    const MAX: usize = 64;
    if value.chars().count() > MAX {
        format!("{:?}…", value.chars().take(MAX).collect::<String>())
    } else {
        format!("{value:?}")
    }
}

/// One HS256 secret and its key id.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    secret: Vec<u8>,
}

impl SigningKey {
    /// A key; neither the kid nor the secret may be empty.
    pub fn new(kid: impl Into<String>, secret: impl Into<Vec<u8>>) -> Result<Self, SigningError> {
        let kid = kid.into();
        let secret = secret.into();
        if kid.is_empty() {
            return Err(SigningError::InvalidKey("the kid is empty"));
        }
        if secret.is_empty() {
            return Err(SigningError::InvalidKey("the secret is empty"));
        }
        Ok(SigningKey { kid, secret })
    }

    fn hmac_key(&self) -> hmac::Key {
        hmac::Key::new(hmac::HMAC_SHA256, &self.secret)
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey").field("kid", &self.kid).field("secret", &"<redacted>").finish()
    }
}

/// The keys a verifier trusts, by kid.
#[derive(Clone, Default)]
pub struct KeySet {
    keys: BTreeMap<String, hmac::Key>,
}

impl KeySet {
    pub fn new() -> Self {
        KeySet::default()
    }

    /// A set of the given keys (a later key replaces an earlier one with the same kid).
    pub fn from_keys(keys: &[SigningKey]) -> Self {
        let mut set = KeySet::new();
        for key in keys {
            set.insert(key);
        }
        set
    }

    /// Adds `key`, replacing any key with the same kid.
    pub fn insert(&mut self, key: &SigningKey) {
        self.keys.insert(key.kid.clone(), key.hmac_key());
    }

    /// The `oct` keys of a JWKS document (`{"keys":[{"kty":"oct","kid":…,"k":…}]}`).
    pub fn from_jwks(document: &str) -> Result<Self, SigningError> {
        let mut set = KeySet::new();
        set.add_jwks(document)?;
        Ok(set)
    }

    /// Adds the `oct` keys of a JWKS document and returns how many. Keys of other types, and
    /// `oct` keys meant for something else (`alg` other than HS256, `use` other than `sig`,
    /// `key_ops` without `verify`), are skipped. A usable `oct` key needs a `kid` and a
    /// non-empty base64url `k`; two such keys with one kid are an error. A key replaces one
    /// with the same kid already in the set.
    pub fn add_jwks(&mut self, document: &str) -> Result<usize, SigningError> {
        let malformed = |reason: String| SigningError::MalformedJwks(reason);
        let doc: Value = serde_json::from_str(document).map_err(|e| malformed(format!("not JSON ({e})")))?;
        let entries = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("expected an object with a \"keys\" array".into()))?;
        let mut found: BTreeMap<String, hmac::Key> = BTreeMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let entry = entry.as_object().ok_or_else(|| malformed(format!("keys[{i}] is not an object")))?;
            let field = |name: &str| -> Result<Option<&str>, SigningError> {
                match entry.get(name) {
                    None => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s)),
                    Some(_) => Err(malformed(format!("keys[{i}].{name} is not a string"))),
                }
            };
            let kty = field("kty")?.ok_or_else(|| malformed(format!("keys[{i}] has no kty")))?;
            if kty != "oct" {
                continue;
            }
            if field("alg")?.is_some_and(|alg| alg != ALGORITHM) || field("use")?.is_some_and(|u| u != "sig") {
                continue;
            }
            if let Some(ops) = entry.get("key_ops") {
                let ops = ops.as_array().ok_or_else(|| malformed(format!("keys[{i}].key_ops is not an array")))?;
                if !ops.iter().any(|op| op == "verify") {
                    continue;
                }
            }
            let kid = match field("kid")? {
                Some(kid) if !kid.is_empty() => kid,
                _ => return Err(malformed(format!("keys[{i}] (oct) has no kid"))),
            };
            let k = field("k")?.ok_or_else(|| malformed(format!("keys[{i}] (oct) has no k")))?;
            // The decoder's error would name the offending byte: never show it.
            let secret = B64URL_LENIENT.decode(k).map_err(|_| malformed(format!("keys[{i}].k is not base64url")))?;
            if secret.is_empty() {
                return Err(malformed(format!("keys[{i}].k is empty")));
            }
            if found.insert(kid.to_owned(), hmac::Key::new(hmac::HMAC_SHA256, &secret)).is_some() {
                return Err(malformed(format!("two oct keys have kid {}", shown(kid))));
            }
        }
        let count = found.len();
        self.keys.extend(found);
        Ok(count)
    }

    pub fn contains(&self, kid: &str) -> bool {
        self.keys.contains_key(kid)
    }

    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySet").field("kids", &self.keys.keys().collect::<Vec<_>>()).finish()
    }
}

/// The signed bytes of a card: its JSON without `signatures`, in RFC 8785 form.
pub fn signing_payload(card: &AgentCard) -> Result<String, SigningError> {
    let value = serde_json::to_value(card).map_err(|_| SigningError::NotAnObject)?;
    payload_of_value(&value)
}

fn payload_of_value(card: &Value) -> Result<String, SigningError> {
    let mut object: Map<String, Value> = card.as_object().cloned().ok_or(SigningError::NotAnObject)?;
    object.remove("signatures");
    Ok(jcs::canonicalize(&Value::Object(object))?)
}

fn protected_header(kid: &str) -> Result<String, SigningError> {
    let header = serde_json::json!({"alg": ALGORITHM, "kid": kid, "typ": "JOSE"});
    Ok(URL_SAFE_NO_PAD.encode(jcs::canonicalize(&header)?))
}

fn signing_input(protected: &str, payload_b64: &str) -> String {
    format!("{protected}.{payload_b64}")
}

fn sign_encoded(payload_b64: &str, key: &SigningKey) -> Result<AgentCardSignature, SigningError> {
    let protected = protected_header(&key.kid)?;
    let tag = hmac::sign(&key.hmac_key(), signing_input(&protected, payload_b64).as_bytes());
    Ok(AgentCardSignature { protected, signature: URL_SAFE_NO_PAD.encode(tag.as_ref()), header: None })
}

/// One signature over `card` (its `signatures` are not signed) with `key`.
pub fn sign(card: &AgentCard, key: &SigningKey) -> Result<AgentCardSignature, SigningError> {
    let payload_b64 = URL_SAFE_NO_PAD.encode(signing_payload(card)?);
    sign_encoded(&payload_b64, key)
}

/// Replaces `card.signatures` with one signature per key, in order (several kids during a
/// key rotation). With no keys the card ends up unsigned.
pub fn sign_card(card: &mut AgentCard, keys: &[SigningKey]) -> Result<(), SigningError> {
    let payload_b64 = URL_SAFE_NO_PAD.encode(signing_payload(card)?);
    let signatures = keys.iter().map(|key| sign_encoded(&payload_b64, key)).collect::<Result<Vec<_>, _>>()?;
    card.signatures = signatures;
    Ok(())
}

/// Checks `card`'s signatures against `keys`: Ok with the kid of the first signature that
/// verifies. When none does, the error says why (see [`SigningError`]).
pub fn verify(card: &AgentCard, keys: &KeySet) -> Result<String, SigningError> {
    if card.signatures.is_empty() {
        return Err(SigningError::NoSignatures);
    }
    let payload_b64 = URL_SAFE_NO_PAD.encode(signing_payload(card)?);
    verify_signatures(
        card.signatures.iter().map(|s| Ok((s.protected.as_str(), s.signature.as_str()))),
        &payload_b64,
        keys,
    )
}

/// [`verify`] for a card as raw JSON (e.g. fetched from another node): fields a2ad does not
/// know are part of the payload, exactly as their signer saw them.
pub fn verify_json(card: &Value, keys: &KeySet) -> Result<String, SigningError> {
    let signatures = match card.get("signatures") {
        None | Some(Value::Null) => return Err(SigningError::NoSignatures),
        Some(Value::Array(list)) if list.is_empty() => return Err(SigningError::NoSignatures),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(SigningError::MalformedSignature("signatures is not an array")),
    };
    let payload_b64 = URL_SAFE_NO_PAD.encode(payload_of_value(card)?);
    let parts = signatures.iter().map(|s| {
        let protected = s.get("protected").and_then(Value::as_str);
        let signature = s.get("signature").and_then(Value::as_str);
        match (protected, signature) {
            (Some(p), Some(s)) => Ok((p, s)),
            _ => Err(SigningError::MalformedSignature("a signature lacks protected or signature")),
        }
    });
    verify_signatures(parts, &payload_b64, keys)
}

fn verify_signatures<'a>(
    signatures: impl Iterator<Item = Result<(&'a str, &'a str), SigningError>>,
    payload_b64: &str,
    keys: &KeySet,
) -> Result<String, SigningError> {
    let mut worst: Option<SigningError> = None;
    for parts in signatures {
        let outcome = parts.and_then(|(protected, signature)| verify_one(protected, signature, payload_b64, keys));
        match outcome {
            Ok(kid) => return Ok(kid),
            Err(e) => {
                if !matches!(&worst, Some(w) if w.rank() >= e.rank()) {
                    worst = Some(e);
                }
            }
        }
    }
    Err(worst.unwrap_or(SigningError::NoSignatures))
}

fn verify_one(protected: &str, signature: &str, payload_b64: &str, keys: &KeySet) -> Result<String, SigningError> {
    let malformed = |reason: &str| SigningError::MalformedHeader(reason.to_owned());
    let header_bytes = URL_SAFE_NO_PAD.decode(protected).map_err(|_| malformed("not base64url"))?;
    let header: Map<String, Value> =
        serde_json::from_slice(&header_bytes).map_err(|_| malformed("not a JSON object"))?;
    let alg = match header.get("alg") {
        Some(Value::String(alg)) => alg,
        Some(_) => return Err(malformed("alg is not a string")),
        None => return Err(malformed("no alg")),
    };
    if alg != ALGORITHM {
        return Err(SigningError::UnsupportedAlgorithm(shown(alg)));
    }
    let kid = match header.get("kid") {
        Some(Value::String(kid)) if !kid.is_empty() => kid,
        Some(Value::String(_)) => return Err(malformed("kid is empty")),
        Some(_) => return Err(malformed("kid is not a string")),
        None => return Err(malformed("no kid")),
    };
    if header.contains_key("crit") {
        // RFC 7515 §4.1.11: we understand no extension, so none may be critical.
        return Err(malformed("crit extensions are not supported"));
    }
    // `jku`, `x5u` and the like are ignored on purpose: keys come only from `keys`.
    let key = keys.keys.get(kid).ok_or_else(|| SigningError::UnknownKid(shown(kid)))?;
    let tag = URL_SAFE_NO_PAD.decode(signature).map_err(|_| SigningError::MalformedSignature("not base64url"))?;
    hmac::verify(key, signing_input(protected, payload_b64).as_bytes(), &tag)
        .map_err(|_| SigningError::SignatureMismatch(shown(kid)))?;
    Ok(kid.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2ad_protocol::{AgentCapabilities, AgentInterface, AgentSkill};

    fn card() -> AgentCard {
        AgentCard {
            name: "Test Agent".into(),
            description: "Signs cards — naïve €".into(),
            supported_interfaces: vec![AgentInterface {
                url: "https://agent.example/".into(),
                protocol_binding: "JSONRPC".into(),
                tenant: None,
                protocol_version: "1.0".into(),
            }],
            provider: None,
            version: "1.0.0".into(),
            documentation_url: None,
            capabilities: AgentCapabilities {
                streaming: Some(true),
                push_notifications: Some(false),
                extended_agent_card: None,
                extensions: Vec::new(),
            },
            security_schemes: Default::default(),
            security_requirements: Vec::new(),
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            skills: vec![AgentSkill {
                id: "echo".into(),
                name: "Echo".into(),
                description: "Echoes the input".into(),
                tags: vec!["echo".into()],
                examples: Vec::new(),
                input_modes: Vec::new(),
                output_modes: Vec::new(),
                security_requirements: Vec::new(),
            }],
            signatures: Vec::new(),
            icon_url: None,
        }
    }

    fn key(kid: &str, secret: &str) -> SigningKey {
        SigningKey::new(kid, secret.as_bytes()).unwrap()
    }

    fn signature_with_header(header: &str, card: &AgentCard, secret: &str) -> AgentCardSignature {
        let protected = URL_SAFE_NO_PAD.encode(header);
        let payload_b64 = URL_SAFE_NO_PAD.encode(signing_payload(card).unwrap());
        let tag = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
            signing_input(&protected, &payload_b64).as_bytes(),
        );
        AgentCardSignature { protected, signature: URL_SAFE_NO_PAD.encode(tag.as_ref()), header: None }
    }

    /// Computed once with Python (hmac, hashlib, base64, and json.dumps(sort_keys=True,
    /// separators=(",", ":"), ensure_ascii=False) over a hand-written dict of this card).
    const VECTOR_PAYLOAD: &str = concat!(
        r#"{"capabilities":{"pushNotifications":false,"streaming":true},"defaultInputModes":["text/plain"],"#,
        r#""defaultOutputModes":["text/plain"],"description":"Signs cards — naïve €","name":"Test Agent","#,
        r#""skills":[{"description":"Echoes the input","id":"echo","name":"Echo","tags":["echo"]}],"#,
        r#""supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","#,
        r#""url":"https://agent.example/"}],"version":"1.0.0"}"#
    );
    const VECTOR_PROTECTED: &str = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiSk9TRSJ9";
    const VECTOR_SIGNATURE: &str = "4Y0CNLLG32NeCnDUSMlEUW163FinVXWi2C3LvBcpDEY";

    #[test]
    fn card_signing_fixed_test_vector() {
        let card = card();
        assert_eq!(signing_payload(&card).unwrap(), VECTOR_PAYLOAD);
        let signature = sign(&card, &key("k1", "secret-1")).unwrap();
        assert_eq!(signature.protected, VECTOR_PROTECTED);
        assert_eq!(signature.signature, VECTOR_SIGNATURE);
        assert_eq!(signature.header, None);
        let mut signed = card;
        signed.signatures = vec![AgentCardSignature {
            protected: VECTOR_PROTECTED.into(),
            signature: VECTOR_SIGNATURE.into(),
            header: None,
        }];
        assert_eq!(verify(&signed, &KeySet::from_keys(&[key("k1", "secret-1")])).unwrap(), "k1");
    }

    #[test]
    fn card_signing_sign_then_verify() {
        let mut card = card();
        let keys = [key("k1", "a-long-enough-secret-for-hs256-use")];
        sign_card(&mut card, &keys).unwrap();
        assert_eq!(card.signatures.len(), 1);
        assert_eq!(verify(&card, &KeySet::from_keys(&keys)).unwrap(), "k1");
        // Re-signing a signed card gives the same signature: `signatures` is not signed.
        let again = sign(&card, &keys[0]).unwrap();
        assert_eq!(again, card.signatures[0]);
        // And the card survives the wire, as the typed card and as raw JSON.
        let wire = serde_json::to_string(&card).unwrap();
        let back: AgentCard = serde_json::from_str(&wire).unwrap();
        assert_eq!(verify(&back, &KeySet::from_keys(&keys)).unwrap(), "k1");
        let raw: Value = serde_json::from_str(&wire).unwrap();
        assert_eq!(verify_json(&raw, &KeySet::from_keys(&keys)).unwrap(), "k1");
    }

    #[test]
    fn card_signing_tampered_field_fails() {
        let keys = [key("k1", "secret-1")];
        let mut card = card();
        sign_card(&mut card, &keys).unwrap();
        let set = KeySet::from_keys(&keys);

        let mut tampered = card.clone();
        tampered.description.push('!');
        assert_eq!(verify(&tampered, &set), Err(SigningError::SignatureMismatch("\"k1\"".into())));

        let mut tampered = card.clone();
        tampered.capabilities.push_notifications = None; // presence is signed too
        assert!(matches!(verify(&tampered, &set), Err(SigningError::SignatureMismatch(_))));

        // A field a2ad does not model is still covered when verifying raw JSON.
        let mut raw = serde_json::to_value(&card).unwrap();
        raw["extra"] = Value::from(1);
        assert!(matches!(verify_json(&raw, &set), Err(SigningError::SignatureMismatch(_))));

        // The wrong secret under the right kid.
        assert!(matches!(
            verify(&card, &KeySet::from_keys(&[key("k1", "secret-2")])),
            Err(SigningError::SignatureMismatch(_))
        ));
    }

    #[test]
    fn card_signing_key_rotation() {
        let a = key("A", "secret-a");
        let b = key("B", "secret-b");
        let mut card = card();
        sign_card(&mut card, std::slice::from_ref(&a)).unwrap();
        assert_eq!(verify(&card, &KeySet::from_keys(&[a.clone(), b.clone()])).unwrap(), "A");
        assert_eq!(verify(&card, &KeySet::from_keys(&[b.clone(), a.clone()])).unwrap(), "A");

        // Signed by both during the rotation: a verifier with either key accepts it.
        sign_card(&mut card, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(card.signatures.len(), 2);
        assert_eq!(verify(&card, &KeySet::from_keys(std::slice::from_ref(&a))).unwrap(), "A");
        assert_eq!(verify(&card, &KeySet::from_keys(std::slice::from_ref(&b))).unwrap(), "B");

        // A bad first signature does not hide a good second one.
        card.signatures[0].signature = URL_SAFE_NO_PAD.encode([0u8; 32]);
        assert_eq!(verify(&card, &KeySet::from_keys(&[a, b])).unwrap(), "B");

        // With no keys the card is left unsigned.
        sign_card(&mut card, &[]).unwrap();
        assert_eq!(verify(&card, &KeySet::new()), Err(SigningError::NoSignatures));
    }

    #[test]
    fn card_signing_unknown_kid_fails() {
        let mut card = card();
        sign_card(&mut card, &[key("k1", "secret-1")]).unwrap();
        assert_eq!(
            verify(&card, &KeySet::from_keys(&[key("k2", "secret-1")])),
            Err(SigningError::UnknownKid("\"k1\"".into()))
        );
        assert_eq!(verify(&card, &KeySet::new()), Err(SigningError::UnknownKid("\"k1\"".into())));

        // A `jku` from the signer is never followed: the kid is still unknown.
        let header = r#"{"alg":"HS256","jku":"https://evil.example/jwks.json","kid":"evil","typ":"JOSE"}"#;
        card.signatures = vec![signature_with_header(header, &card, "secret-1")];
        assert_eq!(
            verify(&card, &KeySet::from_keys(&[key("k1", "secret-1")])),
            Err(SigningError::UnknownKid("\"evil\"".into()))
        );
    }

    #[test]
    fn card_signing_alg_none_and_malformed_headers_fail() {
        let set = KeySet::from_keys(&[key("k1", "secret-1")]);
        let mut card = card();
        card.signatures = vec![AgentCardSignature {
            protected: URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"k1"}"#),
            signature: String::new(),
            header: None,
        }];
        assert_eq!(verify(&card, &set), Err(SigningError::UnsupportedAlgorithm("\"none\"".into())));

        for header in [r#"{"alg":"HS512","kid":"k1"}"#, r#"{"alg":"RS256","kid":"k1"}"#] {
            card.signatures = vec![signature_with_header(header, &card, "secret-1")];
            assert!(matches!(verify(&card, &set), Err(SigningError::UnsupportedAlgorithm(_))), "{header}");
        }
        for (header, reason) in [
            (r#"{"alg":"HS256"}"#, "no kid"),
            (r#"{"alg":"HS256","kid":""}"#, "kid is empty"),
            (r#"{"alg":"HS256","kid":7}"#, "kid is not a string"),
            (r#"{"kid":"k1"}"#, "no alg"),
            (r#"{"alg":"HS256","kid":"k1","crit":["b64"],"b64":false}"#, "crit extensions are not supported"),
            (r#"["alg","HS256"]"#, "not a JSON object"),
        ] {
            card.signatures = vec![signature_with_header(header, &card, "secret-1")];
            assert_eq!(verify(&card, &set), Err(SigningError::MalformedHeader(reason.into())), "{header}");
        }
        card.signatures = vec![AgentCardSignature { protected: "***".into(), signature: "x".into(), header: None }];
        assert_eq!(verify(&card, &set), Err(SigningError::MalformedHeader("not base64url".into())));

        let mut signed = card.clone();
        sign_card(&mut signed, &[key("k1", "secret-1")]).unwrap();
        signed.signatures[0].signature = "not base64url!".into();
        assert_eq!(verify(&signed, &set), Err(SigningError::MalformedSignature("not base64url")));

        card.signatures.clear();
        assert_eq!(verify(&card, &set), Err(SigningError::NoSignatures));
        assert_eq!(verify_json(&serde_json::json!({"name": "x"}), &set), Err(SigningError::NoSignatures));
    }

    #[test]
    fn card_signing_jwks_oct_key_verifies() {
        let mut card = card();
        sign_card(&mut card, &[key("k1", "secret-1")]).unwrap();
        let k = URL_SAFE_NO_PAD.encode("secret-1");
        let jwks = format!(
            r#"{{"keys":[
                {{"kty":"RSA","kid":"r1","n":"AQAB","e":"AQAB"}},
                {{"kty":"oct","kid":"other","k":"c2VjcmV0LTI","alg":"HS512"}},
                {{"kty":"oct","kid":"k1","k":"{k}","alg":"HS256","use":"sig"}}
            ]}}"#
        );
        let set = KeySet::from_jwks(&jwks).unwrap();
        assert_eq!(set.kids().collect::<Vec<_>>(), ["k1"]);
        assert_eq!(verify(&card, &set).unwrap(), "k1");

        // Configured secrets and a JWKS together.
        let mut set = KeySet::from_keys(&[key("A", "secret-a")]);
        assert_eq!(set.add_jwks(&jwks).unwrap(), 1);
        assert_eq!(set.len(), 2);
        assert_eq!(verify(&card, &set).unwrap(), "k1");
        assert!(!format!("{set:?}").contains(&k));
    }

    #[test]
    fn card_signing_jwks_malformed_documents_fail() {
        for (doc, reason) in [
            ("not json", "not JSON"),
            (r#"{"keys":{}}"#, "\"keys\" array"),
            (r#"[]"#, "\"keys\" array"),
            (r#"{"keys":[1]}"#, "keys[0] is not an object"),
            (r#"{"keys":[{"kid":"k1","k":"AA"}]}"#, "keys[0] has no kty"),
            (r#"{"keys":[{"kty":"oct","k":"c2VjcmV0LTE"}]}"#, "keys[0] (oct) has no kid"),
            (r#"{"keys":[{"kty":"oct","kid":"k1"}]}"#, "keys[0] (oct) has no k"),
            (r#"{"keys":[{"kty":"oct","kid":"k1","k":""}]}"#, "keys[0].k is empty"),
            (r#"{"keys":[{"kty":"oct","kid":"k1","k":"c2VjcmV0LTE","alg":5}]}"#, "keys[0].alg is not a string"),
            (r#"{"keys":[{"kty":"oct","kid":"k","k":"AA"},{"kty":"oct","kid":"k","k":"AQ"}]}"#, "two oct keys"),
        ] {
            let err = KeySet::from_jwks(doc).unwrap_err();
            assert!(matches!(&err, SigningError::MalformedJwks(m) if m.contains(reason)), "{doc}: {err}");
        }
        // A bad `k` is reported without echoing it.
        let err = KeySet::from_jwks(r#"{"keys":[{"kty":"oct","kid":"k1","k":"sup3r$ecret"}]}"#).unwrap_err();
        assert_eq!(err.to_string(), "malformed JWKS document: keys[0].k is not base64url");
        // Padding in `k` is tolerated; an empty set is not an error.
        assert_eq!(KeySet::from_jwks(r#"{"keys":[{"kty":"oct","kid":"k1","k":"c2VjcmV0LTE="}]}"#).unwrap().len(), 1);
        assert!(KeySet::from_jwks(r#"{"keys":[]}"#).unwrap().is_empty());
    }

    #[test]
    fn card_signing_keys_never_show_secrets() {
        let signing = key("k1", "hunter2-secret");
        assert_eq!(format!("{signing:?}"), r#"SigningKey { kid: "k1", secret: "<redacted>" }"#);
        let set = KeySet::from_keys(&[signing]);
        assert_eq!(format!("{set:?}"), r#"KeySet { kids: ["k1"] }"#);
        assert_eq!(SigningKey::new("", "s").unwrap_err(), SigningError::InvalidKey("the kid is empty"));
        assert_eq!(SigningKey::new("k", "").unwrap_err(), SigningError::InvalidKey("the secret is empty"));
        // A long hostile kid is escaped and capped in messages.
        let err = SigningError::UnknownKid(shown(&format!("{}\n", "x".repeat(100))));
        assert!(!err.to_string().contains('\n') && err.to_string().len() < 100);
    }

    #[test]
    fn card_signing_payload_omits_signatures() {
        let mut card = card();
        let unsigned = signing_payload(&card).unwrap();
        sign_card(&mut card, &[key("k1", "secret-1")]).unwrap();
        assert_eq!(signing_payload(&card).unwrap(), unsigned);
        assert!(!unsigned.contains("signatures"));
        // Required fields stay even when empty; unset optionals are absent.
        card.description.clear();
        card.skills.clear();
        let payload = signing_payload(&card).unwrap();
        assert!(payload.contains(r#""description":"""#) && payload.contains(r#""skills":[]"#));
        assert!(!payload.contains("iconUrl") && !payload.contains("provider"));
    }
}
