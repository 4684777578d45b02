//! A Server-Sent Events reader for the client: turns a streaming HTTP response into
//! `StreamResponse` JSON values as the events arrive.
//!
//! Each event's `data:` lines are joined; comments (`: keep-alive`) are skipped. The data
//! is a JSON-RPC response (its `result`, or its `error`) or, on HTTP+JSON, the bare
//! `StreamResponse` (or `{"error": ...}`). An `event: error` ends the stream with that error.

use super::ClientError;
use serde_json::Value;

/// The largest single event accepted: a broken or hostile server cannot make the client
/// buffer without end.
const MAX_EVENT_BYTES: usize = 16 << 20;

/// One event as parsed from the wire.
#[derive(Debug, Default, PartialEq)]
pub struct RawEvent {
    /// The `event:` field: an `error` event ends the stream as a transport failure.
    pub event: Option<String>,
    /// The `data:` lines, joined with newlines as the SSE spec says.
    pub data: String,
}

/// Splits a byte stream into events. Pure: fed by [`SseStream`], tested on its own.
#[derive(Default)]
pub struct SseParser {
    buffer: Vec<u8>,
}

impl SseParser {
    /// Adds bytes; returns every event they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<RawEvent>, ClientError> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, skip)) = block_end(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end + skip).collect();
            let text = String::from_utf8_lossy(&block[..end]);
            if let Some(event) = parse_block(&text) {
                events.push(event);
            }
        }
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(ClientError::Transport("the node sent an event larger than 16 MiB".into()));
        }
        Ok(events)
    }
}

/// Where the first blank line ends a block: (block length, separator length).
fn block_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// An event, or `None` for a block of comments only.
fn parse_block(block: &str) -> Option<RawEvent> {
    let mut event = RawEvent::default();
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event.event = Some(value.to_owned()),
            "data" => data.push(value),
            _ => {}
        }
    }
    if data.is_empty() {
        return None;
    }
    event.data = data.join("\n");
    Some(event)
}

/// The `StreamResponse` in an event, or the error the node sent instead.
pub fn stream_response(event: &RawEvent) -> Result<Value, ClientError> {
    let value: Value = serde_json::from_str(&event.data)
        .map_err(|_| ClientError::Transport("the node sent an event that is not JSON".into()))?;
    if let Some(error) = value.get("error") {
        return Err(ClientError::Refused(super::transport::error_text(error)));
    }
    if event.event.as_deref() == Some("error") {
        return Err(ClientError::Transport(format!("the stream ended with an error: {value}")));
    }
    Ok(match value.get("jsonrpc") {
        Some(_) => value.get("result").cloned().unwrap_or(Value::Null),
        None => value,
    })
}

/// A streaming response read event by event.
pub struct SseStream {
    response: reqwest::Response,
    parser: SseParser,
    ready: std::collections::VecDeque<RawEvent>,
}

impl SseStream {
    /// Wraps a response already known to be `text/event-stream`; events are parsed as
    /// chunks arrive, so a long turn is shown while it runs.
    pub fn new(response: reqwest::Response) -> Self {
        SseStream { response, parser: SseParser::default(), ready: Default::default() }
    }

    /// The next `StreamResponse`; `None` when the node closed the stream.
    pub async fn next(&mut self) -> Option<Result<Value, ClientError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(stream_response(&event));
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => match self.parser.feed(&bytes) {
                    Ok(events) => self.ready.extend(events),
                    Err(e) => return Some(Err(e)),
                },
                Ok(None) => return None,
                Err(e) => return Some(Err(ClientError::Transport(format!("the stream broke: {e}")))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_are_joined_and_comments_skipped() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b": keep-alive\n\nid: 1\nda").unwrap().is_empty());
        let events = parser.feed(b"ta: {\"a\":\ndata: 1}\n\nevent: error\r\ndata: x\r\n\r\n").unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data, "{\"a\":\n1}");
        assert_eq!(events[1], RawEvent { event: Some("error".into()), data: "x".into() });
    }

    #[test]
    fn json_rpc_results_are_unwrapped_and_errors_reported() {
        let rpc = RawEvent { event: None, data: r#"{"jsonrpc":"2.0","id":1,"result":{"task":{}}}"#.into() };
        assert_eq!(stream_response(&rpc).unwrap(), serde_json::json!({"task": {}}));
        let bare = RawEvent { event: None, data: r#"{"statusUpdate":{}}"#.into() };
        assert_eq!(stream_response(&bare).unwrap(), serde_json::json!({"statusUpdate": {}}));
        let failed = RawEvent {
            event: None,
            data: r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}"#.into(),
        };
        assert!(stream_response(&failed).unwrap_err().to_string().contains("Task not found"));
        assert!(stream_response(&RawEvent { event: None, data: "nope".into() }).is_err());
    }
}
