//! How many turns may run at once, per tenant and on the whole node.
//!
//! A turn takes a [`TurnPermit`] when it starts and gives it back when its `RunningTurn`
//! is dropped, however the turn ends (finished, cancelled, failed, node shutdown).

use crate::RuntimeError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The counters behind the limits; 0 means no limit.
#[derive(Debug, Default)]
pub struct TurnLimits {
    max_total: usize,
    max_per_tenant: usize,
    running: Mutex<Running>,
}

#[derive(Debug, Default)]
struct Running {
    total: usize,
    per_tenant: HashMap<String, usize>,
}

impl TurnLimits {
    pub fn new(max_total: usize, max_per_tenant: usize) -> Arc<Self> {
        Arc::new(TurnLimits { max_total, max_per_tenant, running: Mutex::default() })
    }

    /// A permit for one more turn of `tenant`, or the limit that refuses it.
    pub fn acquire(self: &Arc<Self>, tenant: &str) -> Result<TurnPermit, RuntimeError> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if self.max_total > 0 && running.total >= self.max_total {
            return Err(RuntimeError::Limit(format!("the node runs its limit of {} turns at once", self.max_total)));
        }
        let mine = running.per_tenant.get(tenant).copied().unwrap_or(0);
        if self.max_per_tenant > 0 && mine >= self.max_per_tenant {
            return Err(RuntimeError::Limit(format!(
                "the tenant runs its limit of {} turns at once",
                self.max_per_tenant
            )));
        }
        running.total += 1;
        *running.per_tenant.entry(tenant.to_owned()).or_insert(0) += 1;
        Ok(TurnPermit { limits: Arc::clone(self), tenant: tenant.to_owned() })
    }

    /// Turns running now.
    pub fn running(&self) -> usize {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).total
    }
}

/// One running turn's place; released on drop.
#[derive(Debug)]
pub struct TurnPermit {
    limits: Arc<TurnLimits>,
    tenant: String,
}

impl Drop for TurnPermit {
    fn drop(&mut self) {
        let mut running = self.limits.running.lock().unwrap_or_else(|p| p.into_inner());
        running.total = running.total.saturating_sub(1);
        if let Some(count) = running.per_tenant.get_mut(&self.tenant) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                running.per_tenant.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_count_per_tenant_and_in_total() {
        let limits = TurnLimits::new(3, 2);
        let a1 = limits.acquire("a").unwrap();
        let _a2 = limits.acquire("a").unwrap();
        assert!(limits.acquire("a").unwrap_err().to_string().contains("tenant"));
        let _b1 = limits.acquire("b").unwrap();
        assert!(limits.acquire("b").unwrap_err().to_string().contains("node"));
        drop(a1);
        assert!(limits.acquire("b").is_ok());
        assert_eq!(TurnLimits::new(0, 0).acquire("x").map(|_| ()).ok(), Some(()));
    }
}
