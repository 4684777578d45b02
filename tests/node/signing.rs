//! Signed agent cards (spec §8.4): the served card's signatures, and `a2ad card verify`
//! against a running node, a JWKS file or URL, a wrong key, a tampered card and a rotation.

use crate::support::{spawn_app, NodeProcess};
use a2ad::card_signing::KeySet;
use a2ad::config::CardSigningKey;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SECRET_1: &str = "card-signing-secret-one-0123456789abcdef";
const SECRET_2: &str = "card-signing-secret-two-0123456789abcdef";
const WRONG: &str = "not-the-card-signing-secret-0123456789ab";

fn key(kid: &str, secret: &str) -> CardSigningKey {
    CardSigningKey::new(kid, secret).unwrap()
}

/// A config file with these `(kid, secret)` signing keys.
fn config_file(dir: &Path, name: &str, keys: &[(&str, &str)]) -> PathBuf {
    let mut text = String::from("card:\n  signing-keys:\n");
    for (kid, secret) in keys {
        text.push_str(&format!("    - {{kid: {kid}, secret: {secret}}}\n"));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A JWKS file with these `(kid, secret)` as `oct` keys.
fn jwks_document(keys: &[(&str, &str)]) -> String {
    let keys: Vec<Value> = keys
        .iter()
        .map(|(kid, secret)| json!({"kty": "oct", "kid": kid, "k": URL_SAFE_NO_PAD.encode(secret)}))
        .collect();
    json!({ "keys": keys }).to_string()
}

/// Runs `a2ad <args>` (with extra environment variables), at most 60 s.
fn a2ad(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_a2ad"));
    command.args(args).env_remove("RUST_LOG").env("NO_PROXY", "127.0.0.1,localhost");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("the binary starts");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("a2ad {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `a2ad card verify <url> <args>`: must succeed and name `kid`.
fn assert_verified(url: &str, args: &[&str], env: &[(&str, &str)], kid: &str) {
    let output = a2ad(&[&["card", "verify", url], args].concat(), env);
    assert!(output.status.success(), "verify {url} {args:?} failed: {}{}", stdout(&output), stderr(&output));
    assert_eq!(stdout(&output).trim(), format!("verified: kid {kid}"), "{args:?}");
}

/// `a2ad card verify <url> <args>`: must exit 1 (not verified) with `reason` on stderr;
/// returns stderr.
fn assert_refused(url: &str, args: &[&str], reason: &str) -> String {
    assert_fails_with(1, &[&["card", "verify", url], args].concat(), reason)
}

/// `a2ad <args>`: must exit with `code` and `reason` on stderr; returns stderr.
fn assert_fails_with(code: i32, args: &[&str], reason: &str) -> String {
    let output = a2ad(args, &[]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(code), "{args:?} should exit {code}: {}{err}", stdout(&output));
    assert!(!stdout(&output).contains("verified"), "{}", stdout(&output));
    assert!(err.contains(reason), "expected {reason:?} in {err:?}");
    err
}

/// A tiny HTTP server on loopback answering `GET <path>` with the JSON body given for it
/// (404 otherwise). It lives as long as the test process.
fn serve_documents(documents: HashMap<String, String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&request);
            let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let (status, body) = match documents.get(&path) {
                Some(body) => ("200 OK", body.as_str()),
                None => ("404 Not Found", "{}"),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    base
}

async fn fetch_card(base: &str) -> (reqwest::header::HeaderMap, Value) {
    let response = reqwest::get(format!("{base}/.well-known/agent-card.json")).await.unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    (headers, response.json().await.unwrap())
}

fn protected_header(signature: &Value) -> Value {
    let protected = signature["protected"].as_str().expect("a protected header");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).expect("base64url")).expect("a JSON header")
}

#[actix_web::test]
async fn served_card_is_signed_hs256_with_kid_and_typ() {
    let app = spawn_app(|c| c.card.signing_keys = vec![key("2025-06", SECRET_1)]).await;
    let (_, card) = fetch_card(&app.url).await;
    let signatures = card["signatures"].as_array().expect("the card has signatures");
    assert_eq!(signatures.len(), 1, "{card}");
    assert_eq!(protected_header(&signatures[0]), json!({"alg": "HS256", "kid": "2025-06", "typ": "JOSE"}));
    assert!(signatures[0]["signature"].as_str().is_some_and(|s| !s.is_empty()));
    // The signature covers the served card as its bytes arrived.
    let keys = KeySet::from_keys(&[key("2025-06", SECRET_1).signing_key()]);
    assert_eq!(a2ad::card_signing::verify_json(&card, &keys).unwrap(), "2025-06");

    // With no keys, no signatures.
    let unsigned = spawn_app(|_| {}).await;
    assert!(fetch_card(&unsigned.url).await.1.get("signatures").is_none());
}

#[actix_web::test]
async fn signatures_change_the_etag_and_304_still_works() {
    let same = |c: &mut a2ad::config::Config| {
        c.public_url = Some("https://agents.example.com".into());
        c.grpc_public_address = Some("agents.example.com:443".into());
    };
    let unsigned = spawn_app(same).await;
    let signed = spawn_app(|c| {
        same(c);
        c.card.signing_keys = vec![key("k1", SECRET_1)];
    })
    .await;
    let rotated = spawn_app(|c| {
        same(c);
        c.card.signing_keys = vec![key("k1", SECRET_1), key("k2", SECRET_2)];
    })
    .await;
    let (unsigned_headers, unsigned_card) = fetch_card(&unsigned.url).await;
    let (signed_headers, mut signed_card) = fetch_card(&signed.url).await;
    let (rotated_headers, _) = fetch_card(&rotated.url).await;
    signed_card.as_object_mut().unwrap().remove("signatures");
    assert_eq!(signed_card, unsigned_card, "the cards differ only in their signatures");
    let etag = signed_headers["etag"].to_str().unwrap().to_owned();
    assert_ne!(etag, unsigned_headers["etag"].to_str().unwrap(), "the ETag covers the signatures");
    assert_ne!(etag, rotated_headers["etag"].to_str().unwrap(), "another key set, another ETag");

    let card_url = format!("{}/.well-known/agent-card.json", signed.url);
    let again = signed.client.get(&card_url).header("If-None-Match", &etag).send().await.unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);
    let stale = unsigned_headers["etag"].to_str().unwrap();
    let changed = signed.client.get(&card_url).header("If-None-Match", stale).send().await.unwrap();
    assert_eq!(changed.status(), 200, "a cached unsigned card is not current");
}

#[actix_web::test]
async fn card_verify_with_the_node_config_names_the_kid() {
    let dir = tempfile::tempdir().unwrap();
    let node_config = config_file(dir.path(), "node.yml", &[("k1", SECRET_1)]);
    let node = NodeProcess::start(dir.path(), &["--config", node_config.to_str().unwrap()]);
    // The same config, base URL or full well-known URL.
    assert_verified(&node.url, &["--config", node_config.to_str().unwrap()], &[], "k1");
    let full = format!("{}/.well-known/agent-card.json", node.url);
    assert_verified(&full, &["--config", node_config.to_str().unwrap()], &[], "k1");
    // The secret from the environment (`secret-env`), as the operator would keep it.
    let env_config = dir.path().join("env.yml");
    std::fs::write(&env_config, "card:\n  signing-keys:\n    - {kid: k1, secret-env: A2AD_TEST_CARD_KEY}\n").unwrap();
    assert_verified(&node.url, &["-c", env_config.to_str().unwrap()], &[("A2AD_TEST_CARD_KEY", SECRET_1)], "k1");

    // `card show` prints the card, signatures included.
    let output = a2ad(&["card", "show", &node.url], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let shown: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(shown["name"], "a2ad");
    assert_eq!(protected_header(&shown["signatures"][0])["kid"], "k1");
}

#[actix_web::test]
async fn card_verify_with_a_jwks_file_or_url_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let node_config = config_file(dir.path(), "node.yml", &[("k1", SECRET_1)]);
    let node = NodeProcess::start(dir.path(), &["--config", node_config.to_str().unwrap()]);
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, jwks_document(&[("other", SECRET_2), ("k1", SECRET_1)])).unwrap();
    assert_verified(&node.url, &["--jwks", jwks.to_str().unwrap()], &[], "k1");

    let jwks_server = serve_documents(HashMap::from([("/jwks.json".to_owned(), jwks_document(&[("k1", SECRET_1)]))]));
    assert_verified(&node.url, &["--jwks-url", &format!("{jwks_server}/jwks.json")], &[], "k1");
    let missing = format!("{jwks_server}/missing.json");
    assert_fails_with(7, &["card", "verify", &node.url, "--jwks-url", &missing], "HTTP 404");
}

#[actix_web::test]
async fn card_verify_with_a_wrong_key_fails() {
    let dir = tempfile::tempdir().unwrap();
    let node_config = config_file(dir.path(), "node.yml", &[("k1", SECRET_1)]);
    let node = NodeProcess::start(dir.path(), &["--config", node_config.to_str().unwrap()]);

    let wrong = config_file(dir.path(), "wrong.yml", &[("k1", WRONG)]);
    let err = assert_refused(&node.url, &["--config", wrong.to_str().unwrap()], "does not match the card");
    assert!(err.contains("not verified") && err.contains("k1"), "{err}");
    assert!(!err.contains(WRONG) && !err.contains(SECRET_1), "no secret in {err}");

    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, jwks_document(&[("k2", SECRET_1)])).unwrap();
    let err = assert_refused(&node.url, &["--jwks", jwks.to_str().unwrap()], "no key with kid \"k1\"");
    assert!(err.contains("known kids: k2"), "{err}");

    assert_fails_with(2, &["card", "verify", &node.url], "no keys to verify with");
}

#[actix_web::test]
async fn card_verify_of_a_card_tampered_on_the_way_fails() {
    let dir = tempfile::tempdir().unwrap();
    let node_config = config_file(dir.path(), "node.yml", &[("k1", SECRET_1)]);
    let node = NodeProcess::start(dir.path(), &["--config", node_config.to_str().unwrap()]);
    let (_, card) = fetch_card(&node.url).await;
    let mut tampered = card.clone();
    tampered["description"] = json!("A perfectly trustworthy agent.");
    let relay = serve_documents(HashMap::from([
        ("/.well-known/agent-card.json".to_owned(), tampered.to_string()),
        ("/intact/.well-known/agent-card.json".to_owned(), card.to_string()),
    ]));
    let args = ["--config", node_config.to_str().unwrap()];
    // The relay itself is faithful for the intact copy...
    assert_verified(&format!("{relay}/intact"), &args, &[], "k1");
    // ...and the changed description breaks the signature.
    assert_refused(&relay, &args, "the signature with kid \"k1\" does not match the card");
    let output = a2ad(&["card", "show", &relay], &[]);
    assert!(stdout(&output).contains("A perfectly trustworthy agent."));

    // A card with its signatures stripped is refused too.
    let mut stripped = card;
    stripped.as_object_mut().unwrap().remove("signatures");
    let relay = serve_documents(HashMap::from([("/.well-known/agent-card.json".to_owned(), stripped.to_string())]));
    assert_refused(&relay, &args, "the card has no signatures");
}

#[actix_web::test]
async fn key_rotation_either_key_alone_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let node_config = config_file(dir.path(), "node.yml", &[("old", SECRET_1), ("new", SECRET_2)]);
    let node = NodeProcess::start(dir.path(), &["--config", node_config.to_str().unwrap()]);
    let (_, card) = fetch_card(&node.url).await;
    let kids: Vec<Value> =
        card["signatures"].as_array().unwrap().iter().map(|s| protected_header(s)["kid"].clone()).collect();
    assert_eq!(kids, [json!("old"), json!("new")], "one signature per key, in order");

    let old_only = config_file(dir.path(), "old.yml", &[("old", SECRET_1)]);
    assert_verified(&node.url, &["--config", old_only.to_str().unwrap()], &[], "old");
    let new_only = dir.path().join("new.json");
    std::fs::write(&new_only, jwks_document(&[("new", SECRET_2)])).unwrap();
    assert_verified(&node.url, &["--jwks", new_only.to_str().unwrap()], &[], "new");
    // After the rotation the old key is retired: a verifier holding only it fails.
    let retired_dir = tempfile::tempdir().unwrap();
    let rotated_config = config_file(retired_dir.path(), "node.yml", &[("new", SECRET_2)]);
    let rotated = NodeProcess::start(retired_dir.path(), &["--config", rotated_config.to_str().unwrap()]);
    assert_verified(&rotated.url, &["--jwks", new_only.to_str().unwrap()], &[], "new");
    assert_refused(&rotated.url, &["--config", old_only.to_str().unwrap()], "no key with kid \"new\"");
}

#[test]
fn an_unset_secret_env_stops_start_up_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("node.yml");
    std::fs::write(
        &config,
        format!(
            "card:\n  signing-keys:\n    - {{kid: a, secret: {SECRET_1}}}\n    - {{kid: b, secret-env: A2AD_TEST_UNSET_CARD_KEY}}\n"
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let args = [
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ];
    let output = a2ad(&args, &[]);
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(err.contains("card.signing-keys[1]") && err.contains("A2AD_TEST_UNSET_CARD_KEY is not set"), "{err}");
    assert!(!err.contains(SECRET_1), "no secret in {err}");

    // A short secret is refused without being shown.
    std::fs::write(&config, "card:\n  signing-keys:\n    - {kid: a, secret: short-secret-xyz}\n").unwrap();
    let output = a2ad(&args, &[]);
    let err = stderr(&output);
    assert!(!output.status.success() && err.contains("card.signing-keys[0]") && err.contains("32 bytes"), "{err}");
    assert!(!err.contains("short-secret-xyz"), "{err}");
}

/// `card show|verify` exit as `call` and `tasks` do: 7 when the node cannot be reached or
/// does not serve a card, 2 on a usage error; only a card that does not verify is 1.
#[actix_web::test]
async fn card_commands_exit_like_call_on_network_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), "node.yml", &[("k1", SECRET_1)]);
    let config = config.to_str().unwrap();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    assert_fails_with(7, &["card", "show", &down], "cannot fetch");
    assert_fails_with(7, &["card", "verify", &down, "--config", config], "cannot fetch");
    let no_card = serve_documents(HashMap::new());
    assert_fails_with(7, &["card", "show", &no_card], "HTTP 404");
    assert_fails_with(7, &["card", "verify", &no_card, "--config", config], "HTTP 404");
    let not_json = serve_documents(HashMap::from([("/.well-known/agent-card.json".to_owned(), "<html>".to_owned())]));
    assert_fails_with(7, &["card", "show", &not_json], "is not JSON");
    assert_fails_with(2, &["card", "show", "not a url"], "is not a URL");
    assert_fails_with(2, &["card", "verify", "not a url", "--config", config], "is not a URL");
    let missing = dir.path().join("missing.json");
    let err = assert_fails_with(2, &["card", "verify", &down, "--jwks", missing.to_str().unwrap()], "cannot read");
    assert!(!err.contains(SECRET_1), "{err}");
}

/// The signature covers the card as served in both modes: the pure 1.0 card, and, with
/// `card.compat-v03` and authentication on, the card whose security schemes carry the 0.3
/// fields beside the 1.0 wrapper (and the 0.3 top-level fields). Both verify.
#[actix_web::test]
async fn a_signed_card_verifies_with_and_without_card_compat_v03() {
    let keys = KeySet::from_keys(&[key("k1", SECRET_1).signing_key()]);
    for compat in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let node_config = config_file(dir.path(), "node.yml", &[("k1", SECRET_1)]);
        let mut text = std::fs::read_to_string(&node_config).unwrap();
        text.push_str(&format!("  compat-v03: {compat}\n"));
        text.push_str("auth:\n  bearer-tokens: [{token: interop-token, tenant: t, principal: p}]\n");
        std::fs::write(&node_config, text).unwrap();
        let node = NodeProcess::start(dir.path(), &["--config", node_config.to_str().unwrap()]);
        let (_, card) = fetch_card(&node.url).await;
        let bearer = &card["securitySchemes"]["bearerAuth"];
        assert_eq!(bearer["httpAuthSecurityScheme"]["scheme"], "bearer");
        if compat {
            assert_eq!(
                (bearer["type"].as_str(), bearer["scheme"].as_str()),
                (Some("http"), Some("bearer")),
                "{bearer}"
            );
            assert_eq!(card["protocolVersion"], "0.3.0");
        } else {
            crate::card::assert_pure_1_0(&card);
        }
        assert_eq!(a2ad::card_signing::verify_json(&card, &keys).unwrap(), "k1", "compat {compat}");
        // Read into a2ad's card model and verified again: the model writes it back as served.
        let parsed: a2ad_protocol::AgentCard = serde_json::from_value(card).unwrap();
        assert_eq!(a2ad::card_signing::verify(&parsed, &keys).unwrap(), "k1", "compat {compat}");
        assert_verified(&node.url, &["--config", node_config.to_str().unwrap()], &[], "k1");
    }
}
