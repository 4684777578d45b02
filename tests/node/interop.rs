//! Interop with the official Python client: `tests/interop/client_check.py` (a2a-sdk 1.x)
//! drives a real node over each binding the card lists (JSON-RPC, HTTP+JSON and gRPC),
//! with the SDK's own transports. `scripts/test.sh` builds the venv and sets
//! `A2AD_INTEROP_PYTHON` (and `A2AD_REQUIRE_INTEROP=1`, so that a missing venv fails
//! instead of skipping). The helpers here serve the JavaScript check too.

use crate::support::NodeProcess;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

/// The `--transport` values of the script, run in this order against one node.
const TRANSPORTS: [&str; 3] = ["jsonrpc", "rest", "grpc"];

/// The interpreter or script named by `var`, or `None` (skip) when it is unset and the
/// run does not require interop.
pub fn interop_tool(var: &str, what: &str) -> Option<OsString> {
    let tool = std::env::var_os(var);
    if tool.is_none() {
        let how = format!("run scripts/test.sh, which installs it and sets {var}");
        crate::skip::skip_for_want_of(&format!("{what} client"), "A2AD_REQUIRE_INTEROP", &how);
    }
    tool
}

/// A node running `tests/interop/a2ad.yml` on a fresh data dir.
pub struct InteropNode {
    pub node: NodeProcess,
    _cwd: tempfile::TempDir,
}

pub fn interop_node() -> InteropNode {
    let cwd = tempfile::tempdir().unwrap();
    let config = repo_path("tests/interop/a2ad.yml");
    let data = cwd.path().join("data");
    let node =
        NodeProcess::start(cwd.path(), &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    InteropNode { node, _cwd: cwd }
}

pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Runs a check program and requires it to succeed and print `summary` as a line.
pub async fn run_check(program: OsString, args: Vec<OsString>, summary: String) {
    let output = actix_web::rt::task::spawn_blocking(move || Command::new(program).args(args).output())
        .await
        .unwrap()
        .expect("the interop check runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{summary:?} expected, the check failed:\n{stdout}\n{stderr}");
    assert!(stdout.lines().any(|line| line == summary), "no {summary:?} line:\n{stdout}\n{stderr}");
}

#[actix_web::test]
async fn the_official_python_client_passes_every_check_over_every_binding() {
    let Some(python) = interop_tool("A2AD_INTEROP_PYTHON", "a2a-sdk") else { return };
    // One node for all three runs: the script only compares ListTasks with its own tasks.
    let node = interop_node();
    let script = repo_path("tests/interop/client_check.py");
    for transport in TRANSPORTS {
        let args = vec![script.clone().into(), "--transport".into(), transport.into(), node.node.url.clone().into()];
        run_check(python.clone(), args, format!("interop[{transport}]: 8 passed, 0 failed")).await;
    }
}

#[actix_web::test]
async fn the_python_client_shows_the_answer_of_a_text_mode_command_agent() {
    let Some(python) = interop_tool("A2AD_INTEROP_PYTHON", "a2a-sdk") else { return };
    let cwd = tempfile::tempdir().unwrap();
    let config = cwd.path().join("a2ad.yml");
    let program = r#"read -r q; echo "thinking about $q"; echo "the answer is 42""#;
    let yaml = format!(
        "agents:\n  - id: oracle\n    kind: command\n    command:\n      argv: [sh, -c, '{program}']\n      output: text\n"
    );
    std::fs::write(&config, yaml).unwrap();
    let node = NodeProcess::start(cwd.path(), &["--config", config.to_str().unwrap()]);
    let script = repo_path("tests/interop/text_answer.py");
    let args = vec![script.into_os_string(), node.url.clone().into(), "life".into()];
    let output = actix_web::rt::task::spawn_blocking(move || Command::new(python).args(args).output())
        .await
        .unwrap()
        .expect("the script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "state: TASK_STATE_COMPLETED",
            "answer: thinking about life\nthe answer is 42",
            "artifact output: thinking about life\nthe answer is 42"
        ]
        .iter()
        .flat_map(|l| l.lines())
        .collect::<Vec<_>>(),
        "the answer is the status message and the output artifact"
    );
}
