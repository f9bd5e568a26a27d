//! The `package_epub` step: the EPUB, made in the packaging child.

use serde::{Deserialize, Serialize};

use super::failure::refuse;
use super::packaging::{Output, Packaged, package};
use super::{Cx, QUEUE};
use crate::books::RevisionId;
use crate::jobs::{Job, Outcome};
use crate::services::Services;

/// The EPUB, made in a limited child ([`super::packaging`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackageEpub {
    #[serde(flatten)]
    pub revision: RevisionId,
}

impl Job for PackageEpub {
    const NAME: &'static str = "book.package_epub";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        cx.progress(50, "zipping the EPUB").await?;
        match package(cx, &self.revision, Output::Epub).await? {
            Packaged::Refused { code, message } => refuse(cx, &self.revision, &code, message).await,
            packaged @ Packaged::Epub { bytes, unpacked } => {
                tracing::info!(for_author = true, bytes, unpacked, "EPUB packaged");
                Ok(Outcome::done_with(serde_json::to_value(packaged)?))
            }
            other => anyhow::bail!("packaging the EPUB answered {other:?}"),
        }
    }
}
