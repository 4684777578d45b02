//! The key that seals push-notification secrets at rest.
//!
//! A node reads it from `A2AD_PUSH_KEY` ([`SecretKey::from_base64`]) or from the keyring
//! file `push.key` in its data dir ([`SecretKey::load_or_create`]): standard base64 of 32
//! random bytes, created on first start with mode 0600. A key file that group or others
//! may read or write is refused, never silently used or "fixed".
//!
//! No error message, log line or `Debug` output carries key material.

use crate::StoreError;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The keyring file's name inside the data dir.
pub const KEY_FILE: &str = "push.key";

/// Key length in bytes (AES-256).
pub const KEY_LEN: usize = 32;

/// A 256-bit secret key. Wiped when dropped; `Debug` prints `SecretKey(..)` only; not
/// `Clone`, so that the one copy is the one that gets wiped.
pub struct SecretKey([u8; KEY_LEN]);

impl SecretKey {
    /// A fresh random key from the system CSPRNG.
    pub fn generate() -> Result<Self, StoreError> {
        let mut bytes = [0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| StoreError::Key("the system random number generator failed".into()))?;
        Ok(SecretKey(bytes))
    }

    /// Parses a key given as standard base64 (e.g. the `A2AD_PUSH_KEY` variable):
    /// exactly 32 bytes once decoded. Surrounding whitespace is ignored.
    pub fn from_base64(text: &str) -> Result<Self, StoreError> {
        let mut decoded = STANDARD.decode(text.trim()).map_err(|_| {
            StoreError::Key(format!(
                "the push key is not valid base64 (expected {KEY_LEN} random bytes in standard base64)"
            ))
        })?;
        let key = if decoded.len() == KEY_LEN {
            let mut bytes = [0u8; KEY_LEN];
            bytes.copy_from_slice(&decoded);
            Ok(SecretKey(bytes))
        } else {
            Err(StoreError::Key(format!(
                "the push key decodes to {} bytes, expected exactly {KEY_LEN} (generate one with `head -c {KEY_LEN} /dev/urandom | base64`)",
                decoded.len()
            )))
        };
        wipe(&mut decoded);
        key
    }

    /// Reads `data_dir/push.key`, or creates it (with a new random key, mode 0600) when it
    /// does not exist. The file appears atomically, complete or not at all: it is written
    /// to a private temporary file, synced, and hard-linked into place, which fails rather
    /// than replaces when another process created the key first (that key is then used).
    /// An existing key file that group or others may access is refused.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, StoreError> {
        let path = data_dir.join(KEY_FILE);
        match File::open(&path) {
            Ok(file) => read_key_file(file, &path),
            Err(e) if e.kind() == ErrorKind::NotFound => create_key_file(data_dir, &path),
            Err(e) => Err(io_error("cannot open", &path, &e)),
        }
    }

    /// The raw key bytes, for the sealing code of this crate only.
    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// Overwrites secret bytes with zeros; `black_box` keeps the compiler from eliding the
/// dead store (best effort without `unsafe`).
pub(crate) fn wipe(bytes: &mut [u8]) {
    bytes.fill(0);
    std::hint::black_box(bytes);
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> StoreError {
    StoreError::Key(format!("{what} the push key file {}: {e}", path.display()))
}

fn read_key_file(file: File, path: &Path) -> Result<SecretKey, StoreError> {
    // Checked on the open file, so the mode is the mode of what is read.
    let meta = file.metadata().map_err(|e| io_error("cannot inspect", path, &e))?;
    if !meta.is_file() {
        return Err(StoreError::Key(format!("the push key file {} is not a regular file", path.display())));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(StoreError::Key(format!(
            "refusing the push key file {}: its mode is {mode:04o}, but group and others must have no access \
             (chmod 600 it, and treat the key as exposed)",
            path.display()
        )));
    }
    let mut text = String::with_capacity(128);
    let read = file.take(1024).read_to_string(&mut text);
    let key = match read {
        Ok(_) => SecretKey::from_base64(&text).map_err(|e| match e {
            StoreError::Key(msg) => StoreError::Key(format!("{}: {msg}", path.display())),
            other => other,
        }),
        Err(e) => Err(io_error("cannot read", path, &e)),
    };
    wipe_string(text);
    key
}

fn create_key_file(data_dir: &Path, path: &Path) -> Result<SecretKey, StoreError> {
    fs::create_dir_all(data_dir).map_err(|e| io_error("cannot create the directory of", path, &e))?;
    let key = SecretKey::generate()?;
    let mut suffix = [0u8; 8];
    SystemRandom::new()
        .fill(&mut suffix)
        .map_err(|_| StoreError::Key("the system random number generator failed".into()))?;
    let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = data_dir.join(format!(".{KEY_FILE}.{suffix}.tmp"));
    let mut text = STANDARD.encode(key.bytes());
    text.push('\n');
    let written = write_private(&tmp, text.as_bytes());
    wipe_string(text);
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_error("cannot write", &tmp, &e));
    }
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            // Make the new directory entry durable too; a failure here is not fatal.
            if let Ok(dir) = File::open(data_dir) {
                let _ = dir.sync_all();
            }
            tracing::info!(path = %path.display(), "created a new push key file");
            Ok(key)
        }
        // Another process won the race: use its key.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            let file = File::open(path).map_err(|e| io_error("cannot open", path, &e))?;
            read_key_file(file, path)
        }
        Err(e) => Err(io_error("cannot create", path, &e)),
    }
}

/// Creates `path` (which must not exist) with mode 0600 and writes `bytes`, synced.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    // The umask can only narrow the mode; make it exactly 0600 (owner read and write).
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn wipe_string(text: String) {
    let mut bytes = text.into_bytes();
    wipe(&mut bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: StoreError) -> String {
        match e {
            StoreError::Key(msg) => msg,
            other => panic!("expected a key error, got {other:?}"),
        }
    }

    #[test]
    fn key_file_is_created_with_mode_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let created = SecretKey::load_or_create(&data).unwrap();
        let path = data.join(KEY_FILE);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(STANDARD.decode(text.trim()).unwrap().len(), KEY_LEN);
        let loaded = SecretKey::load_or_create(&data).unwrap();
        assert_eq!(created.bytes(), loaded.bytes());
        assert_ne!(created.bytes(), &[0u8; KEY_LEN]);
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(&data).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(KEY_FILE)]);
    }

    #[test]
    fn two_data_dirs_get_different_keys() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let ka = SecretKey::load_or_create(a.path()).unwrap();
        let kb = SecretKey::load_or_create(b.path()).unwrap();
        assert_ne!(ka.bytes(), kb.bytes());
    }

    #[test]
    fn group_readable_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let text = STANDARD.encode([7u8; KEY_LEN]);
        fs::write(&path, &text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let msg = message(SecretKey::load_or_create(dir.path()).unwrap_err());
        assert!(msg.contains("0644") && msg.contains("refusing"), "{msg}");
        assert!(!msg.contains(&text), "the error leaks the key: {msg}");
        // The file is left alone, not rewritten or re-moded.
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        // Once fixed by the operator, it is used.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(SecretKey::load_or_create(dir.path()).unwrap().bytes(), &[7u8; KEY_LEN]);
    }

    #[test]
    fn malformed_key_file_is_refused_without_echoing_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let text = STANDARD.encode([9u8; 16]);
        fs::write(&path, &text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let msg = message(SecretKey::load_or_create(dir.path()).unwrap_err());
        assert!(msg.contains("16 bytes") && msg.contains(KEY_FILE), "{msg}");
        assert!(!msg.contains(&text), "{msg}");
    }

    #[test]
    fn from_base64_wants_exactly_32_bytes() {
        let good = STANDARD.encode([1u8; KEY_LEN]);
        assert_eq!(SecretKey::from_base64(&format!("  {good}\n")).unwrap().bytes(), &[1u8; KEY_LEN]);
        for bad in [STANDARD.encode([1u8; 31]), STANDARD.encode([1u8; 33]), String::new()] {
            let msg = message(SecretKey::from_base64(&bad).unwrap_err());
            assert!(msg.contains("expected exactly 32"), "{msg}");
        }
        let secretish = "not-base64-SECRET!!";
        let msg = message(SecretKey::from_base64(secretish).unwrap_err());
        assert!(msg.contains("not valid base64") && !msg.contains(secretish), "{msg}");
    }

    #[test]
    fn debug_hides_the_key() {
        let key = SecretKey::from_base64(&STANDARD.encode([0xabu8; KEY_LEN])).unwrap();
        assert_eq!(format!("{key:?}"), "SecretKey(..)");
        assert_eq!(format!("{key:#?}"), "SecretKey(..)");
    }
}
