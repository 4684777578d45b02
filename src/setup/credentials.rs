//! `a2ad auth hash-token` and `a2ad auth hash-password`: the `auth:` entries the config
//! asks for, made from a secret read from stdin or a prompt ([`super::secret_input`]).
//! The printed block is read back through the node's own checks before it is shown, so
//! what is pasted is what start-up accepts.

use super::secret_input::read_secret;
use super::SetupError;
use crate::auth::{hash_password, AuthConfig, Authenticator, HashedSecret, MIN_PBKDF2_ITERATIONS};
use serde_yaml_ng::{Mapping, Value};

/// A bearer token's entry: `token-sha256` (the token's SHA-256), tenant and principal.
pub fn token_entry(tenant: &str, principal: &str) -> Result<String, SetupError> {
    // The names are checked before the secret is asked for.
    let placeholder = HashedSecret::from_plaintext("-").to_hex();
    auth_block("bearer-tokens", &[("token-sha256", &placeholder), ("tenant", tenant), ("principal", principal)])?;
    let token = read_secret("token: ", false)?;
    // The node trims the header's value before hashing it: a token is never padded.
    let digest = HashedSecret::from_plaintext(token.trim()).to_hex();
    let entry = [("token-sha256", digest.as_str()), ("tenant", tenant), ("principal", principal)];
    auth_block("bearer-tokens", &entry)
}

/// A Basic user's entry: the user, a PBKDF2 `password-hash` (random salt, `iterations`
/// rounds), tenant and principal.
pub fn password_entry(user: &str, tenant: &str, principal: &str, iterations: u32) -> Result<String, SetupError> {
    // The names are checked before the password is asked for (with a cheap hash).
    let placeholder = hash_password("-", MIN_PBKDF2_ITERATIONS);
    let names = [("user", user), ("password-hash", placeholder.as_str()), ("tenant", tenant), ("principal", principal)];
    auth_block("basic-users", &names)?;
    let password = read_secret("password: ", true)?;
    let hash = hash_password(&password, iterations);
    let entry = [("user", user), ("password-hash", hash.as_str()), ("tenant", tenant), ("principal", principal)];
    auth_block("basic-users", &entry)
}

/// `auth: {<list>: [<entry>]}` as YAML, once the node's checks accept it.
fn auth_block(list: &str, entry: &[(&str, &str)]) -> Result<String, SetupError> {
    let fields: Mapping = entry.iter().map(|(k, v)| (Value::from(*k), Value::from(*v))).collect();
    let mut block = Mapping::new();
    block.insert(list.into(), Value::Sequence(vec![Value::Mapping(fields)]));
    let auth = Value::Mapping(block);
    let checked: AuthConfig =
        serde_yaml_ng::from_value(auth.clone()).map_err(|e| SetupError::Entry(format!("auth.{list}: {e}")))?;
    Authenticator::new(&checked, |_| None).map_err(|e| SetupError::Entry(e.to_string()))?;
    let mut root = Mapping::new();
    root.insert("auth".into(), auth);
    let yaml = serde_yaml_ng::to_string(&Value::Mapping(root)).map_err(|e| SetupError::Entry(e.to_string()))?;
    Ok(format!("# paste into the config file (add the entry to an `auth.{list}` list it has)\n{yaml}"))
}
