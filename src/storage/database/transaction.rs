//! Bindery's transactions, on either backend. They are begun and ended here with plain
//! statements instead of `sqlx::Transaction`, so that a transaction whose end is not confirmed
//! never hands its connection back to the pool (see [`TxConn`]).

use crate::storage::fault;

/// A transaction on either backend. Storage and job functions take `&mut Tx`, so that a caller
/// can commit application rows and the jobs they cause together.
#[derive(Debug)]
pub enum Tx {
    Sqlite(TxConn<sqlx::Sqlite>),
    Postgres(TxConn<sqlx::Postgres>),
}

impl Tx {
    pub async fn commit(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.finish("COMMIT").await,
            Tx::Postgres(tx) => tx.finish("COMMIT").await,
        }
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        match self {
            Tx::Sqlite(tx) => tx.finish("ROLLBACK").await,
            Tx::Postgres(tx) => tx.finish("ROLLBACK").await,
        }
    }
}

/// A pooled connection inside a transaction that Bindery began and ends itself.
///
/// Why not `sqlx::Transaction`: it counts transaction depth beside the database, and on SQLite
/// the count can disagree with it for good. A COMMIT that fails with `database or disk is full`
/// (or an I/O error) lets SQLite roll the transaction back by itself; sqlx's count stays at 1,
/// the ROLLBACK it queues on drop then fails ("no transaction is active") and is ignored, and
/// the connection goes back to the pool still counted as inside a transaction. Every later
/// `BEGIN IMMEDIATE` on it fails with "attempted to call begin_with at non-zero transaction
/// depth", so a disk full for a moment left the job engine unable to commit anything again.
///
/// Here the database is the only record: `BEGIN`/`COMMIT`/`ROLLBACK` are plain statements,
/// and a connection goes back to the pool only after one of them has been confirmed to end
/// the transaction. Any other end (a failed COMMIT or ROLLBACK, a transaction dropped
/// unfinished by an error or a cancelled future) closes the connection, which ends the
/// transaction on the server side whatever state it was in, and the pool opens a fresh one.
/// That costs a reconnection on failure paths only.
pub struct TxConn<DB: sqlx::Database> {
    conn: sqlx::pool::PoolConnection<DB>,
    /// Between a confirmed BEGIN and a confirmed COMMIT or ROLLBACK.
    open: bool,
}

impl<DB: sqlx::Database> TxConn<DB>
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    pub(super) async fn begin(
        conn: sqlx::pool::PoolConnection<DB>,
        statement: &'static str,
    ) -> sqlx::Result<Self> {
        let mut tx = TxConn { conn, open: true };
        // Open until BEGIN is confirmed: a BEGIN that failed or was cancelled closes the
        // connection on drop rather than guess whether it started a transaction.
        sqlx::raw_sql(statement).execute(&mut *tx.conn).await?;
        Ok(tx)
    }

    async fn finish(mut self, statement: &'static str) -> sqlx::Result<()> {
        match sqlx::raw_sql(statement).execute(&mut *self.conn).await {
            Ok(_) => {
                self.open = false;
                Ok(())
            }
            Err(e) => {
                // The caller hears of the failure and reports it; storage that is full or out
                // of reach is a failure its loops pace and report once (`storage::backoff`),
                // so only anything else is worth a warning of its own here.
                if fault::of_sqlx(&e) == fault::Fault::Bug {
                    tracing::warn!(
                        statement,
                        error = %e,
                        "a transaction could not be ended; closing its connection so the next one starts clean"
                    );
                } else {
                    tracing::debug!(
                        statement,
                        error = %e,
                        "a transaction could not be ended; closing its connection so the next one starts clean"
                    );
                }
                // `open` stays true: dropping `self` closes the connection.
                Err(e)
            }
        }
    }
}

impl<DB: sqlx::Database> Drop for TxConn<DB> {
    fn drop(&mut self) {
        if self.open {
            self.conn.close_on_drop();
        }
    }
}

impl<DB: sqlx::Database> std::fmt::Debug for TxConn<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxConn").field("open", &self.open).finish()
    }
}

impl<DB: sqlx::Database> std::ops::Deref for TxConn<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &Self::Target {
        &self.conn
    }
}

impl<DB: sqlx::Database> std::ops::DerefMut for TxConn<DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseUrl;
    use crate::storage::Database;

    async fn sqlite_pool_of_one(dir: &tempfile::TempDir) -> Database {
        let url = DatabaseUrl::Sqlite {
            path: dir.path().join("bindery.db"),
        };
        let db = Database::connect(&url, 1).await.expect("connect");
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        sqlx::query("CREATE TABLE t (x INTEGER NOT NULL)")
            .execute(pool)
            .await
            .expect("create table");
        db
    }

    async fn insert_and_commit(db: &Database, x: i64) -> sqlx::Result<()> {
        let mut tx = db.begin().await?;
        on_tx!(&mut tx, |conn, _d| sqlx::query(
            "INSERT INTO t (x) VALUES ($1)"
        )
        .bind(x)
        .execute(&mut *conn)
        .await
        .map(drop)?);
        tx.commit().await
    }

    /// A COMMIT that fails after SQLite rolled the transaction back by itself, as it does on a
    /// full disk (here a commit hook refuses it: the same end state, without filling a disk).
    /// sqlx's own `Transaction` kept counting the connection as inside a transaction, and every
    /// later `BEGIN IMMEDIATE` on it failed with "non-zero transaction depth".
    #[tokio::test]
    async fn a_failed_commit_leaves_the_next_transaction_clean() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = sqlite_pool_of_one(&dir).await;
        let mut tx = db.begin().await.expect("begin");
        let Tx::Sqlite(t) = &mut tx else {
            unreachable!()
        };
        sqlx::query("INSERT INTO t (x) VALUES (1)")
            .execute(&mut **t)
            .await
            .expect("insert");
        t.lock_handle()
            .await
            .expect("handle")
            .set_commit_hook(|| false);
        let refused = tx.commit().await.expect_err("the hook refuses the commit");
        assert!(
            !refused.to_string().contains("transaction depth"),
            "{refused}"
        );
        // The pool's only connection is replaced, without the hook, and works.
        for x in 2..5 {
            insert_and_commit(&db, x)
                .await
                .expect("a transaction after the failed commit");
        }
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        let kept: Vec<i64> = sqlx::query_scalar("SELECT x FROM t ORDER BY x")
            .fetch_all(pool)
            .await
            .expect("select");
        assert_eq!(kept, [2, 3, 4]);
    }

    /// A transaction dropped unfinished (an error between BEGIN and COMMIT, a cancelled
    /// future) is rolled back with its connection, which is not reused.
    #[tokio::test]
    async fn a_dropped_transaction_is_rolled_back_and_its_connection_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = sqlite_pool_of_one(&dir).await;
        {
            let mut tx = db.begin().await.expect("begin");
            on_tx!(&mut tx, |conn, _d| sqlx::query(
                "INSERT INTO t (x) VALUES (1)"
            )
            .execute(&mut *conn)
            .await
            .map(drop)
            .expect("insert"));
        }
        insert_and_commit(&db, 2)
            .await
            .expect("the next transaction");
        let mut tx = db.begin().await.expect("begin");
        on_tx!(&mut tx, |conn, _d| sqlx::query(
            "INSERT INTO t (x) VALUES (3)"
        )
        .execute(&mut *conn)
        .await
        .map(drop)
        .expect("insert"));
        tx.rollback().await.expect("rollback");
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        let kept: Vec<i64> = sqlx::query_scalar("SELECT x FROM t")
            .fetch_all(pool)
            .await
            .expect("select");
        assert_eq!(kept, [2]);
    }
}
