//! The blob store: uploads, intermediate documents and finished books, behind `object_store`.
//!
//! Local files by default, Azure Blob Storage to scale out; both give conditional
//! create-if-absent writes, streaming multipart uploads and retries through the same trait.

use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload};

use crate::config::{AzureConfig, BlobUrl};

/// A handle on the configured blob store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BlobStore {
    inner: Arc<dyn ObjectStore>,
    location: String,
    /// The directory of a local store, which must exist for the store to be ready.
    root: Option<std::path::PathBuf>,
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
                if let Some(endpoint) = &azure.endpoint {
                    builder = builder
                        .with_endpoint(endpoint.to_string())
                        .with_allow_http(endpoint.scheme() == "http");
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
            root: match url {
                BlobUrl::File { root } => Some(root.clone()),
                BlobUrl::Azure { .. } => None,
            },
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

    /// Writes a small blob, reads it back and deletes it, for `/readyz`: a full disk, a missing
    /// or read-only directory, or a store that refuses writes fails it, where a listing still
    /// answers. A local store's directory must exist already: a write would quietly create it
    /// again, on whatever disk is mounted there now.
    pub async fn probe(&self) -> anyhow::Result<()> {
        if let Some(root) = &self.root
            && !root.is_dir()
        {
            anyhow::bail!(
                "blob store {}: the directory {} is missing",
                self.location,
                root.display()
            );
        }
        let key = Path::from(format!("_health/probe-{}", uuid::Uuid::new_v4()));
        let written = Bytes::from_static(b"bindery readiness probe");
        let result = async {
            self.inner
                .put(&key, PutPayload::from_bytes(written.clone()))
                .await
                .context("writing a probe blob")?;
            let read = self
                .inner
                .get(&key)
                .await
                .context("reading the probe blob back")?
                .bytes()
                .await
                .context("reading the probe blob back")?;
            anyhow::ensure!(
                read == written,
                "the probe blob read back differs from what was written"
            );
            anyhow::Ok(())
        }
        .await;
        // Removed whatever happened, so a failed probe leaves nothing behind.
        let removed = match self.inner.delete(&key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        };
        result
            .and(removed.context("deleting the probe blob"))
            .with_context(|| format!("blob store {}", self.location))
    }

    pub fn location(&self) -> &str {
        &self.location
    }

    /// The underlying store, for the pipeline's reads and writes.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }

    /// Reads a whole blob.
    pub async fn get(&self, key: &str) -> anyhow::Result<Bytes> {
        let path = Path::from(key);
        let result = self
            .inner
            .get(&path)
            .await
            .with_context(|| format!("reading blob {key}"))?;
        result
            .bytes()
            .await
            .with_context(|| format!("reading blob {key}"))
    }

    /// Reads a blob that may not exist.
    pub async fn get_opt(&self, key: &str) -> anyhow::Result<Option<Bytes>> {
        match self.inner.get(&Path::from(key)).await {
            Ok(result) => Ok(Some(
                result
                    .bytes()
                    .await
                    .with_context(|| format!("reading blob {key}"))?,
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading blob {key}")),
        }
    }

    /// Writes a blob unless one already exists at `key`, atomically. Pipeline outputs are
    /// deterministic, so an existing blob is what a crashed earlier run of the same step
    /// wrote, and is kept. Returns whether this call wrote it.
    pub async fn put_if_absent(&self, key: &str, bytes: impl Into<Bytes>) -> anyhow::Result<bool> {
        let payload = PutPayload::from(bytes.into());
        match self
            .inner
            .put_opts(&Path::from(key), payload, PutMode::Create.into())
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(e).with_context(|| format!("writing blob {key}")),
        }
    }

    /// Writes a blob, replacing any at `key` (atomically: a reader sees the old or the new
    /// bytes). For documents that are rebuilt, such as a tenant's catalog.
    pub async fn put(&self, key: &str, bytes: impl Into<Bytes>) -> anyhow::Result<()> {
        self.inner
            .put(&Path::from(key), PutPayload::from(bytes.into()))
            .await
            .with_context(|| format!("writing blob {key}"))?;
        Ok(())
    }

    /// Keys under `prefix`, sorted.
    pub async fn list(&self, prefix: &str) -> anyhow::Result<Vec<String>> {
        let mut keys: Vec<String> = self
            .inner
            .list(Some(&Path::from(prefix)))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .with_context(|| format!("listing blobs under {prefix}"))?;
        keys.sort();
        Ok(keys)
    }

    /// Deletes every blob under `prefix`; returns how many.
    pub async fn delete_prefix(&self, prefix: &str) -> anyhow::Result<usize> {
        let keys = self.list(prefix).await?;
        for key in &keys {
            match self.inner.delete(&Path::from(key.as_str())).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e).with_context(|| format!("deleting blob {key}")),
            }
        }
        // Deleting the last blob removes its directories, but an upload aborted before its
        // first blob was complete (a full disk) leaves only empty directories, which no
        // listing shows: remove those too.
        if let Some(root) = &self.root {
            let dir = root.join(prefix.trim_matches('/'));
            if dir != *root {
                remove_empty_dirs(&dir);
            }
        }
        Ok(keys.len())
    }
}

/// Removes `dir` and the directories under it that hold no files (symbolic links are not
/// followed); a directory that still holds something stays, as `remove_dir` leaves it.
fn remove_empty_dirs(dir: &std::path::Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_dirs(&entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}
