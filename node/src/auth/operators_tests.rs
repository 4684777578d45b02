use super::*;
use crate::admin::require;
use crate::auth::{AuthConfig, BearerTokenConfig, HashedSecret};
use a2ad_protocol::{A2aError, ErrorCode};

fn admin(tokens: &[(&str, &str, Role)]) -> AdminConfig {
    let tokens = tokens
        .iter()
        .map(|(token, name, role)| AdminTokenConfig {
            token_sha256: None,
            token: Some(HashedSecret::from_plaintext(token)),
            name: (*name).into(),
            role: *role,
        })
        .collect();
    AdminConfig { tokens, listen: AdminListen::Main }
}

fn tenants(token: &str) -> Authenticator {
    let config = AuthConfig {
        bearer_tokens: vec![BearerTokenConfig {
            token_sha256: None,
            token: Some(HashedSecret::from_plaintext(token)),
            tenant: "acme".into(),
            principal: "ci".into(),
        }],
        ..AuthConfig::default()
    };
    Authenticator::new(&config, |_| None).unwrap()
}

#[test]
fn an_operator_signs_in_with_its_token_and_its_role_decides_what_it_may_do() {
    let ops = Operators::new(
        &admin(&[("op-token", "alice", Role::Operator), ("v-token", "bob", Role::Viewer)]),
        &tenants("t"),
    )
    .unwrap();
    let alice = ops.authenticate(Some("Bearer op-token")).unwrap();
    assert_eq!(alice, Operator { name: "alice".into(), role: Role::Operator });
    assert!(require(&alice, Role::Operator).is_ok());
    let bob = ops.authenticate(Some("bearer  v-token ")).unwrap();
    let refused = A2aError::from(require(&bob, Role::Operator).unwrap_err());
    assert_eq!(refused.code, ErrorCode::PermissionDenied);
    assert!(refused.message.contains("bob is a viewer"), "{}", refused.message);
    for wrong in [None, Some("Bearer nope"), Some("Basic b3A6dG9rZW4="), Some("Bearer ")] {
        assert!(ops.authenticate(wrong).is_err(), "{wrong:?}");
    }
}

#[test]
fn an_operator_token_may_not_be_a_tenant_credential_nor_set_twice() {
    let (key, message) = Operators::new(&admin(&[("shared", "alice", Role::Viewer)]), &tenants("shared")).unwrap_err();
    assert_eq!(key, "admin.tokens[0]");
    assert!(message.contains("tenant credential"), "{message}");
    let twice = admin(&[("a", "x", Role::Viewer), ("a", "y", Role::Operator)]);
    assert_eq!(Operators::new(&twice, &tenants("t")).unwrap_err().0, "admin.tokens[1]");
}

#[test]
fn a2a_calls_can_tell_an_operator_token_and_no_operators_means_off() {
    let ops = Operators::new(&admin(&[("op-token", "alice", Role::Operator)]), &tenants("t")).unwrap();
    assert!(ops.is_operator_credential(Some("Bearer op-token")));
    assert!(!ops.is_operator_credential(Some("Bearer t")));
    assert!(!Operators::none().enabled());
    assert!(!Operators::none().is_operator_credential(Some("Bearer op-token")));
}
