use super::*;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{json, Value};

const SECRET_A: &str = "secret-a-0123456789abcdef0123456789";
const SECRET_B: &str = "secret-b-0123456789abcdef0123456789";
const NOW: i64 = 1_750_000_000;

impl Authenticator {
    /// The credential check of [`Authenticator::authenticate`] without its limits, the
    /// password verified inline: what these tests are about.
    pub(super) fn check(&self, credentials: &RequestCredentials) -> Result<Owner, AuthError> {
        self.check_at(credentials, chrono::Utc::now().timestamp())
    }

    pub(super) fn check_at(&self, credentials: &RequestCredentials, now: i64) -> Result<Owner, AuthError> {
        match self.classify(credentials, now) {
            Check::Done(result) => result,
            Check::Password(PasswordAttempt { password, found: Some((index, hash)), .. }) if hash.verify(&password) => {
                Ok(self.basic_users[index].owner.clone())
            }
            Check::Password(_) => Err(AuthError::Invalid),
        }
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn owner(tenant: &str, principal: &str) -> Owner {
    Owner { tenant: tenant.to_owned(), principal: principal.to_owned() }
}

fn bearer(token: &str) -> RequestCredentials {
    RequestCredentials { authorization: Some(format!("Bearer {token}")), ..Default::default() }
}

fn basic(user: &str, password: &str) -> RequestCredentials {
    let value = STANDARD.encode(format!("{user}:{password}"));
    RequestCredentials { authorization: Some(format!("Basic {value}")), ..Default::default() }
}

fn api_key(key: &str, user: Option<&str>) -> RequestCredentials {
    RequestCredentials {
        api_key: Some(key.to_owned()),
        platform_user_id: user.map(str::to_owned),
        ..Default::default()
    }
}

fn yaml(text: &str) -> AuthConfig {
    serde_yaml_ng::from_str(text).expect("the test config parses")
}

fn sha256_hex(text: &str) -> String {
    sha256(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A JWS compact token over `header` and `claims`, signed HS256 with `secret`.
fn sign(header: Value, claims: Value, secret: &str) -> String {
    let input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

fn claims() -> Value {
    json!({"sub": "alice", "tenant": "acme", "iss": "https://idp.example", "aud": "a2ad", "exp": NOW + 600})
}

fn jwt_auth(secrets: Vec<JwtSecretConfig>) -> Authenticator {
    let mut jwt = JwtConfig::new(secrets);
    jwt.issuer = Some("https://idp.example".to_owned());
    jwt.audience = Some("a2ad".to_owned());
    Authenticator::new(&AuthConfig { jwt: Some(jwt), ..Default::default() }, no_env).unwrap()
}

fn secret(kid: Option<&str>, secret: &str) -> JwtSecretConfig {
    JwtSecretConfig { kid: kid.map(str::to_owned), secret: Some(secret.into()), secret_env: None }
}

fn verify(auth: &Authenticator, token: &str) -> Result<Owner, AuthError> {
    auth.check_at(&bearer(token), NOW)
}

fn hs256() -> Value {
    json!({"alg": "HS256", "typ": "JWT"})
}

#[test]
fn nothing_configured_is_disabled() {
    let auth = Authenticator::new(&AuthConfig::default(), no_env).unwrap();
    assert!(!auth.enabled());
    assert_eq!(auth.www_authenticate(), "");
    let (schemes, requirements) = auth.security_schemes();
    assert!(schemes.is_empty() && requirements.is_empty());
    assert_eq!(auth.check(&RequestCredentials::default()), Err(AuthError::Missing));
}

#[test]
fn config_reads_kebab_case_and_refuses_unknown_keys() {
    let config = yaml(&format!(
        "bearer-tokens:\n  - {{token: t1, tenant: acme, principal: ci}}\n  - {{token-sha256: {}, tenant: acme, principal: ops}}\n\
         basic-users:\n  - {{user: alice, password-hash: \"{}\", tenant: acme, principal: alice}}\n\
         api-keys:\n  - {{key: k1, tenant: acme, principal: batch}}\n\
         integrator-keys:\n  - {{key: i1, tenant: platform}}\n\
         jwt:\n  secrets: [{{kid: k1, secret: {SECRET_A}}}]\n  issuer: iss\n  audience: aud\n",
        sha256_hex("t2"),
        hash_password("pw", MIN_PBKDF2_ITERATIONS)
    ));
    let jwt = config.jwt.as_ref().unwrap();
    assert_eq!((jwt.tenant_claim.as_str(), jwt.subject_claim.as_str(), jwt.leeway_seconds), ("tenant", "sub", 30));
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(auth.check(&bearer("t2")), Ok(owner("acme", "ops")));

    for bad in [
        "bearer-token: []",
        "bearer-tokens: [{token: t, tenant: a, principal: b, extra: 1}]",
        "basic-users: [{user: u, password: pw, tenant: a, principal: b}]",
        "jwt: {secrets: [], leeway: 3}",
    ] {
        assert!(serde_yaml_ng::from_str::<AuthConfig>(bad).is_err(), "{bad}");
    }
    let err = serde_yaml_ng::from_str::<AuthConfig>("bearer-tokens: [{token: '', tenant: a, principal: b}]");
    assert!(err.unwrap_err().to_string().contains("must not be empty"));
}

#[test]
fn bearer_token_accepted_and_refused() {
    let config = yaml(&format!(
        "bearer-tokens:\n  - {{token: tok-one, tenant: acme, principal: ci}}\n  - {{token-sha256: {}, tenant: beta, principal: ops}}",
        sha256_hex("tok-two").to_uppercase()
    ));
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert!(auth.enabled());
    assert_eq!(auth.check(&bearer("tok-one")), Ok(owner("acme", "ci")));
    assert_eq!(auth.check(&bearer("tok-two")), Ok(owner("beta", "ops")));
    let lowercase = RequestCredentials { authorization: Some("bearer   tok-one ".into()), ..Default::default() };
    assert_eq!(auth.check(&lowercase), Ok(owner("acme", "ci")));
    assert_eq!(auth.check(&bearer("tok-three")), Err(AuthError::Invalid));
    assert_eq!(auth.check(&bearer("tok-on")), Err(AuthError::Invalid));
    assert_eq!(auth.check(&bearer("")), Err(AuthError::Malformed));
    assert_eq!(auth.check(&basic("ci", "tok-one")), Err(AuthError::UnsupportedScheme));
    assert_eq!(auth.check(&api_key("tok-one", None)), Err(AuthError::Invalid));
    assert_eq!(auth.check(&RequestCredentials::default()), Err(AuthError::Missing));
    let huge = bearer(&"x".repeat(20_000));
    assert_eq!(auth.check(&huge), Err(AuthError::Malformed));
}

#[test]
fn basic_user_accepted_and_refused() {
    let config = AuthConfig {
        basic_users: vec![BasicUserConfig {
            user: "alice".into(),
            password_hash: hash_password("correct horse", MIN_PBKDF2_ITERATIONS).into(),
            tenant: "acme".into(),
            principal: "alice@acme".into(),
        }],
        ..Default::default()
    };
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(auth.check(&basic("alice", "correct horse")), Ok(owner("acme", "alice@acme")));
    assert_eq!(auth.check(&basic("alice", "correct horsE")), Err(AuthError::Invalid));
    assert_eq!(auth.check(&basic("alice", "")), Err(AuthError::Invalid));
    assert_eq!(auth.check(&basic("bob", "correct horse")), Err(AuthError::Invalid));
    let no_colon =
        RequestCredentials { authorization: Some(format!("Basic {}", STANDARD.encode("alice"))), ..Default::default() };
    assert_eq!(auth.check(&no_colon), Err(AuthError::Malformed));
    let not_b64 = RequestCredentials { authorization: Some("Basic %%%".into()), ..Default::default() };
    assert_eq!(auth.check(&not_b64), Err(AuthError::Malformed));
    assert_eq!(auth.check(&bearer("anything")), Err(AuthError::UnsupportedScheme));
    // A password with a colon: the user name ends at the first one.
    let config = AuthConfig {
        basic_users: vec![BasicUserConfig {
            user: "bob".into(),
            password_hash: hash_password("a:b", MIN_PBKDF2_ITERATIONS).into(),
            tenant: "acme".into(),
            principal: "bob".into(),
        }],
        ..Default::default()
    };
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(auth.check(&basic("bob", "a:b")), Ok(owner("acme", "bob")));
}

#[test]
fn api_key_accepted_and_refused() {
    let config = yaml(&format!(
        "api-keys:\n  - {{key: key-one, tenant: acme, principal: batch}}\n  - {{key-sha256: {}, tenant: acme, principal: cron}}",
        sha256_hex("key-two")
    ));
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(auth.check(&api_key("key-one", None)), Ok(owner("acme", "batch")));
    assert_eq!(auth.check(&api_key(" key-two ", None)), Ok(owner("acme", "cron")));
    assert_eq!(auth.check(&api_key("key-three", None)), Err(AuthError::Invalid));
    // A plain API key cannot act for a platform user.
    assert_eq!(auth.check(&api_key("key-one", Some("u1"))), Err(AuthError::Invalid));
    assert_eq!(auth.check(&bearer("key-one")), Err(AuthError::UnsupportedScheme));
    // Beside an Authorization scheme the node does not serve, the API key still counts.
    let both = RequestCredentials { authorization: Some("Negotiate abc".into()), ..api_key("key-one", None) };
    assert_eq!(auth.check(&both), Ok(owner("acme", "batch")));
}

#[test]
fn integrator_key_acts_for_platform_user() {
    let config = yaml("integrator-keys:\n  - {key: int-one, tenant: platform}\n  - {key: int-two, tenant: platform}");
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(
        auth.check(&api_key("int-one", Some("user-42@example.com"))),
        Ok(owner("platform", "user-42@example.com"))
    );
    assert_eq!(auth.check(&api_key("int-two", Some("u:1_a.b-c"))), Ok(owner("platform", "u:1_a.b-c")));
    assert_eq!(auth.check(&api_key("int-bad", Some("user-42"))), Err(AuthError::Invalid));
}

#[test]
fn integrator_key_requires_platform_user_id() {
    let config = yaml("integrator-keys:\n  - {key: int-one, tenant: platform}");
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(auth.check(&api_key("int-one", None)), Err(AuthError::PlatformUserRequired));
    assert_eq!(auth.check(&api_key("int-one", Some("  "))), Err(AuthError::PlatformUserRequired));
}

#[test]
fn integrator_key_refuses_bad_platform_user_id() {
    let config = yaml("integrator-keys:\n  - {key: int-one, tenant: platform}");
    let auth = Authenticator::new(&config, no_env).unwrap();
    for bad in ["a/b", "a b", "ü", "<script>", &"a".repeat(129), "a\u{0}b"] {
        assert_eq!(auth.check(&api_key("int-one", Some(bad))), Err(AuthError::InvalidPlatformUserId), "{bad:?}");
    }
    assert!(auth.check(&api_key("int-one", Some(&"a".repeat(128)))).is_ok());
    assert!(valid_platform_user_id("A-z_0.9:@x"));
}

#[test]
fn env_tokens() {
    let env = |name: &str| match name {
        ENV_HTTP_TOKEN => Some("env-token".to_owned()),
        ENV_API_KEY => Some("env-key".to_owned()),
        _ => None,
    };
    let auth = Authenticator::new(&AuthConfig::default(), env).unwrap();
    assert!(auth.enabled());
    assert_eq!(auth.check(&bearer("env-token")), Ok(owner("default", "token")));
    assert_eq!(auth.check(&api_key("env-key", None)), Ok(owner("default", "token")));
    assert_eq!(auth.check(&bearer("env-key")), Err(AuthError::Invalid));
    assert_eq!(auth.check(&api_key("env-token", None)), Err(AuthError::Invalid));
    // Empty variables set nothing.
    let auth = Authenticator::new(&AuthConfig::default(), |_| Some(String::new())).unwrap();
    assert!(!auth.enabled());
    // The env token may not repeat a configured one.
    let config = yaml("bearer-tokens: [{token: env-token, tenant: acme, principal: ci}]");
    let err = Authenticator::new(&config, env).unwrap_err();
    assert_eq!(err.key, ENV_HTTP_TOKEN);
    assert!(err.message.contains("auth.bearer-tokens[0]"), "{err}");
}

#[test]
fn jwt_accepted() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    assert_eq!(verify(&auth, &sign(hs256(), claims(), SECRET_A)), Ok(owner("acme", "alice")));
    let mut c = claims();
    c["aud"] = json!(["other", "a2ad"]);
    c["nbf"] = json!(NOW - 10);
    c["exp"] = json!((NOW + 60) as f64 + 0.5);
    assert_eq!(verify(&auth, &sign(json!({"alg": "HS256"}), c, SECRET_A)), Ok(owner("acme", "alice")));
    // The real clock: a token valid now.
    let mut c = claims();
    c["exp"] = json!(chrono::Utc::now().timestamp() + 60);
    assert_eq!(auth.check(&bearer(&sign(hs256(), c, SECRET_A))), Ok(owner("acme", "alice")));
    // Not a JWT and not a static token.
    assert_eq!(verify(&auth, "opaque"), Err(AuthError::Invalid));
}

#[test]
fn jwt_expired() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    let mut c = claims();
    c["exp"] = json!(NOW - 31);
    assert_eq!(verify(&auth, &sign(hs256(), c.clone(), SECRET_A)), Err(AuthError::Jwt(JwtError::Expired)));
    c["exp"] = json!(NOW - 29); // within the 30 s leeway
    assert!(verify(&auth, &sign(hs256(), c.clone(), SECRET_A)).is_ok());
    c.as_object_mut().unwrap().remove("exp");
    assert_eq!(verify(&auth, &sign(hs256(), c.clone(), SECRET_A)), Err(AuthError::Jwt(JwtError::MissingExpiry)));
    c["exp"] = json!("tomorrow");
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::InvalidClaim("exp".into()))));
}

#[test]
fn jwt_not_yet_valid() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    let mut c = claims();
    c["nbf"] = json!(NOW + 31);
    assert_eq!(verify(&auth, &sign(hs256(), c.clone(), SECRET_A)), Err(AuthError::Jwt(JwtError::NotYetValid)));
    c["nbf"] = json!(NOW + 30);
    assert!(verify(&auth, &sign(hs256(), c, SECRET_A)).is_ok());
}

#[test]
fn jwt_wrong_audience() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    for aud in [json!("other"), json!(["x", "y"]), json!(null), json!(7)] {
        let mut c = claims();
        c["aud"] = aud;
        assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::WrongAudience)));
    }
    let mut c = claims();
    c.as_object_mut().unwrap().remove("aud");
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::WrongAudience)));
}

#[test]
fn jwt_wrong_issuer() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    let mut c = claims();
    c["iss"] = json!("https://evil.example");
    assert_eq!(verify(&auth, &sign(hs256(), c.clone(), SECRET_A)), Err(AuthError::Jwt(JwtError::WrongIssuer)));
    c.as_object_mut().unwrap().remove("iss");
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::WrongIssuer)));
}

#[test]
fn jwt_signed_with_wrong_key() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    assert_eq!(verify(&auth, &sign(hs256(), claims(), SECRET_B)), Err(AuthError::Jwt(JwtError::BadSignature)));
    // A tampered payload under the original signature.
    let token = sign(hs256(), claims(), SECRET_A);
    let parts: Vec<&str> = token.split('.').collect();
    let mut c = claims();
    c["tenant"] = json!("other");
    let forged = format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(c.to_string()), parts[2]);
    assert_eq!(verify(&auth, &forged), Err(AuthError::Jwt(JwtError::BadSignature)));
    assert_eq!(verify(&auth, &format!("{}.{}.", parts[0], parts[1])), Err(AuthError::Jwt(JwtError::BadSignature)));
    assert_eq!(verify(&auth, "a.b.c"), Err(AuthError::Jwt(JwtError::Malformed)));
}

#[test]
fn jwt_alg_none_and_rs256_refused() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    let body = URL_SAFE_NO_PAD.encode(claims().to_string());
    let none = format!("{}.{body}.", URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()));
    assert_eq!(verify(&auth, &none), Err(AuthError::Jwt(JwtError::UnsupportedAlgorithm)));
    for alg in ["RS256", "HS384", "hs256", "ES256"] {
        // Even with a valid HS256 MAC under the secret (the RS256/HS256 confusion attack).
        let token = sign(json!({"alg": alg}), claims(), SECRET_A);
        assert_eq!(verify(&auth, &token), Err(AuthError::Jwt(JwtError::UnsupportedAlgorithm)), "{alg}");
    }
    let no_alg = sign(json!({"typ": "JWT"}), claims(), SECRET_A);
    assert_eq!(verify(&auth, &no_alg), Err(AuthError::Jwt(JwtError::UnsupportedAlgorithm)));
    let crit = sign(json!({"alg": "HS256", "crit": ["exp"]}), claims(), SECRET_A);
    assert_eq!(verify(&auth, &crit), Err(AuthError::Jwt(JwtError::Malformed)));
}

#[test]
fn jwt_missing_tenant_claim() {
    let auth = jwt_auth(vec![secret(None, SECRET_A)]);
    let mut c = claims();
    c.as_object_mut().unwrap().remove("tenant");
    assert_eq!(
        verify(&auth, &sign(hs256(), c, SECRET_A)),
        Err(AuthError::Jwt(JwtError::MissingClaim("tenant".into())))
    );
    let mut c = claims();
    c.as_object_mut().unwrap().remove("sub");
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::MissingClaim("sub".into()))));
    let mut c = claims();
    c["tenant"] = json!("a/b");
    assert_eq!(
        verify(&auth, &sign(hs256(), c, SECRET_A)),
        Err(AuthError::Jwt(JwtError::InvalidClaim("tenant".into())))
    );
    let mut c = claims();
    c["sub"] = json!(42);
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::InvalidClaim("sub".into()))));
}

#[test]
fn jwt_configured_claims() {
    let mut jwt = JwtConfig::new(vec![secret(None, SECRET_A)]);
    jwt.tenant_claim = "org".into();
    jwt.subject_claim = "email".into();
    jwt.leeway_seconds = 0;
    let auth = Authenticator::new(&AuthConfig { jwt: Some(jwt), ..Default::default() }, no_env).unwrap();
    let c = json!({"org": "acme", "email": "a@acme.example", "sub": "ignored", "exp": NOW + 1});
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Ok(owner("acme", "a@acme.example")));
    let c = json!({"org": "acme", "email": "a@acme.example", "exp": NOW});
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::Expired)));
    let c = json!({"tenant": "acme", "sub": "alice", "exp": NOW + 1});
    assert_eq!(verify(&auth, &sign(hs256(), c, SECRET_A)), Err(AuthError::Jwt(JwtError::MissingClaim("org".into()))));
}

#[test]
fn jwt_key_rotation_by_kid() {
    let auth = jwt_auth(vec![secret(Some("2025-05"), SECRET_A), secret(Some("2025-06"), SECRET_B)]);
    let old = sign(json!({"alg": "HS256", "kid": "2025-05"}), claims(), SECRET_A);
    let new = sign(json!({"alg": "HS256", "kid": "2025-06"}), claims(), SECRET_B);
    assert_eq!(verify(&auth, &old), Ok(owner("acme", "alice")));
    assert_eq!(verify(&auth, &new), Ok(owner("acme", "alice")));
    // The kid selects: the other secret is not tried.
    let crossed = sign(json!({"alg": "HS256", "kid": "2025-06"}), claims(), SECRET_A);
    assert_eq!(verify(&auth, &crossed), Err(AuthError::Jwt(JwtError::BadSignature)));
    let unknown = sign(json!({"alg": "HS256", "kid": "2024-01"}), claims(), SECRET_A);
    assert_eq!(verify(&auth, &unknown), Err(AuthError::Jwt(JwtError::UnknownKey)));
    let bad_kid = sign(json!({"alg": "HS256", "kid": 5}), claims(), SECRET_A);
    assert_eq!(verify(&auth, &bad_kid), Err(AuthError::Jwt(JwtError::Malformed)));
}

#[test]
fn jwt_key_rotation_without_kid_tries_all() {
    let auth = jwt_auth(vec![secret(Some("old"), SECRET_A), secret(None, SECRET_B)]);
    assert_eq!(verify(&auth, &sign(hs256(), claims(), SECRET_A)), Ok(owner("acme", "alice")));
    assert_eq!(verify(&auth, &sign(hs256(), claims(), SECRET_B)), Ok(owner("acme", "alice")));
    // An unknown kid falls back to the secrets without a kid.
    let token = sign(json!({"alg": "HS256", "kid": "new"}), claims(), SECRET_B);
    assert_eq!(verify(&auth, &token), Ok(owner("acme", "alice")));
    let token = sign(json!({"alg": "HS256", "kid": "new"}), claims(), SECRET_A);
    assert_eq!(verify(&auth, &token), Err(AuthError::Jwt(JwtError::BadSignature)));
    // A secret from the environment.
    let config = yaml("jwt: {secrets: [{secret-env: MY_JWT_SECRET}]}");
    let auth = Authenticator::new(&config, |n| (n == "MY_JWT_SECRET").then(|| SECRET_B.to_owned())).unwrap();
    let c = json!({"tenant": "t", "sub": "s", "exp": chrono::Utc::now().timestamp() + 60});
    assert_eq!(auth.check(&bearer(&sign(hs256(), c, SECRET_B))), Ok(owner("t", "s")));
}

#[test]
fn bearer_tokens_and_jwt_together() {
    let mut config = yaml("bearer-tokens: [{token: static, tenant: acme, principal: ci}]");
    config.jwt = Some(JwtConfig::new(vec![secret(None, SECRET_A)]));
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(auth.check(&bearer("static")), Ok(owner("acme", "ci")));
    let c = json!({"tenant": "t", "sub": "s", "exp": chrono::Utc::now().timestamp() + 60});
    assert_eq!(auth.check(&bearer(&sign(hs256(), c, SECRET_A))), Ok(owner("t", "s")));
    assert_eq!(auth.check(&bearer("nope")), Err(AuthError::Invalid));
}

#[test]
fn config_errors_name_the_key() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            "basic-users: [{user: alice, password-hash: 'sha256$abc', tenant: a, principal: b}]".into(),
            "auth.basic-users[0].password-hash",
            "pbkdf2-sha256$",
        ),
        (
            "basic-users: [{user: alice, password-hash: 'pbkdf2-sha256$10$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA', tenant: a, principal: b}]".into(),
            "auth.basic-users[0].password-hash",
            "at least 1000",
        ),
        (
            "basic-users: [{user: alice, password-hash: 'pbkdf2-sha256$1000$!!$aGFzaA', tenant: a, principal: b}]".into(),
            "auth.basic-users[0].password-hash",
            "base64",
        ),
        (
            format!(
                "basic-users:\n  - {{user: a, password-hash: '{h}', tenant: t, principal: p}}\n  - {{user: a, password-hash: '{h}', tenant: t, principal: q}}",
                h = hash_password("x", 1000)
            ),
            "auth.basic-users[1].user",
            "twice",
        ),
        ("bearer-tokens: [{tenant: a, principal: b}]".into(), "auth.bearer-tokens[0]", "exactly one of"),
        ("bearer-tokens: [{token: x, token-sha256: abcd, tenant: a, principal: b}]".into(), "auth.bearer-tokens[0]", "exactly one of"),
        ("bearer-tokens: [{token-sha256: abcd, tenant: a, principal: b}]".into(), "auth.bearer-tokens[0].token-sha256", "64 hex"),
        ("api-keys: [{key: k, tenant: 'a/b', principal: b}]".into(), "auth.api-keys[0].tenant", "1-128"),
        ("api-keys: [{key: k, tenant: a, principal: ''}]".into(), "auth.api-keys[0].principal", "1-256"),
        (
            "api-keys: [{key: k, tenant: a, principal: b}]\nintegrator-keys: [{key: k, tenant: c}]".into(),
            "auth.integrator-keys[0]",
            "already set by auth.api-keys[0]",
        ),
        (
            "api-keys: [{key: k, tenant: shared, principal: b}]\nintegrator-keys: [{key: i, tenant: shared}]".into(),
            "auth.integrator-keys[0].tenant",
            "auth.api-keys[0]",
        ),
        ("jwt: {secrets: []}".into(), "auth.jwt.secrets", "at least one"),
        ("jwt: {secrets: [{secret: short}]}".into(), "auth.jwt.secrets[0].secret", "32 bytes"),
        ("jwt: {secrets: [{kid: a}]}".into(), "auth.jwt.secrets[0]", "exactly one of"),
        ("jwt: {secrets: [{secret-env: NOPE}]}".into(), "auth.jwt.secrets[0].secret-env", "NOPE is not set"),
        (
            format!("jwt: {{secrets: [{{kid: a, secret: {SECRET_A}}}, {{kid: a, secret: {SECRET_B}}}]}}"),
            "auth.jwt.secrets[1].kid",
            "twice",
        ),
        (format!("jwt: {{secrets: [{{secret: {SECRET_A}}}], tenant-claim: ''}}"), "auth.jwt.tenant-claim", "empty"),
    ];
    for (text, key, message) in cases {
        let err = Authenticator::new(&yaml(&text), no_env).unwrap_err();
        assert_eq!(err.key, key, "{text}: {err}");
        assert!(err.message.contains(message), "{text}: {err}");
        assert!(err.to_string().starts_with(&format!("{key}: ")));
    }
}

#[test]
fn hash_password_round_trip() {
    let text = hash_password("s3cret pässword", 2_000);
    assert!(text.starts_with("pbkdf2-sha256$2000$"), "{text}");
    assert!(!text.contains("s3cret"));
    let hash = password::PasswordHash::parse(&text).unwrap();
    assert!(hash.verify("s3cret pässword".as_bytes()));
    assert!(!hash.verify(b"s3cret passwort"));
    // A fresh salt every time.
    assert_ne!(hash_password("same", 1_000), hash_password("same", 1_000));
    // Too few iterations are raised to the minimum.
    assert!(hash_password("x", 1).starts_with("pbkdf2-sha256$1000$"));
    // Padded base64 is read too.
    let parts: Vec<&str> = text.split('$').collect();
    let padded = format!("{}${}${}=${}=", parts[0], parts[1], parts[2], parts[3]);
    assert!(password::PasswordHash::parse(&padded).unwrap().verify("s3cret pässword".as_bytes()));
}

#[test]
fn debug_shows_no_secrets() {
    let password_hash = hash_password("hunter2", 1_000);
    let config = yaml(&format!(
        "bearer-tokens: [{{token: tok-SECRET, tenant: acme, principal: ci}}]\n\
         basic-users: [{{user: alice, password-hash: '{password_hash}', tenant: acme, principal: alice}}]\n\
         api-keys: [{{key-sha256: {}, tenant: acme, principal: batch}}]\n\
         integrator-keys: [{{key: int-SECRET, tenant: platform}}]\n\
         jwt: {{secrets: [{{kid: k1, secret: {SECRET_A}}}]}}",
        sha256_hex("key-SECRET")
    ));
    let auth = Authenticator::new(&config, |name| Some(format!("env-SECRET-{name}"))).unwrap();
    let salt_and_hash = password_hash.rsplit_once("1000$").unwrap().1;
    for shown in [format!("{config:?}"), format!("{config:#?}"), format!("{auth:?}"), format!("{auth:#?}")] {
        for secret in ["SECRET", salt_and_hash, &sha256_hex("key-SECRET"), SECRET_A, "hunter2"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
    assert!(format!("{auth:?}").contains("bearer_tokens: 2"));
    let creds = RequestCredentials {
        authorization: Some("Bearer tok-SECRET".into()),
        api_key: Some("key-SECRET".into()),
        platform_user_id: Some("u1".into()),
    };
    let shown = format!("{creds:?}");
    assert!(!shown.contains("SECRET") && shown.contains("Bearer") && shown.contains("u1"), "{shown}");
    // Errors carry no credential either.
    for err in [
        auth.check(&bearer("tok-SECRET-wrong")).unwrap_err(),
        auth.check(&basic("alice", "SECRET")).unwrap_err(),
        auth.check(&api_key("key-SECRET-x", Some("u/1"))).unwrap_err(),
    ] {
        assert!(!format!("{err} {err:?}").contains("SECRET"));
    }
}

#[test]
fn www_authenticate_and_security_schemes() {
    let mut config = yaml(&format!(
        "bearer-tokens: [{{token: t, tenant: acme, principal: ci}}]\n\
         basic-users: [{{user: alice, password-hash: '{}', tenant: acme, principal: alice}}]\n\
         api-keys: [{{key: k, tenant: acme, principal: batch}}]",
        hash_password("pw", 1_000)
    ));
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(
        auth.www_authenticate(),
        r#"Bearer realm="a2ad", Basic realm="a2ad", ApiKey realm="a2ad", header="X-Api-Key""#
    );
    let (schemes, requirements) = auth.security_schemes();
    assert_eq!(schemes.keys().collect::<Vec<_>>(), [API_KEY_AUTH, BASIC_AUTH, BEARER_AUTH]);
    let card = serde_json::to_value(&schemes).unwrap();
    assert_eq!(card["bearerAuth"]["httpAuthSecurityScheme"]["scheme"], "bearer");
    assert!(card["bearerAuth"]["httpAuthSecurityScheme"].get("bearerFormat").is_none());
    assert_eq!(card["basicAuth"]["httpAuthSecurityScheme"]["scheme"], "basic");
    assert_eq!(card["apiKeyAuth"]["apiKeySecurityScheme"]["location"], "header");
    assert_eq!(card["apiKeyAuth"]["apiKeySecurityScheme"]["name"], "X-Api-Key");
    assert_eq!(requirements.len(), 3);
    assert!(requirements.iter().all(|r| r.schemes.len() == 1));
    assert_eq!(serde_json::to_value(&requirements[0]).unwrap(), json!({"schemes": {"apiKeyAuth": {"list": []}}}));

    config.jwt = Some(JwtConfig::new(vec![secret(None, SECRET_A)]));
    config.basic_users.clear();
    config.api_keys.clear();
    let auth = Authenticator::new(&config, no_env).unwrap();
    assert_eq!(auth.www_authenticate(), r#"Bearer realm="a2ad""#);
    let (schemes, requirements) = auth.security_schemes();
    let card = serde_json::to_value(&schemes).unwrap();
    assert_eq!(card["bearerAuth"]["httpAuthSecurityScheme"]["bearerFormat"], "JWT");
    assert_eq!(requirements.len(), 1);
}

#[test]
fn authenticator_is_shareable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Authenticator>();
}
