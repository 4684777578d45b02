//! Making sled's files durable: the `fsync`s sled 0.34.7 leaves out of `Db::flush`.

use crate::StoreError;
use std::fs::File;
use std::path::Path;

/// `fsync`s sled's files in `dir` (`db`, `conf`, each file in `blobs/`) and the two
/// directories, so that what sled wrote survives a power loss, not only a crash.
pub(super) fn sync_sled_files(dir: &Path) -> Result<(), StoreError> {
    for name in ["db", "conf"] {
        let path = dir.join(name);
        if path.exists() {
            sync(&path)?;
        }
    }
    let blobs = dir.join("blobs");
    if blobs.is_dir() {
        for entry in std::fs::read_dir(&blobs).map_err(|e| io("list", &blobs, e))? {
            let path = entry.map_err(|e| io("list", &blobs, e))?.path();
            if path.is_file() {
                sync(&path)?;
            }
        }
        sync(&blobs)?;
    }
    sync(dir)
}

/// `fsync` of one file or directory (directories are opened read-only, as Linux allows).
fn sync(path: &Path) -> Result<(), StoreError> {
    File::open(path).and_then(|f| f.sync_all()).map_err(|e| io("fsync", path, e))
}

/// A failed `fsync` means the disk refuses writes: transient, like the log's failures.
fn io(op: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("{op} {}: {e}", path.display()))
}
