//! `a2ad config check FILE`: reads the config as `serve` would (the file, then the
//! `A2AD_*` variables), runs start-up's own checks ([`crate::startup::preflight`]: the
//! credentials, the agents' programs and `cwd`s, the card's keys), and prints the
//! effective values with every secret masked. It binds nothing and opens no data dir.

use super::SetupError;
use crate::config::Config;
use serde_yaml_ng::Value;
use std::path::Path;

/// What a masked value reads.
const MASK: &str = "<redacted>";

/// The effective config of `file` as YAML, secrets masked, once every check passed.
pub fn check(file: &Path) -> Result<String, SetupError> {
    let config = Config::load(Some(file), &Config::env_overrides(std::env::vars())).map_err(SetupError::Config)?;
    crate::startup::preflight(&config)?;
    Ok(effective_yaml(&config))
}

/// The config as YAML with its secrets masked. The auth entries, `metrics-token` and
/// the card's keys serialize masked already; what is masked here is what a plain string
/// can hide: a password in a URL (`redis://:pw@host`), and the command agents' `env`
/// values whose names look secret (`API_TOKEN`).
pub fn effective_yaml(config: &Config) -> String {
    let mut value = serde_yaml_ng::to_value(config).unwrap_or(Value::Null);
    mask(&mut value, None);
    serde_yaml_ng::to_string(&value).unwrap_or_default()
}

/// Masks in place; `key` is the mapping key `value` sits under.
fn mask(value: &mut Value, key: Option<&str>) {
    match value {
        Value::Mapping(map) => {
            let env = key == Some("env");
            for (k, v) in map.iter_mut() {
                let name = k.as_str();
                if env && name.is_some_and(crate::agents::stderr::looks_secret) {
                    *v = Value::from(MASK);
                } else {
                    mask(v, name);
                }
            }
        }
        Value::Sequence(items) => items.iter_mut().for_each(|item| mask(item, key)),
        Value::String(text) => {
            if let Some(masked) = without_url_password(text) {
                *text = masked;
            }
        }
        _ => {}
    }
}

/// `scheme://user:password@host…` with the password masked; `None` when there is none.
fn without_url_password(text: &str) -> Option<String> {
    let (scheme, rest) = text.split_once("://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    let colon = rest[..at].find(':')?;
    Some(format!("{scheme}://{}:{MASK}{}", &rest[..colon], &rest[at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_and_secret_env_values_are_masked() {
        assert_eq!(without_url_password("redis://:pw@h:6379/0").unwrap(), "redis://:<redacted>@h:6379/0");
        assert_eq!(without_url_password("rediss://u:p@h/x@y").unwrap(), "rediss://u:<redacted>@h/x@y");
        assert_eq!(without_url_password("redis://h:6379"), None);
        assert_eq!(without_url_password("https://u@h/"), None, "a user without a password is shown");
        let mut value: Value = serde_yaml_ng::from_str("env: {API_TOKEN: abc, LANG: C}\nurl: redis://:x@h/\n").unwrap();
        mask(&mut value, None);
        let shown = serde_yaml_ng::to_string(&value).unwrap();
        assert!(shown.contains("API_TOKEN: <redacted>") && shown.contains("LANG: C"), "{shown}");
        assert!(shown.contains("redis://:<redacted>@h/"), "{shown}");
    }
}
