//! `BLOB_URL`, and the `AWS_*` credentials of an `s3://` store.

use std::fmt;
use std::path::PathBuf;

use url::Url;

use super::Secret;

/// Where blobs (uploads, intermediate documents, EPUBs) live.
#[derive(Debug, Clone)]
pub enum BlobUrl {
    File {
        root: PathBuf,
    },
    Azure {
        container: String,
    },
    /// A bucket of Amazon S3 or an S3-compatible service, and optionally a key prefix in it.
    /// Its credentials travel with it: they mean nothing for any other store.
    S3 {
        bucket: String,
        prefix: Option<String>,
        s3: Box<S3Config>,
    },
}

impl fmt::Display for BlobUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlobUrl::File { root } => write!(f, "file://{}", root.display()),
            BlobUrl::Azure { container } => write!(f, "az://{container}"),
            BlobUrl::S3 {
                bucket,
                prefix: None,
                ..
            } => write!(f, "s3://{bucket}"),
            BlobUrl::S3 {
                bucket,
                prefix: Some(prefix),
                ..
            } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// `AWS_REGION` when unset.
pub(super) const DEFAULT_REGION: &str = "us-east-1";

/// How to reach an `s3://` bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// With `secret_access_key`; both unset, the EC2 instance metadata service is asked.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<Secret<String>>,
    pub session_token: Option<Secret<String>>,
    pub region: String,
    /// An S3-compatible service; `None` is Amazon S3 in `region`.
    pub endpoint: Option<Url>,
}

impl Default for S3Config {
    fn default() -> Self {
        Self {
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            region: DEFAULT_REGION.to_owned(),
            endpoint: None,
        }
    }
}

pub(super) fn parse_url(value: &str) -> Result<BlobUrl, String> {
    let problem = "has an unknown scheme: use file://DIR, az://CONTAINER or s3://BUCKET";
    let Some((scheme, rest)) = value.split_once("://") else {
        return Err(problem.to_owned());
    };
    match scheme.to_ascii_lowercase().as_str() {
        "file" if !rest.is_empty() => Ok(BlobUrl::File {
            root: PathBuf::from(rest),
        }),
        "az" | "azure" => {
            let container = rest.trim_end_matches('/');
            // Azure's rules: 3-63 characters, lowercase letters, digits and single hyphens.
            let valid = (3..=63).contains(&container.len())
                && container
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !container.starts_with('-')
                && !container.ends_with('-')
                && !container.contains("--");
            if !valid {
                return Err("does not name a valid Azure container (3-63 lowercase letters, digits and hyphens)".to_owned());
            }
            Ok(BlobUrl::Azure {
                container: container.to_owned(),
            })
        }
        "s3" => {
            let (bucket, prefix) = match rest.trim_end_matches('/').split_once('/') {
                Some((bucket, prefix)) => (bucket, Some(prefix)),
                None => (rest.trim_end_matches('/'), None),
            };
            // S3's rules: 3-63 characters, lowercase letters, digits, dots and hyphens, starting
            // and ending with a letter or digit.
            let valid = (3..=63).contains(&bucket.len())
                && bucket
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
                && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
                && bucket.ends_with(|c: char| c.is_ascii_alphanumeric())
                && !bucket.contains("..");
            if !valid {
                return Err("does not name a valid S3 bucket (3-63 lowercase letters, digits, dots and hyphens)".to_owned());
            }
            if let Some(prefix) = prefix
                && prefix
                    .split('/')
                    .any(|s| s.is_empty() || s == "." || s == ".." || s.contains('\\'))
            {
                return Err(
                    "has a prefix with an empty, `.` or `..` segment: use s3://BUCKET/some/prefix"
                        .to_owned(),
                );
            }
            Ok(BlobUrl::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.map(str::to_owned),
                s3: Box::default(),
            })
        }
        "file" => Err("names no directory".to_owned()),
        _ => Err(problem.to_owned()),
    }
}

pub(super) fn parse_region(value: &str) -> Result<String, String> {
    if !value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err("is not a region name: lowercase letters, digits and hyphens".to_owned());
    }
    Ok(value.to_owned())
}

pub(super) fn parse_endpoint(value: &str) -> Result<Url, String> {
    match Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        _ => Err("is not the http(s) URL of an S3-compatible service".to_owned()),
    }
}
