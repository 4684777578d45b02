//! Human units in the config: durations (`250ms`, `30s`, `5m`, `2h`, or plain seconds)
//! and byte sizes (`512KiB`, `1MiB`, `1MB`, or plain bytes).
//!
//! Each reader has a writer (`show_*`) so that the config serializes to values it reads
//! back: the key set of the config is taken from its serialized defaults.

use serde::{de, Deserialize, Deserializer, Serializer};
use std::time::Duration;

/// Parses a duration such as `250ms`, `1.5s`, `5m`, `2h`, `1d` or `30` (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a duration (try `30s` or `250ms`)"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "m" | "min" | "mins" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        other => return Err(format!("unknown duration unit `{other}` (use ms, s, m, h or d)")),
    };
    if !seconds.is_finite() || !(0.0..=1e9).contains(&seconds) {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a byte size such as `1MiB`, `512KiB`, `2MB`, `64k` or `1048576`.
pub fn parse_byte_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number.parse().map_err(|_| format!("`{text}` is not a size (try `1MiB`)"))?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1024,
        "m" | "mb" => 1000 * 1000,
        "mib" => 1024 * 1024,
        "g" | "gb" => 1000 * 1000 * 1000,
        "gib" => 1024 * 1024 * 1024,
        other => return Err(format!("unknown size unit `{other}` (use KiB, MiB, GiB, KB, MB or GB)")),
    };
    value.checked_mul(factor).and_then(|n| usize::try_from(n).ok()).ok_or_else(|| format!("`{text}` is out of range"))
}

/// A YAML scalar that may be written as a number or a string: what every unit-bearing
/// key reads first (here and in `retention`, which adds `never`), so `30`, `1.5` and
/// `"30s"` are told apart in one place.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Scalar {
    Int(u64),
    Float(f64),
    Text(String),
}

/// `deserialize_with` for durations.
pub fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    match Scalar::deserialize(d)? {
        Scalar::Int(n) => Ok(Duration::from_secs(n)),
        Scalar::Float(f) => parse_duration(&f.to_string()).map_err(de::Error::custom),
        Scalar::Text(t) => parse_duration(&t).map_err(de::Error::custom),
    }
}

/// `deserialize_with` for byte sizes.
pub fn byte_size<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    scalar_size(Scalar::deserialize(d)?).map_err(de::Error::custom)
}

/// A size as written: plain bytes, or a number with a unit.
fn scalar_size(scalar: Scalar) -> Result<usize, String> {
    match scalar {
        Scalar::Int(n) => usize::try_from(n).map_err(|_| "size out of range".to_owned()),
        Scalar::Float(_) => Err("a size must be a whole number of bytes or have a unit".to_owned()),
        Scalar::Text(t) => parse_byte_size(&t),
    }
}

/// `deserialize_with` for an optional byte size (`null` or absent is `None`), so that
/// every size key takes units, optional ones included (`limits.rest-body-limit: 64KiB`).
pub fn optional_byte_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    Option::<Scalar>::deserialize(d)?.map(scalar_size).transpose().map_err(de::Error::custom)
}

/// `serialize_with` for durations: `250ms`, `30s`, or fractional seconds below a millisecond.
pub fn show_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&duration_text(*d))
}

/// A duration as [`parse_duration`] reads it back.
pub fn duration_text(d: Duration) -> String {
    match (d.subsec_nanos(), d.subsec_nanos() % 1_000_000) {
        (0, _) => format!("{}s", d.as_secs()),
        (_, 0) => format!("{}ms", d.as_millis()),
        _ => format!("{}s", d.as_secs_f64()),
    }
}

/// `serialize_with` for an optional duration (`None` is null).
pub fn show_optional_duration<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => show_duration(d, s),
        None => s.serialize_none(),
    }
}

/// A duration written as whole milliseconds (`push-lease-timeout-ms`).
pub fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    u64::deserialize(d).map(Duration::from_millis)
}

/// `serialize_with` for [`millis`].
pub fn show_millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
        assert_eq!(parse_byte_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_byte_size("64k").unwrap(), 64_000);
        assert!(parse_byte_size("1.5MiB").is_err());
        assert!(parse_byte_size("99999999999999GiB").is_err());
    }

    #[test]
    fn durations_are_written_as_they_are_read() {
        for d in [Duration::from_secs(300), Duration::from_millis(250), Duration::from_micros(1500), Duration::ZERO] {
            assert_eq!(parse_duration(&duration_text(d)).unwrap(), d, "{}", duration_text(d));
        }
    }
}
