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
        v03: Default::default(),
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
