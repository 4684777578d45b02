//! Ids: the server mints task ids (time-ordered UUID v7); clients may choose context and
//! message ids, which we validate so that they are safe as storage keys and in logs.

use crate::error::A2aError;

/// The longest id a client may send.
pub const MAX_ID_LEN: usize = 128;

/// A new time-ordered id (UUID v7), for tasks, generated contexts and agent messages.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Checks a client-supplied id: not empty, at most 128 characters, only
/// `A-Z a-z 0-9 _ . : -`. The error names `field`.
pub fn validate_id(field: &str, id: &str) -> Result<(), A2aError> {
    if id.is_empty() {
        return Err(A2aError::invalid_field(field, "must not be empty"));
    }
    if id.len() > MAX_ID_LEN {
        return Err(A2aError::invalid_field(field, &format!("must be at most {MAX_ID_LEN} characters")));
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')) {
        return Err(A2aError::invalid_field(field, "may only contain A-Z a-z 0-9 _ . : -"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert!(validate_id("contextId", "ctx-1:a_b.c").is_ok());
        assert!(validate_id("contextId", "").is_err());
        assert!(validate_id("contextId", &"a".repeat(129)).is_err());
        let e = validate_id("message.contextId", "a/b").unwrap_err();
        assert!(e.message.contains("message.contextId"));
        assert!(new_id() < new_id(), "v7 ids are time-ordered");
    }
}
