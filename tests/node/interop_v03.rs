//! Interop with the official Python client of A2A 0.3: `tests/interop/v03/client_check.py`
//! (a2a-sdk 0.3.x) drives a real node over the 0.3 JSON-RPC methods on `POST /` and the
//! 0.3 HTTP+JSON routes under `/v1/`, discovering both from the node's card.
//! `scripts/test.sh` builds the venv and sets `A2AD_INTEROP_PYTHON_03`.

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
