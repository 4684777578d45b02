//! Interop with the official JavaScript client: `tests/interop/js/client_check.mjs`
//! (@a2a-js/sdk 1.x, pinned in tests/interop/js/package.json) drives a real node.
//! `scripts/test.sh` installs it with `scripts/interop-js.sh` and sets `A2AD_INTEROP_JS`
//! to the script's path (and `A2AD_REQUIRE_INTEROP=1`, so that a missing install fails
//! instead of skipping).

use crate::support::NodeProcess;
use std::path::PathBuf;
use std::process::Command;

#[actix_web::test]
async fn the_official_javascript_client_passes_every_check() {
    let Some(script) = std::env::var_os("A2AD_INTEROP_JS") else {
        assert!(
            std::env::var_os("A2AD_REQUIRE_INTEROP").is_none(),
            "A2AD_REQUIRE_INTEROP is set but A2AD_INTEROP_JS is not"
        );
        eprintln!("skipped: run scripts/test.sh (it sets A2AD_INTEROP_JS) for the @a2a-js/sdk interop check");
        return;
    };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cwd = tempfile::tempdir().unwrap();
    let config = repo.join("tests/interop/a2ad.yml");
    let data = cwd.path().join("data");
    let node =
        NodeProcess::start(cwd.path(), &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    let url = node.url.clone();
    let output = actix_web::rt::task::spawn_blocking(move || Command::new("node").arg(script).arg(url).output())
        .await
        .unwrap()
        .expect("the interop script runs (is node installed?)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "interop-js failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("interop-js: 8 passed, 0 failed"), "{stdout}");
    drop(node);
}
