//! `bindery storage adopt`: the deliberate way to pair a database and a blob store that the
//! start-up check refuses (see `storage::installation`).

use std::process::ExitCode;

use clap::Subcommand;

use crate::books::{self, BookId};
use crate::config::Config;
use crate::storage::{BlobStore, Database, installation};

#[derive(Debug, Subcommand)]
pub enum StorageCommand {
    /// Make the database adopt the blob store's installation id (or start a new one in both,
    /// when neither has one), so that `serve`, `web` and `worker` start on this pair. Prints
    /// what it found and what it will do; changes nothing without --yes. Files of books this
    /// database does not list are then deleted by the blob sweep over the following runs.
    Adopt {
        /// Do it (without it, only print what would be done).
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(config: &Config, command: StorageCommand) -> anyhow::Result<ExitCode> {
    let StorageCommand::Adopt { yes } = command;
    let db = Database::connect(&config.database, 1).await?;
    let result = async {
        let blobs = BlobStore::open(&config.blob, &config.azure)?;
        db.migrate().await?;
        let plan = installation::plan_adoption(&db, &blobs, async |folders: &[String]| {
            let ids: Vec<BookId> = folders.iter().filter_map(|f| BookId::parse(f)).collect();
            let known = books::existing(&db, &ids).await?;
            Ok(known.into_iter().map(String::from).collect())
        })
        .await?;
        print!("{plan}");
        if plan.database.id.as_deref() == Some(plan.id.as_str()) && plan.marker.is_some() {
            return Ok(ExitCode::SUCCESS);
        }
        if !yes {
            eprintln!("bindery: nothing was changed; run `bindery storage adopt --yes` to do this");
            return Ok(ExitCode::FAILURE);
        }
        let id = installation::adopt(&db, &blobs, &plan).await?;
        println!("Done: the database and the blob store are installation {id}.");
        Ok(ExitCode::SUCCESS)
    }
    .await;
    db.close().await;
    result
}
