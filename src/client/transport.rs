//! Talking to a node: card discovery, the interface picked from it, and one request or
//! stream per A2A method over JSON-RPC or HTTP+JSON.
//!
//! The card's `supportedInterfaces` are tried in order and the first binding this client
//! runs is used (the card lists them in the agent's order of preference). gRPC is not run
//! by the client; a node always offers JSON-RPC and HTTP+JSON as well.

use super::sse::SseStream;
use super::{AuthArgs, ClientError};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The largest non-streaming answer read.
const MAX_BODY_BYTES: usize = 16 << 20;

/// A binding the client runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
}

/// One interface of the node, ready to call.
pub struct Endpoint {
    /// How requests are framed: the first binding of the card the client runs.
    pub binding: Binding,
    /// The interface URL from the card (which may differ from the URL the user gave).
    pub url: String,
    /// The interface's tenant, sent in every request so a multi-tenant node routes it.
    pub tenant: Option<String>,
    /// The card's `capabilities.streaming` (absent counts as yes).
    pub streaming: bool,
    /// The URL the user gave (base or card URL), for hints that name another command.
    pub node_url: String,
    /// The card's first skill: the agent a context that named none is bound to.
    pub default_skill: Option<String>,
    client: reqwest::Client,
    headers: Vec<(&'static str, String)>,
}

impl Endpoint {
    /// Fetches the card at `url` (a base URL or the card's own) and picks its interface.
    pub async fn discover(url: &str, auth: &AuthArgs) -> Result<Endpoint, ClientError> {
        let card_url = crate::card::card_url(url).map_err(ClientError::Usage)?;
        let headers = auth.headers()?;
        // The card is fetched without credentials: any redirect may be followed.
        let card_client = http_client(reqwest::redirect::Policy::default())?;
        let client = http_client(same_origin_redirects())?;
        let response = card_client
            .get(&card_url)
            .header("Accept", "application/json")
            // Says it is a 1.0 client: a node with a strict card hints at `card.compat-v03`
            // to clients that send no version, and this one needs no hint.
            .header("A2A-Version", "1.0")
            .send()
            .await
            .map_err(|e| ClientError::Transport(format!("cannot reach {card_url}: {}", root_cause(&e))))?;
        if !response.status().is_success() {
            return Err(ClientError::Transport(format!(
                "cannot fetch the card {card_url}: HTTP {}",
                response.status()
            )));
        }
        let card: Value = read_json(response).await?;
        let (binding, interface_url, tenant) = pick_interface(&card).ok_or_else(|| {
            ClientError::Transport(format!("the card at {card_url} lists no JSONRPC or HTTP+JSON interface"))
        })?;
        if !headers.is_empty() && origin(&interface_url) != origin(&card_url) {
            // The card decides where requests go; say where the credentials are sent.
            eprintln!(
                "a2ad: the card sends requests to {}; credentials go there",
                origin(&interface_url).unwrap_or_default()
            );
        }
        let streaming = card["capabilities"]["streaming"].as_bool().unwrap_or(true);
        let node_url = super::render::for_terminal(url, false);
        let default_skill = card["skills"][0]["id"].as_str().map(str::to_owned);
        Ok(Endpoint { binding, url: interface_url, tenant, streaming, node_url, default_skill, client, headers })
    }

    /// Calls a unary method; returns its result.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let response = self.send(method, params).await?;
        let status = response.status();
        let body: Value = read_json(response).await?;
        if let Some(error) = body.get("error") {
            return Err(ClientError::Refused(super::render::error_text(error)));
        }
        if !status.is_success() {
            return Err(ClientError::Transport(format!("HTTP {status}")));
        }
        Ok(match self.binding {
            Binding::JsonRpc => body.get("result").cloned().unwrap_or(Value::Null),
            Binding::HttpJson => body,
        })
    }

    /// Calls a streaming method (SendStreamingMessage, SubscribeToTask).
    pub async fn stream(&self, method: &str, params: Value) -> Result<SseStream, ClientError> {
        let response = self.send(method, params).await?;
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_sse {
            return Ok(SseStream::new(response));
        }
        let status = response.status();
        let body: Value = read_json(response).await?;
        match body.get("error") {
            Some(error) => Err(ClientError::Refused(super::render::error_text(error))),
            None => Err(ClientError::Transport(format!("HTTP {status}: the node did not answer with a stream"))),
        }
    }

    async fn send(&self, method: &str, params: Value) -> Result<reqwest::Response, ClientError> {
        let request = match self.binding {
            Binding::JsonRpc => {
                let mut params = params;
                if let (Some(tenant), Some(fields)) = (&self.tenant, params.as_object_mut()) {
                    fields.entry("tenant").or_insert_with(|| json!(tenant));
                }
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
                self.client.post(&self.url).json(&body)
            }
            Binding::HttpJson => self.rest_request(method, params)?,
        };
        let mut request = request.header("A2A-Version", "1.0");
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| ClientError::Transport(format!("cannot reach {}: {}", self.url, root_cause(&e))))?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            return Err(ClientError::Refused(unauthorized_hint(&self.headers).into()));
        }
        Ok(response)
    }

    /// Whether `url` is on the origin of the node's interface: only there are the
    /// credentials sent to fetch a file.
    pub fn serves(&self, url: &str) -> bool {
        let scheme = url.split(':').next().unwrap_or("").to_ascii_lowercase();
        matches!(scheme.as_str(), "http" | "https") && origin(url).is_some() && origin(url) == origin(&self.url)
    }

    /// GETs an artifact file of the node (see [`Endpoint::serves`]) with the credentials;
    /// the response, once its status is a success.
    pub async fn fetch_file(&self, url: &str) -> Result<reqwest::Response, ClientError> {
        let mut request = self.client.get(url);
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| ClientError::Transport(format!("cannot reach {url}: {}", root_cause(&e))))?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(ClientError::Refused(format!("{url}: unauthorized (HTTP 401)")));
        }
        if !status.is_success() {
            return Err(ClientError::Refused(format!("{url}: HTTP {status}")));
        }
        Ok(response)
    }

    /// The HTTP+JSON route of a method: ids go in the path, the rest in the body (POST) or
    /// the query string (GET).
    fn rest_request(&self, method: &str, params: Value) -> Result<reqwest::RequestBuilder, ClientError> {
        let base = match &self.tenant {
            Some(tenant) => format!("{}/{tenant}", self.url.trim_end_matches('/')),
            None => self.url.trim_end_matches('/').to_owned(),
        };
        let mut fields = match params {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        let id = fields.remove("id").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let id = urlencode(&id);
        Ok(match method {
            "SendStreamingMessage" => self.client.post(format!("{base}/message:stream")).json(&fields),
            "SendMessage" => self.client.post(format!("{base}/message:send")).json(&fields),
            "CancelTask" => self.client.post(format!("{base}/tasks/{id}:cancel")).json(&fields),
            "SubscribeToTask" => self.client.get(format!("{base}/tasks/{id}:subscribe")),
            "GetTask" => self.client.get(format!("{base}/tasks/{id}")).query(&query(&fields)),
            "ListTasks" => self.client.get(format!("{base}/tasks")).query(&query(&fields)),
            other => return Err(ClientError::Usage(format!("{other} is not run over HTTP+JSON by this client"))),
        })
    }
}

/// What a 401 tells the user: with no credentials sent, how to send some; with some
/// sent, that the node refused them (a wrong or expired token, a mistyped password), so
/// the user checks the value rather than looks for a flag.
fn unauthorized_hint(sent: &[(&'static str, String)]) -> &'static str {
    match sent.is_empty() {
        true => "unauthorized (HTTP 401): pass credentials with --token, --api-key or --basic",
        false => {
            "unauthorized (HTTP 401): the node refused the credentials sent (check the value of --token / \
             A2AD_TOKEN, --api-key / A2AD_API_KEY or --basic / A2AD_BASIC)"
        }
    }
}

fn http_client(redirects: reqwest::redirect::Policy) -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .user_agent(concat!("a2ad/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .redirect(redirects)
        .build()
        .map_err(|e| ClientError::Transport(format!("cannot start an HTTP client: {e}")))
}

/// Requests carry the credentials, and an HTTP client drops only `Authorization` on a
/// redirect to another origin, not `X-Api-Key`: so a request follows redirects within its
/// own origin only (at most 10); a redirect elsewhere is answered as it is.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// The first interface whose binding this client runs: (binding, url, tenant). The client
/// speaks 1.0, so an interface of another major version (a 0.3 entry a card lists for 0.3
/// clients) is passed over; one without a version is taken.
pub fn pick_interface(card: &Value) -> Option<(Binding, String, Option<String>)> {
    let interfaces = card.get("supportedInterfaces")?.as_array()?;
    interfaces.iter().find_map(|interface| {
        let version = interface.get("protocolVersion").and_then(Value::as_str).unwrap_or("1.0");
        if version.split('.').next() != Some("1") {
            return None;
        }
        let binding = match interface.get("protocolBinding")?.as_str()? {
            "JSONRPC" => Binding::JsonRpc,
            "HTTP+JSON" => Binding::HttpJson,
            _ => return None,
        };
        let url = interface.get("url")?.as_str()?.to_owned();
        let tenant = interface.get("tenant").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
        Some((binding, url, tenant))
    })
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> Option<String> {
    reqwest::Url::parse(url).ok().map(|u| u.origin().ascii_serialization())
}

/// Query parameters from request fields (strings, numbers and booleans as text).
fn query(fields: &Map<String, Value>) -> Vec<(String, String)> {
    fields
        .iter()
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k.clone(), s.clone())),
            Value::Number(_) | Value::Bool(_) => Some((k.clone(), v.to_string())),
            _ => None,
        })
        .collect()
}

fn urlencode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The innermost error: "connection refused" rather than reqwest's outer wrapper.
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

async fn read_json(mut response: reqwest::Response) -> Result<Value, ClientError> {
    let mut body = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|e| ClientError::Transport(format!("cannot read the answer: {e}")))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY_BYTES {
            return Err(ClientError::Transport("the answer is larger than 16 MiB".into()));
        }
    }
    serde_json::from_slice(&body)
        .map_err(|_| ClientError::Transport("the node answered with something that is not JSON".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_runnable_interface_wins() {
        let card = json!({"supportedInterfaces": [
            {"url": "http://n:1", "protocolBinding": "GRPC"},
            {"url": "http://n/a2a", "protocolBinding": "HTTP+JSON", "tenant": "acme"},
            {"url": "http://n/", "protocolBinding": "JSONRPC"},
        ]});
        let (binding, url, tenant) = pick_interface(&card).unwrap();
        assert_eq!((binding, url.as_str(), tenant.as_deref()), (Binding::HttpJson, "http://n/a2a", Some("acme")));
        assert!(pick_interface(&json!({"supportedInterfaces": [{"url": "x", "protocolBinding": "GRPC"}]})).is_none());
    }

    #[test]
    fn a_0_3_interface_is_passed_over() {
        let card = json!({"supportedInterfaces": [
            {"url": "http://n/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "http://n/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ]});
        assert_eq!(pick_interface(&card).unwrap().1, "http://n/");
        let only_v03 =
            json!({"supportedInterfaces": [{"url": "x", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]});
        assert!(pick_interface(&only_v03).is_none());
    }

    #[test]
    fn errors_read_as_one_line_with_the_reason() {
        let rpc = json!({"code": -32001, "message": "Task not found", "data": [{"reason": "TASK_NOT_FOUND"}]});
        assert_eq!(super::super::render::error_text(&rpc), "Task not found (TASK_NOT_FOUND)");
        assert_eq!(super::super::render::error_text(&json!({"message": "bad\u{1b}[31m\nnews"})), "bad [31m news");
        assert_eq!(urlencode("a b/c"), "a%20b%2Fc");
    }
}
