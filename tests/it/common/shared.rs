//! A database shared by `bindery worker` processes that a test starts, as several machines
//! share one: SQLite in a temp directory, or a fresh PostgreSQL database.

use std::str::FromStr;
use std::time::Duration;

use bindery::config::{DatabaseUrl, Secret};
use bindery::jobs::JobQueue;
use bindery::storage::Database;

use super::{Running, message};

pub struct Shared {
    pub data: tempfile::TempDir,
    pub env_url: String,
    pub url: DatabaseUrl,
}

impl Shared {
    pub fn sqlite() -> Self {
        let data = tempfile::tempdir().expect("tempdir");
        let path = data.path().join("shared.db");
        Self {
            env_url: format!("sqlite://{}", path.display()),
            url: DatabaseUrl::Sqlite { path },
            data,
        }
    }

    pub fn postgres() -> Self {
        let env_url = super::postgres_database();
        let url = DatabaseUrl::Postgres {
            url: Secret::new(url::Url::from_str(&env_url).expect("url")),
        };
        Self {
            data: tempfile::tempdir().expect("tempdir"),
            env_url,
            url,
        }
    }

    pub async fn queue(&self) -> JobQueue {
        let db = Database::connect(&self.url, 4).await.expect("connect");
        db.migrate().await.expect("migrate");
        JobQueue::new(db)
    }

    /// Starts a standalone `bindery worker` on the shared database, without waiting for it.
    pub fn spawn_worker(&self, env: &[(&str, &str)]) -> Running {
        let mut cmd = super::command(self.data.path());
        cmd.arg("worker").env("DATABASE_URL", &self.env_url);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Running::start(cmd)
    }

    /// Starts a standalone `bindery worker` on the shared database.
    pub fn worker(&self, env: &[(&str, &str)]) -> Running {
        let worker = self.spawn_worker(env);
        worker
            .logs
            .wait_for("worker ready", Duration::from_secs(20), |l| {
                message(l, Some("worker"), "worker ready")
            });
        worker
    }
}
