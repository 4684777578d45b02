//! Interop with the official Python client: `tests/interop/client_check.py` (a2a-sdk 1.x)
//! drives a real node. `scripts/test.sh` builds the venv and sets
//! `A2AD_INTEROP_PYTHON` (and `A2AD_REQUIRE_INTEROP=1`, so that a missing venv fails
//! instead of skipping).

use crate::support::NodeProcess;
use std::path::PathBuf;
use std::process::Command;

#[actix_web::test]
async fn the_official_python_client_passes_every_check() {
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
    let node =
        NodeProcess::start(cwd.path(), &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    let url = node.url.clone();
    let script = repo.join("tests/interop/client_check.py");
    let output = actix_web::rt::task::spawn_blocking(move || Command::new(python).arg(script).arg(url).output())
        .await
        .unwrap()
        .expect("the interop script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "interop failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("interop: 8 passed, 0 failed"), "{stdout}");
    drop(node);
}
