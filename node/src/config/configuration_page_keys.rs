//! Keeps the configuration reference (docs/configuration.md) honest, from the struct
//! itself: the keys are what [`Config`] serializes to, with every optional block and list
//! filled in so that their keys show too. The top-level keys are rows of the reference
//! table and every nested key is named on the page; and the other way round, the table
//! and the variable list name nothing the config does not accept.

use super::keys::key_of_variable;
use super::*;
use crate::agents::command::{CommandSettings, InputMode, OutputMode};
use crate::agents::openai::OpenAiSettings;
use crate::auth::{ApiKeyConfig, AuthConfig, BasicUserConfig, BearerTokenConfig, HashedSecret, IntegratorKeyConfig};
use crate::auth::{JwtConfig, JwtSecretConfig};

const PAGE: &str = include_str!("../../../docs/configuration.md");

/// The config with every optional value set and every list given one entry: the
/// compiler makes these literals name every field, so a new key cannot be left out.
fn everything_set() -> Config {
    let mut config = Config {
        public_url: Some("https://a2a.example".into()),
        grpc_public_address: Some("a2a.example:443".into()),
        listen_unix: Some("/run/a2ad.sock".into()),
        metrics_token: Some("token".into()),
        ..Config::default()
    };
    config.limits.rest_body_limit = Some(1);
    config.limits.grpc_message_limit = Some(1);
    config.allowed_cwds = vec!["/srv".into()];
    config.push.redis_url = Some("redis://h/".into());
    config.push.consumer_name = Some("n".into());
    config.redis_transport = Some(RedisTransportConfig {
        url: "redis://h/".into(),
        requests: "r".into(),
        group: "g".into(),
        consumer: "c".into(),
        block_ms: 10,
        claim_idle: Duration::from_secs(1),
        max_in_flight: 1,
        reply_maxlen: 1,
    });
    config.extensions = vec![ExtensionConfig {
        uri: "u".into(),
        description: Some("d".into()),
        required: true,
        params: Some(Default::default()),
    }];
    config.card.provider = Some(ProviderConfig { organization: "o".into(), url: "u".into() });
    config.card.signing_keys = vec![CardSigningKey::new("k", [7u8; MIN_CARD_SECRET_LEN]).unwrap()];
    config.retention.tenants.insert(
        "t".into(),
        retention::TenantRetention { max_age: Some(None), max_tasks: Some(None), interrupted_timeout: Some(None) },
    );
    config.auth = everything_auth();
    config.admin.tokens = vec![crate::auth::operators::AdminTokenConfig {
        token_sha256: Some("0".repeat(64).as_str().into()),
        token: Some(HashedSecret::from_plaintext("x")),
        name: "n".into(),
        role: crate::auth::operators::Role::Operator,
    }];
    config.agents = vec![AgentConfig::default_echo(), command_agent(), openai_agent()];
    config
}

fn everything_auth() -> AuthConfig {
    let hex = || Some(crate::auth::Redacted::from("0".repeat(64)));
    let plain = || Some(HashedSecret::from_plaintext("x"));
    AuthConfig {
        bearer_tokens: vec![BearerTokenConfig {
            token_sha256: hex(),
            token: plain(),
            tenant: "t".into(),
            principal: "p".into(),
        }],
        basic_users: vec![BasicUserConfig {
            user: "u".into(),
            password_hash: "h".into(),
            tenant: "t".into(),
            principal: "p".into(),
        }],
        api_keys: vec![ApiKeyConfig { key_sha256: hex(), key: plain(), tenant: "t".into(), principal: "p".into() }],
        integrator_keys: vec![IntegratorKeyConfig { key_sha256: hex(), key: plain(), tenant: "i".into() }],
        jwt: Some(JwtConfig {
            issuer: Some("i".into()),
            audience: Some("a".into()),
            ..JwtConfig::new(vec![JwtSecretConfig {
                kid: Some("k".into()),
                secret: Some("s".into()),
                secret_env: Some("V".into()),
            }])
        }),
        throttle: crate::auth::ThrottleConfig::default(),
    }
}

fn command_agent() -> AgentConfig {
    let settings = CommandSettings {
        argv: vec!["/bin/true".into()],
        input: InputMode::Text,
        output: OutputMode::Text,
        end_state: a2ad_protocol::TaskState::Completed,
        env: [("K".to_owned(), "V".to_owned())].into(),
        env_allow: vec!["PATH".into()],
        cwd: Some("/srv".into()),
        timeout: Duration::from_secs(1),
        max_output: 1,
        cancel_grace: Duration::from_secs(1),
    };
    AgentConfig { id: "c".into(), kind: AgentKind::Command(settings), ..AgentConfig::default_echo() }
}

fn openai_agent() -> AgentConfig {
    let settings = OpenAiSettings {
        base_url: "https://x".into(),
        model: "m".into(),
        api_key_env: Some("K".into()),
        system_prompt: Some("s".into()),
        options: Default::default(),
        timeout: Duration::from_secs(1),
    };
    AgentConfig { id: "o".into(), kind: AgentKind::OpenAi(settings), ..AgentConfig::default_echo() }
}

/// Every key of `value`, dotted, through mappings and the entries of lists (a list's
/// entries add no segment: `agents.kind`).
fn all_keys(value: &Value, prefix: &str, keys: &mut Vec<String>) {
    match value {
        Value::Mapping(map) => {
            for (key, nested) in map {
                let Some(key) = key.as_str() else { continue };
                let dotted = if prefix.is_empty() { key.to_owned() } else { format!("{prefix}.{key}") };
                // The tenants of `retention.tenants` and the entries of `env` are names, not keys.
                if !(prefix.ends_with("retention.tenants") || prefix.ends_with("command.env")) {
                    keys.push(dotted.clone());
                }
                all_keys(nested, &dotted, keys);
            }
        }
        Value::Sequence(items) => items.iter().for_each(|item| all_keys(item, prefix, keys)),
        _ => {}
    }
}

fn documented_keys() -> Vec<String> {
    let mut keys = Vec::new();
    all_keys(&serde_yaml_ng::to_value(everything_set()).unwrap(), "", &mut keys);
    keys.sort();
    keys.dedup();
    keys
}

/// The reference table's rows (the first cell of each row).
fn table_keys() -> String {
    let start = PAGE.find("# Configuration").expect("the page has a Configuration title");
    let section = &PAGE[start..];
    section.lines().filter(|l| l.starts_with("| `")).map(|l| l.split(" | ").next().unwrap_or("")).collect()
}

#[test]
fn every_top_level_key_is_a_row_of_the_reference_table() {
    let rows = table_keys();
    let missing: Vec<&String> = Config::keys()
        .iter()
        .filter(|k| !k.contains('.'))
        .filter(|k| !rows.contains(&format!("`{k}")) && !rows.contains(&format!(" `{k}")))
        .collect();
    assert!(missing.is_empty(), "top-level keys missing from the reference table: {missing:?}");
}

#[test]
fn every_nested_key_is_named_on_the_page() {
    let keys = documented_keys();
    assert!(keys.iter().any(|k| k == "auth.jwt.secrets.secret-env"), "the filled-in config reaches every block");
    let mut missing = Vec::new();
    for dotted in keys.iter().filter(|k| k.contains('.')) {
        let key = dotted.rsplit('.').next().unwrap_or(dotted);
        let named = [format!("`{key}"), format!(".{key}`"), format!("{key}:"), format!("{{{key},"), format!(", {key}")]
            .iter()
            .any(|form| PAGE.contains(form.as_str()));
        if !named {
            missing.push(dotted.clone());
        }
    }
    assert!(missing.is_empty(), "config keys never named in docs/configuration.md: {missing:?}");
}

#[test]
fn every_variable_the_page_lists_sets_a_key() {
    let start = PAGE.find("# Configuration").expect("the page has a Configuration title");
    let intro = &PAGE[start..start + PAGE[start..].find("| key |").expect("the reference table")];
    let listed: Vec<&str> = intro.split('`').filter(|w| w.starts_with("A2AD_") && !w.contains('<')).collect();
    assert!(listed.len() > 20, "the intro lists the variables: {listed:?}");
    let unknown: Vec<&&str> = listed.iter().filter(|var| key_of_variable(var).is_none()).collect();
    assert!(unknown.is_empty(), "A2AD_* variables in the Configuration intro that set no key: {unknown:?}");
}

#[test]
fn the_reference_table_names_no_stale_key() {
    let keys = documented_keys();
    let nested: Vec<&str> = keys.iter().filter_map(|k| k.rsplit_once('.').map(|(_, last)| last)).collect();
    let start = PAGE.find("# Configuration").expect("the page has a Configuration title");
    let table = &PAGE[start + PAGE[start..].find("| key |").expect("the reference table")..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let mut stale = Vec::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let cell = row.split(" | ").next().unwrap_or("");
        for name in cell.split('`').skip(1).step_by(2) {
            let mut path = name.split('.');
            let head = path.next().unwrap_or("");
            let known = Config::keys().iter().any(|k| k == head)
                && path.all(|part| part.starts_with('<') || nested.contains(&part));
            if !known {
                stale.push(name.to_string());
            }
        }
    }
    assert!(stale.is_empty(), "the configuration reference names keys the config does not accept: {stale:?}");
}
