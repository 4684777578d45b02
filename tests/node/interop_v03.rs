//! Interop with the official Python client of A2A 0.3: `tests/interop/v03/client_check.py`
//! (a2a-sdk 0.3.x) drives a real node over the 0.3 JSON-RPC methods on `POST /` and the
//! 0.3 HTTP+JSON routes under `/v1/`, discovering both from the node's card, whose 0.3
//! fields `card.compat-v03: true` in `tests/interop/v03/a2ad.yml` turns on.
//! With authentication on (a bearer token), the client must read the card's HTTP bearer
//! scheme as such and pick its credential from it. `scripts/test.sh` builds the venv and
//! sets `A2AD_INTEROP_PYTHON_03`.

use crate::interop::{interop_tool, repo_path, run_check};
use crate::support::NodeProcess;

#[actix_web::test]
async fn the_python_0_3_client_passes_every_check_over_json_rpc_and_rest() {
    let Some(python) = interop_tool("A2AD_INTEROP_PYTHON_03", "a2a-sdk 0.3") else { return };
    let cwd = tempfile::tempdir().unwrap();
    let config = repo_path("tests/interop/v03/a2ad.yml");
    let data = cwd.path().join("data");
    let node =
        NodeProcess::start(cwd.path(), &["--config", config.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    let script = repo_path("tests/interop/v03/client_check.py");
    for transport in ["jsonrpc", "rest"] {
        let args = vec![script.clone().into(), "--transport".into(), transport.into(), node.url.clone().into()];
        run_check(python.clone(), args, format!("interop-v03[{transport}]: 8 passed, 0 failed")).await;
    }
}

/// The token the node with authentication requires.
const TOKEN: &str = "v03-interop-token";

#[actix_web::test]
async fn the_python_0_3_client_reads_the_bearer_scheme_and_passes_with_auth_on() {
    let Some(python) = interop_tool("A2AD_INTEROP_PYTHON_03", "a2a-sdk 0.3") else { return };
    let cwd = tempfile::tempdir().unwrap();
    let mut config = std::fs::read_to_string(repo_path("tests/interop/v03/a2ad.yml")).unwrap();
    config.push_str(&format!("auth:\n  bearer-tokens: [{{token: {TOKEN}, tenant: interop, principal: v03}}]\n"));
    let config_path = cwd.path().join("a2ad-auth.yml");
    std::fs::write(&config_path, config).unwrap();
    let data = cwd.path().join("data");
    let node = NodeProcess::start(
        cwd.path(),
        &["--config", config_path.to_str().unwrap(), "--data-dir", data.to_str().unwrap()],
    );
    let script = repo_path("tests/interop/v03/client_check.py");
    for transport in ["jsonrpc", "rest"] {
        let args = vec![
            script.clone().into(),
            "--transport".into(),
            transport.into(),
            "--token".into(),
            TOKEN.into(),
            node.url.clone().into(),
        ];
        run_check(python.clone(), args, format!("interop-v03[{transport}+bearer]: 9 passed, 0 failed")).await;
    }
}
