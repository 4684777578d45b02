//! `A2A-Extensions`: the extensions a client activates for a request (comma-separated,
//! possibly repeated; `X-A2A-Extensions` from 0.3 clients too). A configured extension
//! marked required that the client did not activate is ExtensionSupportRequired; the
//! answer echoes the activated extensions the node supports.

use super::Core;
use a2ad_protocol::{A2aError, ErrorCode};

/// The header's values, split and trimmed.
pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    values.into_iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned).collect()
}

impl Core {
    /// Checks the activated extensions; returns those to echo.
    pub fn activate_extensions(&self, requested: &[String]) -> Result<Vec<String>, A2aError> {
        if let Some(missing) = self.extensions.iter().find(|e| e.required && !requested.contains(&e.uri)) {
            return Err(A2aError::new(
                ErrorCode::ExtensionSupportRequired,
                format!(
                    "This agent requires the extension {}; activate it with the A2A-Extensions header",
                    missing.uri
                ),
            )
            .with_meta("extension", missing.uri.clone()));
        }
        Ok(self.extensions.iter().filter(|e| requested.contains(&e.uri)).map(|e| e.uri.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn headers_are_split_and_merged() {
        assert_eq!(super::parse(["urn:a, urn:b", "", "urn:c"]), ["urn:a", "urn:b", "urn:c"]);
    }
}
