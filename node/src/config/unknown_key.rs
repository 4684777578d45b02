//! The message for an unknown key: the closest known key ("did you mean"), and every key
//! the block takes. serde's own message lists only the fields of the struct that refused
//! the key, and the top level is read as two structs (the `push-*` keys apart, see
//! [`super::Config`]), so at the top level the list is the config's whole key set.

use super::Config;

/// Below this Jaro-Winkler similarity a key is not offered (clap's threshold is 0.7; a
/// little stricter here, since the list shown next to it names every key anyway).
const SIMILAR: f64 = 0.8;

/// The message for serde's "unknown field" error at `path`, or `None` for any other.
pub(super) fn explain(path: &str, serde_message: &str) -> Option<String> {
    let rest = serde_message.strip_prefix("unknown field `")?;
    let (given, expected) = rest.split_once('`')?;
    let known = known_keys(path, expected);
    let mut message = format!("unknown key `{given}`");
    if let Some(near) = closest(given, &known) {
        message.push_str(&format!("; did you mean `{near}`?"));
    }
    match known.is_empty() {
        true => message.push_str(" (this block takes no keys)"),
        false => message.push_str(&format!(" (the keys here: {})", known.join(", "))),
    }
    Some(message)
}

/// The keys the block at `path` takes: the top level's from [`Config::keys`], a nested
/// block's as serde listed them (`expected one of `a`, `b``).
fn known_keys(path: &str, expected: &str) -> Vec<String> {
    if !path.contains(['.', '[']) {
        return Config::keys().iter().filter(|k| !k.contains('.')).cloned().collect();
    }
    expected.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The known key most like `given`, compared with `_` read as `-` and in lower case
/// (`push_notifications`, `Idle-Timeout`).
fn closest<'a>(given: &str, known: &'a [String]) -> Option<&'a str> {
    let normal = given.to_ascii_lowercase().replace('_', "-");
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(&normal, k), k))
        .filter(|(score, _)| *score >= SIMILAR)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_top_level_key_gets_the_closest_and_every_key_push_included() {
        let serde = "unknown field `idle-timout`, expected one of `listen`, `idle-timeout`";
        let message = explain("idle-timout", serde).unwrap();
        assert!(message.starts_with("unknown key `idle-timout`; did you mean `idle-timeout`?"), "{message}");
        assert!(message.contains("push-max-attempts"), "{message}");
        let message = explain("push_notifications", "unknown field `push_notifications`, expected `listen`").unwrap();
        assert!(message.contains("did you mean `push-notifications`?"), "{message}");
        assert!(message.contains("agents") && message.contains("data-dir"), "{message}");
    }

    #[test]
    fn a_nested_key_is_offered_from_its_own_block_and_nonsense_gets_no_guess() {
        let serde = "unknown field `chunk-dely`, expected `chunk-delay` or `chunk-size`";
        let message = explain("agents[0].echo.chunk-dely", serde).unwrap();
        assert_eq!(
            message,
            "unknown key `chunk-dely`; did you mean `chunk-delay`? (the keys here: chunk-delay, chunk-size)"
        );
        let message = explain("zzzz", "unknown field `zzzz`, expected `listen`").unwrap();
        assert!(!message.contains("did you mean"), "{message}");
        assert_eq!(explain("listen", "invalid socket address syntax"), None);
    }
}
