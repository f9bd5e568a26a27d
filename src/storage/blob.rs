//! The blob store: uploads, intermediate documents and finished books, behind `object_store`.
//!
//! Local files by default, Azure Blob Storage to scale out; both give conditional
//! create-if-absent writes, streaming multipart uploads and retries through the same trait.

use std::sync::Arc;

use anyhow::Context;
use object_store::ObjectStore;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;

use crate::config::{AzureConfig, BlobUrl};

/// A handle on the configured blob store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BlobStore {
    inner: Arc<dyn ObjectStore>,
    location: String,
}

impl BlobStore {
    /// Opens the store `BLOB_URL` names. Nothing else in Bindery constructs an object store.
    pub fn open(url: &BlobUrl, azure: &AzureConfig) -> anyhow::Result<Self> {
        let inner: Arc<dyn ObjectStore> = match url {
            BlobUrl::File { root } => {
                std::fs::create_dir_all(root)
                    .with_context(|| format!("creating blob directory {}", root.display()))?;
                Arc::new(
                    LocalFileSystem::new_with_prefix(root)
                        .with_context(|| format!("opening blob directory {}", root.display()))?
                        // Deleting the last blob of a book removes its now-empty directories.
                        .with_automatic_cleanup(true),
                )
            }
            BlobUrl::Azure { container } => {
                let mut builder = MicrosoftAzureBuilder::new()
                    .with_container_name(container)
                    .with_use_emulator(azure.use_emulator);
                if let Some(account) = &azure.account {
                    builder = builder.with_account(account);
                }
                if let Some(key) = &azure.access_key {
                    builder = builder.with_access_key(key.expose());
                }
                Arc::new(
                    builder
                        .build()
                        .with_context(|| format!("configuring Azure container {container}"))?,
                )
            }
        };
        Ok(Self {
            inner,
            location: url.to_string(),
        })
    }

    /// One cheap request (a listing of an empty prefix), for `/readyz`.
    pub async fn ping(&self) -> anyhow::Result<()> {
        self.inner
            .list_with_delimiter(Some(&Path::from("_health")))
            .await
            .map(drop)
            .with_context(|| format!("blob store {} did not answer", self.location))
    }

    pub fn location(&self) -> &str {
        &self.location
    }

    /// The underlying store, for the pipeline's reads and writes.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }
}
