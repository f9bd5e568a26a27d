//! The values several variables make together: the database (`DATABASE_URL` with libpq's TLS
//! variables), the blob store (`BLOB_URL` with its S3 credentials) and an `az://` store's
//! credentials. Each variable is declared in `variables` with the parser of its own value, which
//! `database`, `blob` and `azure` give; here the declared variables are read and joined, so
//! that those three sit under the declarations and this above them.

use std::path::Path;

use url::Url;

use super::azure::{self, AzureConfig, ManagedIdentity};
use super::blob::{BlobUrl, S3Config};
use super::database::{self, DatabaseUrl};
use super::variable::{Env, Variable};
use super::variables::{
    AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, AWS_REGION, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
    AZURE_CLIENT_ID, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_ACCOUNT_NAME,
    AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ENDPOINT, AZURE_STORAGE_SAS_TOKEN,
    AZURE_STORAGE_USE_EMULATOR, AZURE_STORAGE_USE_MANAGED_IDENTITY, BLOB_URL, DATABASE_URL,
    IDENTITY_ENDPOINT, PGSSLMODE, PGSSLROOTCERT,
};
use super::{ConfigError, Secret};

/// The database: `DATABASE_URL`, or SQLite in `data_dir`, with `PGSSLMODE` and `PGSSLROOTCERT`
/// applied to PostgreSQL.
pub(super) fn database(env: &Env, data_dir: &Path) -> Result<DatabaseUrl, ConfigError> {
    let database = DATABASE_URL
        .read(env)?
        .unwrap_or_else(|| DatabaseUrl::Sqlite {
            path: data_dir.join("bindery.db"),
        });
    with_libpq_tls_defaults(database, PGSSLMODE.read(env)?, PGSSLROOTCERT.read(env)?)
}

/// The blob store: `BLOB_URL`, or a directory in `data_dir`, with an `s3://` store's
/// credentials.
pub(super) fn blob(env: &Env, data_dir: &Path) -> Result<BlobUrl, ConfigError> {
    let mut blob = BLOB_URL.read(env)?.unwrap_or_else(|| BlobUrl::File {
        root: data_dir.join("blobs"),
    });
    if let BlobUrl::S3 { s3, .. } = &mut blob {
        **s3 = read_s3(env)?;
    }
    Ok(blob)
}

/// The `AWS_*` variables, for an `s3://` blob URL.
fn read_s3(env: &Env) -> Result<S3Config, ConfigError> {
    let region = AWS_REGION.read(env)?;
    let endpoint = AWS_ENDPOINT_URL.read(env)?;
    let id = AWS_ACCESS_KEY_ID.read(env)?;
    let secret = AWS_SECRET_ACCESS_KEY.read(env)?;
    let token = AWS_SESSION_TOKEN.read(env)?;
    match (&id, &secret) {
        (Some(_), None) => {
            return Err(ConfigError::new(
                &AWS_SECRET_ACCESS_KEY.variable,
                "",
                "must be set with AWS_ACCESS_KEY_ID (or unset both to use the instance's role)",
            ));
        }
        (None, Some(_)) => {
            return Err(ConfigError::new(
                &AWS_ACCESS_KEY_ID.variable,
                "",
                "must be set with AWS_SECRET_ACCESS_KEY (or unset both to use the instance's role)",
            ));
        }
        (None, None) if token.is_some() => {
            return Err(ConfigError::new(
                &AWS_SESSION_TOKEN.variable,
                env.raw(&AWS_SESSION_TOKEN.variable).unwrap_or_default(),
                "needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: temporary credentials are all three",
            ));
        }
        _ => {}
    }
    Ok(S3Config {
        access_key_id: id,
        secret_access_key: secret,
        session_token: token,
        region,
        endpoint,
    })
}

/// The `AZURE_*` variables. Those that pick a credential are only read for `az://` blob URLs
/// (`used`), since other software on the host may set them for its own use; for `az://` there
/// must be an account and exactly one credential, or the emulator.
pub(super) fn azure(env: &Env, used: bool) -> Result<AzureConfig, ConfigError> {
    let mut azure = AzureConfig {
        account: AZURE_STORAGE_ACCOUNT_NAME.read(env)?,
        access_key: AZURE_STORAGE_ACCOUNT_KEY.read(env)?,
        use_emulator: AZURE_STORAGE_USE_EMULATOR.read(env)?,
        endpoint: AZURE_STORAGE_ENDPOINT.read(env)?,
        ..AzureConfig::default()
    };
    if !used {
        return Ok(azure);
    }
    let managed = AZURE_STORAGE_USE_MANAGED_IDENTITY.read(env)?;
    let raw = |variable: &Variable| env.raw(variable).unwrap_or_default().to_owned();
    let credentials: Vec<&'static Variable> = [
        &AZURE_STORAGE_ACCOUNT_KEY.variable,
        &AZURE_STORAGE_SAS_TOKEN.variable,
        &AZURE_STORAGE_CONNECTION_STRING.variable,
    ]
    .into_iter()
    .filter(|variable| env.raw(variable).is_some())
    .chain(managed.then_some(&AZURE_STORAGE_USE_MANAGED_IDENTITY.variable))
    .collect();
    if let [first, second, ..] = credentials[..] {
        return Err(ConfigError::new(
            second,
            &raw(second),
            format!(
                "cannot be used together with {}: az://… takes one credential, so unset one of them",
                first.name
            ),
        ));
    }
    let credential = credentials.first().copied();
    if azure.use_emulator
        && let Some(variable) = credential
        && matches!(
            variable.name,
            "AZURE_STORAGE_CONNECTION_STRING" | "AZURE_STORAGE_USE_MANAGED_IDENTITY"
        )
    {
        return Err(ConfigError::new(
            variable,
            &raw(variable),
            "cannot be used together with AZURE_STORAGE_USE_EMULATOR=true: the emulator takes its well-known key, AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN",
        ));
    }
    match credential.map(|variable| variable.name) {
        Some("AZURE_STORAGE_ACCOUNT_KEY") => {
            let key = raw(&AZURE_STORAGE_ACCOUNT_KEY.variable);
            azure::check_account_key(&AZURE_STORAGE_ACCOUNT_KEY.variable, &key, "is not")?;
        }
        Some("AZURE_STORAGE_SAS_TOKEN") => {
            let token = raw(&AZURE_STORAGE_SAS_TOKEN.variable);
            azure.sas_token = Some(Secret::new(azure::parse_sas(
                &AZURE_STORAGE_SAS_TOKEN.variable,
                &token,
            )?));
        }
        Some("AZURE_STORAGE_CONNECTION_STRING") => {
            let parsed = azure::parse_connection_string(
                &AZURE_STORAGE_CONNECTION_STRING.variable,
                &raw(&AZURE_STORAGE_CONNECTION_STRING.variable),
            )?;
            if let (Some(named), Some(account)) = (&azure.account, &parsed.account)
                && named != account
            {
                return Err(ConfigError::new(
                    &AZURE_STORAGE_ACCOUNT_NAME.variable,
                    named,
                    "names another account than AZURE_STORAGE_CONNECTION_STRING's AccountName: unset AZURE_STORAGE_ACCOUNT_NAME",
                ));
            }
            match (&azure.endpoint, parsed.sets_endpoint) {
                (Some(endpoint), true) => {
                    return Err(ConfigError::new(
                        &AZURE_STORAGE_ENDPOINT.variable,
                        endpoint.as_str(),
                        "cannot be used together with AZURE_STORAGE_CONNECTION_STRING's BlobEndpoint or EndpointSuffix: keep one",
                    ));
                }
                (Some(_), false) => {}
                (None, _) => azure.endpoint = parsed.endpoint,
            }
            azure.account = parsed.account.or(azure.account);
            azure.access_key = parsed.key.map(Secret::new);
            azure.sas_token = parsed.sas.map(Secret::new);
            azure.from_connection_string = true;
        }
        Some(_) => {
            azure.managed_identity = Some(ManagedIdentity {
                client_id: AZURE_CLIENT_ID.read(env)?,
                token_endpoint: IDENTITY_ENDPOINT.read(env)?,
            });
        }
        None => {}
    }
    if azure.account.is_none() && !azure.use_emulator {
        return Err(ConfigError::new(
            &AZURE_STORAGE_ACCOUNT_NAME.variable,
            "",
            "must be set when BLOB_URL is az://… (or come from AZURE_STORAGE_CONNECTION_STRING, or set AZURE_STORAGE_USE_EMULATOR=true)",
        ));
    }
    if credential.is_none() && !azure.use_emulator {
        return Err(ConfigError::new(
            &AZURE_STORAGE_ACCOUNT_KEY.variable,
            "",
            "must be set when BLOB_URL is az://…, or another credential: AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_USE_MANAGED_IDENTITY=true (or AZURE_STORAGE_USE_EMULATOR=true for Azurite)",
        ));
    }
    Ok(azure)
}

/// libpq's `PGSSLMODE` and `PGSSLROOTCERT` fill in what `DATABASE_URL` leaves out, for hosts
/// that own `DATABASE_URL` and rewrite it (Heroku rotates its credentials).
fn with_libpq_tls_defaults(
    database: DatabaseUrl,
    mode: Option<&str>,
    root: Option<String>,
) -> Result<DatabaseUrl, ConfigError> {
    let DatabaseUrl::Postgres { url } = database else {
        return Ok(database);
    };
    let mut url = url.expose().clone();
    let has = |url: &Url, key: &str| url.query_pairs().any(|(k, _)| k == key);
    if let Some(mode) = mode
        && !has(&url, "sslmode")
    {
        url.query_pairs_mut().append_pair("sslmode", mode);
    }
    if let Some(root) = &root
        && !has(&url, "sslrootcert")
    {
        url.query_pairs_mut().append_pair("sslrootcert", root);
    }
    if let Some(root) = &root
        && let Some(problem) = database::root_cert_problem(root)
    {
        return Err(ConfigError::new(&PGSSLROOTCERT.variable, root, problem));
    }
    database::check_tls_options(&url)
        .map_err(|problem| ConfigError::new(&DATABASE_URL.variable, url.as_str(), problem))?;
    Ok(DatabaseUrl::Postgres {
        url: Secret::new(url),
    })
}
