//! Push notifications (issue 6). So far only the SSRF guard for webhook URLs lives here:
//! [`url_guard`] judges a push config's `url` when the config is stored and again before
//! every dispatch, and builds the one HTTP client deliveries go through (no redirects, no
//! proxy, a resolver that drops loopback, private, link-local, metadata and similar
//! addresses at connect time, so DNS rebinding cannot aim a webhook inside the network).

pub mod url_guard;
