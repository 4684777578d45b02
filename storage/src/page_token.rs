//! `ListTasks` page tokens: opaque base64url JSON `{"ts":<ms>,"id":"<task id>"}`, the
//! position of the last task of the previous page in (status time, id) order.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// A position in (status time desc, task id desc) order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cursor {
    pub ts: i64,
    pub id: String,
}

/// Encodes a cursor as a page token.
pub fn encode_page_token(cursor: &Cursor) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(cursor).expect("a cursor always encodes"))
}

/// Decodes a page token; `None` if it is not one of ours.
pub fn decode_page_token(token: &str) -> Option<Cursor> {
    let bytes = URL_SAFE_NO_PAD.decode(token.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_garbage() {
        let c = Cursor { ts: 1_700_000_000_123, id: "0190-abc".into() };
        assert_eq!(decode_page_token(&encode_page_token(&c)), Some(c));
        assert_eq!(decode_page_token("not a token"), None);
        assert_eq!(decode_page_token("e30"), None); // "{}"
    }
}
