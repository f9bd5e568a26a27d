//! A pool's PostgreSQL connection kept from one statement to the next, for a loop that runs
//! them back to back on a pool of its own: the job engine's pump.
//!
//! sqlx pings every connection handed back to its pool before anyone may take it again, so a
//! pool of one costs a round trip between any two statements, during which the server sits
//! idle. On the no-op drain, the pump's server process was busy 73–74 % of the drain with the
//! pings and 78–79 % without, and the drain ran about 8 % faster.

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres};

use super::Database;

/// A statement on it that fails closes it, whatever the failure, and the next statement takes
/// a fresh one: as with a transaction's connection (`TxConn`), a reconnection on failure paths
/// only, where handing it back would have sqlx ping it and warn of every broken one. It goes
/// back to its pool whenever the owner needs the pool itself ([`KeptConnection::pool`]).
#[derive(Debug)]
pub struct KeptConnection {
    db: Database,
    conn: Option<PoolConnection<Postgres>>,
}

impl KeptConnection {
    pub fn new(db: Database) -> Self {
        KeptConnection { db, conn: None }
    }

    /// The pool, for a statement that takes a connection of its own. The kept one goes back
    /// first: in a pool of one, that statement would otherwise wait for it until it timed out.
    pub fn pool(&mut self) -> &Database {
        self.conn = None;
        &self.db
    }

    /// The pool without handing the connection back, to tell the backends apart.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Runs `statement` on the kept connection, taking one from the pool first if none is kept.
    /// `None` on SQLite, whose pool is used as it is.
    pub async fn on_postgres<T>(
        &mut self,
        statement: impl AsyncFnOnce(&mut PgConnection) -> sqlx::Result<T>,
    ) -> Option<sqlx::Result<T>> {
        let Database::Postgres(pool) = &self.db else {
            return None;
        };
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => match pool.acquire().await {
                Ok(conn) => self.conn.insert(conn),
                Err(e) => return Some(Err(e)),
            },
        };
        let result = statement(conn).await;
        if result.is_err()
            && let Some(mut conn) = self.conn.take()
        {
            conn.close_on_drop();
        }
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sqlx::Connection;

    use super::*;
    use crate::config::{DatabaseUrl, Secret};
    use crate::storage::{Checkout, Durability, Plans};
    use crate::test_support::need;

    async fn backend(kept: &mut KeptConnection) -> sqlx::Result<i32> {
        kept.on_postgres(async |conn| {
            sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(conn)
                .await
        })
        .await
        .expect("a PostgreSQL pool")
    }

    /// A pump's pool at the least budget: one connection, not tested before use.
    async fn pool_of_one(url: &str) -> Database {
        let url = DatabaseUrl::Postgres {
            url: Secret::new(url::Url::parse(url).expect("TEST_POSTGRES_URL")),
        };
        Database::connect_with(
            &url,
            1,
            Durability::Relaxed,
            Plans::Generic,
            Checkout::Trusted,
        )
        .await
        .expect("connect")
    }

    #[tokio::test]
    async fn a_connection_is_kept_until_the_server_cuts_it_and_then_replaced() {
        if !need::postgres() {
            return;
        }
        let url = std::env::var("TEST_POSTGRES_URL").expect("TEST_POSTGRES_URL");
        let mut kept = KeptConnection::new(pool_of_one(&url).await);
        let first = backend(&mut kept).await.expect("a first statement");
        assert_eq!(backend(&mut kept).await.expect("a second"), first);

        let mut other = sqlx::PgConnection::connect(&url).await.expect("connect");
        let cut: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(first)
            .fetch_one(&mut other)
            .await
            .expect("terminate");
        assert!(cut);
        // The one statement that finds the connection cut fails; the next runs on a new one.
        backend(&mut kept)
            .await
            .expect_err("the kept connection was cut");
        let second = backend(&mut kept).await.expect("a fresh connection");
        assert_ne!(second, first);

        // The pool's one connection is handed back before the pool is used, where waiting for
        // it would end in the pool's timeout.
        let pool_statement = async {
            let Database::Postgres(pool) = kept.pool() else {
                unreachable!()
            };
            sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()")
                .fetch_one(pool)
                .await
        };
        let on_pool = tokio::time::timeout(Duration::from_secs(2), pool_statement)
            .await
            .expect("the pool's connection was handed back")
            .expect("a statement on the pool");
        assert_eq!(on_pool, second);
        assert_eq!(backend(&mut kept).await.expect("kept again"), second);
        other.close().await.expect("close");
    }
}
