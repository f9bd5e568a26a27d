//! The `package_reader` step: the web reader, made in the packaging child.

use serde::{Deserialize, Serialize};

use super::failure::refuse;
use super::packaging::{Output, Packaged, package};
use super::{Cx, QUEUE};
use crate::books::RevisionId;
use crate::jobs::{Job, Outcome};
use crate::services::Services;

/// The web reader, made in a limited child ([`super::packaging`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackageReader {
    #[serde(flatten)]
    pub revision: RevisionId,
}

impl Job for PackageReader {
    const NAME: &'static str = "book.package_reader";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        cx.progress(50, "writing the web reader").await?;
        match package(cx, &self.revision, Output::Reader).await? {
            Packaged::Refused { code, message } => refuse(cx, &self.revision, &code, message).await,
            packaged @ Packaged::Reader { files, bytes } => {
                tracing::info!(for_author = true, files, bytes, "web reader packaged");
                Ok(Outcome::done_with(serde_json::to_value(packaged)?))
            }
            other => anyhow::bail!("packaging the web reader answered {other:?}"),
        }
    }
}
