use super::*;
use crate::AgentCard;

fn bearer() -> SecurityScheme {
    SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
        description: Some("A bearer token.".into()),
        scheme: "bearer".into(),
        bearer_format: Some("JWT".into()),
    })
}

fn card_with(schemes: Value) -> Value {
    json!({"name": "n", "description": "d", "supportedInterfaces": [], "version": "1",
           "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
           "securitySchemes": schemes})
}

#[test]
fn every_scheme_is_written_in_both_shapes() {
    assert_eq!(
        scheme_to_wire(&bearer()),
        json!({"httpAuthSecurityScheme": {"description": "A bearer token.", "scheme": "bearer", "bearerFormat": "JWT"},
               "type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "A bearer token."})
    );
    let api_key = SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
        description: None,
        location: "header".into(),
        name: "X-Api-Key".into(),
    });
    let wire = scheme_to_wire(&api_key);
    assert_eq!(
        (wire["type"].as_str(), wire["in"].as_str(), wire["name"].as_str()),
        (Some("apiKey"), Some("header"), Some("X-Api-Key"))
    );
    assert_eq!(wire["apiKeySecurityScheme"]["location"], "header");
    let mtls = scheme_to_wire(&SecurityScheme::MtlsSecurityScheme(MtlsSecurityScheme::default()));
    assert_eq!(mtls, json!({"mtlsSecurityScheme": {}, "type": "mutualTLS"}));
}

#[test]
fn a_card_round_trips_through_both_shapes() {
    let mut card: AgentCard = serde_json::from_value(card_with(json!({}))).unwrap();
    card.security_schemes.insert("bearerAuth".into(), bearer());
    card.security_schemes.v03_shapes = true;
    let json = serde_json::to_value(&card).unwrap();
    assert_eq!(json["securitySchemes"]["bearerAuth"]["type"], "http");
    let back: AgentCard = serde_json::from_value(json).unwrap();
    assert_eq!(back, card);
}

#[test]
fn by_default_a_scheme_is_the_1_0_wrapper_only() {
    let mut card: AgentCard = serde_json::from_value(card_with(json!({}))).unwrap();
    card.security_schemes.insert("bearerAuth".into(), bearer());
    let json = serde_json::to_value(&card).unwrap();
    assert_eq!(
        json["securitySchemes"],
        json!({"bearerAuth": {"httpAuthSecurityScheme":
            {"description": "A bearer token.", "scheme": "bearer", "bearerFormat": "JWT"}}})
    );
    let back: AgentCard = serde_json::from_value(json).unwrap();
    assert_eq!(back, card, "read back as 1.0 only");
}

#[test]
fn a_0_3_only_entry_is_read_and_a_bad_entry_names_the_scheme() {
    let card: AgentCard =
        serde_json::from_value(card_with(json!({"k": {"type": "apiKey", "in": "query", "name": "key"}}))).unwrap();
    let want = SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
        description: None,
        location: "query".into(),
        name: "key".into(),
    });
    assert_eq!(card.security_schemes["k"], want);
    let only_1_0: AgentCard =
        serde_json::from_value(card_with(json!({"b": {"http_auth_security_scheme": {"scheme": "basic"}}}))).unwrap();
    assert!(
        matches!(&only_1_0.security_schemes["b"], SecurityScheme::HttpAuthSecurityScheme(s) if s.scheme == "basic")
    );
    for (entry, why) in [
        (json!({"nothing": 1}), "has no scheme member"),
        (json!({"mtlsSecurityScheme": {}, "httpAuthSecurityScheme": {"scheme": "x"}}), "more than one"),
        (json!({"type": "carrier-pigeon"}), "unknown 0.3 type"),
        (json!({"type": "http"}), "scheme must be a string"),
    ] {
        let error = serde_json::from_value::<AgentCard>(card_with(json!({"bad": entry}))).unwrap_err().to_string();
        assert!(error.contains("securitySchemes.bad") && error.contains(why), "{error}");
    }
}
