//! Guards on the plans the databases choose for the engine's hot statements, on a queue filled
//! as a deep one is. A claim that sorts the queue, or scans it, is correct and passes every
//! other test; only the drain rate shows it, in a benchmark, after the fact (a parameter in
//! the claim once made PostgreSQL's generic plan sort the whole queue: drains 7x slower).
//!
//! PostgreSQL: each statement is prepared and explained under the settings the workers' pools
//! use (`storage::database::GENERIC_PLANS`), on a queue without statistics and again after
//! `ANALYZE`. It must read `jobs` through the expected index, with no `Sort`, no `Seq Scan` or
//! `Bitmap Heap Scan` of `jobs` and no `Hash Join`; run for real in a transaction that is
//! rolled back, it must touch a bounded number of shared buffers, a few per job it claims or
//! completes. SQLite: the claim reads the claim index, with no temporary B-tree to sort.

use std::fmt::Write as _;

use serde_json::Value;
use sqlx::{Connection, Row};

use super::claim::{NO_SUSPECTS, claim_and_complete_text, claim_sqlite_text};
use super::completer::{Completing, complete_batch_text, completion};
use super::enqueue::{FRONT_TAG, OWN_TAG};
use super::maintenance::PROMOTE_DUE;
use super::rescuer::RESCUE_POSTGRES;
use crate::storage::Database;
use crate::storage::database::{GENERIC_PLANS, JIT_OFF};
use crate::storage::sql::Dialect;
use crate::test_support::{databases, need};

/// Jobs a claim takes, and completions one commits, at once (the producer's batch).
const BATCH: usize = 32;

/// Shared buffers a claim of [`BATCH`] jobs may touch. Measured at 427 (464 for the claim that
/// may take a suspect) on the queue below: about 14 a job, for the claim index, the serial key
/// check, the row lock and the update's heap page and index entries (pkey, `jobs_running`,
/// `jobs_serial`), since no update of `state` is HOT. A sort or a scan of the queue costs
/// thousands. (#29 aims at 10 a job, with a claim table that holds only live work.)
const CLAIM_BUFFERS: i64 = 16 * BATCH as i64;

/// Shared buffers the rescue may touch: one per running job (the queue below has 1,000;
/// measured at 634–637), where a scan of the table reads all of its thousands of pages.
const RESCUE_BUFFERS: i64 = 1_000;

/// The queue the plans are chosen on: 200,000 jobs available across four queues, fifty
/// tenants and three priorities (one in ten with a serial key, one in seven with a cost, one
/// in a thousand a suspect), 200,000 finished, 50,000 scheduled for later and 1,000 running on
/// 32 workers. The plans are checked twice: on the queue just filled, before any statistics
/// (as a burst of enqueues leaves it until autovacuum's analyze), and after `ANALYZE`.
const FILL: &str = "
    INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag, run_at,
                      max_attempts, serial_key, cost, lost_workers, created_at)
    SELECT 'test.job', 'q' || (g % 4), 't' || (g % 50), '{}', 'available', (g % 3)::smallint,
           g / 50, 0, 3, CASE WHEN g % 10 = 0 THEN 'book-' || (g % 5000) END,
           CASE WHEN g % 7 = 0 THEN 100 ELSE 0 END, CASE WHEN g % 1000 = 0 THEN 2 ELSE 0 END, 0
    FROM generate_series(1, 200000) g;
    INSERT INTO jobs (kind, queue, tenant, payload, state, run_at, max_attempts, created_at,
                      started_at, finished_at, result)
    SELECT 'test.job', 'q' || (g % 4), 't' || (g % 50), '{}', 'completed', 0, 3, 0, 0, 1, 'null'
    FROM generate_series(1, 200000) g;
    INSERT INTO jobs (kind, queue, tenant, payload, state, run_at, max_attempts, created_at)
    SELECT 'test.job', 'q' || (g % 4), 't' || (g % 50), '{}', 'scheduled',
           4000000000000 + g, 3, 0
    FROM generate_series(1, 50000) g;
    INSERT INTO jobs (kind, queue, tenant, payload, state, run_at, max_attempts, created_at,
                      started_at, attempt, locked_by, locked_until)
    SELECT 'test.job', 'q' || (g % 4), 't' || (g % 50), '{}', 'running', 0, 3, 0, 0, 1,
           'w' || (g % 32), 4000000000000
    FROM generate_series(1, 1000) g;";

/// One statement as the engine runs it: its text, its parameters' types and values (SQL
/// literals), the indexes it may read `jobs` by, and how many shared buffers it may touch.
struct Statement {
    name: &'static str,
    text: String,
    types: &'static str,
    values: String,
    indexes: &'static [&'static str],
    buffers: i64,
}

#[tokio::test]
async fn the_hot_statements_read_a_deep_queue_by_their_indexes() {
    if !need::postgres() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((Database::Postgres(pool), _)) = databases(i64::MAX, dir.path()).await.pop() else {
        unreachable!("PostgreSQL comes last")
    };
    let mut conn = pool.acquire().await.expect("connection");
    sqlx::raw_sql(FILL).execute(&mut *conn).await.expect("fill");
    let running: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM jobs WHERE state = 'running' AND locked_by = 'w1'")
            .fetch_all(&mut *conn)
            .await
            .expect("running jobs");
    let one_running = running[0];
    let running = format!(
        "ARRAY[{}]::bigint[]",
        running
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    let waited = format!("ARRAY[{}]::bigint[]", vec!["5"; BATCH].join(","));
    // As the workers' pools plan and run them (`Database::connect_with`).
    let settings: String = GENERIC_PLANS
        .iter()
        .chain([&JIT_OFF])
        .map(|(name, value)| format!("SET {name} = {value};"))
        .collect();
    sqlx::raw_sql(sqlx::AssertSqlSafe(settings))
        .execute(&mut *conn)
        .await
        .expect("generic plans");

    let claim_types = "bigint[], text, bigint[], text[], bigint, bigint, bigint, bigint, \
                       text[], bigint[]";
    let claim_values = |complete: &str, waited: &str| {
        format!(
            "{complete}, 'w1', {waited}, ARRAY['q0','q1','q2','q3'], {BATCH}, 60000, 4000, \
             4000, ARRAY['t1'], ARRAY[2000]::bigint[]"
        )
    };
    let pg = |text: &str| Dialect::Postgres.render(text);
    let statements = [
        Statement {
            name: "the claim",
            text: pg(&claim_and_complete_text(NO_SUSPECTS)),
            types: claim_types,
            values: claim_values("'{}'::bigint[]", "'{}'::bigint[]"),
            indexes: &["jobs_claim"],
            buffers: CLAIM_BUFFERS,
        },
        Statement {
            name: "the claim that takes a suspect",
            text: pg(&claim_and_complete_text("")),
            types: claim_types,
            values: claim_values("'{}'::bigint[]", "'{}'::bigint[]"),
            indexes: &["jobs_claim"],
            buffers: CLAIM_BUFFERS,
        },
        Statement {
            name: "the claim with completions",
            text: pg(&claim_and_complete_text(NO_SUSPECTS)),
            types: claim_types,
            values: claim_values(&running, &waited),
            indexes: &["jobs_claim"],
            buffers: 2 * CLAIM_BUFFERS,
        },
        Statement {
            name: "a batch of completions on the pump's second connection",
            text: pg(&complete_batch_text()),
            types: "bigint[], text, bigint[]",
            values: format!("{running}, 'w1', {waited}"),
            // As a completion: by their ids, or by the worker's leases.
            indexes: &["jobs_pkey", "jobs_running"],
            buffers: CLAIM_BUFFERS,
        },
        Statement {
            name: "a completion",
            text: completion(Dialect::Postgres, Completing::One).to_owned(),
            types: "bigint, text, bigint, text",
            values: format!("{one_running}, 'w1', 5, 'null'"),
            // By its id, or by its worker's leases: the generic plan takes the leases (32
            // buffers here, a worker's 31 running jobs), bounded by how many it runs.
            indexes: &["jobs_pkey", "jobs_running"],
            buffers: 48,
        },
        Statement {
            name: "the queue's front fair tag",
            text: pg(FRONT_TAG),
            types: "smallint",
            values: "1".into(),
            indexes: &["jobs_claim"],
            buffers: 10,
        },
        Statement {
            name: "a tenant's last fair tag",
            text: pg(OWN_TAG),
            types: "text, smallint",
            values: "'t7', 1".into(),
            indexes: &["jobs_tenant"],
            buffers: 10,
        },
        Statement {
            name: "the rescue of expired leases",
            text: pg(RESCUE_POSTGRES),
            types: "text, text, integer, text",
            values: "'lost', 'stopped', 3, 'w1'".into(),
            // Every running job's lease is read (none has expired here): bounded by how many run.
            indexes: &["jobs_running"],
            buffers: RESCUE_BUFFERS,
        },
        Statement {
            name: "the promotion of due jobs",
            text: pg(PROMOTE_DUE),
            types: "",
            values: String::new(),
            indexes: &["jobs_scheduled"],
            buffers: 10,
        },
    ];
    let mut failures = String::new();
    for analyzed in [false, true] {
        if analyzed {
            sqlx::raw_sql("ANALYZE jobs")
                .execute(&mut *conn)
                .await
                .expect("analyze");
        }
        for statement in &statements {
            if let Err(e) = check(&mut conn, statement).await {
                let state = if analyzed { "analyzed" } else { "fresh" };
                let _ = writeln!(failures, "{} ({state}): {e}", statement.name);
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");

    // The guard catches what it guards against: without its index, the claim sorts the queue.
    sqlx::raw_sql("DROP INDEX jobs_claim")
        .execute(&mut *conn)
        .await
        .expect("drop the claim index");
    let unguarded = check(&mut conn, &statements[0])
        .await
        .expect_err("a claim without its index");
    assert!(
        unguarded.contains("no scan of index jobs_claim"),
        "{unguarded}"
    );
}

/// Explains `statement` under a generic plan, then runs it (rolled back) for its buffers.
async fn check(conn: &mut sqlx::PgConnection, statement: &Statement) -> Result<(), String> {
    let types = if statement.types.is_empty() {
        String::new()
    } else {
        format!("({})", statement.types)
    };
    let values = if statement.values.is_empty() {
        String::new()
    } else {
        format!("({})", statement.values)
    };
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "PREPARE guarded {types} AS {}",
        statement.text
    )))
    .execute(&mut *conn)
    .await
    .map_err(|e| format!("prepare: {e}"))?;
    let mut tx = conn.begin().await.map_err(|e| e.to_string())?;
    let explained = sqlx::query(sqlx::AssertSqlSafe(format!(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE guarded {values}"
    )))
    .fetch_one(&mut *tx)
    .await;
    tx.rollback().await.map_err(|e| e.to_string())?;
    sqlx::raw_sql("DEALLOCATE guarded")
        .execute(&mut *conn)
        .await
        .map_err(|e| format!("deallocate: {e}"))?;
    let explained: Value = explained
        .map_err(|e| format!("explain: {e}"))?
        .try_get(0)
        .map_err(|e| format!("the plan: {e}"))?;
    let plan = &explained[0]["Plan"];
    let nodes = flatten(plan);
    let shown = nodes
        .iter()
        .map(|n| describe(n))
        .collect::<Vec<_>>()
        .join("; ");
    let reads_by_index = nodes.iter().any(|n| {
        matches!(
            n["Node Type"].as_str(),
            Some("Index Scan" | "Index Only Scan")
        ) && statement
            .indexes
            .iter()
            .any(|index| n["Index Name"] == *index)
    });
    if !reads_by_index {
        return Err(format!(
            "no scan of index {}: {shown}",
            statement.indexes.join(" or ")
        ));
    }
    if let Some(bad) = nodes.iter().find(|n| {
        let over_jobs = n["Relation Name"] == "jobs";
        match n["Node Type"].as_str() {
            Some("Sort" | "Hash Join") => true,
            Some("Seq Scan" | "Bitmap Heap Scan") => over_jobs,
            _ => false,
        }
    }) {
        return Err(format!("{}: {shown}", describe(bad)));
    }
    let buffers = plan["Shared Hit Blocks"].as_i64().unwrap_or(0)
        + plan["Shared Read Blocks"].as_i64().unwrap_or(0);
    if buffers > statement.buffers {
        return Err(format!(
            "{buffers} shared buffers, more than {}: {shown}",
            statement.buffers
        ));
    }
    Ok(())
}

/// A plan node and every node under it (subplans, CTEs and init plans included).
fn flatten(plan: &Value) -> Vec<&Value> {
    let mut nodes = vec![plan];
    if let Some(children) = plan["Plans"].as_array() {
        for child in children {
            nodes.extend(flatten(child));
        }
    }
    nodes
}

fn describe(node: &Value) -> String {
    let mut text = node["Node Type"].as_str().unwrap_or("?").to_owned();
    if let Some(index) = node["Index Name"].as_str() {
        let _ = write!(text, " using {index}");
    }
    if let Some(relation) = node["Relation Name"].as_str() {
        let _ = write!(text, " on {relation}");
    }
    if let (Some(rows), Some(actual)) = (node["Plan Rows"].as_f64(), node["Actual Rows"].as_f64()) {
        let _ = write!(text, " (rows: {rows} planned, {actual} read)");
    }
    text
}

#[tokio::test]
async fn the_sqlite_claim_walks_its_index_without_sorting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _) = databases(i64::MAX, dir.path()).await.remove(0);
    let Database::Sqlite(pool) = db else {
        unreachable!("SQLite comes first")
    };
    sqlx::raw_sql(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20000)
         INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag, run_at,
                           max_attempts, serial_key, cost, created_at)
         SELECT 'test.job', 'q' || (n % 4), 't' || (n % 50), '{}',
                CASE WHEN n % 2 = 0 THEN 'available' ELSE 'completed' END, n % 3, n / 50, 0, 3,
                CASE WHEN n % 10 = 0 THEN 'book-' || (n % 500) END,
                CASE WHEN n % 7 = 0 THEN 100 ELSE 0 END, 0
         FROM g;
         ANALYZE;",
    )
    .execute(&pool)
    .await
    .expect("fill");
    for suspects in ["", NO_SUSPECTS] {
        let text = Dialect::Sqlite.render(&claim_sqlite_text(suspects));
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {text}")))
            .bind(r#"["q0","q1","q2","q3"]"#)
            .bind(BATCH as i64)
            .bind("w1")
            .bind(60_000_i64)
            .bind(4000_i64)
            .bind(4000_i64)
            .bind(r#"{"t1":2000}"#)
            .fetch_all(&pool)
            .await
            .expect("explain");
        let details: Vec<String> = rows.iter().map(|r| r.get::<String, _>("detail")).collect();
        assert!(
            details.iter().any(|d| d.contains("INDEX jobs_claim")),
            "{suspects:?}: {details:#?}"
        );
        assert!(
            !details.iter().any(|d| d.contains("TEMP B-TREE")),
            "{suspects:?}: {details:#?}"
        );
    }
}

/// How the claim's cost moves through a deep drain: a million jobs waiting, drained by the
/// engine's own claim-and-complete (32 at a time, completing the previous 32) and vacuumed
/// beside it as the pump does (`maintenance::Vacuums`), with shared buffers per claim,
/// dead tuples and vacuums reported at 10 %, 50 % and 90 %. A
/// measurement for #29 (a claim whose index walk steps over the entries of claims made since
/// the last vacuum would grow through the drain), not a check: run it by hand with
/// `scripts/test --lib -- --ignored --nocapture jobs::plans::a_deep_drain`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement over a million jobs, more than a minute: run by hand"]
async fn a_deep_drain_shows_where_the_claims_buffers_go() {
    use super::claim::{Room, claim_and_complete};
    use crate::storage::KeptConnection;
    if !need::postgres() {
        return;
    }
    const DEPTH: i64 = 1_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((Database::Postgres(pool), _)) = databases(i64::MAX, dir.path()).await.pop() else {
        unreachable!("PostgreSQL comes last")
    };
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag, run_at,
                           max_attempts, created_at)
         SELECT 'test.job', 'q0', 't' || (g % 50), '{{}}', 'available', 0, g / 50, 0, 3, 0
         FROM generate_series(1, {DEPTH}) g;
         ANALYZE jobs;"
    )))
    .execute(&pool)
    .await
    .expect("fill");
    let options = (*pool.connect_options())
        .clone()
        // As the workers' pools are (`Database::connect_with`): JIT alone costs 170 ms a claim.
        .options(GENERIC_PLANS)
        .options([JIT_OFF]);
    let generic = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .expect("connect");
    let db = Database::Postgres(generic.clone());
    let mut pump = KeptConnection::new(db.clone());
    let queues = vec!["q0".to_owned()];
    let mut done: Vec<i64> = Vec::new();
    let mut drained: i64 = 0;
    let mut marks = [DEPTH / 10, DEPTH / 2, DEPTH * 9 / 10]
        .into_iter()
        .peekable();
    let started = std::time::Instant::now();
    let mut window = (std::time::Instant::now(), 0_i64);
    let mut vacuums = super::maintenance::Vacuums::every(super::maintenance::VACUUM_EVERY);
    while let Some(&mark) = marks.peek() {
        let waited = vec![0; done.len()];
        let (claimed, _) = claim_and_complete(
            &mut pump,
            "w1",
            &queues,
            &done,
            &waited,
            BATCH,
            60_000,
            &Room::UNLIMITED,
            false,
        )
        .await
        .expect("claim");
        drained += claimed.len() as i64;
        vacuums.claimed(&db, claimed.len());
        done = claimed.iter().map(|c| c.id).collect();
        if drained >= mark {
            marks.next();
            let mut conn = generic.acquire().await.expect("connection");
            let mut tx = conn.begin().await.expect("begin");
            let text = Dialect::Postgres.render(&claim_and_complete_text(NO_SUSPECTS));
            let explained: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {text}"
            )))
            .bind(Vec::<i64>::new())
            .bind("w2")
            .bind(Vec::<i64>::new())
            .bind(&queues)
            .bind(BATCH as i64)
            .bind(60_000_i64)
            .bind(i64::MAX)
            .bind(i64::MAX)
            .bind(Vec::<String>::new())
            .bind(Vec::<i64>::new())
            .fetch_one(&mut *tx)
            .await
            .expect("explain");
            tx.rollback().await.expect("rollback");
            let plan = &explained[0]["Plan"];
            let claim_index = flatten(plan)
                .into_iter()
                .find(|n| n["Index Name"] == "jobs_claim")
                .cloned()
                .unwrap_or_default();
            let stats = sqlx::query(
                "SELECT n_live_tup, n_dead_tup, autovacuum_count, vacuum_count, n_tup_upd, n_tup_hot_upd,
                        pg_total_relation_size('jobs') AS bytes,
                        pg_relation_size('jobs_claim') AS claim_bytes
                 FROM pg_stat_user_tables WHERE relname = 'jobs'",
            )
            .fetch_one(&mut *conn)
            .await
            .expect("stats");
            let count = |name: &str| stats.get::<i64, _>(name);
            eprintln!(
                "drained {drained:>8} ({:>3.0} %): {:>6.0} jobs/s lately; one claim: {} shared \
                 buffers, its index scan {} ({} rows); jobs: {} live, {} dead, {} vacuums and {} autovacuums, \
                 {} of {} updates HOT, {} MiB (claim index {} MiB)",
                drained as f64 * 100.0 / DEPTH as f64,
                (drained - window.1) as f64 / window.0.elapsed().as_secs_f64().max(0.001),
                plan["Shared Hit Blocks"].as_i64().unwrap_or(0)
                    + plan["Shared Read Blocks"].as_i64().unwrap_or(0),
                claim_index["Shared Hit Blocks"].as_i64().unwrap_or(0)
                    + claim_index["Shared Read Blocks"].as_i64().unwrap_or(0),
                claim_index["Actual Rows"],
                count("n_live_tup"),
                count("n_dead_tup"),
                count("vacuum_count"),
                count("autovacuum_count"),
                count("n_tup_hot_upd"),
                count("n_tup_upd"),
                count("bytes") >> 20,
                count("claim_bytes") >> 20,
            );
            window = (std::time::Instant::now(), drained);
        }
    }
    eprintln!("{drained} drained in {:?}", started.elapsed());
}
