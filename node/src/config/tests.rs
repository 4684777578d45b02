use super::*;
use std::io::Write;

fn load_text(yaml: &str, overrides: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(yaml.as_bytes()).unwrap();
    let overrides: Vec<Override> = overrides.iter().map(|(k, v)| Override::flag(k, *v)).collect();
    Config::load(Some(file.path()), &overrides)
}

#[test]
fn defaults_serve_echo_in_the_working_directory() {
    let c = Config::default_node();
    assert_eq!(c.agents, vec![AgentConfig::default_echo()]);
    assert_eq!(c.data_dir, PathBuf::from("a2ad-data"));
    assert_eq!(c.listen.port(), 8080);
}

#[test]
fn a_full_file_is_read() {
    let c = load_text(
        "listen: 127.0.0.1:9000\npublic-url: https://a2a.example.com/\nidle-timeout: 90s\nbody-limit: 2MiB\n\
         card:\n  name: Node\n  provider: {organization: Acme, url: https://acme.example}\n\
         agents:\n  - id: chat\n    kind: echo\n    tags: [t]\n    echo: {end-state: input-required, chunk-size: 4, chunk-delay: 10ms}\n",
        &[],
    )
    .unwrap();
    assert_eq!(c.public_url.as_deref(), Some("https://a2a.example.com"));
    assert_eq!(c.idle_timeout, Duration::from_secs(90));
    assert_eq!(c.body_limit, 2 << 20);
    assert_eq!(c.card.provider.unwrap().organization, "Acme");
    let AgentKind::Echo(echo) = &c.agents[0].kind else { panic!("an echo agent") };
    assert_eq!((echo.end_state, echo.chunk_size), (a2ad_protocol::TaskState::InputRequired, 4));
}

#[test]
fn unknown_keys_and_bad_values_name_the_key() {
    let e = load_text("listen: 127.0.0.1:1\nlisten-port: 3\n", &[]).unwrap_err().to_string();
    assert!(e.contains("listen-port"), "{e}");
    let e = load_text("agents:\n  - id: a\n    kind: echo\n    echo: {chunk-delay: 5 parsecs}\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("agents[0].echo.chunk-delay"), "{e}");
    let e = load_text("agents:\n  - id: a\n    kind: robot\n", &[]).unwrap_err().to_string();
    assert!(e.contains("agents[0].kind") && e.contains("robot"), "{e}");
    let e = load_text("body-limit: lots\n", &[]).unwrap_err().to_string();
    assert!(e.contains("body-limit"), "{e}");
    let e = load_text("agents: []\n", &[]).unwrap_err().to_string();
    assert!(e.contains("`agents`"), "{e}");
    let e = load_text("agents:\n  - {id: a, kind: echo}\n  - {id: a, kind: echo}\n", &[]).unwrap_err().to_string();
    assert!(e.contains("agents[1].id"), "{e}");
}

#[test]
fn store_cache_size_is_read_with_units_and_has_a_floor() {
    assert_eq!(Config::default().store_cache_size, a2ad_storage::DEFAULT_CACHE_BYTES);
    assert_eq!(load_text("store-cache-size: 16MiB\n", &[]).unwrap().store_cache_size, 16 << 20);
    let overridden = [("store-cache-size", "2MiB")];
    assert_eq!(load_text("store-cache-size: 16MiB\n", &overridden).unwrap().store_cache_size, 2 << 20);
    let e = load_text("store-cache-size: 512KiB\n", &[]).unwrap_err().to_string();
    assert!(e.contains("store-cache-size") && e.contains("at least 1MiB"), "{e}");
    let e = load_text("store-cache-size: plenty\n", &[]).unwrap_err().to_string();
    assert!(e.contains("store-cache-size"), "{e}");
}

#[test]
fn environment_overrides_the_file_and_flags_override_both() {
    let env = Config::env_overrides(
        [("A2AD_DATA_DIR", "/srv/a2ad"), ("A2AD_IDLE_TIMEOUT", "2m"), ("A2AD_HTTP_TOKEN", "x"), ("HOME", "/root")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    assert_eq!(env.len(), 2, "only known keys are taken: {env:?}");
    let mut all: Vec<(&str, &str)> = env.iter().map(|o| (o.key.as_str(), o.value.as_str())).collect();
    all.push(("idle-timeout", "3s"));
    let c = load_text("data-dir: here\nidle-timeout: 1s\n", &all).unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/srv/a2ad"));
    assert_eq!(c.idle_timeout, Duration::from_secs(3));
}

#[test]
fn agent_content_keys_have_defaults_and_name_the_key_at_fault() {
    let config = load_text("", &[]).unwrap();
    assert!(config.allowed_cwds.is_empty());
    assert_eq!(config.artifacts.inline_max, 4096);
    assert!(!config.thinking_exposure);
    let config = load_text(
        "allowed-cwds: [/srv/work]\nartifacts: {inline-max: 1KiB}\nthinking-exposure: true\n\
         input-parts: {text-types: [text/csv], media-types: [application/pdf]}\n",
        &[("allowed-cwds", "/a:/b")],
    )
    .unwrap();
    assert_eq!(config.allowed_cwds, vec![std::path::PathBuf::from("/a"), std::path::PathBuf::from("/b")]);
    assert_eq!(config.artifacts.inline_max, 1024);
    assert!(config.thinking_exposure);
    assert_eq!(config.input_parts.media_types, ["application/pdf"]);
    let err = load_text("allowed-cwds: [relative/dir]\n", &[]).unwrap_err().to_string();
    assert!(err.contains("allowed-cwds") && err.contains("not an absolute path"), "{err}");
    let err = load_text("artifacts: {inline-maxx: 1}\n", &[]).unwrap_err().to_string();
    assert!(err.contains("artifacts"), "{err}");
    assert_eq!(config.artifacts.links, crate::artifacts::ArtifactLinks::Http);
    let config = load_text("allowed-cwds: ['/srv/ws/{tenant}/{principal}']\nartifacts: {links: file}\n", &[]).unwrap();
    assert_eq!(config.artifacts.links, crate::artifacts::ArtifactLinks::File);
    assert_eq!(config.allowed_cwds, [std::path::PathBuf::from("/srv/ws/{tenant}/{principal}")]);
    let err = load_text("allowed-cwds: ['/srv/ws-{tenant}']\n", &[]).unwrap_err().to_string();
    assert!(err.contains("allowed-cwds") && err.contains("whole path component"), "{err}");
    let err = load_text("artifacts: {links: ftp}\n", &[]).unwrap_err().to_string();
    assert!(err.contains("artifacts.links"), "{err}");
    let yaml = "agents:\n  - id: c\n    kind: openai\n    openai: {base-url: ftp://x, model: m}\n";
    let err = load_text(yaml, &[]).unwrap_err().to_string();
    assert!(err.contains("agents[0].openai.base-url"), "{err}");
}

#[test]
fn the_0_1_heartbeat_window_is_read_and_checked() {
    assert_eq!(Config::default_node().dialect_01.heartbeat_window, Duration::from_secs(60));
    let c = load_text("dialect-01:\n  heartbeat-window: 250ms\n", &[]).unwrap();
    assert_eq!(c.dialect_01.heartbeat_window, Duration::from_millis(250));
    let e = load_text("dialect-01:\n  heartbeat-window: 0s\n", &[]).unwrap_err().to_string();
    assert!(e.contains("dialect-01.heartbeat-window"), "{e}");
    let e = load_text("dialect-01:\n  heartbeat-windw: 1s\n", &[]).unwrap_err().to_string();
    assert!(e.contains("heartbeat-windw"), "{e}");
}

#[test]
fn transports_are_off_by_default() {
    let c = Config::default_node();
    assert!(!c.websocket);
    assert_eq!(c.websocket_queue, DEFAULT_WEBSOCKET_QUEUE);
    assert_eq!((c.listen_unix.clone(), c.listen_unix_mode), (None, 0o660));
    assert_eq!(c.redis_transport, None);
}

#[test]
fn transport_keys_are_read_from_the_file_and_the_environment() {
    let c = load_text(
        "websocket: true\nwebsocket-queue: 8\nlisten-unix: /run/a2ad.sock\nlisten-unix-mode: 0640\n\
         redis-transport: {url: 'redis://127.0.0.1:6379/', claim-idle: 5s, consumer: n1}\n",
        &[],
    )
    .unwrap();
    assert!(c.websocket);
    assert_eq!(c.websocket_queue, 8);
    assert_eq!(c.listen_unix, Some(PathBuf::from("/run/a2ad.sock")));
    assert_eq!(c.listen_unix_mode, 0o640);
    let redis = c.redis_transport.unwrap();
    assert_eq!(
        (redis.requests.as_str(), redis.group.as_str(), redis.consumer.as_str()),
        ("a2ad:requests", "a2ad", "n1")
    );
    assert_eq!((redis.claim_idle, redis.block_ms), (Duration::from_secs(5), 2000));
    for mode in ["0600", "'0600'", "\"0600\"", "0o600", "'0o600'", " 0o600 "] {
        assert_eq!(load_text("", &[("listen-unix-mode", mode)]).unwrap().listen_unix_mode, 0o600, "{mode}");
    }
    let env =
        Config::env_overrides([("A2AD_REDIS_TRANSPORT".to_owned(), "{url: 'redis://h/'}".to_owned())].into_iter());
    assert_eq!(
        load_text("", &env.iter().map(|o| (o.key.as_str(), o.value.as_str())).collect::<Vec<_>>())
            .unwrap()
            .redis_transport
            .unwrap()
            .url,
        "redis://h/"
    );
}

#[test]
fn the_unix_mode_is_read_as_written_in_the_file() {
    for yaml in ["0660", "'0660'", "\"0660\"", "0o660", "'0o660'", "0o660  # owner and group"] {
        let c = load_text(&format!("websocket: true\nlisten-unix-mode: {yaml}\n"), &[]).unwrap();
        assert_eq!(c.listen_unix_mode, 0o660, "{yaml}");
    }
    assert_eq!(load_text("listen-unix-mode: 0000\n", &[]).unwrap().listen_unix_mode, 0);
    let env = load_text("listen-unix-mode: 0o660\n", &[("listen-unix-mode", "0o600")]).unwrap();
    assert_eq!(env.listen_unix_mode, 0o600, "the environment wins over the file");
    let refused = load_text("", &[("listen-unix-mode", "600")]).unwrap_err().to_string();
    assert!(refused.contains("listen-unix-mode"), "{refused}");
}

#[test]
fn bad_transport_values_name_their_key() {
    for (yaml, key) in [
        ("listen-unix-mode: 0999", "listen-unix-mode"),
        ("listen-unix-mode: 1777", "listen-unix-mode"),
        ("listen-unix-mode: 01777", "listen-unix-mode"),
        ("listen-unix-mode: 660", "listen-unix-mode"),
        ("listen-unix-mode: 0o1777", "listen-unix-mode"),
        ("listen-unix-mode: 0o", "listen-unix-mode"),
        ("listen-unix-mode: 0o68", "listen-unix-mode"),
        ("listen-unix-mode: 0x1b0", "listen-unix-mode"),
        ("listen-unix-mode: 432", "listen-unix-mode"),
        ("listen-unix-mode: rw-rw----", "listen-unix-mode"),
        ("listen-unix-mode: [0660]", "listen-unix-mode"),
        ("listen-unix-mode: ~", "listen-unix-mode"),
        ("websocket-queue: 0", "websocket-queue"),
        ("websocket-send-timeout: 0s", "websocket-send-timeout"),
        ("websocket: maybe", "websocket"),
        ("redis-transport: {url: 'http://x'}", "redis-transport.url"),
        ("redis-transport: {url: 'redis://x/', block-ms: 0}", "redis-transport.block-ms"),
        ("redis-transport: {url: 'redis://x/', claim-idle: 1ms}", "redis-transport.claim-idle"),
        ("redis-transport: {url: 'redis://x/', claim-idle: 3s}", "redis-transport.claim-idle"),
        ("redis-transport: {url: 'redis://x/', colour: red}", "redis-transport"),
        ("redis-transport: {requests: a}", "redis-transport"),
        ("store: redis", "redis.url"),
        ("store: postgres", "store"),
        ("store: redis\nredis: {url: 'http://x'}", "redis.url"),
        ("store: redis\nredis: {url: 'redis://x/', lease-ttl: 100ms}", "redis.lease-ttl"),
        ("store: redis\nredis: {url: 'redis://x/', connections: 0}", "redis.connections"),
        ("store: redis\nredis: {url: 'redis://x/', prefix: 'a{b}'}", "redis.prefix"),
        ("store: redis\nredis: {url: 'redis://x/', shards: 0}", "redis.shards"),
        ("store: redis\nredis: {url: 'redis://x/', shards: 1025}", "redis.shards"),
        ("store: redis\nredis: {url: 'unix:///tmp/r.sock', cluster: true}", "redis.url"),
        ("store: redis\nredis: {url: 'redis://x/'}\npush-stream: '{a}:push'", "push-stream"),
        ("redis: {url: 'redis://x/', colour: red}", "redis"),
    ] {
        let error = load_text(yaml, &[]).unwrap_err().to_string();
        assert!(error.contains(&format!("`{key}")), "{yaml}: {error}");
    }
}

#[test]
fn streaming_and_card_compat_v03_default_and_are_set_by_file_or_environment() {
    let config = load_text("", &[]).unwrap();
    assert!(config.streaming, "streaming is on by default");
    assert!(!config.card.compat_v03, "the card is pure 1.0 by default");
    let config = load_text("streaming: false\ncard:\n  compat-v03: true\n", &[]).unwrap();
    assert!(!config.streaming && config.card.compat_v03);

    let env = Config::env_overrides(
        [("A2AD_STREAMING", "false"), ("A2AD_CARD_COMPAT_V03", "true")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let pairs: Vec<(&str, &str)> = env.iter().map(|o| (o.key.as_str(), o.value.as_str())).collect();
    assert_eq!(pairs, [("card.compat-v03", "true"), ("streaming", "false")]);
    let overrides = pairs;
    // The nested key joins the file's `card:` block, next to what it already says.
    let config = load_text("card:\n  name: mine\n", &overrides).unwrap();
    assert!(config.card.compat_v03 && !config.streaming);
    assert_eq!(config.card.name, "mine");
    let config = load_text("card:\n", &overrides).unwrap();
    assert!(config.card.compat_v03, "an empty block takes the override");
    let e = load_text("", &[("card.compat-v03", "maybe")]).unwrap_err().to_string();
    assert!(e.contains("card.compat-v03"), "{e}");
}

#[test]
fn the_keys_come_from_the_struct_and_each_has_its_own_variable() {
    let keys = Config::keys();
    for key in ["listen", "data-dir", "push-queue", "push-lease-timeout-ms", "card.compat-v03", "dialect-01", "agents"]
    {
        assert!(keys.iter().any(|k| k == key), "{key} in {keys:?}");
    }
    let mut variables: Vec<String> = keys.iter().map(|k| keys::variable_suffix(k)).collect();
    variables.sort();
    let before = variables.len();
    variables.dedup();
    assert_eq!(before, variables.len(), "two keys would share an A2AD_* variable");
}

#[test]
fn the_defaults_serialize_to_a_file_that_reads_back_as_the_defaults() {
    let yaml = serde_yaml_ng::to_string(&Config::default()).unwrap();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(yaml.as_bytes()).unwrap();
    assert_eq!(Config::load(Some(file.path()), &[]).unwrap(), Config::default(), "{yaml}");
}

#[test]
fn secrets_never_serialize() {
    let mut config = Config { metrics_token: Some("hunter2-metrics".into()), ..Config::default() };
    config.card.signing_keys = vec![CardSigningKey::new("k", "hunter2-card-signing-key-0123456789").unwrap()];
    let yaml = serde_yaml_ng::to_string(&config).unwrap();
    assert!(!yaml.contains("hunter2"), "{yaml}");
    assert!(yaml.contains("<redacted>"), "{yaml}");
}

#[test]
fn push_isolation_keys_are_read_and_bad_ones_named() {
    let c = load_text(
        "push-destination-concurrency: 3\npush-tenant-concurrency: 7\npush-circuit-failures: 2\npush-circuit-open: 1m\n",
        &[],
    )
    .unwrap();
    assert_eq!((c.push.destination_concurrency, c.push.tenant_concurrency, c.push.circuit_failures), (3, 7, 2));
    assert_eq!(c.push.circuit_open, Duration::from_secs(60));
    for (yaml, key, why) in [
        ("push-destination-concurrency: 0\n", "push-destination-concurrency", "must be at least 1"),
        ("push-tenant-concurrency: 0\n", "push-tenant-concurrency", "must be at least 1"),
        ("push-circuit-failures: 0\n", "push-circuit-failures", "must be at least 1"),
        ("push-circuit-open: 0s\n", "push-circuit-open", "must be longer than 0s"),
    ] {
        let e = load_text(yaml, &[]).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(why), "{yaml}: {e}");
    }
}

#[test]
fn auth_throttle_keys_are_read_and_checked() {
    let c =
        load_text("auth:\n  throttle: {failures-per-minute: 5, password-checks: 2, basic-cache: 30s}\n", &[]).unwrap();
    assert_eq!(c.auth.throttle.failures_per_minute, 5.0);
    assert_eq!(c.auth.throttle.password_checks, 2);
    assert_eq!(c.auth.throttle.basic_cache, Duration::from_secs(30));
    assert_eq!(c.auth.throttle.failure_burst, 10, "the others keep their defaults");
    for (text, key) in [
        ("auth: {throttle: {failures-per-minute: -1}}\n", "auth.throttle.failures-per-minute"),
        ("auth: {throttle: {password-checks: 0}}\n", "auth.throttle.password-checks"),
        ("auth: {throttle: {basic-cache: soon}}\n", "basic-cache"),
        ("auth: {throttle: {failure-limit: 3}}\n", "failure-limit"),
    ] {
        let e = load_text(text, &[]).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    }
    let env = [("auth.throttle.password-checks", "3")];
    assert_eq!(load_text("", &env).unwrap().auth.throttle.password_checks, 3);
}

#[test]
fn the_packaged_sample_config_loads_as_the_unit_runs_it() {
    // `deploy/a2ad.yaml` is `/etc/a2ad/a2ad.yaml` of the Debian package; the unit adds
    // `--data-dir /var/lib/a2ad`.
    let c = load_text(include_str!("../../../deploy/a2ad.yaml"), &[("data-dir", "/var/lib/a2ad")]).unwrap();
    assert_eq!(c.listen, "127.0.0.1:8080".parse().unwrap(), "loopback, behind the proxy");
    assert_eq!(c.grpc_listen, Some("127.0.0.1:8081".parse().unwrap()));
    assert_eq!(c.tenancy.visibility, crate::auth::Visibility::Principal);
    assert_eq!(c.log_format, LogFormat::Json);
    assert_eq!((c.agents.len(), c.agents[0].id.as_str()), (1, "echo"));
    assert!(matches!(c.agents[0].kind, AgentKind::Echo(_)));
}

/// A bad value names where it came from: the file's key, the variable, or the flag; a
/// value inside a block a variable set is the variable's too.
#[test]
fn a_bad_value_names_its_variable_or_flag() {
    let env = Config::env_overrides([("A2AD_BODY_LIMIT".to_owned(), "lots".to_owned())].into_iter());
    let e = Config::load(None, &env).unwrap_err().to_string();
    assert_eq!(e, "environment variable A2AD_BODY_LIMIT (config key `body-limit`): `lots` is not a size (try `1MiB`)");
    let e = Config::load(None, &[Override::flag("idle-timeout", "soon")]).unwrap_err().to_string();
    assert!(e.starts_with("flag --idle-timeout (config key `idle-timeout`): "), "{e}");
    let env = Config::env_overrides([("A2AD_REDIS_TRANSPORT".to_owned(), "{url: 'http://h/'}".to_owned())].into_iter());
    let e = Config::load(None, &env).unwrap_err().to_string();
    assert!(e.starts_with("environment variable A2AD_REDIS_TRANSPORT (config key `redis-transport.url`)"), "{e}");
    let e = load_text("body-limit: lots\n", &[("idle-timeout", "5s")]).unwrap_err().to_string();
    assert!(e.starts_with("config key `body-limit`: "), "the file's own key: {e}");
}

/// Every size key takes units, the optional ones too.
#[test]
fn optional_size_keys_take_units() {
    let c = load_text("limits:\n  rest-body-limit: 64KiB\n  grpc-message-limit: 2MiB\n", &[]).unwrap();
    assert_eq!((c.limits.rest_body_limit, c.limits.grpc_message_limit), (Some(64 * 1024), Some(2 << 20)));
    let c = load_text("limits:\n  rest-body-limit: 1000\n  grpc-message-limit: null\n", &[]).unwrap();
    assert_eq!((c.limits.rest_body_limit, c.limits.grpc_message_limit), (Some(1000), None));
    let e = load_text("limits:\n  rest-body-limit: 1.5MiB\n", &[]).unwrap_err().to_string();
    assert!(e.contains("limits.rest-body-limit"), "{e}");
    let c = load_text("", &[("limits.rest-body-limit", "8KiB")]).unwrap();
    assert_eq!(c.limits.rest_body_limit, Some(8192));
}

#[test]
fn a_redis_cluster_spreads_the_store_over_sixteen_shards_unless_told() {
    let one = load_text("store: redis\nredis: {url: 'redis://x/'}", &[]).unwrap();
    assert_eq!(
        (one.redis.store_options().shards, one.redis.store_options().topology),
        (1, a2ad_storage::Topology::Single)
    );
    let cluster = load_text("store: redis\nredis: {url: 'redis://x/', cluster: true}", &[]).unwrap();
    assert_eq!(cluster.redis.store_options().shards, 16);
    assert_eq!(cluster.redis.store_options().topology, a2ad_storage::Topology::Cluster);
    let set = load_text("store: redis\nredis: {url: 'redis://x/', cluster: true, shards: 64}", &[]).unwrap();
    assert_eq!(set.redis.store_options().shards, 64);
}
