//! The operator's tools in the real binary: `a2ad config check` (start-up's checks, the
//! effective values with secrets masked, nothing started), `a2ad auth hash-token` and
//! `hash-password` (secrets from stdin, lines that a node then accepts), errors that
//! name the variable or flag a bad value came from, size units on every size key, and a
//! client hint that tells a wrong credential from a missing one.

use crate::support::{send_params, NodeProcess};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs the binary with `args` in `cwd`, `stdin` piped in, `env` set.
fn a2ad(cwd: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2ad"))
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn config_check_prints_the_effective_values_masked_and_starts_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    // A port in use does not matter: nothing is bound.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = format!(
        "listen: {}\ndata-dir: store\nlimits:\n  rest-body-limit: 64KiB\nmetrics-token: metrics-secret-1\n\
         push-redis-url: 'redis://:redis-pw-1@127.0.0.1:1/0'\n\
         auth:\n  bearer-tokens: [{{token: bearer-secret-1, tenant: acme, principal: ci}}]\n\
         agents:\n  - id: sh\n    kind: command\n    command: {{argv: [/bin/sh], env: {{API_TOKEN: env-secret-1, MODE: fast}}}}\n",
        taken.local_addr().unwrap()
    );
    std::fs::write(cwd.path().join("a2ad.yml"), config).unwrap();
    let verdict = a2ad(cwd.path(), &["config", "check", "a2ad.yml"], "", &[]);
    assert!(verdict.status.success(), "{}", text(&verdict.stderr));
    assert!(verdict.stdout.is_empty(), "the effective config only with --print");
    let out = a2ad(cwd.path(), &["config", "check", "--print", "a2ad.yml"], "", &[("A2AD_IDLE_TIMEOUT", "2m")]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.trim_end(), "a2ad: a2ad.yml is valid (not checked: ports, the data dir, Redis)");
    let effective: serde_yaml_ng::Value = serde_yaml_ng::from_str(&stdout).expect("YAML");
    assert_eq!(effective["limits"]["rest-body-limit"], 65536);
    assert_eq!(effective["idle-timeout"], "120s", "the environment applies as at start-up");
    assert_eq!(effective["agents"][0]["command"]["env"]["MODE"], "fast");
    for secret in ["metrics-secret-1", "redis-pw-1", "bearer-secret-1", "env-secret-1"] {
        assert!(!stdout.contains(secret), "{secret} is masked: {stdout}");
    }
    assert!(stdout.contains("redis://:<redacted>@127.0.0.1:1/0"), "{stdout}");
    assert!(!cwd.path().join("store").exists(), "no data dir");
}

#[test]
fn config_check_refuses_in_one_line_naming_the_key_variable_flag_or_agent() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a2ad.yml"), "body-limit: 1MiB\n").unwrap();
    let refused = |args: &[&str], env: &[(&str, &str)]| {
        let out = a2ad(cwd.path(), args, "", env);
        assert!(!out.status.success());
        let stderr = text(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        stderr.trim_end().to_owned()
    };
    let check = ["config", "check", "a2ad.yml"];
    assert_eq!(
        refused(&check, &[("A2AD_BODY_LIMIT", "lots")]),
        "a2ad: invalid configuration: environment variable A2AD_BODY_LIMIT (config key `body-limit`): `lots` is not a size (try `1MiB`)"
    );
    let serve = ["serve", "--config", "a2ad.yml", "--body-limit", "lots", "--data-dir", "store"];
    assert_eq!(
        refused(&serve, &[]),
        "a2ad: invalid configuration: flag --body-limit (config key `body-limit`): `lots` is not a size (try `1MiB`)"
    );
    std::fs::write(cwd.path().join("a2ad.yml"), "body-limit: lots\n").unwrap();
    assert!(refused(&check, &[]).starts_with("a2ad: invalid configuration: config key `body-limit`: "));
    std::fs::write(
        cwd.path().join("a2ad.yml"),
        "agents:\n  - {id: gone, kind: command, command: {argv: [/no/such]}}\n",
    )
    .unwrap();
    assert_eq!(refused(&check, &[]), "a2ad: agents[0].command.argv: agent `gone`: program `/no/such`: does not exist");
    std::fs::write(cwd.path().join("a2ad.yml"), "extended-card: true\n").unwrap();
    assert!(refused(&check, &[]).contains("extended-card needs authentication"), "start-up's own checks");
    assert!(!cwd.path().join("store").exists() && !cwd.path().join("a2ad-data").exists());
}

#[test]
fn the_hash_commands_read_the_secret_from_stdin_never_argv() {
    let cwd = tempfile::tempdir().unwrap();
    let out = a2ad(cwd.path(), &["auth", "hash-token", "--principal", "ci", "tok-from-argv"], "", &[]);
    assert_eq!(out.status.code(), Some(2), "no secret argument: {}", text(&out.stderr));
    let out = a2ad(cwd.path(), &["auth", "hash-token", "--principal", "ci"], "", &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no secret given"), "{}", text(&out.stderr));
    // Bad names are refused before any secret is read.
    let out = a2ad(cwd.path(), &["auth", "hash-token", "--principal", "ci", "--tenant", "bad tenant"], "", &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).starts_with("a2ad: auth.bearer-tokens[0].tenant: "), "{}", text(&out.stderr));
    let out = a2ad(cwd.path(), &["auth", "hash-password", "--user", "a:b"], "", &[]);
    assert_eq!(
        text(&out.stderr).trim_end(),
        "a2ad: auth.basic-users[0].user: must be non-empty, without `:` or control characters"
    );
    let out = a2ad(cwd.path(), &["auth", "hash-token", "--principal", "ci"], "t0k3n-s3cret\n", &[]);
    assert!(out.status.success());
    assert!(!text(&out.stdout).contains("t0k3n-s3cret"), "the token itself is never printed");
}

/// The printed blocks, pasted into a config, let those credentials in; a wrong token is
/// told apart from a missing one by `a2ad call`.
#[actix_web::test]
async fn hashed_credentials_pasted_into_a_config_are_accepted() {
    let cwd = tempfile::tempdir().unwrap();
    let token =
        a2ad(cwd.path(), &["auth", "hash-token", "--tenant", "acme", "--principal", "ci"], "tok-123456789\n", &[]);
    let password = a2ad(
        cwd.path(),
        &["auth", "hash-password", "--user", "alice", "--tenant", "acme", "--iterations", "1000"],
        "pa ss word",
        &[],
    );
    assert!(token.status.success() && password.status.success());
    let token: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text(&token.stdout)).unwrap();
    let password: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text(&password.stdout)).unwrap();
    let config = json!({"auth": {
        "bearer-tokens": token["auth"]["bearer-tokens"],
        "basic-users": password["auth"]["basic-users"],
    }});
    std::fs::write(cwd.path().join("a2ad.yml"), serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    let node = NodeProcess::start(cwd.path(), &["--config", "a2ad.yml", "--data-dir", "data"]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("hi", json!({}))});
    let client = reqwest::Client::new();
    let by_token = client.post(&node.url).bearer_auth("tok-123456789").json(&body).send().await.unwrap();
    assert_eq!(by_token.status(), 200);
    let by_password = client.post(&node.url).basic_auth("alice", Some("pa ss word")).json(&body).send().await.unwrap();
    assert_eq!(by_password.status(), 200);
    let wrong = client.post(&node.url).basic_auth("alice", Some("pa ss word\n")).json(&body).send().await.unwrap();
    assert_eq!(wrong.status(), 401, "the password is taken as given, less one line end");
    let challenge = |response: &reqwest::Response| response.headers()["www-authenticate"].to_str().unwrap().to_owned();
    let wrong = client.post(&node.url).bearer_auth("tok-wrong").json(&body).send().await.unwrap();
    assert!(
        challenge(&wrong).starts_with(r#"Bearer realm="a2ad", error="invalid_token", Basic"#),
        "{}",
        challenge(&wrong)
    );
    let missing = client.post(&node.url).json(&body).send().await.unwrap();
    assert!(!challenge(&missing).contains("error="), "a missing token is not an invalid one: {}", challenge(&missing));

    let url = node.url.clone();
    let call = |token: Option<&str>| {
        let mut args = vec!["call", url.as_str(), "hello"];
        if let Some(token) = token {
            args.extend(["--token", token]);
        }
        let out = a2ad(cwd.path(), &args, "", &[]);
        (out.status.code(), text(&out.stderr))
    };
    let (code, missing) = call(None);
    assert_eq!(code, Some(8));
    assert!(missing.contains("pass credentials with --token"), "{missing}");
    let (code, wrong) = call(Some("tok-wrong"));
    assert_eq!(code, Some(8));
    assert!(wrong.contains("refused the credentials sent"), "{wrong}");
    assert!(!wrong.contains("tok-wrong"), "the token is not echoed: {wrong}");
    assert_eq!(call(Some("tok-123456789")).0, Some(0));
}

/// `limits.rest-body-limit` takes units, and the limit holds on the HTTP+JSON binding.
#[actix_web::test]
async fn size_keys_take_units_on_every_limit() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a2ad.yml"), "limits:\n  rest-body-limit: 2KiB\n  grpc-message-limit: 1MiB\n")
        .unwrap();
    let node = NodeProcess::start(cwd.path(), &["--config", "a2ad.yml", "--data-dir", "data"]);
    let client = reqwest::Client::new();
    let url = format!("{}/a2a/message:send", node.url.trim_end_matches('/'));
    let send = |text: String| {
        let body = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}});
        client.post(&url).header("A2A-Version", "1.0").json(&body).send()
    };
    assert_eq!(send("small".into()).await.unwrap().status(), 200);
    assert_eq!(send("x".repeat(3000)).await.unwrap().status(), 413, "2KiB is 2048 bytes");
}

/// `a2ad auth <args>` on a pseudo-terminal (util-linux `script`): each answer is typed
/// once its prompt has shown; returns everything the terminal displayed.
fn on_a_terminal(args: &str, answers: &[(&str, &str)]) -> String {
    use std::io::Read;
    let command = format!("{} auth {args}", env!("CARGO_BIN_EXE_a2ad"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("util-linux script runs");
    let (mut stdin, mut stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let mut shown = Vec::new();
    for (prompt, answer) in answers {
        let mut byte = [0u8; 1];
        while !String::from_utf8_lossy(&shown).ends_with(prompt) {
            assert_eq!(stdout.read(&mut byte).unwrap(), 1, "the prompt {prompt:?} shows: {}", text(&shown));
            shown.push(byte[0]);
        }
        stdin.write_all(format!("{answer}\n").as_bytes()).unwrap();
    }
    stdout.read_to_end(&mut shown).unwrap();
    drop(stdin);
    child.wait().unwrap();
    text(&shown)
}

#[test]
fn on_a_terminal_the_secret_is_prompted_for_without_echo() {
    let shown = on_a_terminal("hash-token --principal ci", &[("token: ", "tty-secret-1")]);
    assert!(!shown.contains("tty-secret-1"), "not echoed: {shown}");
    let cwd = tempfile::tempdir().unwrap();
    let piped = a2ad(cwd.path(), &["auth", "hash-token", "--principal", "ci"], "tty-secret-1\n", &[]);
    assert_eq!(shown.replace("\r\n", "\n").trim_start_matches("token: \n"), text(&piped.stdout), "the same entry");
    let shown =
        on_a_terminal("hash-password --user al --iterations 1000", &[("password: ", "pw-one"), ("again: ", "pw-two")]);
    assert!(shown.contains("a2ad: the two entries differ") && !shown.contains("pw-"), "{shown}");
}
