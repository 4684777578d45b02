//! `a2ad admin compact`: reclaims the space of removed tasks (sled has no online
//! compaction). The node must be stopped; see [`a2ad_storage::compact`] for how the copy
//! is swapped in safely.

use super::{open_store, AdminError};
use crate::config::Config;
use a2ad_storage::CompactReport;

/// Compacts a stopped node's store; the sizes before and after.
pub fn run(config: &Config) -> Result<CompactReport, AdminError> {
    // Opening first gives the clear "is the node still running?" error.
    drop(open_store(config)?);
    std::thread::sleep(std::time::Duration::from_millis(200)); // sled lets go of its lock.
    a2ad_storage::compact(&config.data_dir).map_err(|e| super::store_error(config, e))
}
