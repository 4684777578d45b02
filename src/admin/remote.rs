//! The online forms of `a2ad admin stats` and `a2ad push dead list|retry`: the same
//! reports, asked of a running node's admin API (`--url`, with an operator token in
//! `--token` or `A2AD_OPERATOR_TOKEN`) instead of read from a stopped node's data dir.

use super::AdminError;
use a2ad_node::admin::dead::DeadLetter;
use a2ad_node::admin::stats::StoreStats;
use serde_json::{json, Value};

/// The variable `--token` is read from when not given.
pub const TOKEN_ENV: &str = "A2AD_OPERATOR_TOKEN";

/// A client of one node's admin API.
pub struct AdminClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl AdminClient {
    /// `url` is the node's base URL (or its admin listener's).
    pub fn new(url: &str, token: &str) -> AdminClient {
        // A node that accepts the connection but never answers must not hold the command.
        let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(30)).build().unwrap_or_default();
        AdminClient { base: url.trim_end_matches('/').to_owned(), token: token.to_owned(), http }
    }

    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, AdminError> {
        let response = request.bearer_auth(&self.token).send().await.map_err(|e| {
            AdminError::Remote(format!("cannot reach {}: {}", self.base, crate::client::transport::root_cause(&e)))
        })?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body);
        }
        let message = body["error"]["message"].as_str().map(str::to_owned).unwrap_or_else(|| match status.as_u16() {
            404 => "no admin API here (is admin.tokens set, and is this its listener?)".to_owned(),
            _ => format!("HTTP {status}"),
        });
        Err(AdminError::Remote(format!("the node refused: {message}")))
    }

    async fn get(&self, path: &str) -> Result<Value, AdminError> {
        self.call(self.http.get(format!("{}/admin/v1{path}", self.base))).await
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, AdminError> {
        self.call(self.http.post(format!("{}/admin/v1{path}", self.base)).json(&body)).await
    }

    /// The store report of the running node (the status's `store`).
    pub async fn stats(&self) -> Result<StoreStats, AdminError> {
        let status = self.get("/status").await?;
        serde_json::from_value(status["store"].clone())
            .map_err(|e| AdminError::Remote(format!("unexpected status: {e}")))
    }

    /// The dead letters.
    pub async fn dead(&self) -> Result<Vec<DeadLetter>, AdminError> {
        let listed = self.get("/push/dead").await?;
        serde_json::from_value(listed["dead"].clone())
            .map_err(|e| AdminError::Remote(format!("unexpected dead letters: {e}")))
    }

    /// Queues the dead job `id` (or all) again; how many.
    pub async fn retry(&self, id: Option<&str>) -> Result<u64, AdminError> {
        let body = match id {
            Some(id) => json!({"id": id}),
            None => json!({"all": true}),
        };
        Ok(self.post("/push/dead/retry", body).await?["count"].as_u64().unwrap_or(0))
    }
}
