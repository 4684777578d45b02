//! Interop with the official Python client: `tests/interop/client_check.py` (a2a-sdk 1.x)
//! drives a real node over each binding the card lists (JSON-RPC, HTTP+JSON and gRPC),
//! with the SDK's own transports. `scripts/test.sh` builds the venv and sets
//! `A2AD_INTEROP_PYTHON` (and `A2AD_REQUIRE_INTEROP=1`, so that a missing venv fails
//! instead of skipping).

use crate::support::NodeProcess;
use std::path::PathBuf;
use std::process::Command;

/// The `--transport` values of the script, run in this order against one node.
const TRANSPORTS: [&str; 3] = ["jsonrpc", "rest", "grpc"];

#[actix_web::test]
async fn the_official_python_client_passes_every_check_over_every_binding() {
    let Some(python) = std::env::var_os("A2AD_INTEROP_PYTHON") else {
        assert!(
            std::env::var_os("A2AD_REQUIRE_INTEROP").is_none(),
            "A2AD_REQUIRE_INTEROP is set but A2AD_INTEROP_PYTHON is not"
        );
        eprintln!("skipped: run scripts/test.sh (it sets A2AD_INTEROP_PYTHON) for the a2a-sdk interop check");
        return;
    };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cwd = tempfile::tempdir().unwrap();
    let config = repo.join("tests/interop/a2ad.yml");
    let data = cwd.path().join("data");
    // One node for all three runs: the script only compares ListTasks with its own tasks.
    let node =
        NodeProcess::start(cwd.path(), &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    let script = repo.join("tests/interop/client_check.py");
    for transport in TRANSPORTS {
        let (python, script, url) = (python.clone(), script.clone(), node.url.clone());
        let output = actix_web::rt::task::spawn_blocking(move || {
            Command::new(python).arg(script).args(["--transport", transport]).arg(url).output()
        })
        .await
        .unwrap()
        .expect("the interop script runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "interop over {transport} failed:\n{stdout}\n{stderr}");
        let summary = format!("interop[{transport}]: 8 passed, 0 failed");
        assert!(stdout.lines().any(|line| line == summary), "no {summary:?} line:\n{stdout}\n{stderr}");
    }
    drop(node);
}
