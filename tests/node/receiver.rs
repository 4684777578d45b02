//! A real webhook receiver on loopback, recording every request it gets.
//!
//! Paths choose the behaviour: `/ok` answers 200; `/flaky/N` answers 500 to the first N
//! requests of each event id, then 200; `/gone` answers 404 until `set_gone_ok(true)`;
//! `/slow` holds the first request of each event id for 3 s, then answers 200; `/hang`
//! never answers (the request is recorded with status 0 as it arrives).

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: serde_json::Value,
    pub status: u16,
}

impl Received {
    pub fn event_id(&self) -> String {
        self.headers.get("x-a2a-event-id").cloned().unwrap_or_default()
    }
}

#[derive(Default)]
struct State {
    received: Vec<Received>,
    seen: HashMap<(String, String), usize>,
    gone_ok: bool,
}

#[derive(Clone)]
pub struct Receiver {
    pub base: String,
    state: Arc<Mutex<State>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = web::Data::new(Arc::clone(&state));
        let server = HttpServer::new(move || App::new().app_data(shared.clone()).default_service(web::to(receive)))
            .workers(1)
            .bind("127.0.0.1:0")
            .unwrap();
        let base = format!("http://{}", server.addrs()[0]);
        actix_web::rt::spawn(server.run());
        Receiver { base, state }
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    pub fn set_gone_ok(&self, ok: bool) {
        self.state.lock().unwrap().gone_ok = ok;
    }
}

async fn receive(req: HttpRequest, body: web::Bytes, state: web::Data<Arc<Mutex<State>>>) -> HttpResponse {
    let path = req.path().to_owned();
    let headers: HashMap<String, String> = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let event = headers.get("x-a2a-event-id").cloned().unwrap_or_default();
    let (status, delay) = {
        let mut s = state.lock().unwrap();
        let seen = s.seen.entry((path.clone(), event)).or_insert(0);
        *seen += 1;
        let n = *seen;
        let status = match path.as_str() {
            "/gone" if !s.gone_ok => 404,
            p if p.starts_with("/flaky/") => {
                let fails: usize = p.trim_start_matches("/flaky/").parse().unwrap_or(0);
                if n <= fails {
                    500
                } else {
                    200
                }
            }
            _ => 200,
        };
        let status = if path == "/hang" { 0 } else { status };
        let delay = path == "/slow" && n == 1;
        let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        s.received.push(Received { path: path.clone(), headers, body, status });
        (status, delay)
    };
    if delay {
        actix_web::rt::time::sleep(Duration::from_secs(3)).await;
    }
    if status == 0 {
        std::future::pending::<()>().await;
    }
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap()).finish()
}
