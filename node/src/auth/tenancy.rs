//! The `tenancy:` block: who owns what a caller creates, and so what it may reach.
//!
//! ```yaml
//! tenancy:
//!   visibility: tenant   # every principal of a tenant sees and manages the tenant's tasks
//! ```
//!
//! The owner model, once: every task, context (with its session), event log and push
//! config belongs to an [`Owner`], and a caller reaches only what belongs to the owner it
//! authenticates as. With `visibility: principal` (the default) that owner is the
//! credential's tenant and principal, so two credentials of one team never see each
//! other's tasks; with `visibility: tenant` it is the tenant alone
//! ([`Owner::tenant_wide`]), so they share them. [`Visibility::owner_of`] is the one
//! place that choice is made: `Core::authenticate` (every binding) and the stdio
//! transport's local caller go through it, and the store's
//! [`Scope`](a2ad_storage::Scope) does the rest, unchanged. Everything counted per owner
//! follows the owner: with `tenant`, the request rate (`limits.rate-per-second`) is the
//! tenant's.
//!
//! A task keeps the owner it was created with: switching the mode does not move stored
//! tasks. Tasks made under `principal` are out of reach while the node runs with
//! `tenant`, and come back with `principal` (and the other way round).

use a2ad_storage::Owner;
use serde::{Deserialize, Serialize};

/// The whole `tenancy:` block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct TenancyConfig {
    /// Whose tasks a caller sees (`tenancy.visibility`).
    pub visibility: Visibility,
}

/// `tenancy.visibility`: how far a caller's reach extends within its tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Visibility {
    /// The owner is tenant plus principal: each credential sees only its own tasks.
    #[default]
    Principal,
    /// The owner is the tenant: every principal of a tenant sees and manages the tenant's
    /// tasks, contexts and push configs. Other tenants still see nothing.
    Tenant,
}

impl Visibility {
    /// The owner a caller authenticated as `identity` acts as: what it creates belongs to
    /// this owner, and only this owner's records are in its reach.
    pub fn owner_of(self, identity: Owner) -> Owner {
        match self {
            Visibility::Principal => identity,
            Visibility::Tenant => Owner::tenant_wide(identity.tenant),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(tenant: &str, principal: &str) -> Owner {
        Owner { tenant: tenant.into(), principal: principal.into() }
    }

    #[test]
    fn principal_keeps_the_identity_and_tenant_joins_a_tenants_principals_only() {
        let (alice, bob, eve) = (owner("acme", "alice"), owner("acme", "bob"), owner("evil", "alice"));
        assert_eq!(Visibility::Principal.owner_of(alice.clone()), alice);
        assert_ne!(Visibility::Principal.owner_of(alice.clone()), Visibility::Principal.owner_of(bob.clone()));
        let shared = Visibility::Tenant.owner_of(alice.clone());
        assert_eq!(shared, Visibility::Tenant.owner_of(bob));
        assert_ne!(shared, Visibility::Tenant.owner_of(eve), "the same principal name in another tenant");
        assert_ne!(shared, alice, "a tenant-wide owner is no principal's own");
        assert_eq!(Visibility::Tenant.owner_of(Owner::anonymous()), Owner::anonymous());
    }

    #[test]
    fn the_block_reads_both_modes_and_refuses_others_by_name() {
        let read = |yaml: &str| serde_yaml_ng::from_str::<TenancyConfig>(yaml);
        assert_eq!(read("{}").unwrap().visibility, Visibility::Principal);
        assert_eq!(read("visibility: tenant").unwrap().visibility, Visibility::Tenant);
        assert_eq!(read("visibility: principal").unwrap().visibility, Visibility::Principal);
        let error = read("visibility: team").unwrap_err().to_string();
        assert!(error.contains("unknown variant `team`") && error.contains("principal"), "{error}");
        // Set as a flag or `A2AD_TENANCY_VISIBILITY` would, the error names the key.
        let set = |value: &str| {
            crate::config::Config::load(None, &[crate::config::Override::flag("tenancy.visibility", value)])
        };
        assert_eq!(set("tenant").unwrap().tenancy.visibility, Visibility::Tenant);
        let error = set("team").unwrap_err().to_string();
        assert!(
            error.starts_with("flag --tenancy.visibility (config key `tenancy.visibility`): unknown variant `team`"),
            "{error}"
        );
    }
}
