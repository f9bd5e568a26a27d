//! The `parse` step: the manuscript read into the document model, its metadata resolved and its
//! cover prepared, in a child process of its own (see [`crate::pipeline::child`]).
//!
//! Reading is the one step before the model exists whose cost the input decides: the readers
//! stop at the book limits (`MAX_BOOK_WORDS`…) as they go, but a file that finds another way
//! to be expensive is stopped by the child's limits, and its book fails with `too_large` or
//! `too_complex`. What the child hands back is how many chapters it stored, or why the
//! manuscript was refused.
//!
//! Later steps work on the stored model, which the limits checked while reading keep small.

use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::failure::{fail_for_good, gone, refuse};
use super::print_edition::Typeset;
use super::stored::{carry_style_files, house_styles, revision_row};
use super::{Cx, QUEUE};
use crate::books::RevisionId;
use crate::books::StoredOptions;
use crate::books::keys;
use crate::config::Config;
use crate::convert;
use crate::jobs::{Job, NewJob, Outcome};
use crate::manuscript::{Format, Ingested, InputError};
use crate::pipeline::child::{Child, Ran};
use crate::services::Services;
use crate::storage::BlobStore;

/// Read the manuscript into the document model, resolve metadata, prepare the cover.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parse {
    #[serde(flatten)]
    pub revision: RevisionId,
    pub format: Format,
    pub encoding: Option<String>,
}

impl Job for Parse {
    const NAME: &'static str = "book.parse";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let Some(row) = revision_row(cx, &self.revision).await? else {
            return Ok(gone(&self.revision));
        };
        cx.progress(10, "reading the manuscript").await?;
        let mut options = row.options()?;
        options.convert.house_styles = house_styles(app, &self.revision.book).await?;
        let request = Request {
            revision: self.revision.clone(),
            format: self.format,
            encoding: self.encoding.clone(),
            options,
        };
        let chapters = match read_in_child(&app.config, &request).await? {
            Reply::Stored { chapters } => chapters,
            Reply::Refused { code, message } => {
                return refuse(cx, &self.revision, &code, message).await;
            }
        };
        // The print edition first: the ebooks mark where its pages begin. Its steps are
        // extras, and whatever becomes of it, its last step goes on to `chapters`.
        cx.then(NewJob::of(&Typeset {
            revision: self.revision.clone(),
            chapters: Some(chapters),
            // The first the book lists, as `package_pdf` reads it.
            edition: None,
        }));
        cx.progress(100, "parsed").await?;
        tracing::info!(for_author = true, chapters, "manuscript read");
        Ok(Outcome::done_with(Parsed { chapters }))
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.revision, Self::NAME, error).await
    }
}

/// What `parse` made, its job's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parsed {
    pub chapters: usize,
}

/// The hidden subcommand the worker runs.
pub const SUBCOMMAND: &str = "read-manuscript";

/// What the child is asked to read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    #[serde(flatten)]
    pub revision: RevisionId,
    pub format: Format,
    pub encoding: Option<String>,
    pub options: StoredOptions,
}

/// What the child answers on stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The model, the report and the images are stored.
    Stored { chapters: usize },
    /// The manuscript cannot be made into a book; `code` and `message` are the API's.
    Refused { code: String, message: String },
}

impl Reply {
    fn refused(error: &InputError) -> Reply {
        Reply::Refused {
            code: error.code().to_owned(),
            message: error.to_string(),
        }
    }
}

/// The child that reads.
const CHILD: Child = Child {
    subcommand: SUBCOMMAND,
    work: "reading the manuscript",
};

/// Runs the child and waits for it. `Err` is a failure worth retrying (the child could not
/// start, or died in a way no limit explains); a limit that stopped it is a `Refused`.
pub async fn read_in_child(config: &Config, request: &Request) -> anyhow::Result<Reply> {
    Ok(
        match CHILD.run(config, &request.revision.book, request).await? {
            Ran::Answered(reply) => reply,
            Ran::Stopped(error) => Reply::refused(&error),
        },
    )
}

/// The child: reads its [`Request`], then reads the manuscript and stores what it made.
pub fn child_main(config: &Config) -> ExitCode {
    CHILD.main(config, |request: Request, blobs| async move {
        read_and_store(&blobs, config, &request).await
    })
}

/// The step's work: the inputs from the blob store, the reading, the outputs back.
async fn read_and_store(
    blobs: &BlobStore,
    config: &Config,
    request: &Request,
) -> anyhow::Result<Reply> {
    let revision = &request.revision;
    let manuscript = blobs.get(&keys::upload(revision)).await?;
    let text = match request.format {
        format if format.reads_bytes() => None,
        _ => Some(
            String::from_utf8(blobs.get(&keys::text(revision)).await?.to_vec())
                .context("the decoded manuscript is not UTF-8")?,
        ),
    };
    let cover = match &request.options.cover_name {
        Some(name) => Some((
            name.clone(),
            blobs.get(&keys::cover_upload(revision)).await?,
        )),
        None => None,
    };
    let ingested = Ingested {
        format: request.format,
        text,
        encoding: request.encoding.clone(),
    };
    let assembled = match convert::assemble(
        &ingested,
        &manuscript,
        cover.as_ref().map(|(n, b)| (n.as_str(), b.as_ref())),
        &request.options.convert,
        &config.limits,
        &config.default_language,
    ) {
        Ok(a) => a,
        Err(e) => return Ok(Reply::refused(&e)),
    };
    drop((manuscript, cover, ingested));
    let house = convert::chosen_house(&assembled.book.metadata, &request.options.convert);
    carry_style_files(blobs, revision, house).await?;
    for (id, bytes) in assembled.resources {
        blobs
            .put_if_absent(&keys::resource(revision, &id), bytes)
            .await?;
    }
    blobs
        .put_if_absent(
            &keys::parse_report(revision),
            serde_json::to_vec(&assembled.report)?,
        )
        .await?;
    blobs
        .put_if_absent(&keys::model(revision), serde_json::to_vec(&assembled.book)?)
        .await?;
    Ok(Reply::Stored {
        chapters: assembled.book.document.chapters.len(),
    })
}
