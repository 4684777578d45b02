//! The `A2A-Version` service parameter (an HTTP header, or gRPC metadata `a2a-version`).
//!
//! `1.x` is served as 1.0. A missing or empty value on a 1.0 method is served as 1.0 too
//! (lenient, like the Go SDK; see the spec file's decisions). Anything else, such as
//! `0.3`, `2.0` or `99.0`, is VersionNotSupported. The header wins over the
//! `A2A-Version` query parameter that the spec also allows.

use a2ad_protocol::{A2aError, ErrorCode};

/// The versions this node serves, as announced in errors.
pub const SUPPORTED: &str = "1.0";

/// Checks the version a client asked for (`None`: it did not say).
pub fn check(requested: Option<&str>) -> Result<(), A2aError> {
    match requested.map(str::trim) {
        None | Some("") => Ok(()),
        Some(v) if major(v) == Some(1) => Ok(()),
        Some(v) => Err(A2aError::new(
            ErrorCode::VersionNotSupported,
            format!("A2A-Version {} is not supported; this interface serves {SUPPORTED}", sanitize(v)),
        )
        .with_meta("supportedVersions", SUPPORTED)),
    }
}

fn major(version: &str) -> Option<u32> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    match parts.next() {
        None => Some(major),
        Some(minor) if minor.parse::<u32>().is_ok() && parts.next().is_none() => Some(major),
        Some(_) => None,
    }
}

/// The `A2A-Version` query parameter, which the spec allows besides the header.
pub fn query_version(query: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.eq_ignore_ascii_case("A2A-Version").then(|| v.to_owned())
    })
}

/// Echoes a client's version back only as far as it is harmless (no control characters,
/// bounded length).
fn sanitize(v: &str) -> String {
    v.chars().filter(|c| c.is_ascii_graphic()).take(16).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majors() {
        assert_eq!(major("1.0"), Some(1));
        assert_eq!(major("1.2"), Some(1));
        assert_eq!(major("1"), Some(1));
        assert_eq!(major("99.0"), Some(99));
        assert_eq!(major("INVALID"), None);
        assert_eq!(major("1.x.y"), None);
    }
}
