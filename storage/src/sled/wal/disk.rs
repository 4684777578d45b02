//! The file operations the log needs, behind a trait so that tests can make the disk fail
//! (ENOSPC mid-write, a failing `fdatasync`) and heal; plus segment names, the directory
//! `fsync`, and the checkpoint file.
//!
//! Durability here always means `fdatasync` ([`std::fs::File::sync_data`]) of the file
//! that holds the bytes, and `fsync` of the directory when a name appears or disappears.
//! Never `sync_file_range`, which flushes neither metadata nor the drive's cache.

use super::WalError;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Segment files are `<first LSN, 20 digits>.wal`, so that names sort in LSN order.
pub(crate) const SEGMENT_SUFFIX: &str = ".wal";
/// The durable checkpoint: 8 bytes LSN (LE) + 4 bytes CRC32 of them.
pub(crate) const CHECKPOINT_FILE: &str = "checkpoint";
const CHECKPOINT_TMP: &str = "checkpoint.tmp";

/// An open segment, as the writer thread uses it.
pub(crate) trait SegmentFile: Send {
    /// Writes all of `buf` at `offset` (positional: a failed write leaves no file cursor
    /// half-way, and the retry writes at the same offset again).
    fn write_all_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// `fdatasync`.
    fn sync_data(&mut self) -> io::Result<()>;
    /// Truncates (or extends) the file to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
}

/// Opens segments and syncs the directory. [`OsDisk`] is the real one.
pub(crate) trait Disk: Send + Sync {
    /// Creates a new segment, or empties a stale one left by a failed attempt.
    fn create(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>>;
    /// Opens an existing segment to append to it.
    fn open(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>>;
    /// `fsync` of a directory, so that a created, renamed or removed name is durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The file system, unfiltered.
#[derive(Debug, Default)]
pub(crate) struct OsDisk;

impl SegmentFile for File {
    fn write_all_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
}

impl Disk for OsDisk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>> {
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
        Ok(Box::new(file))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>> {
        Ok(Box::new(OpenOptions::new().write(true).open(path)?))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        sync_dir(dir)
    }
}

/// `fsync` of a directory (opened read-only, as Linux allows).
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Wraps an `io::Error` with what was being done and to which file.
pub(crate) fn io_error<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> WalError + 'a {
    move |e| WalError::Io { op, path: path.to_path_buf(), source: std::sync::Arc::new(e) }
}

/// The path of the segment whose first record is `first_lsn`.
pub(crate) fn segment_path(dir: &Path, first_lsn: u64) -> PathBuf {
    dir.join(format!("{first_lsn:020}{SEGMENT_SUFFIX}"))
}

/// The first LSNs of the segments in `dir`, sorted. Other files are ignored.
pub(crate) fn list_segments(dir: &Path) -> Result<Vec<u64>, WalError> {
    let mut firsts = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error("list", dir))? {
        let entry = entry.map_err(io_error("list", dir))?;
        let name = entry.file_name();
        let parsed = name
            .to_str()
            .and_then(|n| n.strip_suffix(SEGMENT_SUFFIX))
            .filter(|digits| digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok());
        firsts.extend(parsed);
    }
    firsts.sort_unstable();
    Ok(firsts)
}

/// Reads the checkpoint LSN (0 when there is none yet), and removes a temporary file a
/// crash left behind (the rename never happened, so the old checkpoint stands).
pub(crate) fn load_checkpoint(dir: &Path) -> Result<u64, WalError> {
    let tmp = dir.join(CHECKPOINT_TMP);
    if tmp.exists() {
        fs::remove_file(&tmp).map_err(io_error("remove", &tmp))?;
    }
    let path = dir.join(CHECKPOINT_FILE);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_error("read", &path)(e)),
    };
    let valid = bytes.len() == 12 && crc32fast::hash(&bytes[..8]).to_le_bytes() == bytes[8..12];
    if !valid {
        return Err(WalError::BadCheckpoint { path });
    }
    let mut lsn = [0u8; 8];
    lsn.copy_from_slice(&bytes[..8]);
    Ok(u64::from_le_bytes(lsn))
}

/// Stores the checkpoint LSN atomically and durably: write a temporary file, `fsync` it,
/// rename it over the old one, `fsync` the directory. A crash at any point leaves either
/// the old checkpoint or the new one, whole.
pub(crate) fn store_checkpoint(dir: &Path, lsn: u64) -> Result<(), WalError> {
    let tmp = dir.join(CHECKPOINT_TMP);
    let mut bytes = lsn.to_le_bytes().to_vec();
    bytes.extend_from_slice(&crc32fast::hash(&bytes).to_le_bytes());
    let mut file = File::create(&tmp).map_err(io_error("create", &tmp))?;
    file.write_all(&bytes).map_err(io_error("write", &tmp))?;
    file.sync_all().map_err(io_error("fsync", &tmp))?;
    drop(file);
    let path = dir.join(CHECKPOINT_FILE);
    fs::rename(&tmp, &path).map_err(io_error("rename", &path))?;
    sync_dir(dir).map_err(io_error("fsync", dir))
}

/// Truncates a segment to `len` bytes, durably (open-time tail repair and `repair`).
pub(crate) fn truncate_segment(path: &Path, len: u64) -> Result<(), WalError> {
    let file = OpenOptions::new().write(true).open(path).map_err(io_error("open", path))?;
    file.set_len(len).map_err(io_error("truncate", path))?;
    file.sync_all().map_err(io_error("fsync", path))
}

/// The file system, with writes failing with ENOSPC while `full` is set
/// ([`super::FullDiskSwitch`]).
pub(crate) struct SwitchedDisk {
    pub full: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

struct SwitchedFile {
    inner: File,
    full: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Disk for SwitchedDisk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>> {
        let inner = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
        Ok(Box::new(SwitchedFile { inner, full: std::sync::Arc::clone(&self.full) }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn SegmentFile>> {
        let inner = OpenOptions::new().write(true).open(path)?;
        Ok(Box::new(SwitchedFile { inner, full: std::sync::Arc::clone(&self.full) }))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        sync_dir(dir)
    }
}

impl SegmentFile for SwitchedFile {
    fn write_all_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.full.load(std::sync::atomic::Ordering::SeqCst) {
            FileExt::write_all_at(&self.inner, &buf[..buf.len() / 2], offset)?;
            return Err(io::Error::from_raw_os_error(28));
        }
        FileExt::write_all_at(&self.inner, buf, offset)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.inner.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
}
