//! Timestamps on the wire: `google.protobuf.Timestamp` in ProtoJSON form.
//!
//! We always write milliseconds and a `Z` suffix (`2026-01-02T03:04:05.678Z`), which every
//! SDK parses; we read any RFC 3339 timestamp, with any precision and any offset.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// A point in time, as every wire type stores it.
pub type Timestamp = DateTime<Utc>;

/// The current time, truncated to milliseconds so that what we store is exactly what we
/// write on the wire (and so that cursors built from it round-trip).
pub fn now() -> Timestamp {
    from_millis(Utc::now().timestamp_millis())
}

/// Milliseconds since the Unix epoch to a timestamp (saturating at the epoch).
pub fn from_millis(ms: i64) -> Timestamp {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// Formats a timestamp the way responses carry it.
pub fn format(ts: &Timestamp) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an RFC 3339 timestamp in any offset into UTC.
pub fn parse(text: &str) -> Result<Timestamp, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc))
}

/// `#[serde(with = "timestamp::required")]` for a required timestamp field.
pub mod required {
    use super::*;

    pub fn serialize<S: Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(ts))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).map_err(|e| serde::de::Error::custom(format!("invalid timestamp: {e}")))
    }
}

/// `#[serde(with = "timestamp::optional", default)]` for an optional timestamp field.
pub mod optional {
    use super::*;

    pub fn serialize<S: Serializer>(ts: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => s.serialize_str(&format(ts)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) if text.is_empty() => Ok(None),
            Some(text) => {
                parse(&text).map(Some).map_err(|e| serde::de::Error::custom(format!("invalid timestamp: {e}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_millis_with_z_and_reads_offsets() {
        let ts = parse("2026-01-02T04:04:05.678912+01:00").unwrap();
        assert_eq!(format(&ts), "2026-01-02T03:04:05.678Z");
        assert_eq!(format(&from_millis(0)), "1970-01-01T00:00:00.000Z");
    }
}
