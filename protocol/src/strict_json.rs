//! JSON as requests must be: an object may not name a key twice.
//!
//! `serde_json::Value` keeps the last of two equal keys, so `{"method":"ListTasks",
//! "method":"GetTask"}` would run `GetTask` here while a proxy or a log that keeps the
//! first saw `ListTasks`: two readers of one body disagreeing is how smuggling starts.
//! [`decode_request_body`] reads every request body of every binding that carries JSON
//! (JSON-RPC over HTTP, WebSocket, stdio, the Unix socket and Redis Streams; HTTP+JSON in
//! each dialect) and refuses such a body with InvalidRequest (-32600 / 400) naming the key.

use crate::error::{A2aError, ErrorCode};
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// Parses `bytes` as JSON: a syntax error is ParseError (-32700), a key named twice in one
/// object is InvalidRequest whose message and `key` metadata name it.
pub fn decode_request_body(bytes: &[u8]) -> Result<Value, A2aError> {
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = StrictValue { duplicate: &duplicate }.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match (parsed, duplicate.into_inner()) {
        (Ok(value), _) => Ok(value),
        (Err(_), Some(key)) => Err(A2aError::new(
            ErrorCode::InvalidRequest,
            format!("Invalid request: the key `{key}` appears more than once in one object"),
        )
        .with_meta("key", key)),
        (Err(_), None) => Err(A2aError::of(ErrorCode::ParseError)),
    }
}

/// Builds a [`Value`] as serde_json does, but records the first repeated key and fails.
#[derive(Clone, Copy)]
struct StrictValue<'a> {
    duplicate: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text cannot spell NaN or infinity, so this is always a number.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                let error = A::Error::custom(format_args!("duplicate key `{key}`"));
                *self.duplicate.borrow_mut() = Some(key);
                return Err(error);
            }
            let value = map.next_value_seed(self)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_serde_json_reads() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":18446744073709551615}"#;
        assert_eq!(decode_request_body(text.as_bytes()).unwrap(), serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(decode_request_body(b" 7 ").unwrap(), json!(7));
    }

    #[test]
    fn a_repeated_key_is_refused_by_name_at_any_depth() {
        let e = decode_request_body(br#"{"method":"ListTasks","method":"GetTask"}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert_eq!(e.metadata["key"], "method");
        assert!(e.message.contains("`method`"), "{}", e.message);
        let nested = br#"{"params":{"message":{"messageId":"a","messageId":"b"}}}"#;
        assert_eq!(decode_request_body(nested).unwrap_err().metadata["key"], "messageId");
        // The same key in two objects is fine.
        assert!(decode_request_body(br#"[{"a":1},{"a":2}]"#).is_ok());
    }

    #[test]
    fn bad_syntax_is_a_parse_error() {
        for bad in [&b"{"[..], b"{\"a\":1} x", b"", b"{'a':1}"] {
            assert_eq!(decode_request_body(bad).unwrap_err().code, ErrorCode::ParseError);
        }
    }
}
