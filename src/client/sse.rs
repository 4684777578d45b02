//! A Server-Sent Events reader for the client: turns a streaming HTTP response into
//! `StreamResponse` JSON values as the events arrive.
//!
//! Parsed as the SSE spec (HTML "event stream interpretation") says: lines end with CRLF,
//! LF or a lone CR (a CRLF split across two chunks counts once); a blank line dispatches
//! the event; `data:` lines are joined with newlines; an event with no data is dropped;
//! comments (`: keep-alive`), `id:`, `retry:` and unknown fields are skipped; one space
//! after the colon is removed; a leading BOM is ignored. The data is a JSON-RPC response
//! (its `result`, or its `error`) or, on HTTP+JSON, the bare `StreamResponse` (or
//! `{"error": ...}`). An `event: error` ends the stream with that error.
//!
//! Each byte is looked at once however the stream is chunked, and an event (its pending
//! line and its data together) larger than [`MAX_EVENT_BYTES`] ends the stream.

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
    /// The bytes of the line not yet ended.
    line: Vec<u8>,
    /// The last line ended with CR: an LF right after it belongs to it.
    after_cr: bool,
    /// The first line was read (a BOM before it is skipped).
    started: bool,
    /// The event being read: its `event:` field and its data lines.
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    /// Adds bytes; returns every event they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<RawEvent>, ClientError> {
        let mut events = Vec::new();
        let mut rest = bytes;
        while let Some(first) = rest.first() {
            if std::mem::take(&mut self.after_cr) && *first == b'\n' {
                rest = &rest[1..];
                continue;
            }
            let Some(end) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') else {
                self.line.extend_from_slice(rest);
                break;
            };
            self.line.extend_from_slice(&rest[..end]);
            self.after_cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.line);
            let mut line = String::from_utf8_lossy(&line).into_owned();
            if !std::mem::replace(&mut self.started, true) && line.starts_with('\u{feff}') {
                line.drain(..'\u{feff}'.len_utf8());
            }
            if let Some(event) = self.take_line(&line) {
                events.push(event);
            }
        }
        let held = self.line.len() + self.data.as_ref().map_or(0, String::len);
        if held > MAX_EVENT_BYTES {
            return Err(ClientError::Transport("the node sent an event larger than 16 MiB".into()));
        }
        Ok(events)
    }

    /// Takes one whole line; a blank one dispatches the event read so far.
    fn take_line(&mut self, line: &str) -> Option<RawEvent> {
        if line.is_empty() {
            let event = self.event.take();
            return self.data.take().map(|data| RawEvent { event, data });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}

/// The `StreamResponse` in an event, or the error the node sent instead.
pub fn stream_response(event: &RawEvent) -> Result<Value, ClientError> {
    let value: Value = serde_json::from_str(&event.data)
        .map_err(|_| ClientError::Transport("the node sent an event that is not JSON".into()))?;
    if let Some(error) = value.get("error") {
        return Err(ClientError::Refused(super::render::error_text(error)));
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
    /// How long a read may wait for bytes (comments count) before the connection is
    /// taken as dead: a peer gone without a FIN or RST would otherwise hang the client.
    idle_timeout: Option<std::time::Duration>,
    /// When bytes last arrived: the idle deadline runs from here, not from the call to
    /// [`SseStream::next`], which a caller's `select!` may drop and repeat at any time.
    last_bytes: tokio::time::Instant,
}

impl SseStream {
    /// Wraps a response already known to be `text/event-stream`; events are parsed as
    /// chunks arrive, so a long turn is shown while it runs.
    pub fn new(response: reqwest::Response) -> Self {
        SseStream {
            response,
            parser: SseParser::default(),
            ready: Default::default(),
            idle_timeout: None,
            last_bytes: tokio::time::Instant::now(),
        }
    }

    /// Ends the stream with [`ClientError::StreamIdle`] once no bytes arrived for `limit`
    /// (zero: wait forever).
    pub fn with_idle_timeout(mut self, limit: std::time::Duration) -> Self {
        self.idle_timeout = Some(limit).filter(|l| !l.is_zero());
        self
    }

    /// The next `StreamResponse`; `None` when the node closed the stream.
    pub async fn next(&mut self) -> Option<Result<Value, ClientError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(stream_response(&event));
            }
            let chunk = match self.idle_timeout {
                Some(limit) => match tokio::time::timeout_at(self.last_bytes + limit, self.response.chunk()).await {
                    Ok(chunk) => chunk,
                    Err(_) => return Some(Err(ClientError::StreamIdle(limit))),
                },
                None => self.response.chunk().await,
            };
            self.last_bytes = tokio::time::Instant::now();
            match chunk {
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

    /// Every way the spec allows lines to end, split at every byte.
    #[test]
    fn line_ends_of_every_kind_and_any_chunking_give_the_same_events() {
        let wire =
            "\u{feff}data: a\r\r: hello\r\rdata: a\rdata:b\r\n\r\nretry: 10\nid: 7\ndata\n\nevent: x\n\ndata: c\r\n\n";
        let expected = vec![
            RawEvent { event: None, data: "a".into() },
            RawEvent { event: None, data: "a\nb".into() },
            RawEvent { event: None, data: String::new() },
            RawEvent { event: None, data: "c".into() },
        ];
        let whole = SseParser::default().feed(wire.as_bytes()).unwrap();
        assert_eq!(whole, expected, "an event without data (`event: x`) is dropped");
        for size in 1..wire.len() {
            let mut parser = SseParser::default();
            let mut events = Vec::new();
            for chunk in wire.as_bytes().chunks(size) {
                events.extend(parser.feed(chunk).unwrap());
            }
            assert_eq!(events, expected, "chunks of {size} bytes");
        }
    }

    #[test]
    fn an_event_past_the_limit_ends_the_stream() {
        let mut parser = SseParser::default();
        let line = vec![b'a'; 1 << 20];
        let mut failed = None;
        for _ in 0..17 {
            parser.feed(b"data: ").unwrap();
            if let Err(e) = parser.feed(&line).and_then(|_| parser.feed(b"\n")) {
                failed = Some(e);
                break;
            }
        }
        assert!(failed.is_some_and(|e| e.to_string().contains("larger than 16 MiB")), "data lines add up");
        let mut parser = SseParser::default();
        let endless = vec![b'x'; (16 << 20) + 1];
        assert!(parser.feed(&endless).is_err(), "a line without an end");
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
