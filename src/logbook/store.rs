//! The logbook's SQL: insert a batch, read with filters, prune.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sqlx::Row;

use super::{Level, Line};
use crate::storage::Database;
use crate::storage::sql::Dialect;

/// Lines deleted per statement by the prune, each batch committed on its own.
const PRUNE_BATCH: i64 = 10_000;

/// A batch goes in as one JSON array, so one statement with one parameter takes any number of
/// lines on both databases.
const INSERT_POSTGRES: &str = "WITH inserted AS (
    INSERT INTO log_lines (at, level, role, host, pid, target, message, fields, request_id,
                           book_id, job_id, tenant)
    SELECT at, level, role, host, pid, target, message, fields, request_id, book_id, job_id,
           tenant
    FROM jsonb_to_recordset($1::jsonb) AS r(at bigint, level smallint, role text, host text,
         pid bigint, target text, message text, fields text, request_id text, book_id text,
         job_id bigint, tenant text)
    RETURNING 1)
SELECT pg_notify('bindery_logs', count(*)::text) FROM inserted";

const INSERT_SQLITE: &str = "INSERT INTO log_lines (at, level, role, host, pid, target, message,
        fields, request_id, book_id, job_id, tenant)
    SELECT json_extract(value, '$.at'), json_extract(value, '$.level'),
           json_extract(value, '$.role'), json_extract(value, '$.host'),
           json_extract(value, '$.pid'), json_extract(value, '$.target'),
           json_extract(value, '$.message'), json_extract(value, '$.fields'),
           json_extract(value, '$.request_id'), json_extract(value, '$.book_id'),
           json_extract(value, '$.job_id'), json_extract(value, '$.tenant')
    FROM json_each($1)";

/// Stores `lines`, and on PostgreSQL wakes followers (`NOTIFY bindery_logs`) in the same
/// statement.
pub async fn insert(db: &Database, lines: &[Line]) -> sqlx::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let rows: Vec<Value> = lines
        .iter()
        .map(|l| {
            serde_json::json!({
                "at": l.at,
                "level": l.level.number(),
                "role": l.role,
                "host": l.host,
                "pid": l.pid,
                "target": l.target,
                "message": l.message,
                "fields": Value::Object(l.fields.clone()).to_string(),
                "request_id": l.request_id,
                "book_id": l.book_id,
                "job_id": l.job_id,
                "tenant": l.tenant,
            })
        })
        .collect();
    // PostgreSQL's text cannot hold NUL, and one such character would refuse the whole batch.
    let batch = Value::Array(rows)
        .to_string()
        .replace("\\u0000", "\u{fffd}");
    on_pool!(db, |pool, d| {
        let sql = match d {
            Dialect::Postgres => INSERT_POSTGRES,
            Dialect::Sqlite => INSERT_SQLITE,
        };
        sqlx::query(sql).bind(batch).execute(pool).await?;
    });
    Ok(())
}

/// Which lines to read. Every condition given must hold.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub role: Option<String>,
    /// This level or worse.
    pub level: Option<Level>,
    pub book_id: Option<String>,
    pub job_id: Option<i64>,
    pub tenant: Option<String>,
    pub request_id: Option<String>,
    /// Unix microseconds: lines at or after it.
    pub since: Option<i64>,
    /// Text in the message or the fields, ignoring case.
    pub grep: Option<String>,
}

/// `level` is read as a `BIGINT`: sqlx decodes PostgreSQL's `SMALLINT` only into `i16`.
const COLUMNS: &str = "id, at, CAST(level AS BIGINT) AS level, role, host, pid, target, message, \
                       fields, request_id, book_id, job_id, tenant";

/// The filter's conditions, parameters `$1`–`$8` in the order [`read`] binds them. `CAST` rather
/// than `::`, which SQLite does not know; PostgreSQL needs the types of parameters that may be
/// NULL.
const CONDITIONS: &str = "(CAST($1 AS TEXT) IS NULL OR role = $1)
    AND (CAST($2 AS INTEGER) IS NULL OR level <= $2)
    AND (CAST($3 AS TEXT) IS NULL OR book_id = $3)
    AND (CAST($4 AS BIGINT) IS NULL OR job_id = $4)
    AND (CAST($5 AS TEXT) IS NULL OR tenant = $5)
    AND (CAST($6 AS TEXT) IS NULL OR request_id = $6)
    AND (CAST($7 AS BIGINT) IS NULL OR at >= $7)
    AND (CAST($8 AS TEXT) IS NULL OR lower(message || ' ' || fields) LIKE $8 ESCAPE '\\')";

impl Filter {
    /// A `since` for the lines of the last `ago`.
    pub fn since_ago(ago: Duration) -> i64 {
        chrono::Utc::now().timestamp_micros() - i64::try_from(ago.as_micros()).unwrap_or(i64::MAX)
    }

    /// The first condition set that the log files cannot answer (they know only the role), by
    /// the name `bindery logs` and the admin API give it.
    pub fn beyond_role(&self) -> Option<&'static str> {
        [
            (self.level.is_some(), "level"),
            (self.book_id.is_some(), "book"),
            (self.job_id.is_some(), "job"),
            (self.tenant.is_some(), "tenant"),
            (self.request_id.is_some(), "request"),
            (self.since.is_some(), "since"),
            (self.grep.is_some(), "grep"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// The `LIKE` pattern for `grep`: its own `%`, `_` and `\` match themselves.
    fn pattern(&self) -> Option<String> {
        self.grep.as_ref().map(|text| {
            let mut escaped = String::with_capacity(text.len() + 2);
            escaped.push('%');
            for c in text.to_lowercase().chars() {
                if matches!(c, '%' | '_' | '\\') {
                    escaped.push('\\');
                }
                escaped.push(c);
            }
            escaped.push('%');
            escaped
        })
    }
}

/// The last `n` lines that pass `filter`, oldest first.
pub async fn last(db: &Database, filter: &Filter, n: i64) -> sqlx::Result<Vec<Line>> {
    let sql = format!(
        "SELECT * FROM (SELECT {COLUMNS} FROM log_lines WHERE {CONDITIONS} AND id > $10
           ORDER BY at DESC, id DESC LIMIT $9) AS recent ORDER BY at, id"
    );
    // Ids start at 1.
    read(db, &sql, filter, n, 0).await
}

/// The last `n` lines of book `book`, oldest first. A query of its own rather than [`last`]
/// with a filter: tenants read it often, and only `book_id = $1` on its own lets PostgreSQL's
/// generic plan use the `log_lines_book` index.
pub async fn of_book(db: &Database, book: &str, n: i64) -> sqlx::Result<Vec<Line>> {
    let sql = format!(
        "SELECT * FROM (SELECT {COLUMNS} FROM log_lines WHERE book_id = $1
           ORDER BY at DESC, id DESC LIMIT $2) AS recent ORDER BY at, id"
    );
    on_pool!(db, |pool, _d| {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(book)
            .bind(n)
            .fetch_all(pool)
            .await?
            .iter()
            .map(line_of)
            .collect()
    })
}

/// Up to `limit` lines after id `after` that pass `filter`, by id.
pub async fn after(
    db: &Database,
    filter: &Filter,
    after: i64,
    limit: i64,
) -> sqlx::Result<Vec<Line>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM log_lines WHERE {CONDITIONS} AND id > $10 ORDER BY id LIMIT $9"
    );
    read(db, &sql, filter, limit, after).await
}

/// The id of the newest line, 0 for none.
pub async fn newest_id(db: &Database) -> sqlx::Result<i64> {
    on_pool!(db, |pool, _d| {
        sqlx::query_scalar("SELECT COALESCE(max(id), 0) FROM log_lines")
            .fetch_one(pool)
            .await
    })
}

/// Runs `sql` (the filter's conditions, then `LIMIT $9` and `id > $10`).
async fn read(
    db: &Database,
    sql: &str,
    filter: &Filter,
    limit: i64,
    after: i64,
) -> sqlx::Result<Vec<Line>> {
    on_pool!(db, |pool, _d| {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .bind(filter.role.clone())
            .bind(filter.level.map(|l| i32::from(l.number())))
            .bind(filter.book_id.clone())
            .bind(filter.job_id)
            .bind(filter.tenant.clone())
            .bind(filter.request_id.clone())
            .bind(filter.since)
            .bind(filter.pattern())
            .bind(limit)
            .bind(after)
            .fetch_all(pool)
            .await?
            .iter()
            .map(line_of)
            .collect()
    })
}

fn line_of<R: Row>(row: &R) -> sqlx::Result<Line>
where
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database>,
    for<'r> Option<i64>: sqlx::Decode<'r, R::Database>,
    for<'c> &'c str: sqlx::ColumnIndex<R>,
{
    let fields: String = row.try_get("fields")?;
    let fields = match serde_json::from_str::<Value>(&fields) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    Ok(Line {
        id: row.try_get("id")?,
        at: row.try_get("at")?,
        level: Level::from_number(row.try_get("level")?),
        role: row.try_get("role")?,
        host: row.try_get("host")?,
        pid: row.try_get("pid")?,
        target: row.try_get("target")?,
        message: row.try_get("message")?,
        fields,
        request_id: row.try_get("request_id")?,
        book_id: row.try_get("book_id")?,
        job_id: row.try_get("job_id")?,
        tenant: row.try_get("tenant")?,
    })
}

/// Deletes lines older than `retention`, then the oldest beyond `max_lines`, in batches.
/// Returns how many went.
pub async fn prune(db: &Database, retention: Duration, max_lines: u64) -> sqlx::Result<u64> {
    let retention_us = i64::try_from(retention.as_micros()).unwrap_or(i64::MAX);
    let oldest_kept = chrono::Utc::now()
        .timestamp_micros()
        .saturating_sub(retention_us);
    let max_lines = i64::try_from(max_lines).unwrap_or(i64::MAX);
    // The id below which lines are too many: the `max_lines`-th newest.
    let cut: Option<i64> = on_pool!(db, |pool, _d| {
        sqlx::query_scalar("SELECT id FROM log_lines ORDER BY id DESC LIMIT 1 OFFSET $1")
            .bind(max_lines)
            .fetch_optional(pool)
            .await?
    });
    let mut pruned = 0;
    loop {
        let done = on_pool!(db, |pool, _d| {
            sqlx::query(
                "DELETE FROM log_lines WHERE id IN (
                   SELECT id FROM log_lines WHERE at < $1 OR id <= $2 ORDER BY id LIMIT $3)",
            )
            .bind(oldest_kept)
            .bind(cut.unwrap_or(0))
            .bind(PRUNE_BATCH)
            .execute(pool)
            .await?
            .rows_affected()
        });
        pruned += done;
        if done < u64::try_from(PRUNE_BATCH).unwrap_or(u64::MAX) {
            return Ok(pruned);
        }
    }
}

/// Where a follower is: lines are read by id, but on PostgreSQL a batch can commit after a
/// later-numbered one from another process, so the reads look back a moment and skip what
/// they have already shown.
#[derive(Debug)]
pub struct Follow {
    /// Every line at or below it has been shown or was there before the follow began.
    floor: i64,
    /// Lines above the floor already shown, and when.
    shown: BTreeMap<i64, Instant>,
}

/// How long a line's id is remembered: a batch that commits later than this after a
/// higher-numbered one is missed. Commits take milliseconds.
const LOOK_BACK: Duration = Duration::from_secs(2);

impl Follow {
    /// Follows what comes after the lines stored now.
    pub async fn from_now(db: &Database) -> sqlx::Result<Follow> {
        Ok(Follow {
            floor: newest_id(db).await?,
            shown: BTreeMap::new(),
        })
    }

    /// The new lines that pass `filter`, by time within the read.
    pub async fn next(&mut self, db: &Database, filter: &Filter) -> sqlx::Result<Vec<Line>> {
        let now = Instant::now();
        let mut lines = after(db, filter, self.floor, 10_000).await?;
        lines.retain(|l| !self.shown.contains_key(&l.id));
        for line in &lines {
            self.shown.insert(line.id, now);
        }
        // Lower the memory of ids older than the look-back into the floor.
        while let Some((&id, &at)) = self.shown.first_key_value() {
            if now.duration_since(at) < LOOK_BACK {
                break;
            }
            self.floor = self.floor.max(id);
            self.shown.pop_first();
        }
        lines.sort_by_key(|l| (l.at, l.id));
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(at: i64, role: &str, message: &str) -> Line {
        Line {
            id: 0,
            at,
            level: Level::Info,
            role: role.to_owned(),
            host: "h".to_owned(),
            pid: 7,
            target: "t".to_owned(),
            message: message.to_owned(),
            fields: Map::new(),
            request_id: None,
            book_id: None,
            job_id: None,
            tenant: None,
        }
    }

    #[tokio::test]
    async fn lines_are_read_back_by_time_with_their_filters() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        let mut failed = line(30, "worker", "step failed: 100% of _the_ disk");
        failed.level = Level::Error;
        failed.book_id = Some("b-1".into());
        failed.job_id = Some(9);
        failed.tenant = Some("alice".into());
        failed
            .fields
            .insert("error".into(), Value::from("No space left"));
        let lines = vec![
            line(20, "web", "request"),
            failed,
            line(10, "web", "listening \u{0}"),
        ];
        insert(&db, &lines).await.expect("insert");

        let all = last(&db, &Filter::default(), 10).await.expect("read");
        let messages: Vec<&str> = all.iter().map(|l| l.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "listening \u{fffd}",
                "request",
                "step failed: 100% of _the_ disk"
            ]
        );
        assert_eq!(
            all[2].fields.get("error"),
            Some(&Value::from("No space left"))
        );
        assert_eq!(all[2].job_id, Some(9));

        let two = last(&db, &Filter::default(), 2).await.expect("read");
        assert_eq!(two.len(), 2);
        assert_eq!(two[0].message, "request", "the newest two, oldest first");

        let none = Filter::default;
        let grep = |text: &str| Filter {
            grep: Some(text.into()),
            ..none()
        };
        let cases: [(&str, Filter, &[i64]); 12] = [
            (
                "role",
                Filter {
                    role: Some("web".into()),
                    ..none()
                },
                &[10, 20],
            ),
            (
                "level",
                Filter {
                    level: Some(Level::Warn),
                    ..none()
                },
                &[30],
            ),
            (
                "book",
                Filter {
                    book_id: Some("b-1".into()),
                    ..none()
                },
                &[30],
            ),
            (
                "job",
                Filter {
                    job_id: Some(9),
                    ..none()
                },
                &[30],
            ),
            (
                "tenant",
                Filter {
                    tenant: Some("bob".into()),
                    ..none()
                },
                &[],
            ),
            (
                "since",
                Filter {
                    since: Some(20),
                    ..none()
                },
                &[20, 30],
            ),
            ("grep, any case", grep("NO SPACE"), &[30]),
            ("grep %", grep("100%"), &[30]),
            ("grep % is no wildcard", grep("100%d"), &[]),
            ("grep _", grep("_the_"), &[30]),
            ("grep _ is no wildcard", grep("100_"), &[]),
            (
                "request",
                Filter {
                    request_id: Some("r".into()),
                    ..none()
                },
                &[],
            ),
        ];
        for (what, filter, expected) in cases {
            let found: Vec<i64> = last(&db, &filter, 10)
                .await
                .expect("read")
                .iter()
                .map(|l| l.at)
                .collect();
            assert_eq!(found, expected, "{what}");
        }
    }

    #[tokio::test]
    async fn a_follower_sees_each_new_line_once() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        insert(&db, &[line(1, "web", "before")])
            .await
            .expect("insert");
        let mut follow = Follow::from_now(&db).await.expect("follow");
        let filter = Filter::default();
        assert!(follow.next(&db, &filter).await.expect("read").is_empty());
        insert(&db, &[line(3, "web", "b"), line(2, "worker", "a")])
            .await
            .expect("insert");
        let new: Vec<String> = follow
            .next(&db, &filter)
            .await
            .expect("read")
            .into_iter()
            .map(|l| l.message)
            .collect();
        assert_eq!(new, ["a", "b"], "by time");
        assert!(
            follow.next(&db, &filter).await.expect("read").is_empty(),
            "once"
        );
    }

    #[tokio::test]
    async fn the_prune_keeps_the_newest_lines_within_both_bounds() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        let now = chrono::Utc::now().timestamp_micros();
        let old = now - 3_600_000_000;
        let mut lines: Vec<Line> = (0..5).map(|i| line(old + i, "web", "old")).collect();
        lines.extend((0..30).map(|i| line(now + i, "web", "new")));
        insert(&db, &lines).await.expect("insert");
        let pruned = prune(&db, Duration::from_secs(60), 1_000)
            .await
            .expect("prune");
        assert_eq!(pruned, 5, "older than the retention");
        let pruned = prune(&db, Duration::from_secs(60), 20)
            .await
            .expect("prune");
        assert_eq!(pruned, 10, "beyond the most lines kept");
        let kept = last(&db, &Filter::default(), 100).await.expect("read");
        assert_eq!(kept.len(), 20);
        assert_eq!(kept[0].at, now + 10, "the newest are kept");
    }
}
