//! Push-notification configs, with their secrets sealed at rest.
//!
//! One sled tree (`push_configs`, from [`crate::SledStore::tree`], so it shares the task
//! store's flushes and group commit), or, on the shared store, hashes in Redis
//! (`rows.rs`):
//! * task id segment (`u16` length ‖ bytes) ‖ config id → the record as JSON.
//!
//! The task id is length-prefixed, so one task's configs are exactly one prefix scan ("t1"
//! never sees "t10"), and the config id is the rest of the key, so a scan yields them in
//! id order.
//!
//! The record is the owner and the config in plain JSON, except `token` and
//! `authentication.credentials`: those are sealed with AES-256-GCM (ring) under the node's
//! [`SecretKey`], each with a fresh random 96-bit nonce, stored as base64 of nonce ‖
//! ciphertext ‖ tag. The associated data binds each sealed value to where it belongs: the
//! task id, the config id, the field name, the owner and the URL (all length-prefixed). A
//! sealed value copied into another record or field, a record moved to another key, or a
//! URL or owner edited on disk, fails to open with an error, never yields garbage.

use crate::model::push_segment;
use crate::push::keyring::{wipe, SecretKey};
use crate::{Owner, Scope, StoreError};
use a2ad_protocol::TaskPushNotificationConfig;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
pub(crate) use rows::ConfigRows;
use rows::SledRows;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A stored config with its secrets opened. Lives in memory only; its `Debug` output
/// redacts the token and the credentials.
#[derive(Clone, PartialEq)]
pub struct StoredPushConfig {
    pub owner: Owner,
    pub config: TaskPushNotificationConfig,
}

impl std::fmt::Debug for StoredPushConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        let redacted = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("StoredPushConfig")
            .field("owner", &self.owner)
            .field("tenant", &c.tenant)
            .field("task_id", &c.task_id)
            .field("id", &c.id)
            .field("url", &c.url)
            .field("token", &redacted(&c.token))
            .field("scheme", &c.authentication.as_ref().map(|a| &a.scheme))
            .field("credentials", &c.authentication.as_ref().and_then(|a| redacted(&a.credentials)))
            .finish()
    }
}

/// The record as stored: the config with its secrets taken out, and the secrets sealed.
#[derive(Serialize, Deserialize)]
struct Record {
    owner: Owner,
    config: TaskPushNotificationConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed_credentials: Option<String>,
}

const TOKEN: &str = "token";
const CREDENTIALS: &str = "authentication.credentials";
/// Versions the associated-data layout.
const AAD_DOMAIN: &[u8] = b"a2ad push config secret v1";

/// The push-config store. Cheap to clone (the tree and the key are shared).
#[derive(Clone)]
pub struct PushConfigStore {
    rows: Arc<dyn ConfigRows>,
    key: Arc<LessSafeKey>,
    rng: SystemRandom,
}

impl PushConfigStore {
    /// A store over `tree` whose secrets are sealed with `key` (consumed, and wiped once
    /// expanded into the cipher's key schedule).
    pub fn new(tree: sled::Tree, key: SecretKey) -> Self {
        Self::over(Arc::new(SledRows(tree)), key)
    }

    /// A store over `rows` (the shared store's: [`crate::RedisStore::push_configs`]).
    pub(crate) fn over(rows: Arc<dyn ConfigRows>, key: SecretKey) -> Self {
        let unbound = UnboundKey::new(&AES_256_GCM, key.bytes()).expect("a 32-byte key is an AES-256 key");
        PushConfigStore { rows, key: Arc::new(LessSafeKey::new(unbound)), rng: SystemRandom::new() }
    }

    /// Creates or replaces the config `config.id` of task `config.task_id` (both must be
    /// set by the caller), owned by `owner`.
    pub fn put(&self, owner: &Owner, config: &TaskPushNotificationConfig) -> Result<(), StoreError> {
        let task_id = config
            .task_id
            .as_deref()
            .ok_or_else(|| StoreError::Corrupt("refusing to store a push config without a task id".into()))?;
        let id = config
            .id
            .as_deref()
            .ok_or_else(|| StoreError::Corrupt("refusing to store a push config without an id".into()))?;
        let mut plain = config.clone();
        let token = plain.token.take();
        let credentials = plain.authentication.as_mut().and_then(|a| a.credentials.take());
        let seal = |field: &str, secret: Option<String>| {
            secret.map(|s| self.seal(s, &aad(task_id, id, field, owner, &config.url))).transpose()
        };
        let record = Record {
            owner: owner.clone(),
            sealed_token: seal(TOKEN, token)?,
            sealed_credentials: seal(CREDENTIALS, credentials)?,
            config: plain,
        };
        let value = serde_json::to_vec(&record).map_err(|e| StoreError::Corrupt(format!("push config: {e}")))?;
        self.rows.put(task_id, id, value)
    }

    /// The config `id` of task `task_id` if it is in `scope`, secrets opened. Another
    /// owner's config reads as absent and is not decoded (see [`Scope`]).
    pub fn get(&self, scope: Scope<'_>, task_id: &str, id: &str) -> Result<Option<StoredPushConfig>, StoreError> {
        let prefix = scope.json_prefix();
        let Some(bytes) = self.rows.get(task_id, id)? else { return Ok(None) };
        self.open_in_scope(scope, prefix.as_deref(), task_id, id, &bytes)
    }

    /// Every config of task `task_id` in `scope`, in id order, secrets opened.
    pub fn list(&self, scope: Scope<'_>, task_id: &str) -> Result<Vec<StoredPushConfig>, StoreError> {
        let prefix = scope.json_prefix();
        let mut out = Vec::new();
        for (id, value) in self.rows.list(task_id)? {
            out.extend(self.open_in_scope(scope, prefix.as_deref(), task_id, &id, &value)?);
        }
        Ok(out)
    }

    /// Deletes one config if it is in `scope`. Idempotent: `false` when there was none
    /// (or it is another owner's, which is left alone).
    pub fn delete(&self, scope: Scope<'_>, task_id: &str, id: &str) -> Result<bool, StoreError> {
        if scope == Scope::Node {
            return self.rows.remove(task_id, id);
        }
        let Some(current) = self.rows.get(task_id, id)? else { return Ok(false) };
        let in_scope = self.open_in_scope(scope, scope.json_prefix().as_deref(), task_id, id, &current)?.is_some();
        // Removed only as it was read in scope (a concurrent write wins).
        Ok(in_scope && self.rows.remove_if(task_id, id, current)?)
    }

    /// The stored record opened if it is in `scope`: the owner is compared on the raw
    /// JSON first ([`Scope::admits_json`]), so another owner's is never decoded.
    fn open_in_scope(
        &self,
        scope: Scope<'_>,
        prefix: Option<&[u8]>,
        task_id: &str,
        id: &str,
        bytes: &[u8],
    ) -> Result<Option<StoredPushConfig>, StoreError> {
        if Scope::admits_json(prefix, bytes) == Some(false) {
            return Ok(None);
        }
        Ok(Some(self.open_record(task_id, id, bytes)?).filter(|stored| scope.admits(&stored.owner)))
    }

    /// Deletes every config of a task, in one atomic batch; returns how many there were.
    /// (A config put concurrently with this call may survive it.)
    pub fn delete_task(&self, task_id: &str) -> Result<usize, StoreError> {
        self.rows.remove_task(task_id)
    }

    /// The ids of the tasks that have configs, each once, in key order: for the start-up
    /// sweep of configs whose task is gone. Reads keys only as far as their task id.
    pub fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        self.rows.task_ids()
    }

    fn open_record(&self, task_id: &str, id: &str, bytes: &[u8]) -> Result<StoredPushConfig, StoreError> {
        let record: Record = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("push config {task_id}/{id}: {e}")))?;
        if record.config.task_id.as_deref() != Some(task_id) || record.config.id.as_deref() != Some(id) {
            return Err(StoreError::Corrupt(format!("push config {task_id}/{id}: the record names another config")));
        }
        let Record { owner, mut config, sealed_token, sealed_credentials } = record;
        let open = |field: &str, sealed: Option<String>| {
            sealed.map(|s| self.open(&s, &aad(task_id, id, field, &owner, &config.url), task_id, id, field)).transpose()
        };
        let token = open(TOKEN, sealed_token)?;
        let credentials = open(CREDENTIALS, sealed_credentials)?;
        config.token = token;
        match (config.authentication.as_mut(), credentials) {
            (Some(auth), credentials) => auth.credentials = credentials,
            (None, None) => {}
            (None, Some(_)) => {
                return Err(StoreError::Corrupt(format!(
                    "push config {task_id}/{id}: credentials without an authentication scheme"
                )))
            }
        }
        Ok(StoredPushConfig { owner, config })
    }

    /// base64(nonce ‖ AES-256-GCM(secret) ‖ tag). The plaintext buffer is encrypted in place.
    fn seal(&self, secret: String, aad: &[u8]) -> Result<String, StoreError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| StoreError::Key("the system random number generator failed".into()))?;
        let mut buf = secret.into_bytes();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad), &mut buf)
            .map_err(|_| StoreError::Key("sealing a push secret failed".into()))?;
        let mut out = Vec::with_capacity(NONCE_LEN + buf.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&buf);
        Ok(STANDARD.encode(out))
    }

    fn open(&self, sealed: &str, aad: &[u8], task_id: &str, id: &str, field: &str) -> Result<String, StoreError> {
        let what = || format!("push config {task_id}/{id}: the sealed {field}");
        let mut bytes =
            STANDARD.decode(sealed).map_err(|_| StoreError::Corrupt(format!("{} is not base64", what())))?;
        if bytes.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(StoreError::Corrupt(format!("{} is too short", what())));
        }
        let nonce = Nonce::try_assume_unique_for_key(&bytes[..NONCE_LEN])
            .map_err(|_| StoreError::Corrupt(format!("{} has no nonce", what())))?;
        let opened = match self.key.open_within(nonce, Aad::from(aad), &mut bytes, NONCE_LEN..) {
            Ok(plain) => Ok(plain.to_vec()),
            Err(_) => Err(StoreError::Key(format!(
                "{} does not decrypt: the push key is not the one it was sealed with \
                 (push.key or A2AD_PUSH_KEY changed), or the record was altered",
                what()
            ))),
        };
        wipe(&mut bytes);
        String::from_utf8(opened?).map_err(|e| {
            let mut raw = e.into_bytes();
            wipe(&mut raw);
            StoreError::Corrupt(format!("{} is not UTF-8", what()))
        })
    }
}

fn task_prefix(task_id: &str) -> Option<Vec<u8>> {
    // Longer ids would be truncated by the segment, and could collide.
    if task_id.len() > usize::from(u16::MAX) {
        return None;
    }
    let mut key = Vec::with_capacity(2 + task_id.len());
    push_segment(&mut key, task_id);
    Some(key)
}

/// The task id segment at the start of a record key.
fn key_task_id(key: &[u8]) -> Option<&str> {
    let len = usize::from(u16::from_be_bytes([*key.first()?, *key.get(1)?]));
    std::str::from_utf8(key.get(2..2 + len)?).ok()
}

fn record_key(task_id: &str, id: &str) -> Option<Vec<u8>> {
    let mut key = task_prefix(task_id)?;
    key.extend_from_slice(id.as_bytes());
    Some(key)
}

/// The associated data of one sealed value: domain ‖ each part as `u64` length ‖ bytes.
fn aad(task_id: &str, id: &str, field: &str, owner: &Owner, url: &str) -> Vec<u8> {
    let parts = [task_id, id, field, &owner.tenant, &owner.principal, url];
    let mut aad = Vec::with_capacity(AAD_DOMAIN.len() + parts.iter().map(|p| 8 + p.len()).sum::<usize>());
    aad.extend_from_slice(AAD_DOMAIN);
    for part in parts {
        aad.extend_from_slice(&(part.len() as u64).to_be_bytes());
        aad.extend_from_slice(part.as_bytes());
    }
    aad
}

mod rows;
#[cfg(test)]
mod tests;
