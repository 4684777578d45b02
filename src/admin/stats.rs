//! `a2ad admin stats`: what the store holds and how much disk it takes. Offline, it opens
//! a stopped node's data dir; with `--url`, it asks a running node's admin API. The count
//! itself is the node core's ([`a2ad_node::admin::stats`]), shared with the admin API.

use super::{open_store, AdminError};
use crate::config::Config;
pub use a2ad_node::admin::stats::{human_bytes, StoreStats};

/// Reads the stats of a stopped node's data dir.
pub fn collect(config: &Config) -> Result<StoreStats, AdminError> {
    let store = open_store(config)?;
    Ok(a2ad_node::admin::stats::collect(&store, &config.data_dir)?)
}
