//! `DATABASE_URL`, and the TLS options libpq's variables fill in for PostgreSQL.

use std::path::PathBuf;

use url::Url;

use super::{Secret, redact_url};

/// Where the database lives.
#[derive(Debug, Clone)]
pub enum DatabaseUrl {
    Sqlite { path: PathBuf },
    Postgres { url: Secret<Url> },
}

impl DatabaseUrl {
    /// A form safe to print: the password is replaced.
    pub fn redacted(&self) -> String {
        match self {
            DatabaseUrl::Sqlite { path } => format!("sqlite://{}", path.display()),
            DatabaseUrl::Postgres { url } => redact_url(url.expose()),
        }
    }
}

/// `sslrootcert=system`: verify the server against the system's CA roots (libpq's spelling).
pub const SYSTEM_ROOTS: &str = "system";

const SSL_MODES: &[&str] = &[
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

pub(super) fn parse_url(value: &str) -> Result<DatabaseUrl, String> {
    let problem = "has an unknown scheme: use sqlite://PATH or postgres://USER:PASSWORD@HOST/DB";
    let Some((scheme, rest)) = value.split_once(':') else {
        return Err(problem.to_owned());
    };
    match scheme.to_ascii_lowercase().as_str() {
        "sqlite" => {
            // sqlite://relative/path, sqlite:///absolute/path and sqlite:path all name a file;
            // query parameters are ours to set (WAL, busy timeout), so they are not accepted.
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() || path.contains('?') {
                return Err("must name a database file, with no options: sqlite://PATH".to_owned());
            }
            if path == ":memory:" || path.starts_with("file::memory:") {
                return Err("is an in-memory database, which the web and worker processes cannot share: name a file".to_owned());
            }
            Ok(DatabaseUrl::Sqlite {
                path: PathBuf::from(path),
            })
        }
        "postgres" | "postgresql" => {
            let url = Url::parse(value).map_err(|e| format!("is not a valid URL ({e})"))?;
            if url.host_str().is_none_or(str::is_empty) {
                return Err("has no host: postgres://USER:PASSWORD@HOST:5432/DB".to_owned());
            }
            check_tls_options(&url)?;
            Ok(DatabaseUrl::Postgres {
                url: Secret::new(url),
            })
        }
        _ => Err(problem.to_owned()),
    }
}

/// `PGSSLMODE`: one of libpq's modes.
pub(super) fn ssl_mode(value: &str) -> Result<&'static str, String> {
    SSL_MODES
        .iter()
        .find(|m| **m == value)
        .copied()
        .ok_or_else(|| {
            "is not an sslmode: use disable, prefer, require, verify-ca or verify-full".to_owned()
        })
}

/// libpq's TLS options in a PostgreSQL URL: a known `sslmode`, and an `sslrootcert` that can be
/// read now rather than at the first connection.
pub(super) fn check_tls_options(url: &Url) -> Result<(), String> {
    let mut mode = None;
    for (key, v) in url.query_pairs() {
        match &*key {
            "sslmode" | "ssl-mode" => {
                if !SSL_MODES.contains(&&*v) {
                    return Err(format!(
                        "has sslmode={v}: use disable, prefer, require, verify-ca or verify-full"
                    ));
                }
                mode = Some(v.into_owned());
            }
            "sslrootcert" | "ssl-root-cert" | "ssl-ca" => {
                if let Some(problem) = root_cert_problem(&v) {
                    return Err(format!("has sslrootcert={v}, which {problem}"));
                }
            }
            _ => {}
        }
    }
    let system = url
        .query_pairs()
        .any(|(k, v)| k == "sslrootcert" && v == SYSTEM_ROOTS);
    if system && mode.as_deref().is_some_and(|m| m != "verify-full") {
        return Err("has sslrootcert=system with a weaker sslmode: use sslmode=verify-full (the default with sslrootcert=system)".to_owned());
    }
    Ok(())
}

/// Why a CA file named by `sslrootcert` cannot be used, read now rather than at the first
/// connection; `None` when it can (or when it is `system`).
pub(super) fn root_cert_problem(path: &str) -> Option<String> {
    if path == SYSTEM_ROOTS {
        return None;
    }
    let problem = match std::fs::read(path) {
        Err(e) => format!("cannot be read ({e})"),
        Ok(pem) if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") => {
            "holds no PEM certificate".to_owned()
        }
        Ok(_) => return None,
    };
    Some(format!(
        "{problem}: point it at the PEM file of the CA that issued the server's certificate, or use sslrootcert=system"
    ))
}
