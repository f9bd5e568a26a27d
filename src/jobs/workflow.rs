//! Workflows: the successors a job's completion commits with it, and the joins that wait for
//! their children (a join runs once, after every child has finished).

use std::collections::BTreeMap;

use super::NewJob;
use super::enqueue::{Placement, insert_jobs};
use crate::storage::Tx;

/// Successor jobs to insert when a job's completion commits.
#[derive(Debug, Clone, Default)]
pub(crate) struct Successors {
    pub then: Vec<NewJob>,
    /// Fan-out: children, and the join that runs once after all of them.
    pub fan_out: Vec<(Vec<NewJob>, NewJob)>,
}

impl Successors {
    pub fn is_empty(&self) -> bool {
        self.then.is_empty() && self.fan_out.is_empty()
    }
}

/// Inserts the successors of a job whose completion commits in `tx`, in its workflow: the jobs
/// it runs next, and for each fan-out a join waiting for its children, and the children.
pub(crate) async fn insert_successors(
    tx: &mut Tx,
    workflow: Option<&str>,
    successors: &Successors,
) -> sqlx::Result<()> {
    let workflow = workflow.map(str::to_owned);
    let inherit = Placement {
        workflow: workflow.clone(),
        ..Placement::default()
    };
    insert_jobs(tx, &successors.then, &inherit).await?;
    for (children, join) in &successors.fan_out {
        let pending = i32::try_from(children.len()).unwrap_or(i32::MAX);
        let join_placement = Placement {
            workflow: workflow.clone(),
            pending_children: pending,
            join_id: None,
        };
        let join_id = insert_jobs(tx, std::slice::from_ref(join), &join_placement).await?[0].id;
        let child_placement = Placement {
            workflow: workflow.clone(),
            join_id: Some(join_id),
            pending_children: 0,
        };
        insert_jobs(tx, children, &child_placement).await?;
    }
    Ok(())
}

/// One child of each listed join has finished: count it, and make the join available once its
/// last child is done. One statement per join row, so concurrent finishers serialise on the row
/// and exactly one of them sees the count reach zero.
pub(crate) async fn release_joins(tx: &mut Tx, joins: &[i64]) -> sqlx::Result<()> {
    let mut counts: BTreeMap<i64, i32> = BTreeMap::new();
    for join in joins {
        *counts.entry(*join).or_default() += 1;
    }
    for (join, done) in counts {
        on_tx!(tx, |conn, d| {
            sqlx::query(sql!(
                d,
                "UPDATE jobs SET pending_children = pending_children - $2,
                        state = CASE WHEN pending_children - $2 <= 0 THEN 'available'
                                     ELSE state END,
                        run_at = CASE WHEN pending_children - $2 <= 0 THEN {now}
                                      ELSE run_at END
                 WHERE id = $1 AND state = 'waiting'"
            ))
            .bind(join)
            .bind(done)
            .execute(&mut *conn)
            .await?;
        });
    }
    Ok(())
}
