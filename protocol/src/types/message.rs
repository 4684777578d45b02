//! `Message` and `Part`: what users and agents say to each other.

use super::{protojson, Metadata, Role};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One turn of conversation (`lf.a2a.v1.Message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(alias = "message_id")]
    pub message_id: String,
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "protojson::vec_or_null")]
    pub extensions: Vec<String>,
    #[serde(
        default,
        alias = "reference_task_ids",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "protojson::vec_or_null"
    )]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// An agent message with a single text part, as agents reply.
    pub fn agent_text(message_id: String, context_id: &str, task_id: Option<&str>, text: &str) -> Self {
        Message {
            message_id,
            context_id: Some(context_id.to_owned()),
            task_id: task_id.map(str::to_owned),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The concatenated text of every text part, newline-separated.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.parts.iter().filter_map(Part::as_text).collect();
        texts.join("\n")
    }
}

/// What a part holds: exactly one of text, raw bytes, a URL or any JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    Text(String),
    Raw(Vec<u8>),
    Url(String),
    Data(Value),
}

/// One piece of content (`lf.a2a.v1.Part`). On the wire it has no discriminator: the
/// content is whichever of `text`, `raw`, `url` or `data` is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PartWire", into = "PartWire")]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Metadata>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    /// A plain text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part { content: PartContent::Text(text.into()), metadata: None, filename: None, media_type: None }
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// The flat ProtoJSON shape of a part, converted to and from [`Part`].
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(default, alias = "media_type", skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
}

impl TryFrom<PartWire> for Part {
    type Error = String;

    fn try_from(w: PartWire) -> Result<Self, String> {
        let mut contents = Vec::with_capacity(1);
        if let Some(t) = w.text {
            contents.push(PartContent::Text(t));
        }
        if let Some(r) = w.raw {
            let bytes = decode_base64(&r).ok_or("part `raw` is not valid base64")?;
            contents.push(PartContent::Raw(bytes));
        }
        if let Some(u) = w.url {
            contents.push(PartContent::Url(u));
        }
        if let Some(d) = w.data {
            contents.push(PartContent::Data(d));
        }
        if contents.len() != 1 {
            return Err("a part must have exactly one of `text`, `raw`, `url` or `data`".into());
        }
        let content = contents.pop().expect("exactly one content");
        Ok(Part { content, metadata: w.metadata, filename: w.filename, media_type: w.media_type })
    }
}

impl From<Part> for PartWire {
    fn from(p: Part) -> Self {
        let mut w = PartWire {
            text: None,
            raw: None,
            url: None,
            data: None,
            metadata: p.metadata,
            filename: p.filename,
            media_type: p.media_type,
        };
        match p.content {
            PartContent::Text(t) => w.text = Some(t),
            PartContent::Raw(b) => w.raw = Some(base64::engine::general_purpose::STANDARD.encode(b)),
            PartContent::Url(u) => w.url = Some(u),
            PartContent::Data(d) => w.data = Some(d),
        }
        w
    }
}

/// ProtoJSON `bytes`: standard or URL-safe base64, with or without padding.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().find_map(|engine| engine.decode(text).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_round_trip_in_every_form() {
        for v in [
            json!({"text": "hi"}),
            json!({"raw": "aGk=", "filename": "a.bin", "mediaType": "application/octet-stream"}),
            json!({"url": "https://example.com/a.pdf", "mediaType": "application/pdf"}),
            json!({"data": [1, {"k": "v"}]}),
        ] {
            let p: Part = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&p).unwrap(), v);
        }
    }

    #[test]
    fn parts_need_exactly_one_content() {
        assert!(serde_json::from_value::<Part>(json!({"text": "a", "url": "b"})).is_err());
        assert!(serde_json::from_value::<Part>(json!({"filename": "x"})).is_err());
        assert!(serde_json::from_value::<Part>(json!({"raw": "***"})).is_err());
    }

    #[test]
    fn messages_accept_snake_case_and_ignore_unknown_fields() {
        let m: Message = serde_json::from_value(json!({
            "message_id": "m1", "context_id": "c1", "role": 1,
            "parts": [{"text": "hi", "media_type": "text/plain"}], "whatever": true
        }))
        .unwrap();
        assert_eq!(m.context_id.as_deref(), Some("c1"));
        assert_eq!(m.role, Role::User);
        let out = serde_json::to_value(&m).unwrap();
        assert_eq!(out["messageId"], "m1");
        assert_eq!(out["parts"][0]["mediaType"], "text/plain");
        assert!(out.get("extensions").is_none());
    }
}
