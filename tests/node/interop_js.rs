//! Interop with the official JavaScript client: `tests/interop/js/client_check.mjs`
//! (@a2a-js/sdk 1.x, pinned in tests/interop/js/package.json) drives a real node.
//! `scripts/test.sh` installs it with `scripts/interop-js.sh` and sets `A2AD_INTEROP_JS`
//! to the script's path (and `A2AD_REQUIRE_INTEROP=1`, so that a missing install fails
//! instead of skipping).

use crate::interop::{interop_node, interop_tool, run_check};

#[actix_web::test]
async fn the_official_javascript_client_passes_every_check() {
    let Some(script) = interop_tool("A2AD_INTEROP_JS", "@a2a-js/sdk") else { return };
    let node = interop_node();
    let args = vec![script, node.node.url.clone().into()];
    run_check("node".into(), args, "interop-js: 8 passed, 0 failed".into()).await;
}
