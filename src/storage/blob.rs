//! The blob store: uploads, intermediate documents and finished books, behind `object_store`.
//!
//! Local files by default, Azure Blob Storage or S3 (or an S3-compatible service) to scale out;
//! all give conditional create-if-absent writes, streaming multipart uploads and retries through
//! the same trait. On S3, create-if-absent is `If-None-Match: *`, which Amazon S3, R2 and MinIO
//! honour; a service that ignores it would let a rerun step overwrite what an earlier run wrote.

use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    RetryConfig, UploadPart,
};

use crate::config::{AzureConfig, BlobUrl};

/// How long a request to a remote store keeps retrying: a few tries within 10 s ride out a
/// dropped connection or a throttled moment, and past that the caller hears of it (an upload
/// is answered 503 with `Retry-After`, a job is retried later) instead of waiting out
/// object_store's default of ten tries over three minutes while the store is down.
fn retries() -> RetryConfig {
    RetryConfig {
        max_retries: 4,
        retry_timeout: std::time::Duration::from_secs(10),
        ..RetryConfig::default()
    }
}

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
                    .with_retry(retries())
                    .with_container_name(container)
                    .with_use_emulator(azure.use_emulator);
                if let Some(account) = &azure.account {
                    builder = builder.with_account(account);
                }
                // Config::from_vars leaves one credential (or none, for the emulator's own key); it
                // is named explicitly so that nothing else object_store might find is tried.
                if let Some(key) = &azure.access_key {
                    builder = builder
                        .with_access_key(key.expose())
                        .with_credential_type("access_key");
                } else if let Some(sas) = &azure.sas_token {
                    builder = builder
                        .with_config(AzureConfigKey::SasKey, sas.expose())
                        .with_credential_type("sas_token");
                } else if let Some(identity) = &azure.managed_identity {
                    builder = builder.with_credential_type("managed_identity");
                    if let Some(client_id) = &identity.client_id {
                        builder = builder.with_client_id(client_id);
                    }
                    if let Some(endpoint) = &identity.token_endpoint {
                        // App Service and Container Apps: object_store adds the platform's
                        // IDENTITY_HEADER to each token request itself.
                        builder = builder.with_msi_endpoint(endpoint.as_str());
                    }
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
            BlobUrl::S3 { bucket, prefix, s3 } => {
                let mut builder = AmazonS3Builder::new()
                    .with_retry(retries())
                    .with_bucket_name(bucket)
                    .with_region(&s3.region)
                    // PutMode::Create as `If-None-Match: *` (object_store's default, stated).
                    .with_conditional_put(S3ConditionalPut::ETagMatch);
                if let (Some(id), Some(secret)) = (&s3.access_key_id, &s3.secret_access_key) {
                    builder = builder
                        .with_access_key_id(id)
                        .with_secret_access_key(secret.expose());
                    if let Some(token) = &s3.session_token {
                        builder = builder.with_token(token.expose());
                    }
                }
                if let Some(endpoint) = &s3.endpoint {
                    builder = builder
                        .with_endpoint(endpoint.as_str().trim_end_matches('/'))
                        .with_allow_http(endpoint.scheme() == "http");
                }
                let store = EvenParts(
                    builder
                        .build()
                        .with_context(|| format!("configuring S3 bucket {bucket}"))?,
                );
                match prefix {
                    Some(prefix) => Arc::new(PrefixStore::new(store, prefix.as_str())),
                    None => Arc::new(store),
                }
            }
        };
        Ok(Self {
            inner,
            location: url.to_string(),
            root: match url {
                BlobUrl::File { root } => Some(root.clone()),
                BlobUrl::Azure { .. } | BlobUrl::S3 { .. } => None,
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

    /// On a local store, the directory that holds the keys under `prefix`; `None` on a remote
    /// store, which has no directories and no staging files.
    fn local_dir(&self, prefix: &str) -> Option<std::path::PathBuf> {
        let root = self.root.as_ref()?;
        let dir = root.join(prefix.trim_matches('/'));
        (dir != *root && dir.starts_with(root)).then_some(dir)
    }

    /// On a local store, the newest modification time of what is under `prefix`: blobs and
    /// staging files (`key#N`), which no listing shows, or empty directories (`Some(None)` when
    /// there is nothing). `None` on a remote store: list it instead.
    pub async fn local_newest(
        &self,
        prefix: &str,
    ) -> Option<Option<chrono::DateTime<chrono::Utc>>> {
        let dir = self.local_dir(prefix)?;
        // The files' times when there are files (a directory's own changes whenever an
        // entry comes or goes); a tree of empty directories is as old as its newest one.
        let newest = tokio::task::spawn_blocking(move || {
            let (files, dirs) = newest_in(&dir);
            files.or(dirs)
        })
        .await
        .ok()
        .flatten();
        Some(newest.map(chrono::DateTime::<chrono::Utc>::from))
    }

    /// On a local store, removes the staging files (`key#N`) left by cut-off writes and the
    /// empty directories under `prefix` that were last modified before `cutoff`; returns how
    /// many. Nothing to do on a remote store (0).
    pub async fn remove_local_leftovers(
        &self,
        prefix: &str,
        cutoff: chrono::DateTime<chrono::Utc>,
    ) -> usize {
        let Some(dir) = self.local_dir(prefix) else {
            return 0;
        };
        let cutoff = SystemTime::from(cutoff);
        tokio::task::spawn_blocking(move || remove_leftovers(&dir, cutoff))
            .await
            .unwrap_or(0)
    }

    /// Deletes one blob; one that is not there is deleted already.
    pub async fn delete(&self, key: &str) -> anyhow::Result<()> {
        match self.inner.delete(&Path::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("deleting blob {key}")),
        }
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
        // first blob was complete (a full disk) leaves only empty directories, and a write
        // cut short leaves its staging file (`key#N`); no listing shows either. On a local
        // store the prefix is a directory: remove it whole. (Remote stores have neither.)
        // Best effort, as the blobs' own deletion is: a step still writing can race it, and
        // the sweep takes what is left.
        if let Some(dir) = self.local_dir(prefix)
            && let Err(e) = remove_tree(&dir)
        {
            tracing::warn!(dir = %dir.display(), error = %e, "could not remove a blob directory");
        }
        Ok(keys.len())
    }
}

/// Whether a file name is a staging file of `LocalFileSystem`: `key#N`, written first and
/// renamed to `key` once whole, so a write cut short (a crash, a full disk) leaves it behind.
/// Listings never show these.
fn is_staging_file(name: &str) -> bool {
    name.rsplit_once('#')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The newest modification time of the files under `dir` (staging files included; links
/// not followed) and, apart, of `dir` and the directories under it.
fn newest_in(dir: &std::path::Path) -> (Option<SystemTime>, Option<SystemTime>) {
    let mut dirs = std::fs::symlink_metadata(dir)
        .and_then(|m| m.modified())
        .ok();
    let mut files = None;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let (f, d) = newest_in(&entry.path());
                files = files.max(f);
                dirs = dirs.max(d);
            } else {
                files = files.max(entry.metadata().and_then(|m| m.modified()).ok());
            }
        }
    }
    (files, dirs)
}

/// Removes, under `dir`, staging files and empty directories last modified before `cutoff`
/// (`dir` itself included); returns how many.
fn remove_leftovers(dir: &std::path::Path, cutoff: SystemTime) -> usize {
    let old = |m: &std::fs::Metadata| m.modified().is_ok_and(|t| t < cutoff);
    let mut removed = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                removed += remove_leftovers(&entry.path(), cutoff);
            } else if kind.is_file()
                && is_staging_file(&entry.file_name().to_string_lossy())
                && entry.metadata().is_ok_and(|m| old(&m))
                && std::fs::remove_file(entry.path()).is_ok()
            {
                removed += 1;
            }
        }
    }
    // `remove_dir` takes only an empty directory.
    if std::fs::symlink_metadata(dir).is_ok_and(|m| old(&m)) && std::fs::remove_dir(dir).is_ok() {
        removed += 1;
    }
    removed
}

/// Removes `dir` and everything in it (symbolic links are removed, not followed); a `dir`
/// that is already gone is not an error.
fn remove_tree(dir: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Amazon S3 takes a multipart upload's parts at 5 MiB or more (all but the last; moto checks
/// too), and Cloudflare R2 wants them all the same size. Callers stream in whatever chunks suit
/// them (the upload handler writes 2 MiB ones), so an S3 store regroups every multipart upload
/// into parts of exactly this size.
const S3_PART_BYTES: usize = 5 * 1024 * 1024;

/// An object store whose multipart uploads send parts of `S3_PART_BYTES` (the last one less);
/// everything else goes straight through.
#[derive(Debug)]
struct EvenParts<T>(T);

impl<T: fmt::Display> fmt::Display for EvenParts<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[async_trait::async_trait]
impl<T: ObjectStore> ObjectStore for EvenParts<T> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.0.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let inner = self.0.put_multipart_opts(location, opts).await?;
        Ok(Box::new(EvenPartUpload {
            inner,
            pending: VecDeque::new(),
            pending_bytes: 0,
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.0.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.0.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.0.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.0.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.0.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.0.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.0.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.0.rename_opts(from, to, options).await
    }
}

/// A multipart upload that holds written bytes until a whole part of `S3_PART_BYTES` is there.
#[derive(Debug)]
struct EvenPartUpload {
    inner: Box<dyn MultipartUpload>,
    pending: VecDeque<Bytes>,
    pending_bytes: usize,
}

impl EvenPartUpload {
    /// Takes up to `size` bytes off the front of what is pending, as one payload.
    fn take(&mut self, size: usize) -> PutPayload {
        let mut part = Vec::new();
        let mut taken = 0;
        while taken < size {
            let Some(mut chunk) = self.pending.pop_front() else {
                break;
            };
            if chunk.len() > size - taken {
                self.pending.push_front(chunk.split_off(size - taken));
            }
            taken += chunk.len();
            part.push(chunk);
        }
        self.pending_bytes -= taken;
        part.into_iter().collect()
    }
}

#[async_trait::async_trait]
impl MultipartUpload for EvenPartUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.pending_bytes += data.content_length();
        self.pending
            .extend(data.into_iter().filter(|chunk| !chunk.is_empty()));
        // Every whole part goes now; the caller's future for this call waits on them all.
        let mut sent = Vec::new();
        while self.pending_bytes >= S3_PART_BYTES {
            let part = self.take(S3_PART_BYTES);
            sent.push(self.inner.put_part(part));
        }
        async move {
            futures_util::future::try_join_all(sent).await?;
            Ok(())
        }
        .boxed()
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        if self.pending_bytes > 0 {
            let last = self.take(self.pending_bytes);
            self.inner.put_part(last).await?;
        }
        self.inner.complete().await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.pending.clear();
        self.pending_bytes = 0;
        self.inner.abort().await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use object_store::memory::InMemory;

    /// Records the parts an upload sends.
    #[derive(Debug, Default, Clone)]
    struct Recorder(Arc<Mutex<Vec<Bytes>>>);

    #[async_trait::async_trait]
    impl MultipartUpload for Recorder {
        fn put_part(&mut self, data: PutPayload) -> UploadPart {
            self.0.lock().expect("lock").push(data.into());
            async { Ok(()) }.boxed()
        }
        async fn complete(&mut self) -> object_store::Result<PutResult> {
            Ok(PutResult {
                e_tag: None,
                version: None,
                extensions: Default::default(),
            })
        }
        async fn abort(&mut self) -> object_store::Result<()> {
            Ok(())
        }
    }

    const MIB: usize = 1024 * 1024;

    /// Chunks of any size (2 MiB ones, a byte, nothing) go out as 5 MiB parts and a last one,
    /// in order.
    #[tokio::test]
    async fn multipart_uploads_send_even_parts() {
        let recorder = Recorder::default();
        let mut upload = EvenPartUpload {
            inner: Box::new(recorder.clone()),
            pending: VecDeque::new(),
            pending_bytes: 0,
        };
        let mut written = Vec::new();
        for (i, size) in [2 * MIB, 2 * MIB, 2 * MIB, 3 * MIB, 1, 0, 4 * MIB]
            .into_iter()
            .enumerate()
        {
            let chunk = vec![b'a' + i as u8; size];
            written.extend_from_slice(&chunk);
            upload.put_part(chunk.into()).await.expect("part");
        }
        upload.complete().await.expect("complete");
        let parts = recorder.0.lock().expect("lock").clone();
        let sizes: Vec<usize> = parts.iter().map(Bytes::len).collect();
        assert_eq!(sizes, [5 * MIB, 5 * MIB, 3 * MIB + 1]);
        assert!(parts.concat() == written, "the bytes go out in order");
    }

    #[tokio::test]
    async fn an_even_parts_store_stores_what_was_written() {
        let store = EvenParts(InMemory::new());
        let path = Path::from("books/x/upload/manuscript");
        let mut upload = store.put_multipart(&path).await.expect("start");
        let written: Vec<u8> = (0..12 * MIB).map(|i| (i % 251) as u8).collect();
        for chunk in written.chunks(2 * MIB) {
            upload.put_part(chunk.to_vec().into()).await.expect("part");
        }
        upload.complete().await.expect("complete");
        let stored = store
            .get(&path)
            .await
            .expect("get")
            .bytes()
            .await
            .expect("bytes");
        assert!(stored == written, "the blob is what was written");
    }
}
