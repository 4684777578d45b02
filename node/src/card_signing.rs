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
mod tests;
