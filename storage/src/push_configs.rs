//! Push-notification configs, with their secrets sealed at rest.
//!
//! One sled tree (`push_configs`, from [`crate::SledStore::tree`], so it shares the task
//! store's flushes and group commit):
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

use crate::keyring::{wipe, SecretKey};
use crate::model::push_segment;
use crate::{Owner, Scope, StoreError};
use a2ad_protocol::TaskPushNotificationConfig;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
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
    tree: sled::Tree,
    key: Arc<LessSafeKey>,
    rng: SystemRandom,
}

impl PushConfigStore {
    /// A store over `tree` whose secrets are sealed with `key` (consumed, and wiped once
    /// expanded into the cipher's key schedule).
    pub fn new(tree: sled::Tree, key: SecretKey) -> Self {
        let unbound = UnboundKey::new(&AES_256_GCM, key.bytes()).expect("a 32-byte key is an AES-256 key");
        PushConfigStore { tree, key: Arc::new(LessSafeKey::new(unbound)), rng: SystemRandom::new() }
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
        let key = record_key(task_id, id).ok_or_else(|| {
            StoreError::Corrupt(format!("refusing to store a push config: the task id is over {} bytes", u16::MAX))
        })?;
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
        self.tree.insert(key, value)?;
        Ok(())
    }

    /// The config `id` of task `task_id` if it is in `scope`, secrets opened. Another
    /// owner's config reads as absent and is not decoded (see [`Scope`]).
    pub fn get(&self, scope: Scope<'_>, task_id: &str, id: &str) -> Result<Option<StoredPushConfig>, StoreError> {
        let prefix = scope.json_prefix();
        let Some(key) = record_key(task_id, id) else { return Ok(None) };
        let Some(bytes) = self.tree.get(key)? else { return Ok(None) };
        match Scope::admits_json(prefix.as_deref(), &bytes) {
            Some(false) => Ok(None),
            _ => Ok(Some(self.open_record(task_id, id, &bytes)?).filter(|s| scope.admits(&s.owner))),
        }
    }

    /// Every config of task `task_id` in `scope`, in id order, secrets opened.
    pub fn list(&self, scope: Scope<'_>, task_id: &str) -> Result<Vec<StoredPushConfig>, StoreError> {
        let prefix = scope.json_prefix();
        let Some(key_prefix) = task_prefix(task_id) else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for entry in self.tree.scan_prefix(&key_prefix) {
            let (key, value) = entry?;
            if Scope::admits_json(prefix.as_deref(), &value) == Some(false) {
                continue;
            }
            let id = std::str::from_utf8(&key[key_prefix.len()..])
                .map_err(|_| StoreError::Corrupt(format!("push config key of task {task_id} is not UTF-8")))?;
            let stored = self.open_record(task_id, id, &value)?;
            if scope.admits(&stored.owner) {
                out.push(stored);
            }
        }
        Ok(out)
    }

    /// Deletes one config if it is in `scope`. Idempotent: `false` when there was none
    /// (or it is another owner's, which is left alone).
    pub fn delete(&self, scope: Scope<'_>, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let Some(key) = record_key(task_id, id) else { return Ok(false) };
        if scope == Scope::Node {
            return Ok(self.tree.remove(key)?.is_some());
        }
        let prefix = scope.json_prefix();
        let Some(current) = self.tree.get(&key)? else { return Ok(false) };
        let in_scope = match Scope::admits_json(prefix.as_deref(), &current) {
            Some(admitted) => admitted,
            None => scope.admits(&self.open_record(task_id, id, &current)?.owner),
        };
        // Removed only as it was read in scope (a concurrent write wins).
        Ok(in_scope && self.tree.compare_and_swap(key, Some(current), None::<&[u8]>)?.is_ok())
    }

    /// Deletes every config of a task, in one atomic batch; returns how many there were.
    /// (A config put concurrently with this call may survive it.)
    pub fn delete_task(&self, task_id: &str) -> Result<usize, StoreError> {
        let Some(prefix) = task_prefix(task_id) else { return Ok(0) };
        let mut batch = sled::Batch::default();
        let mut count = 0;
        for entry in self.tree.scan_prefix(&prefix) {
            let (key, _) = entry?;
            batch.remove(key);
            count += 1;
        }
        if count > 0 {
            self.tree.apply_batch(batch)?;
        }
        Ok(count)
    }

    /// The ids of the tasks that have configs, each once, in key order: for the start-up
    /// sweep of configs whose task is gone. Reads keys only as far as their task id.
    pub fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = Vec::new();
        for entry in self.tree.iter().keys() {
            let key = entry?;
            let task_id = key_task_id(&key)
                .ok_or_else(|| StoreError::Corrupt("a push config key has no task id segment".into()))?;
            if ids.last().map(String::as_str) != Some(task_id) {
                ids.push(task_id.to_owned());
            }
        }
        Ok(ids)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SledStore, TaskStore};
    use a2ad_protocol::AuthenticationInfo;
    use std::path::Path;

    const TOKEN_SECRET: &str = "tok-SECRET-123";
    const CRED_SECRET: &str = "cred-SECRET-456";
    const URL: &str = "https://hooks.example.com/SENTINEL-URL-789";

    fn owner() -> Owner {
        Owner { tenant: "acme".into(), principal: "alice".into() }
    }

    fn config(task: &str, id: &str) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            tenant: Some("acme".into()),
            id: Some(id.into()),
            task_id: Some(task.into()),
            url: URL.into(),
            token: Some(format!("{TOKEN_SECRET}-{task}-{id}")),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: Some(format!("{CRED_SECRET}-{task}-{id}")),
            }),
        }
    }

    fn open(dir: &Path) -> (SledStore, PushConfigStore) {
        let store = crate::sled_store::open_retrying(dir);
        let key = SecretKey::load_or_create(dir).unwrap();
        let configs = PushConfigStore::new(store.tree("push_configs").unwrap(), key);
        (store, configs)
    }

    #[test]
    fn reads_and_deletes_are_scoped_to_the_owner() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        let stranger = Owner { tenant: "acme".into(), principal: "alice2".into() };
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        let alice = owner();
        assert!(configs.get(Scope::Owner(&alice), "t1", "c1").unwrap().is_some());
        assert!(configs.get(Scope::Owner(&stranger), "t1", "c1").unwrap().is_none(), "reads as unknown");
        assert!(configs.list(Scope::Owner(&stranger), "t1").unwrap().is_empty());
        assert_eq!(configs.list(Scope::Owner(&alice), "t1").unwrap().len(), 1);
        assert!(!configs.delete(Scope::Owner(&stranger), "t1", "c1").unwrap(), "another owner's is left alone");
        assert!(configs.get(Scope::Node, "t1", "c1").unwrap().is_some());
        assert!(configs.delete(Scope::Owner(&alice), "t1", "c1").unwrap());
        assert!(configs.get(Scope::Node, "t1", "c1").unwrap().is_none());
    }

    fn ids(list: &[StoredPushConfig]) -> Vec<&str> {
        list.iter().map(|s| s.config.id.as_deref().unwrap()).collect()
    }

    fn key_error(e: StoreError) -> String {
        match e {
            StoreError::Key(msg) => msg,
            other => panic!("expected a key error, got {other:?}"),
        }
    }

    #[test]
    fn put_get_list_delete_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        let c = config("t1", "c1");
        configs.put(&owner(), &c).unwrap();
        let got = configs.get(Scope::Node, "t1", "c1").unwrap().unwrap();
        assert_eq!(got, StoredPushConfig { owner: owner(), config: c.clone() });
        assert_eq!(configs.list(Scope::Node, "t1").unwrap(), vec![got]);
        assert!(configs.get(Scope::Node, "t1", "c2").unwrap().is_none());
        assert!(configs.get(Scope::Node, "t2", "c1").unwrap().is_none());
        assert!(configs.delete(Scope::Node, "t1", "c1").unwrap());
        assert!(configs.get(Scope::Node, "t1", "c1").unwrap().is_none());
        assert!(configs.list(Scope::Node, "t1").unwrap().is_empty());
    }

    #[test]
    fn configs_without_secrets_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        let mut bare = config("t1", "bare");
        bare.token = None;
        bare.authentication = None;
        bare.tenant = None;
        let mut scheme_only = config("t1", "scheme");
        scheme_only.token = None;
        scheme_only.authentication.as_mut().unwrap().credentials = None;
        for c in [&bare, &scheme_only] {
            configs.put(&Owner::anonymous(), c).unwrap();
            let got = configs.get(Scope::Node, "t1", c.id.as_deref().unwrap()).unwrap().unwrap();
            assert_eq!(&got.config, c);
            assert_eq!(got.owner, Owner::anonymous());
        }
    }

    #[test]
    fn put_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        let mut changed = config("t1", "c1");
        changed.url = "https://other.example.com/hook".into();
        changed.token = Some("new-token".into());
        configs.put(&owner(), &changed).unwrap();
        assert_eq!(configs.get(Scope::Node, "t1", "c1").unwrap().unwrap().config, changed);
        assert_eq!(configs.list(Scope::Node, "t1").unwrap().len(), 1);
    }

    #[test]
    fn delete_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        assert!(!configs.delete(Scope::Node, "t1", "c1").unwrap());
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        assert!(configs.delete(Scope::Node, "t1", "c1").unwrap());
        assert!(!configs.delete(Scope::Node, "t1", "c1").unwrap());
        assert_eq!(configs.delete_task("t1").unwrap(), 0);
    }

    #[test]
    fn list_is_one_task_in_id_order_even_for_prefix_task_ids() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        for (task, id) in [("t10", "a"), ("t1", "c"), ("t1", "a"), ("t", "z"), ("t1", "b"), ("t10", "0"), ("t1", "aa")]
        {
            configs.put(&owner(), &config(task, id)).unwrap();
        }
        assert_eq!(ids(&configs.list(Scope::Node, "t1").unwrap()), ["a", "aa", "b", "c"]);
        assert_eq!(ids(&configs.list(Scope::Node, "t10").unwrap()), ["0", "a"]);
        assert_eq!(ids(&configs.list(Scope::Node, "t").unwrap()), ["z"]);
        assert!(configs.list(Scope::Node, "t100").unwrap().is_empty());
        assert!(configs.list(Scope::Node, "").unwrap().is_empty());
        for stored in configs.list(Scope::Node, "t1").unwrap() {
            assert_eq!(stored.config.task_id.as_deref(), Some("t1"));
        }
        // delete_task removes exactly that task's configs.
        assert_eq!(configs.delete_task("t1").unwrap(), 4);
        assert!(configs.list(Scope::Node, "t1").unwrap().is_empty());
        assert_eq!(ids(&configs.list(Scope::Node, "t10").unwrap()), ["0", "a"]);
        assert_eq!(ids(&configs.list(Scope::Node, "t").unwrap()), ["z"]);
    }

    #[test]
    fn task_ids_are_listed_once_each_even_for_prefix_ids() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        assert!(configs.task_ids().unwrap().is_empty());
        for (task, id) in [("t1", "a"), ("t1", "b"), ("t10", "a"), ("t2", "z")] {
            configs.put(&owner(), &config(task, id)).unwrap();
        }
        assert_eq!(configs.task_ids().unwrap(), ["t1", "t2", "t10"], "by length, then bytes: the key order");
    }

    #[test]
    fn put_needs_task_id_and_id() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        let mut c = config("t1", "c1");
        c.id = None;
        assert!(matches!(configs.put(&owner(), &c), Err(StoreError::Corrupt(_))));
        let mut c = config("t1", "c1");
        c.task_id = None;
        assert!(matches!(configs.put(&owner(), &c), Err(StoreError::Corrupt(_))));
        let long = "x".repeat(70_000);
        assert!(configs.put(&owner(), &config(&long, "c1")).is_err());
        assert!(configs.get(Scope::Node, &long, "c1").unwrap().is_none());
        assert!(configs.list(Scope::Node, &long).unwrap().is_empty());
    }

    #[test]
    fn reopening_with_the_same_key_file_reads_the_secrets() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, configs) = open(dir.path());
            configs.put(&owner(), &config("t1", "c1")).unwrap();
            store.flush().unwrap();
        }
        let (_store, configs) = open(dir.path());
        assert_eq!(configs.get(Scope::Node, "t1", "c1").unwrap().unwrap().config, config("t1", "c1"));
    }

    #[test]
    fn a_different_key_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, configs) = open(dir.path());
            configs.put(&owner(), &config("t1", "c1")).unwrap();
            store.flush().unwrap();
        }
        let store = crate::sled_store::open_retrying(dir.path());
        let configs = PushConfigStore::new(store.tree("push_configs").unwrap(), SecretKey::generate().unwrap());
        let msg = key_error(configs.get(Scope::Node, "t1", "c1").unwrap_err());
        assert!(msg.contains("does not decrypt") && msg.contains("t1/c1"), "{msg}");
        assert!(!msg.contains(TOKEN_SECRET) && !msg.contains(CRED_SECRET), "{msg}");
        assert!(configs.list(Scope::Node, "t1").is_err());
        // Deleting still works without the key.
        assert!(configs.delete(Scope::Node, "t1", "c1").unwrap());
    }

    fn raw(configs: &PushConfigStore, task: &str, id: &str) -> serde_json::Value {
        serde_json::from_slice(&configs.tree.get(record_key(task, id).unwrap()).unwrap().unwrap()).unwrap()
    }

    fn write_raw(configs: &PushConfigStore, task: &str, id: &str, value: &serde_json::Value) {
        configs.tree.insert(record_key(task, id).unwrap(), serde_json::to_vec(value).unwrap()).unwrap();
    }

    #[test]
    fn sealed_values_moved_between_records_or_fields_fail_to_decrypt() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        configs.put(&owner(), &config("t1", "c2")).unwrap();
        configs.put(&owner(), &config("t2", "c1")).unwrap();
        let (a, b, c) = (raw(&configs, "t1", "c1"), raw(&configs, "t1", "c2"), raw(&configs, "t2", "c1"));

        // Swap the tokens of two configs of one task.
        let (mut a2, mut b2) = (a.clone(), b.clone());
        a2["sealed_token"] = b["sealed_token"].clone();
        b2["sealed_token"] = a["sealed_token"].clone();
        write_raw(&configs, "t1", "c1", &a2);
        write_raw(&configs, "t1", "c2", &b2);
        for id in ["c1", "c2"] {
            let msg = key_error(configs.get(Scope::Node, "t1", id).unwrap_err());
            assert!(msg.contains("sealed token") && !msg.contains(TOKEN_SECRET), "{msg}");
        }

        // Same config id, another task.
        let mut a3 = a.clone();
        a3["sealed_credentials"] = c["sealed_credentials"].clone();
        write_raw(&configs, "t1", "c1", &a3);
        assert!(key_error(configs.get(Scope::Node, "t1", "c1").unwrap_err()).contains("credentials"));

        // Token and credentials swapped within one record.
        let mut a4 = a.clone();
        a4["sealed_token"] = a["sealed_credentials"].clone();
        a4["sealed_credentials"] = a["sealed_token"].clone();
        write_raw(&configs, "t1", "c1", &a4);
        assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));

        // The URL or the owner edited on disk.
        let mut a5 = a.clone();
        a5["config"]["url"] = "https://attacker.example.com/".into();
        write_raw(&configs, "t1", "c1", &a5);
        assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));
        let mut a6 = a.clone();
        a6["owner"]["principal"] = "mallory".into();
        write_raw(&configs, "t1", "c1", &a6);
        assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));

        // A whole record moved under another key.
        write_raw(&configs, "t1", "c1", &b);
        assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Corrupt(_))));

        // A flipped ciphertext bit.
        let mut a7 = a.clone();
        let mut sealed = STANDARD.decode(a["sealed_token"].as_str().unwrap()).unwrap();
        sealed[NONCE_LEN] ^= 1;
        a7["sealed_token"] = STANDARD.encode(sealed).into();
        write_raw(&configs, "t1", "c1", &a7);
        assert!(matches!(configs.get(Scope::Node, "t1", "c1"), Err(StoreError::Key(_))));

        // The untouched originals still open.
        write_raw(&configs, "t1", "c1", &a);
        assert_eq!(configs.get(Scope::Node, "t1", "c1").unwrap().unwrap().config, config("t1", "c1"));
    }

    #[test]
    fn each_seal_uses_a_fresh_nonce() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, configs) = open(dir.path());
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        let first = raw(&configs, "t1", "c1");
        configs.put(&owner(), &config("t1", "c1")).unwrap();
        let second = raw(&configs, "t1", "c1");
        assert_ne!(first["sealed_token"], second["sealed_token"]);
        assert_ne!(first["sealed_credentials"], second["sealed_credentials"]);
        assert!(first["config"].get("token").is_none());
        assert!(first["config"]["authentication"].get("credentials").is_none());
        assert_eq!(first["config"]["authentication"]["scheme"], "Bearer");
    }

    #[test]
    fn debug_redacts_the_secrets() {
        let stored = StoredPushConfig { owner: owner(), config: config("t1", "c1") };
        let text = format!("{stored:?}");
        assert!(text.contains("<redacted>") && text.contains("Bearer") && text.contains(URL), "{text}");
        assert!(!text.contains(TOKEN_SECRET) && !text.contains(CRED_SECRET), "{text}");
    }

    fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else {
                out.push(path);
            }
        }
    }

    fn contains(haystack: &[u8], needle: &str) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
    }

    #[test]
    fn the_raw_data_dir_holds_no_plaintext_secret() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, configs) = open(dir.path());
            for (task, id) in [("t1", "c1"), ("t1", "c2"), ("t2", "c1")] {
                configs.put(&owner(), &config(task, id)).unwrap();
            }
            // Overwritten and deleted configs leave old values in sled's log: sealed too.
            configs.put(&owner(), &config("t1", "c1")).unwrap();
            configs.delete(Scope::Node, "t1", "c2").unwrap();
            store.flush().unwrap();
            // Read the files while the store is still open, as well as after it closes.
            let mut paths = Vec::new();
            files(dir.path(), &mut paths);
            assert_no_secret(&paths);
        }
        let mut paths = Vec::new();
        files(dir.path(), &mut paths);
        assert_no_secret(&paths);
    }

    fn assert_no_secret(paths: &[std::path::PathBuf]) {
        let mut saw_url = false;
        for path in paths {
            let bytes = std::fs::read(path).unwrap();
            for secret in [TOKEN_SECRET, CRED_SECRET] {
                assert!(!contains(&bytes, secret), "{} holds the plaintext {secret}", path.display());
            }
            saw_url |= contains(&bytes, URL);
        }
        // The scan does see the records: their plain URL is in there.
        assert!(saw_url, "no file holds the config URL; the scan read nothing useful: {paths:?}");
    }
}
