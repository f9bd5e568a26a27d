//! The `AZURE_*` credentials of an `az://` blob store: an account and exactly one way to sign
//! in (a key, a SAS token, a connection string, a managed identity), or the emulator.

use std::collections::BTreeMap;

use url::Url;

use super::variable::Variable;
use super::{ConfigError, Secret};

/// Credentials for `az://` blob URLs. Kept here so that nothing else reads the environment.
/// For `az://`, `Config::from_vars` leaves exactly one of `access_key`, `sas_token` and
/// `managed_identity` set (with `use_emulator`, at most one of the first two).
#[derive(Debug, Clone, Default)]
pub struct AzureConfig {
    pub account: Option<String>,
    pub access_key: Option<Secret<String>>,
    pub use_emulator: bool,
    /// The blob service's URL, when it is not the public cloud's default for the account.
    pub endpoint: Option<url::Url>,
    /// A shared access signature: a query string without the leading `?`.
    pub sas_token: Option<Secret<String>>,
    /// Sign in as the host's managed identity.
    pub managed_identity: Option<ManagedIdentity>,
    /// The account, endpoint and key or SAS came from `AZURE_STORAGE_CONNECTION_STRING`.
    pub from_connection_string: bool,
}

impl AzureConfig {
    /// How `bindery config` shows a key or SAS token: redacted, and where it came from.
    pub(super) fn shown_secret(&self, set: bool) -> String {
        match (set, self.from_connection_string) {
            (false, _) => String::new(),
            (true, false) => "[redacted]".to_owned(),
            (true, true) => "[redacted] (from AZURE_STORAGE_CONNECTION_STRING)".to_owned(),
        }
    }
}

/// A managed identity, and where it gets its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagedIdentity {
    /// A user-assigned identity's client id (`AZURE_CLIENT_ID`); `None` is the
    /// system-assigned identity.
    pub client_id: Option<String>,
    /// The platform's token endpoint (`IDENTITY_ENDPOINT`); `None` is the instance metadata
    /// service.
    pub token_endpoint: Option<Url>,
}

pub(super) fn parse_endpoint(value: &str) -> Result<Url, String> {
    match Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        _ => Err("is not an http(s) URL of a blob service".to_owned()),
    }
}

/// `AZURE_CLIENT_ID`: a GUID, hyphenated.
pub(super) fn parse_client_id(value: &str) -> Result<String, String> {
    uuid::Uuid::parse_str(value)
        .map(|id| id.hyphenated().to_string())
        .map_err(|_| {
            "is not a client id: use the identity's Client ID, a GUID from its Overview page"
                .to_owned()
        })
}

/// Azurite's well-known development account, the same in every installation
/// (`UseDevelopmentStorage=true`).
pub(super) const AZURITE_ACCOUNT: &str = "devstoreaccount1";
pub(super) const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const AZURITE_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";

/// An account key is base64 (the portal's key1 or key2).
pub(super) fn check_account_key(
    variable: &Variable,
    key: &str,
    subject: &str,
) -> Result<(), ConfigError> {
    use base64::Engine as _;
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(bytes) if !bytes.is_empty() => Ok(()),
        _ => Err(ConfigError::new(
            variable,
            key,
            format!(
                "{subject} a storage account key (base64): copy key1 or key2 from the account's Access keys page"
            ),
        )),
    }
}

/// A SAS token without its leading `?`: `key=value` pairs joined by `&`, one of them `sig`.
pub(super) fn parse_sas(variable: &Variable, value: &str) -> Result<String, ConfigError> {
    let token = value.trim().trim_start_matches('?');
    let pairs: Vec<&str> = token.split('&').filter(|p| !p.is_empty()).collect();
    if pairs.iter().all(|p| p.contains('=')) && pairs.iter().any(|p| p.starts_with("sig=")) {
        Ok(token.to_owned())
    } else {
        Err(ConfigError::new(
            variable,
            value,
            "is not a SAS token: it is a query string like sv=…&sp=…&sig=… (from the portal's Shared access signature page)",
        ))
    }
}

/// What an Azure Storage connection string says about the blob service.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ConnectionString {
    pub account: Option<String>,
    pub key: Option<String>,
    pub sas: Option<String>,
    pub endpoint: Option<Url>,
    /// It names the endpoint (`BlobEndpoint` or `EndpointSuffix`), rather than leaving it to
    /// the account's default (or Azurite's, for `UseDevelopmentStorage=true`).
    pub sets_endpoint: bool,
}

/// Parses `Key=value;Key=value` (values may contain `=`; keys are case-insensitive; other
/// services' endpoints are ignored). Errors name what is missing, never a value.
pub(super) fn parse_connection_string(
    variable: &Variable,
    value: &str,
) -> Result<ConnectionString, ConfigError> {
    let fail = |problem: &str| ConfigError::new(variable, value, problem);
    let mut fields = BTreeMap::new();
    for part in value.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, field) = part.split_once('=').ok_or_else(|| {
            fail("is not a connection string: it is Key=value pairs separated by `;`, and a part has no `=`")
        })?;
        fields.insert(key.trim().to_ascii_lowercase(), field.trim());
    }
    let field = |key: &str| fields.get(key).copied().filter(|v| !v.is_empty());
    if field("usedevelopmentstorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(ConnectionString {
            account: Some(AZURITE_ACCOUNT.to_owned()),
            key: Some(AZURITE_KEY.to_owned()),
            sas: None,
            endpoint: Url::parse(AZURITE_ENDPOINT).ok(),
            sets_endpoint: false,
        });
    }
    let protocol = match field("defaultendpointsprotocol").map(str::to_ascii_lowercase) {
        None => "https".to_owned(),
        Some(p) if p == "http" || p == "https" => p,
        Some(_) => {
            return Err(fail(
                "has a DefaultEndpointsProtocol other than https or http",
            ));
        }
    };
    let endpoint = match (field("blobendpoint"), field("accountname")) {
        (Some(url), _) => Some(
            Url::parse(url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                .ok_or_else(|| fail("has a BlobEndpoint that is not an http(s) URL"))?,
        ),
        (None, Some(account)) => {
            let suffix = field("endpointsuffix").unwrap_or("core.windows.net");
            Some(
                Url::parse(&format!("{protocol}://{account}.blob.{suffix}"))
                    .map_err(|_| fail("has an AccountName or EndpointSuffix that makes no URL"))?,
            )
        }
        (None, None) => None,
    };
    let (key, sas) = match (field("accountkey"), field("sharedaccesssignature")) {
        (Some(_), Some(_)) => {
            return Err(fail(
                "has both AccountKey and SharedAccessSignature: keep one",
            ));
        }
        (None, None) => {
            return Err(fail(
                "has no credential: it needs AccountKey=… (with AccountName=…) or SharedAccessSignature=… (with BlobEndpoint=…), or is UseDevelopmentStorage=true",
            ));
        }
        (Some(key), None) => {
            check_account_key(variable, key, "has an AccountKey that is not")?;
            (Some(key.to_owned()), None)
        }
        (None, Some(sas)) => (None, Some(parse_sas(variable, sas)?)),
    };
    if key.is_some() && field("accountname").is_none() {
        return Err(fail("has an AccountKey but no AccountName=…"));
    }
    let Some(endpoint) = endpoint else {
        return Err(fail(
            "names no blob service: add BlobEndpoint=https://ACCOUNT.blob.core.windows.net or AccountName=…",
        ));
    };
    let account = match field("accountname") {
        Some(account) => account.to_owned(),
        None => account_of(&endpoint).ok_or_else(|| fail("names no account: add AccountName=…"))?,
    };
    Ok(ConnectionString {
        account: Some(account),
        key,
        sas,
        endpoint: Some(endpoint),
        sets_endpoint: field("blobendpoint").is_some() || field("endpointsuffix").is_some(),
    })
}

/// The storage account a blob endpoint belongs to: the first label of
/// `ACCOUNT.blob.core.windows.net`, or the first path segment of an emulator's
/// `http://127.0.0.1:10000/ACCOUNT`.
fn account_of(endpoint: &Url) -> Option<String> {
    match endpoint.host()? {
        url::Host::Domain(host) if host.contains(".blob.") => {
            host.split('.').next().map(str::to_owned)
        }
        _ => endpoint
            .path_segments()?
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    }
}
