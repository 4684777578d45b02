//! The baseline: a bare actix-web handler that reads and parses the same JSON-RPC body
//! and answers a small JSON-RPC result. Run as a child process, on the same core budget
//! as the node.

use actix_web::{web, App, HttpResponse, HttpServer};
use serde_json::{json, Value};

async fn handle(body: web::Bytes) -> HttpResponse {
    match serde_json::from_slice::<Value>(&body) {
        Ok(request) => {
            let response = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"task": {"status": {"state": "TASK_STATE_COMPLETED"}}}});
            HttpResponse::Ok().content_type("application/json").body(response.to_string())
        }
        Err(_) => HttpResponse::BadRequest().finish(),
    }
}

/// Serves on 127.0.0.1:0 with one worker, printing the address, until killed.
pub fn serve() -> std::io::Result<()> {
    actix_web::rt::System::new().block_on(async {
        let server =
            HttpServer::new(|| App::new().route("/", web::post().to(handle))).workers(1).bind("127.0.0.1:0")?;
        println!("listening on http://{}", server.addrs()[0]);
        server.run().await
    })
}
