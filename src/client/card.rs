//! `a2ad card show|verify`: fetch a node's public card, print it or check its signatures.
//!
//! Exit codes follow the other client commands ([`super::exit`]), so a script tells "the
//! card does not verify" from "the node is down": 0 shown / verified, 1 not verified (the
//! verdict), 2 a usage error (not a URL, an invalid `--config`, an unreadable or
//! malformed `--jwks` file, no keys at all), 7 a transport error (the card or a
//! `--jwks-url` cannot be fetched, is not 2xx, is not JSON, or is larger than 4 MiB).

use super::{exit, ClientError};
use crate::card_signing::{KeySet, SigningError};
use crate::config::Config;
use serde_json::Value;
use std::path::PathBuf;

/// The largest card or JWKS document `a2ad card` reads.
const MAX_DOCUMENT_BYTES: usize = 4 << 20;

/// Where `a2ad card verify` finds the keys it trusts.
pub struct TrustedKeys {
    /// A config file whose `card.signing-keys` are trusted (with the `A2AD_*` env).
    pub config: Option<PathBuf>,
    /// JWKS files whose `oct` keys are trusted.
    pub jwks: Vec<PathBuf>,
    /// JWKS URLs whose `oct` keys are trusted.
    pub jwks_url: Vec<String>,
}

/// `a2ad card show URL`: prints the card as pretty JSON.
pub async fn show(url: &str) -> Result<i32, ClientError> {
    let card_url = crate::card::card_url(url).map_err(ClientError::Usage)?;
    let card = fetch_json(&http_client()?, &card_url).await?;
    let pretty = serde_json::to_string_pretty(&card).map_err(|e| ClientError::Transport(e.to_string()))?;
    println!("{pretty}");
    Ok(exit::COMPLETED)
}

/// `a2ad card verify URL`: prints `verified: kid K` (0), or why not on stderr (1).
pub async fn verify(url: &str, trusted: &TrustedKeys) -> Result<i32, ClientError> {
    let card_url = crate::card::card_url(url).map_err(ClientError::Usage)?;
    let client = http_client()?;
    let keys = trusted_keys(&client, trusted).await?;
    let card = fetch_json(&client, &card_url).await?;
    match crate::card_signing::verify_json(&card, &keys) {
        Ok(kid) => {
            println!("verified: kid {kid}");
            Ok(exit::COMPLETED)
        }
        Err(e @ SigningError::UnknownKid(_)) => {
            let known: Vec<&str> = keys.kids().collect();
            eprintln!("not verified: {e} (known kids: {})", known.join(", "));
            Ok(exit::FAILED)
        }
        Err(e) => {
            eprintln!("not verified: {e}");
            Ok(exit::FAILED)
        }
    }
}

/// The keys of the config, the JWKS files and the JWKS URLs; none at all is a usage error.
async fn trusted_keys(client: &reqwest::Client, trusted: &TrustedKeys) -> Result<KeySet, ClientError> {
    let config = Config::load(trusted.config.as_deref(), &Config::env_overrides(std::env::vars()))
        .map_err(|e| ClientError::Usage(format!("invalid configuration: {e}")))?;
    let mut keys = crate::card::verification_keys(&config.card);
    for path in &trusted.jwks {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ClientError::Usage(format!("cannot read {}: {e}", path.display())))?;
        keys.add_jwks(&text).map_err(|e| ClientError::Usage(format!("JWKS file {}: {e}", path.display())))?;
    }
    for jwks_url in &trusted.jwks_url {
        let document = fetch_json(client, jwks_url).await?;
        keys.add_jwks(&document.to_string()).map_err(|e| ClientError::Transport(format!("JWKS {jwks_url}: {e}")))?;
    }
    if keys.is_empty() {
        return Err(ClientError::Usage(
            "no keys to verify with: pass --config (card.signing-keys), --jwks FILE or --jwks-url URL".into(),
        ));
    }
    Ok(keys)
}

fn http_client() -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .user_agent(concat!("a2ad/", env!("CARGO_PKG_VERSION")))
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| ClientError::Transport(format!("cannot start an HTTP client: {e}")))
}

/// GETs `url` and parses its JSON body; every failure is a transport error.
async fn fetch_json(client: &reqwest::Client, url: &str) -> Result<Value, ClientError> {
    let cannot = |what: &str, e: &reqwest::Error| {
        ClientError::Transport(format!("cannot {what} {url}: {}", super::transport::root_cause(e)))
    };
    let mut response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| cannot("fetch", &e))?;
    if !response.status().is_success() {
        return Err(ClientError::Transport(format!("cannot fetch {url}: HTTP {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| cannot("read", &e))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_DOCUMENT_BYTES {
            return Err(ClientError::Transport(format!("{url}: the document is larger than 4 MiB")));
        }
    }
    serde_json::from_slice(&body).map_err(|_| ClientError::Transport(format!("{url} is not JSON")))
}
