//! The checks start-up makes before it touches anything: the credentials, the agents'
//! programs, the card's signing keys. `a2ad serve` and `a2ad stdio` run them first;
//! `a2ad config check` runs them alone, so a config it passes fails start-up only on what
//! needs the machine as the node finds it (a port in use, a locked or unwritable data
//! dir, an unreachable Redis).

use super::StartupError;
use crate::auth::Authenticator;
use crate::config::Config;

/// The URL the card is built with for the signing check: the keys sign whatever the card
/// holds, so any URL finds a key that cannot sign.
const PROBE_URL: &str = "http://127.0.0.1";

/// Checks what can be checked without the data dir or a listener; returns the
/// authenticator the node then uses.
pub fn preflight(config: &Config) -> Result<Authenticator, StartupError> {
    let auth = Authenticator::new(&config.auth, |name| std::env::var(name).ok())
        .map_err(|e| StartupError::Auth(e.to_string()))?;
    if config.extended_card && !auth.enabled() {
        return Err(StartupError::Auth(
            "extended-card needs authentication: the extended card is for authenticated callers only".into(),
        ));
    }
    crate::agents::programs::check_programs(&config.agents)?;
    let mut card = crate::card::build_card(config, PROBE_URL, None);
    crate::card::sign_with_config(&mut card, &config.card)
        .map_err(|source| StartupError::CardSigning { card: "card", source })?;
    Ok(auth)
}
