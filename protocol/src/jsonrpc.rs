//! The JSON-RPC 2.0 envelope.
//!
//! [`parse_request`] checks a decoded body the way the official SDKs do (an object,
//! `jsonrpc` exactly `"2.0"`, a string `method`, an `id` that is a string, a number or
//! null, `params` an object if present); [`parse_params`] decodes `params` into a request
//! type and names the offending field when it cannot.

use crate::error::{A2aError, ErrorCode, JsonRpcErrorObject};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// A checked JSON-RPC request. `id` is `None` for a notification (no `id` member).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonRpcRequest {
    pub id: Option<Value>,
    pub method: String,
    pub params: Value,
}

impl JsonRpcRequest {
    /// The id to answer with: notifications and errors before the id was read get `null`.
    pub fn response_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }
}

/// Checks the envelope. On failure, returns the error with whatever id could be read.
pub fn parse_request(body: Value) -> Result<JsonRpcRequest, (Value, A2aError)> {
    let invalid =
        |id: Value, why: &str| (id, A2aError::new(ErrorCode::InvalidRequest, format!("Invalid request: {why}")));
    let mut obj: Map<String, Value> = match body {
        Value::Object(o) => o,
        Value::Array(_) => return Err(invalid(Value::Null, "batch requests are not supported")),
        _ => return Err(invalid(Value::Null, "the body must be a JSON object")),
    };
    let id = obj.remove("id");
    let reply_id = match &id {
        None | Some(Value::Null) => Value::Null,
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        Some(_) => return Err(invalid(Value::Null, "`id` must be a string, a number or null")),
    };
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(invalid(reply_id, "`jsonrpc` must be \"2.0\"")),
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => return Err(invalid(reply_id, "`method` must be a non-empty string")),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err((reply_id, A2aError::invalid_field("params", "must be an object")));
        }
    };
    Ok(JsonRpcRequest { id, method, params })
}

/// Decodes `params` into `T`, naming the field that is missing or wrong.
pub fn parse_params<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_path_to_error::deserialize(params).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner().to_string();
        if path == "." || path.is_empty() {
            A2aError::invalid_params(format!("Invalid params: {inner}"))
        } else {
            A2aError::invalid_params(format!("Invalid params: `{path}`: {inner}")).with_meta("field", path)
        }
    })
}

/// A successful response.
#[derive(Serialize)]
pub struct JsonRpcSuccess<'a, T: Serialize> {
    pub jsonrpc: &'static str,
    pub id: &'a Value,
    pub result: T,
}

/// An error response.
#[derive(Serialize)]
pub struct JsonRpcFailure<'a> {
    pub jsonrpc: &'static str,
    pub id: &'a Value,
    pub error: JsonRpcErrorObject,
}

/// Encodes a successful response.
pub fn success_body<T: Serialize>(id: &Value, result: T) -> Vec<u8> {
    serde_json::to_vec(&JsonRpcSuccess { jsonrpc: "2.0", id, result })
        .unwrap_or_else(|e| error_body(id, &A2aError::internal(format!("failed to encode the result: {e}"))))
}

/// Encodes an error response.
pub fn error_body(id: &Value, error: &A2aError) -> Vec<u8> {
    serde_json::to_vec(&JsonRpcFailure { jsonrpc: "2.0", id, error: error.to_jsonrpc() })
        .expect("an error object always encodes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelope_rules() {
        assert!(parse_request(json!([])).is_err());
        assert!(parse_request(json!("x")).is_err());
        let (id, e) = parse_request(json!({"jsonrpc": "1.0", "id": 7, "method": "GetTask"})).unwrap_err();
        assert_eq!((id, e.code), (json!(7), ErrorCode::InvalidRequest));
        let (_, e) = parse_request(json!({"jsonrpc": "2.0", "id": true, "method": "GetTask"})).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        let (_, e) = parse_request(json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": [1]})).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        let ok = parse_request(json!({"jsonrpc": "2.0", "id": "a", "method": "GetTask"})).unwrap();
        assert_eq!(ok.params, json!({}));
    }

    #[test]
    fn params_errors_name_the_field() {
        let e = parse_params::<crate::GetTaskRequest>(json!({})).unwrap_err();
        assert!(e.message.contains("`id`"), "{}", e.message);
        let e = parse_params::<crate::GetTaskRequest>(json!({"id": "t", "historyLength": "x"})).unwrap_err();
        assert!(e.message.contains("historyLength"), "{}", e.message);
    }
}
