//! `auth.throttle`: failed attempts limited per address and per Basic user, the
//! password-check bound, the Basic cache, and bounded memory.

use super::*;
use std::net::{IpAddr, Ipv4Addr};

fn no_env(_: &str) -> Option<String> {
    None
}

fn addr(last: u8) -> ClientAddr {
    ClientAddr::ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
}

fn bearer(token: &str) -> RequestCredentials {
    RequestCredentials { authorization: Some(format!("Bearer {token}")), ..Default::default() }
}

fn basic(user: &str, password: &str) -> RequestCredentials {
    let value = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    RequestCredentials { authorization: Some(format!("Basic {value}")), ..Default::default() }
}

fn throttle(failure_burst: u32, user_failure_burst: u32) -> ThrottleConfig {
    ThrottleConfig {
        failures_per_minute: 1.0,
        failure_burst,
        user_failures_per_minute: 1.0,
        user_failure_burst,
        ..ThrottleConfig::default()
    }
}

fn authenticator(throttle: ThrottleConfig) -> Authenticator {
    let config = AuthConfig {
        bearer_tokens: vec![BearerTokenConfig {
            token_sha256: None,
            token: Some(HashedSecret::from_plaintext("good-token")),
            tenant: "beta".into(),
            principal: "ci".into(),
        }],
        basic_users: ["alice", "bob"]
            .into_iter()
            .map(|user| BasicUserConfig {
                user: user.into(),
                password_hash: hash_password(&format!("{user}-pw"), MIN_PBKDF2_ITERATIONS).into(),
                tenant: "acme".into(),
                principal: user.into(),
            })
            .collect(),
        throttle,
        ..Default::default()
    };
    Authenticator::new(&config, no_env).unwrap()
}

fn retry_after(error: AuthError) -> String {
    let limited = error.rate_limited().expect("a RATE_LIMITED refusal");
    assert_eq!(limited.code, ErrorCode::RateLimited);
    limited.metadata["retryAfterSeconds"].clone()
}

#[tokio::test]
async fn an_address_out_of_failures_is_refused_before_its_credentials_are_checked() {
    let auth = authenticator(throttle(3, 100));
    for _ in 0..3 {
        assert_eq!(auth.authenticate(&bearer("guess"), addr(1)).await, Err(AuthError::Invalid));
    }
    let refused = auth.authenticate(&bearer("guess"), addr(1)).await.unwrap_err();
    assert_eq!(retry_after(refused), "60", "one failure a minute: a token in 60 s");
    // Even a good token from there is refused: over the limit, nothing is checked.
    assert!(matches!(auth.authenticate(&bearer("good-token"), addr(1)).await, Err(AuthError::TooManyFailures { .. })));
    // Another address is served, and no credential at all is a plain 401 anywhere.
    assert_eq!(auth.authenticate(&bearer("good-token"), addr(2)).await.unwrap().tenant, "beta");
    let nothing = auth.authenticate(&RequestCredentials::default(), addr(1)).await.unwrap_err();
    assert_eq!(nothing, AuthError::Missing);
    assert!(nothing.rate_limited().is_none());
    assert_eq!(auth.throttled(), 2);
}

#[tokio::test]
async fn successes_take_nothing_from_the_budget() {
    let auth = authenticator(throttle(2, 100));
    for _ in 0..20 {
        auth.authenticate(&bearer("good-token"), addr(1)).await.unwrap();
    }
    for _ in 0..2 {
        assert_eq!(auth.authenticate(&bearer("guess"), addr(1)).await, Err(AuthError::Invalid));
    }
    assert!(auth.authenticate(&bearer("guess"), addr(1)).await.unwrap_err().rate_limited().is_some());
}

#[tokio::test]
async fn a_user_name_out_of_failures_is_refused_from_every_address() {
    let auth = authenticator(throttle(100, 2));
    assert_eq!(auth.authenticate(&basic("alice", "guess-1"), addr(1)).await, Err(AuthError::Invalid));
    assert_eq!(auth.authenticate(&basic("alice", "guess-2"), addr(2)).await, Err(AuthError::Invalid));
    let refused = auth.authenticate(&basic("alice", "alice-pw"), addr(3)).await.unwrap_err();
    assert!(refused.rate_limited().is_some(), "{refused:?}");
    // Another user of the same tenant is served from the same address.
    assert_eq!(auth.authenticate(&basic("bob", "bob-pw"), addr(3)).await.unwrap().principal, "bob");
    // An unknown user has a budget too, and costs a PBKDF2 run like a known one.
    let before = auth.password_checks_run();
    assert_eq!(auth.authenticate(&basic("mallory", "x"), addr(4)).await, Err(AuthError::Invalid));
    assert_eq!(auth.password_checks_run(), before + 1);
}

#[tokio::test]
async fn a_verified_basic_credential_is_not_checked_again() {
    let auth = authenticator(ThrottleConfig::default());
    for _ in 0..10 {
        assert_eq!(auth.authenticate(&basic("alice", "alice-pw"), addr(1)).await.unwrap().principal, "alice");
    }
    assert_eq!(auth.password_checks_run(), 1, "one PBKDF2 run, then the cache");
    // A wrong password is never answered from the cache.
    assert_eq!(auth.authenticate(&basic("alice", "alice-pW"), addr(1)).await, Err(AuthError::Invalid));
    assert_eq!(auth.password_checks_run(), 2);

    let uncached = authenticator(ThrottleConfig { basic_cache: std::time::Duration::ZERO, ..Default::default() });
    for _ in 0..3 {
        uncached.authenticate(&basic("bob", "bob-pw"), addr(1)).await.unwrap();
    }
    assert_eq!(uncached.password_checks_run(), 3, "`basic-cache: 0` turns it off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_checks_beyond_the_bound_are_refused_not_queued() {
    let auth = authenticator(ThrottleConfig { password_checks: 1, ..Default::default() });
    let (alice, bob) = (basic("alice", "guess-1"), basic("bob", "guess-2"));
    let (first, second) = tokio::join!(auth.authenticate(&alice, addr(1)), auth.authenticate(&bob, addr(2)));
    assert_eq!(first, Err(AuthError::Invalid));
    assert_eq!(second, Err(AuthError::PasswordChecksBusy));
    assert_eq!(retry_after(AuthError::PasswordChecksBusy), "1");
    assert_eq!(auth.password_checks_run(), 1);
}

#[tokio::test]
async fn many_addresses_cost_bounded_memory() {
    let auth = authenticator(ThrottleConfig { tracked_clients: 8, ..throttle(1, 100) });
    for last in 0..200u8 {
        let _ = auth.authenticate(&bearer("guess"), addr(last)).await;
    }
    let tracked = auth.throttle.tracked_clients();
    assert_eq!(tracked, Some(8), "past the bound, new addresses share one bucket");
    assert!(auth.authenticate(&bearer("guess"), addr(250)).await.unwrap_err().rate_limited().is_some());
}

#[test]
fn ipv6_clients_are_counted_per_64() {
    let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
    let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
    let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
    assert_eq!(ClientAddr::ip(a), ClientAddr::ip(b));
    assert_ne!(ClientAddr::ip(a), ClientAddr::ip(c));
    let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
    assert_eq!(ClientAddr::ip(mapped), addr(1));
    assert_eq!(ClientAddr::peer(None), ClientAddr::Local);
}
