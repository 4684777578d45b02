//! PBKDF2-HMAC-SHA256 password hashes in a self-describing string:
//! `pbkdf2-sha256$<iterations>$<b64 salt>$<b64 hash>` (standard base64, padding optional).

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD_NO_PAD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use ring::pbkdf2;
use ring::rand::{SecureRandom, SystemRandom};
use std::fmt;
use std::num::NonZeroU32;

/// The algorithm tag at the start of a hash string.
pub const PBKDF2_PREFIX: &str = "pbkdf2-sha256";
/// The iteration count operators should use (OWASP, 2023).
pub const DEFAULT_PBKDF2_ITERATIONS: u32 = 600_000;
/// The fewest iterations a hash may have.
pub const MIN_PBKDF2_ITERATIONS: u32 = 1_000;

const ALGORITHM: pbkdf2::Algorithm = pbkdf2::PBKDF2_HMAC_SHA256;
const SALT_LEN: usize = 16;
const HASH_LEN: usize = 32;

/// Standard base64, with or without padding.
pub(crate) const STANDARD_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Hashes `password` with a random 16-byte salt into
/// `pbkdf2-sha256$<iterations>$<b64 salt>$<b64 hash>`, the form `basic-users[].password-hash`
/// takes. `iterations` below [`MIN_PBKDF2_ITERATIONS`] is raised to it; use
/// [`DEFAULT_PBKDF2_ITERATIONS`] unless you have measured.
pub fn hash_password(password: &str, iterations: u32) -> String {
    let iterations = iterations.max(MIN_PBKDF2_ITERATIONS);
    let mut salt = [0u8; SALT_LEN];
    SystemRandom::new().fill(&mut salt).expect("the system random source failed");
    let mut hash = [0u8; HASH_LEN];
    let rounds = NonZeroU32::new(iterations).expect("iterations is at least MIN_PBKDF2_ITERATIONS");
    pbkdf2::derive(ALGORITHM, rounds, &salt, password.as_bytes(), &mut hash);
    format!("{PBKDF2_PREFIX}${iterations}${}${}", STANDARD_NO_PAD.encode(salt), STANDARD_NO_PAD.encode(hash))
}

/// A parsed password hash.
#[derive(Clone)]
pub(crate) struct PasswordHash {
    iterations: NonZeroU32,
    salt: Vec<u8>,
    hash: Vec<u8>,
}

impl PasswordHash {
    /// Reads a hash string; the error says what is wrong, never the value.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        const FORMAT: &str = "expected pbkdf2-sha256$<iterations>$<b64 salt>$<b64 hash>";
        let parts: Vec<&str> = text.trim().split('$').collect();
        let [prefix, iterations, salt, hash] = parts[..] else {
            return Err(FORMAT.to_owned());
        };
        if prefix != PBKDF2_PREFIX {
            return Err(FORMAT.to_owned());
        }
        let iterations: u32 = iterations.parse().map_err(|_| format!("{FORMAT} (bad iteration count)"))?;
        if iterations < MIN_PBKDF2_ITERATIONS {
            return Err(format!("iterations must be at least {MIN_PBKDF2_ITERATIONS}"));
        }
        let salt = STANDARD_ANY_PAD.decode(salt).map_err(|_| format!("{FORMAT} (salt is not base64)"))?;
        let hash = STANDARD_ANY_PAD.decode(hash).map_err(|_| format!("{FORMAT} (hash is not base64)"))?;
        if salt.len() < 8 {
            return Err("the salt must be at least 8 bytes".to_owned());
        }
        if !(16..=64).contains(&hash.len()) {
            return Err("the hash must be 16 to 64 bytes".to_owned());
        }
        let iterations = NonZeroU32::new(iterations).ok_or_else(|| FORMAT.to_owned())?;
        Ok(PasswordHash { iterations, salt, hash })
    }

    /// A hash no password matches, verified instead when the user is unknown so that the
    /// answer takes as long as for a known user.
    pub(crate) fn dummy(iterations: NonZeroU32) -> Self {
        PasswordHash { iterations, salt: vec![0; SALT_LEN], hash: vec![0; HASH_LEN] }
    }

    pub(crate) fn iterations(&self) -> NonZeroU32 {
        self.iterations
    }

    /// Constant-time check (ring::pbkdf2::verify).
    pub(crate) fn verify(&self, password: &[u8]) -> bool {
        pbkdf2::verify(ALGORITHM, self.iterations, &self.salt, password, &self.hash).is_ok()
    }
}

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasswordHash").field("iterations", &self.iterations).finish_non_exhaustive()
    }
}
