//! ProtoJSON reading rules that serde does not give us for free.

use serde::{de, Deserialize, Deserializer};

/// `int32` fields: ProtoJSON accepts a JSON number or a decimal string (`"10"`).
pub fn opt_i32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrText {
        Num(i64),
        Float(f64),
        Text(String),
    }
    let value = match Option::<NumOrText>::deserialize(d)? {
        None => return Ok(None),
        Some(NumOrText::Num(n)) => n,
        Some(NumOrText::Float(f)) if f.fract() == 0.0 && f.abs() < 1e15 => f as i64,
        Some(NumOrText::Float(f)) => return Err(de::Error::custom(format!("expected an integer, got {f}"))),
        Some(NumOrText::Text(t)) => {
            t.trim().parse::<i64>().map_err(|_| de::Error::custom(format!("expected an integer, got \"{t}\"")))?
        }
    };
    i32::try_from(value).map(Some).map_err(|_| de::Error::custom(format!("{value} is out of range for int32")))
}

/// An unsigned integer sent as a JSON number or a decimal string (event ids).
pub fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrText {
        Num(u64),
        Text(String),
    }
    match Option::<NumOrText>::deserialize(d)? {
        None => Ok(None),
        Some(NumOrText::Num(n)) => Ok(Some(n)),
        Some(NumOrText::Text(t)) => t
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| de::Error::custom(format!("expected a non-negative integer, got \"{t}\""))),
    }
}

/// `bool` fields that a client may send as `null`: read as false.
pub fn bool_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// Repeated fields that a client may send as `null`: read as empty.
pub fn vec_or_null<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}
