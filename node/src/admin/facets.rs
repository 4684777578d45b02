//! `GET /admin/v1/tasks/facets`: the values the console's Tasks page offers in its
//! drop-downs, so that an operator picks a tenant, an agent or a state instead of typing
//! it exactly. Only names are listed, never a credential.

use super::AdminError;
use crate::core::Core;
use a2ad_protocol::TaskState;
use serde::Serialize;
use std::collections::BTreeSet;

/// The known values of the Tasks page's filters.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Facets {
    /// The tenants of the configured credentials and those of the stored tasks, sorted
    /// (`""` is the default tenant of a node without authentication).
    pub tenants: Vec<String>,
    /// The skill ids of the configured agents, the default first.
    pub agents: Vec<String>,
    /// Every task state, short (`input-required`), in the protocol's order.
    pub states: Vec<String>,
}

/// The facets. Blocking: the tenants of the stored tasks are an index scan (the one the
/// status's counts make; no task record is read).
pub fn facets(core: &Core) -> Result<Facets, AdminError> {
    let rt = core.runtime();
    let mut tenants: BTreeSet<String> = core.auth().tenants();
    rt.store.visit_tasks(&mut |entry| {
        if !tenants.contains(&entry.owner.tenant) {
            tenants.insert(entry.owner.tenant);
        }
    })?;
    let states = TaskState::ALL
        .iter()
        .filter(|s| **s != TaskState::Unspecified)
        .map(|s| super::stats::short_state(s.as_str()))
        .collect();
    Ok(Facets { tenants: tenants.into_iter().collect(), agents: rt.agents.skills().to_vec(), states })
}
