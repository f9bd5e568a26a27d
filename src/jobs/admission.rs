//! Admission by cost: a worker runs jobs within a memory budget (`WORKER_MEMORY_BUDGET`), by
//! the cost each job declares (`NewJob::cost`), and no tenant holds more than three quarters
//! of it. Counting jobs is not enough: one tenant's sixteen heavy manuscripts would take
//! every executor for many seconds while another tenant's two-chapter book waited behind
//! them. With the cap, a quarter of the budget is always left for somebody else's jobs, which
//! start as soon as they are claimed.
//!
//! A job costing more than the cap counts as the cap, so it still runs, alone among its
//! tenant's costly jobs. Jobs of cost 0 (most of them) are never held back. The pump claims
//! with the room this leaves ([`Room`]), and the claim statement skips what does not fit.

use std::collections::HashMap;

use super::claim::{ClaimedRow, Room};

/// The share of the budget one tenant may hold.
const TENANT_SHARE: (i64, i64) = (3, 4);

#[derive(Debug)]
pub(crate) struct Admission {
    budget: Option<i64>,
    /// Claimed jobs of nonzero cost not yet finished: id → (tenant, counted cost).
    held: HashMap<i64, (String, i64)>,
}

impl Admission {
    pub fn new(budget: Option<u64>) -> Self {
        Admission {
            budget: budget.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
            held: HashMap::new(),
        }
    }

    fn cap(budget: i64) -> i64 {
        (budget / TENANT_SHARE.1)
            .saturating_mul(TENANT_SHARE.0)
            .max(1)
    }

    /// What the next claim may take.
    pub fn room(&self) -> Room {
        let Some(budget) = self.budget else {
            return Room::UNLIMITED;
        };
        let cap = Self::cap(budget);
        let mut used: HashMap<&str, i64> = HashMap::new();
        let mut total = 0i64;
        for (tenant, cost) in self.held.values() {
            *used.entry(tenant).or_default() += cost;
            total += cost;
        }
        Room {
            cap,
            free: (budget - total).max(0),
            tenants: used
                .into_iter()
                .map(|(t, u)| (t.to_owned(), (cap - u).max(0)))
                .collect(),
        }
    }

    /// Takes the claimed rows that fit, in order, and returns the ones that do not (a claim of
    /// several rows is checked row by row in SQL, so together they may not fit): those go back
    /// to the queue.
    pub fn admit(&mut self, rows: Vec<ClaimedRow>) -> (Vec<ClaimedRow>, Vec<ClaimedRow>) {
        let Some(budget) = self.budget else {
            return (rows, Vec::new());
        };
        let cap = Self::cap(budget);
        let mut kept = Vec::with_capacity(rows.len());
        let mut returned = Vec::new();
        for row in rows {
            if row.cost <= 0 {
                kept.push(row);
                continue;
            }
            let cost = row.cost.min(cap);
            let room = self.room();
            let tenant_room = room
                .tenants
                .iter()
                .find(|(t, _)| *t == row.tenant)
                .map_or(cap, |(_, r)| *r);
            if cost <= room.free.min(tenant_room) {
                self.held.insert(row.id, (row.tenant.clone(), cost));
                kept.push(row);
            } else {
                returned.push(row);
            }
        }
        (kept, returned)
    }

    /// The job finished, or went back to the queue. True when it held part of the budget.
    pub fn release(&mut self, id: i64) -> bool {
        self.held.remove(&id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, tenant: &str, cost: i64) -> ClaimedRow {
        ClaimedRow {
            id,
            kind: "k".into(),
            payload: "{}".into(),
            queue: "q".into(),
            tenant: tenant.into(),
            attempt: 1,
            max_attempts: 1,
            workflow: None,
            join_id: None,
            serial_key: None,
            priority: 0,
            fair_tag: id,
            cost,
            lost_workers: 0,
        }
    }

    fn ids(rows: &[ClaimedRow]) -> Vec<i64> {
        rows.iter().map(|r| r.id).collect()
    }

    #[test]
    fn one_tenant_holds_at_most_three_quarters_and_free_jobs_always_pass() {
        let mut admission = Admission::new(Some(400));
        let (kept, back) = admission.admit(vec![
            row(1, "a", 100),
            row(2, "a", 100),
            row(3, "a", 100),
            row(4, "a", 100),
            row(5, "a", 0),
        ]);
        assert_eq!(ids(&kept), [1, 2, 3, 5]);
        assert_eq!(ids(&back), [4]);
        let room = admission.room();
        assert_eq!(room.free, 100);
        assert_eq!(room.tenants, [("a".to_owned(), 0)]);
        // Another tenant gets the quarter left.
        let (kept, _) = admission.admit(vec![row(6, "b", 100)]);
        assert_eq!(ids(&kept), [6]);
        admission.release(1);
        assert_eq!(admission.room().free, 100);
    }

    #[test]
    fn a_job_over_the_cap_runs_counted_as_the_cap() {
        let mut admission = Admission::new(Some(400));
        let (kept, _) = admission.admit(vec![row(1, "a", 10_000)]);
        assert_eq!(ids(&kept), [1]);
        assert_eq!(admission.room().free, 100);
        let (kept, back) = admission.admit(vec![row(2, "b", 150), row(3, "b", 50)]);
        assert_eq!(ids(&kept), [3]);
        assert_eq!(ids(&back), [2]);
    }

    #[test]
    fn without_a_budget_everything_is_admitted() {
        let mut admission = Admission::new(None);
        let (kept, back) = admission.admit(vec![row(1, "a", i64::MAX), row(2, "a", 5)]);
        assert_eq!(kept.len(), 2);
        assert!(back.is_empty());
        assert_eq!(admission.room(), Room::UNLIMITED);
    }
}
