//! Reading Redis replies by hand: stream entries, XREADGROUP, XAUTOCLAIM and XINFO GROUPS
//! answers, in both RESP2 (flat arrays) and RESP3 (maps) and across Redis 6.2 and 7 (a
//! pending entry deleted under us is nil on 6.2). Lenient on purpose: a reply of an
//! unexpected shape reads as empty rather than failing a whole batch of jobs.

use redis::Value;

/// One stream entry: its id and fields (`None` for an entry deleted while pending, which
/// Redis 6.2 reports as nil).
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) fields: Option<Vec<(String, String)>>,
}

impl Entry {
    pub(crate) fn field(&self, name: &str) -> Option<&str> {
        self.fields.as_ref()?.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Okay => Some("OK".to_owned()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn int(value: &Value) -> Option<u64> {
    match value {
        Value::Int(i) => u64::try_from(*i).ok(),
        other => text(other)?.parse().ok(),
    }
}

/// Key/value pairs of a RESP2 flat array or a RESP3 map.
fn pairs(value: &Value) -> Vec<(&Value, &Value)> {
    match value {
        Value::Array(items) => items.chunks_exact(2).map(|kv| (&kv[0], &kv[1])).collect(),
        Value::Map(kvs) => kvs.iter().map(|(k, v)| (k, v)).collect(),
        _ => Vec::new(),
    }
}

/// A list of entries: `[[id, [field, value, ...] | nil], ...]`.
pub(crate) fn parse_entries(value: &Value) -> Vec<Entry> {
    let Value::Array(items) = value else { return Vec::new() };
    items
        .iter()
        .filter_map(|item| {
            let Value::Array(parts) = item else { return None };
            let id = text(parts.first()?)?;
            let fields = match parts.get(1) {
                Some(Value::Nil) | None => None,
                Some(fields) => {
                    Some(pairs(fields).into_iter().filter_map(|(k, v)| Some((text(k)?, text(v)?))).collect::<Vec<_>>())
                }
            };
            Some(Entry { id, fields })
        })
        .collect()
}

/// XREADGROUP's reply for one stream: `[[key, entries]]` (RESP3: `{key: entries}`), or nil.
pub(crate) fn parse_read(value: &Value) -> Vec<Entry> {
    match value {
        Value::Array(streams) => streams
            .iter()
            .flat_map(|stream| match stream {
                Value::Array(parts) => parts.get(1).map(parse_entries).unwrap_or_default(),
                _ => Vec::new(),
            })
            .collect(),
        Value::Map(streams) => streams.iter().flat_map(|(_, entries)| parse_entries(entries)).collect(),
        _ => Vec::new(),
    }
}

/// XAUTOCLAIM's reply: the next cursor, the claimed entries, and the ids of entries that
/// were deleted while pending (nil entries on Redis 6.2; Redis 7 drops those itself).
pub(crate) fn parse_autoclaim(value: &Value) -> (String, Vec<Entry>, Vec<String>) {
    let Value::Array(parts) = value else { return ("0-0".to_owned(), Vec::new(), Vec::new()) };
    let next = parts.first().and_then(text).unwrap_or_else(|| "0-0".to_owned());
    let (claimed, gone): (Vec<Entry>, Vec<Entry>) =
        parts.get(1).map(parse_entries).unwrap_or_default().into_iter().partition(|e| e.fields.is_some());
    (next, claimed, gone.into_iter().map(|e| e.id).collect())
}

/// The group's `pending` and `lag` (None when Redis cannot tell) from XINFO GROUPS.
pub(crate) fn group_info(groups: &Value, group: &str) -> (u64, Option<u64>) {
    let Value::Array(groups) = groups else { return (0, None) };
    for info in groups {
        let fields: Vec<(String, &Value)> = pairs(info).into_iter().filter_map(|(k, v)| Some((text(k)?, v))).collect();
        let get = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        if get("name").and_then(text).as_deref() == Some(group) {
            return (get("pending").and_then(int).unwrap_or(0), get("lag").and_then(int));
        }
    }
    (0, None)
}
