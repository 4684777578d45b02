//! Ids: the server mints task ids (time-ordered UUID v7); clients may choose context and
//! message ids, which we validate so that they are safe as storage keys and in logs.

use crate::error::A2aError;

/// The longest id a client may send.
pub const MAX_ID_LEN: usize = 128;

/// A new time-ordered id (UUID v7), for generated contexts and agent messages.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A new task id: a UUID v7 whose last 16 bits (of its 62 random ones) are `owner_hash`,
/// the hash of the owner it is minted for. The shared store keeps an owner's tasks in the
/// shard that hash names, so a read by the id alone finds the shard without a lookup
/// ([`task_id_hint`]); it is still time-ordered, and 46 random bits per millisecond stay.
pub fn new_task_id(owner_hash: u16) -> String {
    let mut bytes = *uuid::Uuid::now_v7().as_bytes();
    bytes[14..16].copy_from_slice(&owner_hash.to_be_bytes());
    uuid::Uuid::from_bytes(bytes).to_string()
}

/// The owner hash a [`new_task_id`] carries; `None` for an id that is not a UUID v7.
pub fn task_id_hint(task_id: &str) -> Option<u16> {
    let id = uuid::Uuid::try_parse(task_id).ok()?;
    let bytes = id.as_bytes();
    (id.get_version_num() == 7).then(|| u16::from_be_bytes([bytes[14], bytes[15]]))
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

    #[test]
    fn task_ids_carry_their_owner_hash() {
        let id = new_task_id(0xbeef);
        assert_eq!(task_id_hint(&id), Some(0xbeef));
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 7, "still a UUID v7");
        assert_ne!(new_task_id(7), new_task_id(7), "unique");
        assert_eq!(task_id_hint("t1"), None, "not a UUID");
        assert_eq!(task_id_hint(&uuid::Uuid::new_v4().to_string()), None, "not a v7");
    }
}
