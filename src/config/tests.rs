use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use super::azure::{AZURITE_ACCOUNT, AZURITE_KEY};
use super::*;

fn parse(pairs: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    Config::from_vars(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    )
}

fn error(pairs: &[(&str, &str)]) -> ConfigError {
    parse(pairs).expect_err("configuration should be refused")
}

#[test]
fn defaults_need_no_variables() {
    let c = parse(&[]).expect("defaults").config;
    assert_eq!(c.port, 8080);
    assert_eq!(c.data_dir, PathBuf::from("./data"));
    assert!(
        matches!(&c.database, DatabaseUrl::Sqlite { path } if path == Path::new("./data/bindery.db"))
    );
    assert!(matches!(&c.blob, BlobUrl::File { root } if root == Path::new("./data/blobs")));
    assert_eq!(c.log_dir, Some(PathBuf::from("./data/logs")));
    assert_eq!(c.log_max_file_size, 100 * 1024 * 1024);
    assert_eq!(c.shutdown_timeout, Duration::from_secs(25));
    assert_eq!(c.worker_stall_timeout, Duration::from_secs(60));
    assert_eq!(c.worker_concurrency.get(), 16);
    assert!(c.keepalive_url.is_none());
}

#[test]
fn an_empty_log_dir_turns_the_files_off() {
    let dir = |value: &str| parse(&[("LOG_DIR", value)]).expect("valid").config.log_dir;
    assert_eq!(dir(""), None);
    assert_eq!(dir("  "), None);
    assert_eq!(dir("off"), None);
    assert_eq!(dir("/var/log/b"), Some(PathBuf::from("/var/log/b")));
    let shown = parse(&[("LOG_DIR", "")]).expect("valid").config.describe();
    assert!(shown.contains(&("LOG_DIR", "off".to_owned())), "{shown:?}");
    // Everywhere else a blank is unset: a blank DATA_DIR is the default.
    let c = parse(&[("DATA_DIR", "")]).expect("valid").config;
    assert_eq!(c.data_dir, PathBuf::from("./data"));
    assert_eq!(
        error(&[("LOG_MAX_FILE_SIZE", "0")]).name,
        "LOG_MAX_FILE_SIZE"
    );
}

#[test]
fn bad_port_names_the_variable_and_an_example() {
    let e = error(&[("PORT", "abc")]);
    assert_eq!(e.name, "PORT");
    let line = e.to_string();
    assert!(line.starts_with("PORT=\"abc\" "), "{line}");
    assert!(line.contains("example: PORT=8080"), "{line}");
    assert!(!line.contains('\n'));
    assert_eq!(error(&[("PORT", "70000")]).name, "PORT");
}

#[test]
fn database_url_schemes() {
    assert_eq!(
        error(&[("DATABASE_URL", "mysql://x/y")]).name,
        "DATABASE_URL"
    );
    assert_eq!(
        error(&[("DATABASE_URL", "sqlite::memory:")]).name,
        "DATABASE_URL"
    );
    assert_eq!(error(&[("DATABASE_URL", "nonsense")]).name, "DATABASE_URL");
    let c = parse(&[("DATABASE_URL", "sqlite:///var/b.db")])
        .expect("sqlite")
        .config;
    assert!(matches!(c.database, DatabaseUrl::Sqlite { path } if path == Path::new("/var/b.db")));
    let c = parse(&[("DATABASE_URL", "postgres://u:hunter2@db/x")])
        .expect("postgres")
        .config;
    assert!(!c.database.redacted().contains("hunter2"));
    assert!(!format!("{c:?}").contains("hunter2"));
}

#[test]
fn postgres_tls_options_are_checked_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .expect("write");
    let ca = ca.to_str().expect("utf-8");
    for good in [
        "postgres://u:p@db/x?sslmode=require".to_owned(),
        format!("postgres://u:p@db/x?sslmode=verify-full&sslrootcert={ca}"),
        "postgres://u:p@db/x?sslrootcert=system".to_owned(),
    ] {
        parse(&[("DATABASE_URL", &good)]).expect(&good);
    }
    for (bad, says) in [
        ("postgres://u:hunter2@db/x?sslmode=verify", "sslmode=verify"),
        (
            "postgres://u:hunter2@db/x?sslrootcert=/no/such.pem",
            "cannot be read",
        ),
        (
            "postgres://u:hunter2@db/x?sslmode=require&sslrootcert=system",
            "sslmode=verify-full",
        ),
    ] {
        let e = error(&[("DATABASE_URL", bad)]);
        assert_eq!(e.name, "DATABASE_URL");
        assert!(e.to_string().contains(says), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
    // libpq's variables fill in what the URL leaves out, and never override it.
    let c = parse(&[
        ("DATABASE_URL", "postgres://u:p@db/x?sslmode=disable"),
        ("PGSSLMODE", "verify-full"),
        ("PGSSLROOTCERT", ca),
    ])
    .expect("ok")
    .config;
    let shown = c.database.redacted();
    assert!(
        shown.contains("sslmode=disable") && !shown.contains("verify-full"),
        "{shown}"
    );
    assert!(shown.contains("sslrootcert="), "{shown}");
    assert_eq!(error(&[("PGSSLMODE", "on")]).name, "PGSSLMODE");
    assert_eq!(
        error(&[
            ("DATABASE_URL", "postgres://u:p@db/x"),
            ("PGSSLROOTCERT", "/no/such.pem")
        ])
        .name,
        "PGSSLROOTCERT"
    );
}

#[test]
fn deploy_settings() {
    let c = parse(&[]).expect("defaults").config;
    assert_eq!(c.database_max_connections, 20);
    assert_eq!(c.max_wait, Duration::from_secs(25));
    assert_eq!(c.persistent_disk, None);
    assert_eq!(c.host_platform, None);
    assert_eq!(
        error(&[("DATABASE_MAX_CONNECTIONS", "0")]).name,
        "DATABASE_MAX_CONNECTIONS"
    );
    assert_eq!(error(&[("MAX_WAIT", "2h")]).name, "MAX_WAIT");
    assert_eq!(
        error(&[("PERSISTENT_DISK", "maybe")]).name,
        "PERSISTENT_DISK"
    );
    let c = parse(&[("DYNO", "web.1"), ("PERSISTENT_DISK", "true")])
        .expect("ok")
        .config;
    assert_eq!(c.host_platform, Some(crate::config::platform::Host::Heroku));
    assert_eq!(c.persistent_disk, Some(true));
    // App Service keeps /home only with its storage on; a container made by `az webapp create`
    // has it off, and its /home is neither kept nor writable by the image's user.
    let storage_on = [
        ("WEBSITE_SITE_NAME", "b"),
        ("WEBSITES_ENABLE_APP_SERVICE_STORAGE", "true"),
    ];
    let c = parse(&storage_on).expect("ok").config;
    assert_eq!(c.data_dir, PathBuf::from(AZURE_DATA_DIR));
    for storage_off in [
        &[("WEBSITE_SITE_NAME", "b")][..],
        &[
            ("WEBSITE_SITE_NAME", "b"),
            ("WEBSITES_ENABLE_APP_SERVICE_STORAGE", "false"),
        ],
    ] {
        let c = parse(storage_off).expect("ok").config;
        assert_eq!(c.data_dir, PathBuf::from("./data"), "{storage_off:?}");
    }
    let c = parse(&[("WEBSITE_SITE_NAME", "b"), ("DATA_DIR", "/srv")])
        .expect("ok")
        .config;
    assert_eq!(c.data_dir, PathBuf::from("/srv"));
    assert_eq!(
        error(&[("WEBSITES_ENABLE_APP_SERVICE_STORAGE", "maybe")]).name,
        "WEBSITES_ENABLE_APP_SERVICE_STORAGE"
    );
}

#[test]
fn secrets_are_not_echoed_in_errors() {
    let e = error(&[("DATABASE_URL", "postgres://u:hunter2@/x")]);
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[test]
fn blob_urls() {
    assert_eq!(error(&[("BLOB_URL", "gs://bucket")]).name, "BLOB_URL");
    assert_eq!(
        error(&[
            ("BLOB_URL", "az://Bad_Name"),
            ("AZURE_STORAGE_USE_EMULATOR", "1")
        ])
        .name,
        "BLOB_URL"
    );
    assert_eq!(
        error(&[("BLOB_URL", "az://books")]).name,
        "AZURE_STORAGE_ACCOUNT_NAME"
    );
    let c = parse(&[
        ("BLOB_URL", "az://books"),
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
    ])
    .expect("azure")
    .config;
    assert!(matches!(c.blob, BlobUrl::Azure { container } if container == "books"));
}

/// A base64 key, as the portal gives.
const KEY: &str = "a2V5IG9mIHRoZSB0ZXN0IGFjY291bnQ=";

fn azure(pairs: &[(&str, &str)]) -> AzureConfig {
    let mut all = vec![("BLOB_URL", "az://books")];
    all.extend_from_slice(pairs);
    parse(&all).expect("azure configuration").config.azure
}

fn azure_error(pairs: &[(&str, &str)]) -> ConfigError {
    let mut all = vec![("BLOB_URL", "az://books")];
    all.extend_from_slice(pairs);
    error(&all)
}

#[test]
fn azure_needs_one_credential() {
    let e = azure_error(&[("AZURE_STORAGE_ACCOUNT_NAME", "acct")]);
    assert_eq!(e.name, "AZURE_STORAGE_ACCOUNT_KEY");
    let line = e.to_string();
    for other in [
        "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_STORAGE_USE_MANAGED_IDENTITY=true",
        "AZURE_STORAGE_USE_EMULATOR=true",
    ] {
        assert!(line.contains(other), "{line}");
    }
    assert!(
        line.starts_with("AZURE_STORAGE_ACCOUNT_KEY=\"\" "),
        "{line}"
    );
    // The emulator needs none: it has a well-known key.
    let c = azure(&[("AZURE_STORAGE_USE_EMULATOR", "true")]);
    assert!(c.use_emulator && c.access_key.is_none() && c.sas_token.is_none());
    // Credentials are only checked for az://, as other software may set them.
    let c = parse(&[
        ("AZURE_STORAGE_CONNECTION_STRING", "nonsense"),
        ("AZURE_STORAGE_SAS_TOKEN", "nonsense"),
        ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "maybe"),
    ])
    .expect("file:// ignores Azure credentials")
    .config;
    assert!(c.azure.sas_token.is_none() && c.azure.managed_identity.is_none());
}

#[test]
fn two_azure_credentials_are_refused_naming_both() {
    let sas = "sv=2022-11-02&sp=rl&sig=hunter2";
    // The variables set, the one the error names, and the other one it mentions.
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        (
            &[
                ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
                ("AZURE_STORAGE_SAS_TOKEN", sas),
            ],
            "AZURE_STORAGE_SAS_TOKEN",
            "AZURE_STORAGE_ACCOUNT_KEY",
        ),
        (
            &[
                ("AZURE_STORAGE_SAS_TOKEN", sas),
                ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
            ],
            "AZURE_STORAGE_USE_MANAGED_IDENTITY",
            "AZURE_STORAGE_SAS_TOKEN",
        ),
        (
            &[
                ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
                (
                    "AZURE_STORAGE_CONNECTION_STRING",
                    "AccountName=acct;AccountKey=a2V5",
                ),
            ],
            "AZURE_STORAGE_CONNECTION_STRING",
            "AZURE_STORAGE_ACCOUNT_KEY",
        ),
        (
            &[
                ("AZURE_STORAGE_USE_EMULATOR", "true"),
                ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
            ],
            "AZURE_STORAGE_USE_MANAGED_IDENTITY",
            "AZURE_STORAGE_USE_EMULATOR",
        ),
        (
            &[
                ("AZURE_STORAGE_USE_EMULATOR", "true"),
                (
                    "AZURE_STORAGE_CONNECTION_STRING",
                    "UseDevelopmentStorage=true",
                ),
            ],
            "AZURE_STORAGE_CONNECTION_STRING",
            "AZURE_STORAGE_USE_EMULATOR",
        ),
    ];
    for (pairs, named, also) in cases {
        let mut pairs = pairs.to_vec();
        pairs.push(("AZURE_STORAGE_ACCOUNT_NAME", "acct"));
        let e = azure_error(&pairs);
        assert_eq!(e.name, *named, "{e}");
        assert!(e.to_string().contains(also), "{e}");
        assert!(
            !e.to_string().contains(KEY) && !e.to_string().contains("hunter2"),
            "{e}"
        );
    }
    // "false" is not a credential.
    let c = azure(&[
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
        ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "false"),
    ]);
    assert!(c.access_key.is_some() && c.managed_identity.is_none());
}

#[test]
fn azure_account_key_and_sas_token() {
    let e = azure_error(&[
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ("AZURE_STORAGE_ACCOUNT_KEY", "not base64!"),
    ]);
    assert_eq!(e.name, "AZURE_STORAGE_ACCOUNT_KEY");
    assert!(!e.to_string().contains("not base64!"), "{e}");
    let c = azure(&[
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        (
            "AZURE_STORAGE_SAS_TOKEN",
            "?sv=2022-11-02&sr=c&sp=racwdl&sig=a%2Bb%3D",
        ),
    ]);
    assert_eq!(
        c.sas_token.as_ref().map(|t| t.expose().as_str()),
        Some("sv=2022-11-02&sr=c&sp=racwdl&sig=a%2Bb%3D")
    );
    assert!(c.access_key.is_none() && !c.from_connection_string);
    for bad in ["hunter2", "sv=2022-11-02&sp=rl", "?"] {
        let e = azure_error(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_STORAGE_SAS_TOKEN", bad),
        ]);
        assert_eq!(e.name, "AZURE_STORAGE_SAS_TOKEN", "{bad}");
        assert!(e.to_string().contains("[redacted]"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
    // A SAS still needs the account (or an endpoint naming it, from a connection string).
    assert_eq!(
        azure_error(&[("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x")]).name,
        "AZURE_STORAGE_ACCOUNT_NAME"
    );
}

#[test]
fn azure_connection_strings() {
    const CS: &str = "AZURE_STORAGE_CONNECTION_STRING";
    // The portal's form: the key's own `=` padding stays in it.
    let c = azure(&[(
        CS,
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5IGE=;EndpointSuffix=core.chinacloudapi.cn",
    )]);
    assert_eq!(c.account.as_deref(), Some("acct"));
    assert_eq!(
        c.access_key.as_ref().map(|k| k.expose().as_str()),
        Some("a2V5IGE=")
    );
    assert_eq!(
        c.endpoint.as_ref().map(Url::as_str),
        Some("https://acct.blob.core.chinacloudapi.cn/")
    );
    assert!(c.from_connection_string && c.sas_token.is_none());
    // Keys are case-insensitive, the suffix defaults to the public cloud, a trailing `;` is fine.
    let c = azure(&[(CS, "accountname=acct;accountkey=a2V5;")]);
    assert_eq!(
        c.endpoint.as_ref().map(Url::as_str),
        Some("https://acct.blob.core.windows.net/")
    );
    // Azurite's long form, with its own BlobEndpoint.
    let c = azure(&[(
        CS,
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;",
    )]);
    assert_eq!(
        c.endpoint.as_ref().map(Url::as_str),
        Some("http://127.0.0.1:10000/devstoreaccount1")
    );
    // A SAS with the endpoint alone: the account is read from the endpoint.
    let c = azure(&[(
        CS,
        "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&sp=rl&sig=x%3D",
    )]);
    assert_eq!(c.account.as_deref(), Some("acct"));
    assert_eq!(
        c.sas_token.as_ref().map(|t| t.expose().as_str()),
        Some("sv=2022-11-02&sp=rl&sig=x%3D")
    );
    assert!(c.access_key.is_none());
    let c = azure(&[(
        CS,
        "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;SharedAccessSignature=sv=1&sig=x",
    )]);
    assert_eq!(c.account.as_deref(), Some("devstoreaccount1"));
    // Azurite's short form, which AZURE_STORAGE_ENDPOINT may move to another port.
    let c = azure(&[(CS, "UseDevelopmentStorage=true")]);
    assert_eq!(c.account.as_deref(), Some(AZURITE_ACCOUNT));
    assert_eq!(
        c.access_key.as_ref().map(|k| k.expose().as_str()),
        Some(AZURITE_KEY)
    );
    assert_eq!(
        c.endpoint.as_ref().map(Url::as_str),
        Some("http://127.0.0.1:10000/devstoreaccount1")
    );
    let c = azure(&[
        (CS, "UseDevelopmentStorage=true"),
        (
            "AZURE_STORAGE_ENDPOINT",
            "http://127.0.0.1:4321/devstoreaccount1",
        ),
    ]);
    assert_eq!(
        c.endpoint.as_ref().map(Url::as_str),
        Some("http://127.0.0.1:4321/devstoreaccount1")
    );
    // The same account named twice is fine; another one is not.
    azure(&[
        (CS, "AccountName=acct;AccountKey=a2V5"),
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
    ]);
    let e = azure_error(&[
        (CS, "AccountName=acct;AccountKey=a2V5"),
        ("AZURE_STORAGE_ACCOUNT_NAME", "other"),
    ]);
    assert_eq!(e.name, "AZURE_STORAGE_ACCOUNT_NAME");
    assert!(e.to_string().contains(CS), "{e}");
    let e = azure_error(&[
        (
            CS,
            "AccountName=acct;AccountKey=a2V5;BlobEndpoint=https://x.example",
        ),
        ("AZURE_STORAGE_ENDPOINT", "https://y.example"),
    ]);
    assert_eq!(e.name, "AZURE_STORAGE_ENDPOINT");
    assert!(e.to_string().contains(CS), "{e}");
}

#[test]
fn incomplete_connection_strings_say_what_is_missing() {
    const CS: &str = "AZURE_STORAGE_CONNECTION_STRING";
    for (value, missing) in [
        ("AccountName=acct", "no credential"),
        (
            "DefaultEndpointsProtocol=https;AccountKey=c2VjcmV0a2V5",
            "no AccountName",
        ),
        (
            "SharedAccessSignature=sv=1&sig=c2VjcmV0a2V5",
            "no blob service",
        ),
        (
            "BlobEndpoint=https://books.example.com;SharedAccessSignature=sv=1&sig=c2VjcmV0a2V5",
            "no account",
        ),
        (
            "AccountName=acct;AccountKey=c2VjcmV0a2V5;SharedAccessSignature=sv=1&sig=c2VjcmV0a2V5",
            "both AccountKey and SharedAccessSignature",
        ),
        (
            "AccountName=acct;AccountKey=c2VjcmV0a2V5;BlobEndpoint=ftp://x",
            "BlobEndpoint",
        ),
        ("AccountName=acct;c2VjcmV0a2V5", "no `=`"),
        (
            "AccountName=acct;AccountKey=c2VjcmV0a2V5!!",
            "not a storage account key",
        ),
        (
            "AccountName=acct;SharedAccessSignature=c2VjcmV0a2V5",
            "not a SAS token",
        ),
    ] {
        let e = azure_error(&[(CS, value)]);
        assert_eq!(e.name, CS, "{value}: {e}");
        let line = e.to_string();
        assert!(line.contains(missing), "{value}: {line}");
        assert!(
            !line.contains("c2VjcmV0a2V5"),
            "the secret is echoed: {line}"
        );
        assert!(line.contains("[redacted]"), "{line}");
    }
}

#[test]
fn azure_managed_identity() {
    let c = azure(&[
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
    ]);
    assert_eq!(c.managed_identity, Some(ManagedIdentity::default()));
    assert!(c.access_key.is_none() && c.sas_token.is_none());
    let c = azure(&[
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "yes"),
        ("AZURE_CLIENT_ID", "6F1C2A4E3B5D4E7F9A1B2C3D4E5F6A7B"),
        ("IDENTITY_ENDPOINT", "http://localhost:42356/msi/token"),
    ]);
    let identity = c.managed_identity.expect("managed identity");
    assert_eq!(
        identity.client_id.as_deref(),
        Some("6f1c2a4e-3b5d-4e7f-9a1b-2c3d4e5f6a7b")
    );
    assert_eq!(
        identity.token_endpoint.as_ref().map(Url::as_str),
        Some("http://localhost:42356/msi/token")
    );
    // Managed identity still needs to know the account.
    assert_eq!(
        azure_error(&[("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true")]).name,
        "AZURE_STORAGE_ACCOUNT_NAME"
    );
    for (name, value) in [
        ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "please"),
        ("AZURE_CLIENT_ID", "my-identity"),
        ("IDENTITY_ENDPOINT", "localhost:42356"),
    ] {
        let mut pairs = vec![
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
        ];
        pairs.retain(|(k, _)| *k != name);
        pairs.push((name, value));
        assert_eq!(azure_error(&pairs).name, name, "{value}");
    }
}

#[test]
fn s3_blob_urls() {
    let c = parse(&[("BLOB_URL", "s3://my-books")]).expect("s3").config;
    let BlobUrl::S3 { bucket, prefix, s3 } = &c.blob else {
        panic!("{:?}", c.blob)
    };
    assert_eq!((bucket.as_str(), prefix.as_deref()), ("my-books", None));
    assert_eq!(**s3, S3Config::default());
    assert_eq!(s3.region, "us-east-1");
    assert_eq!(c.blob.to_string(), "s3://my-books");
    let c = parse(&[
        ("BLOB_URL", "s3://my.books/bindery/prod/"),
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "hunter2hunter2"),
        ("AWS_SESSION_TOKEN", "tok"),
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
    ])
    .expect("s3")
    .config;
    assert_eq!(c.blob.to_string(), "s3://my.books/bindery/prod");
    let BlobUrl::S3 { prefix, s3, .. } = &c.blob else {
        panic!("{:?}", c.blob)
    };
    assert_eq!(prefix.as_deref(), Some("bindery/prod"));
    assert_eq!(s3.access_key_id.as_deref(), Some("AKIAEXAMPLE"));
    assert_eq!(
        s3.secret_access_key.as_ref().map(|s| s.expose().as_str()),
        Some("hunter2hunter2")
    );
    assert!(s3.session_token.is_some());
    assert_eq!(s3.region, "eu-west-1");
    assert_eq!(
        s3.endpoint.as_ref().map(Url::as_str),
        Some("http://127.0.0.1:9000/")
    );
    assert!(!format!("{c:?}").contains("hunter2"));
    let described = c.describe();
    assert!(!format!("{described:?}").contains("hunter2"));
    assert!(described.contains(&("AWS_SECRET_ACCESS_KEY", "[redacted]".to_owned())));
    assert!(described.contains(&("AWS_REGION", "eu-west-1".to_owned())));
    for bad in [
        "s3://",
        "s3://ab",
        "s3://My_Books",
        "s3://-books",
        "s3://books/a//b",
        "s3://books/../x",
    ] {
        assert_eq!(error(&[("BLOB_URL", bad)]).name, "BLOB_URL", "{bad}");
    }
}

#[test]
fn s3_credentials_come_in_pairs() {
    let s3 = |pairs: &[(&str, &str)]| {
        let mut all = vec![("BLOB_URL", "s3://books")];
        all.extend_from_slice(pairs);
        parse(&all)
    };
    let e = s3(&[("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")]).expect_err("no secret");
    assert_eq!(e.name, "AWS_SECRET_ACCESS_KEY");
    assert!(e.to_string().contains("AWS_ACCESS_KEY_ID"), "{e}");
    let e = s3(&[("AWS_SECRET_ACCESS_KEY", "hunter2")]).expect_err("no id");
    assert_eq!(e.name, "AWS_ACCESS_KEY_ID");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let e = s3(&[("AWS_SESSION_TOKEN", "hunter2")]).expect_err("token alone");
    assert_eq!(e.name, "AWS_SESSION_TOKEN");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert_eq!(
        s3(&[("AWS_REGION", "EU West")]).expect_err("region").name,
        "AWS_REGION"
    );
    assert_eq!(
        s3(&[("AWS_ENDPOINT_URL", "minio:9000")])
            .expect_err("endpoint")
            .name,
        "AWS_ENDPOINT_URL"
    );
    // No keys: the instance's role, through the metadata service.
    let c = s3(&[]).expect("instance credentials").config;
    assert!(matches!(&c.blob, BlobUrl::S3 { s3, .. } if s3.access_key_id.is_none()));
    // AWS variables mean nothing to other blob stores, and are not checked for them.
    parse(&[
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
        ("AWS_REGION", "EU West"),
    ])
    .expect("file:// ignores AWS variables");
}

#[test]
fn azure_secrets_are_described_redacted() {
    let c = parse(&[
        ("BLOB_URL", "az://books"),
        (
            "AZURE_STORAGE_CONNECTION_STRING",
            "AccountName=acct;AccountKey=c2VjcmV0a2V5",
        ),
    ])
    .expect("ok")
    .config;
    let described = c.describe();
    assert!(!format!("{described:?}").contains("c2VjcmV0a2V5"));
    assert!(!format!("{c:?}").contains("c2VjcmV0a2V5"));
    assert!(described.contains(&("AZURE_STORAGE_CONNECTION_STRING", "[redacted]".to_owned())));
    assert!(described.contains(&(
        "AZURE_STORAGE_ACCOUNT_KEY",
        "[redacted] (from AZURE_STORAGE_CONNECTION_STRING)".to_owned()
    )));
    assert!(described.contains(&("AZURE_STORAGE_ACCOUNT_NAME", "acct".to_owned())));
}

#[test]
fn limits_and_rates() {
    let c = parse(&[
        ("RATE_LIMIT_WRITES", "10/s"),
        ("MAX_MANUSCRIPT_SIZE", "20MiB"),
        ("DEFAULT_LANGUAGE", "en_GB"),
    ])
    .expect("valid")
    .config;
    let rate = c.rate_limit_writes.expect("a rate");
    assert_eq!(
        (rate.requests.get(), rate.period),
        (10, Duration::from_secs(1))
    );
    assert_eq!(c.limits.max_manuscript_bytes, 20 * 1024 * 1024);
    assert_eq!(c.default_language, "en-GB");
    let off = parse(&[("RATE_LIMIT_WRITES", "off")])
        .expect("valid")
        .config;
    assert_eq!(off.rate_limit_writes, None);
    for (name, value) in [
        ("RATE_LIMIT_WRITES", "lots"),
        ("RATE_LIMIT_WRITES", "0/min"),
        ("MAX_MANUSCRIPT_SIZE", "big"),
        ("DEFAULT_LANGUAGE", "C"),
        ("BINDERY_FAILPOINT", "sometime:book.parse"),
    ] {
        assert_eq!(error(&[(name, value)]).name, name, "{value}");
    }
}

#[test]
fn durations_take_seconds_or_units() {
    let c = parse(&[
        ("SHUTDOWN_TIMEOUT", "10"),
        ("WORKER_STALL_TIMEOUT", "1500ms"),
    ])
    .expect("durations")
    .config;
    assert_eq!(c.shutdown_timeout, Duration::from_secs(10));
    assert_eq!(c.worker_stall_timeout, Duration::from_millis(1500));
    assert_eq!(
        error(&[("KEEPALIVE_INTERVAL", "soon")]).name,
        "KEEPALIVE_INTERVAL"
    );
    assert_eq!(error(&[("SHUTDOWN_TIMEOUT", "0")]).name, "SHUTDOWN_TIMEOUT");
}

#[test]
fn keepalive_url_falls_back_to_platform_variables() {
    let c = parse(&[("WEBSITE_HOSTNAME", "b.azurewebsites.net")])
        .expect("ok")
        .config;
    assert_eq!(
        c.keepalive_url.map(|u| u.to_string()).as_deref(),
        Some("https://b.azurewebsites.net/")
    );
    let c = parse(&[("APP_URL", "https://a.example"), ("WEBSITE_HOSTNAME", "b")])
        .expect("ok")
        .config;
    assert_eq!(
        c.keepalive_url.map(|u| u.host_str().map(str::to_owned)),
        Some(Some("a.example".to_owned()))
    );
    assert_eq!(error(&[("KEEPALIVE_URL", "ftp://x")]).name, "KEEPALIVE_URL");
    // Webhook links and the keep-alive share APP_URL; Azure's host name stands in for it.
    let c = parse(&[("WEBSITE_HOSTNAME", "b.azurewebsites.net")])
        .expect("ok")
        .config;
    assert_eq!(
        c.public_url.as_ref().map(Url::as_str),
        Some("https://b.azurewebsites.net/")
    );
    let c = parse(&[
        ("APP_URL", "https://a.example"),
        ("KEEPALIVE_URL", "http://10.0.0.1"),
    ])
    .expect("ok")
    .config;
    assert_eq!(
        c.public_url.as_ref().map(Url::as_str),
        Some("https://a.example/")
    );
    assert_eq!(
        c.keepalive_url.as_ref().map(Url::as_str),
        Some("http://10.0.0.1/")
    );
    assert_eq!(error(&[("APP_URL", "books.example.com")]).name, "APP_URL");
}

#[test]
fn unknown_bindery_variables_get_a_suggestion() {
    let loaded = parse(&[("BINDERY_PROT", "1"), ("UNRELATED", "x")]).expect("ok");
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("did you mean PORT?"),
        "{:?}",
        loaded.warnings
    );
    let loaded = parse(&[("BINDERY_WORKER_CONCURENCY", "1")]).expect("ok");
    assert!(
        loaded.warnings[0].contains("WORKER_CONCURRENCY"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn webhooks_stay_off_private_networks_unless_allowed() {
    assert!(!parse(&[]).expect("defaults").config.webhook_allow_private);
    let allowed = parse(&[("WEBHOOK_ALLOW_PRIVATE", "true")]).expect("ok");
    assert!(allowed.config.webhook_allow_private);
    let bad = error(&[("WEBHOOK_ALLOW_PRIVATE", "maybe")]);
    assert_eq!(bad.name, "WEBHOOK_ALLOW_PRIVATE");
    assert!(
        bad.to_string().contains("WEBHOOK_ALLOW_PRIVATE=true"),
        "{bad}"
    );
}

#[test]
fn bad_log_settings() {
    assert_eq!(error(&[("LOG_FORMAT", "xml")]).name, "LOG_FORMAT");
    assert_eq!(error(&[("RUST_LOG", "info,[[[")]).name, "RUST_LOG");
    assert_eq!(
        error(&[("WORKER_CONCURRENCY", "0")]).name,
        "WORKER_CONCURRENCY"
    );
}

#[test]
fn schedules_can_be_overridden_or_switched_off() {
    let c = parse(&[]).expect("defaults").config;
    assert_eq!(c.schedule_prune_jobs.as_deref(), Some("0 17 * * * *"));
    let c = parse(&[("SCHEDULE_PRUNE_JOBS", "*/5 * * * *")])
        .expect("ok")
        .config;
    assert_eq!(c.schedule_prune_jobs.as_deref(), Some("*/5 * * * *"));
    let c = parse(&[("SCHEDULE_PRUNE_JOBS", "OFF")]).expect("ok").config;
    assert_eq!(c.schedule_prune_jobs, None);
    let c = parse(&[]).expect("defaults").config;
    assert_eq!(
        c.schedule_catalog_refresh.as_deref(),
        Some("0 */15 * * * *")
    );
    let c = parse(&[("SCHEDULE_CATALOG_REFRESH", "off")])
        .expect("ok")
        .config;
    assert_eq!(c.schedule_catalog_refresh, None);
    let c = parse(&[]).expect("defaults").config;
    assert_eq!(c.schedule_sweep_blobs.as_deref(), Some("0 43 3 * * *"));
    let c = parse(&[("SCHEDULE_SWEEP_BLOBS", "off")])
        .expect("ok")
        .config;
    assert_eq!(c.schedule_sweep_blobs, None);
    assert_eq!(
        error(&[("SCHEDULE_CATALOG_REFRESH", "*/15")]).name,
        "SCHEDULE_CATALOG_REFRESH"
    );
    assert_eq!(
        error(&[("SCHEDULE_PRUNE_JOBS", "hourly-ish")]).name,
        "SCHEDULE_PRUNE_JOBS"
    );
    assert_eq!(error(&[("JOB_LEASE", "500ms")]).name, "JOB_LEASE");
}

#[test]
fn unwritable_data_dir_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let mut c = parse(&[("DATA_DIR", file.join("sub").to_str().expect("utf-8"))])
        .expect("parse")
        .config;
    assert_eq!(
        c.prepare_directories().expect_err("not writable").name,
        "DATA_DIR"
    );
}

/// A host that runs the image as a user of its own (Heroku's container runtime) leaves
/// `/data` unwritable: with PostgreSQL and a cloud blob store nothing is kept there, so only
/// the log files, at their default place, go (said in a warning); a `LOG_DIR` given is
/// still checked.
#[test]
fn an_unwritable_data_dir_holding_nothing_turns_only_the_default_log_files_off() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let data_dir = file.join("data");
    let data_dir = data_dir.to_str().expect("utf-8");
    let cloud = [
        ("DATA_DIR", data_dir),
        ("DATABASE_URL", "postgres://bindery@db.example.com/bindery"),
        ("BLOB_URL", "az://books"),
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
    ];
    let mut c = parse(&cloud).expect("parse").config;
    let warnings = c
        .prepare_directories()
        .expect("nothing is kept in DATA_DIR");
    assert_eq!(c.log_dir, None, "the log files are off");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("log files are off") && warnings[0].contains("LOG_DIR"),
        "{warnings:?}"
    );

    let given = file.join("logs");
    let mut with_logs: Vec<(&str, &str)> = cloud.to_vec();
    with_logs.push(("LOG_DIR", given.to_str().expect("utf-8")));
    let mut c = parse(&with_logs).expect("parse").config;
    assert_eq!(
        c.prepare_directories().expect_err("LOG_DIR given").name,
        "LOG_DIR"
    );
}

#[test]
fn the_default_language_is_the_books_default() {
    let c = parse(&[]).expect("defaults").config;
    assert_eq!(c.default_language, crate::language::DEFAULT_LANGUAGE);
}

#[test]
fn every_variable_is_described_but_those_only_telling_the_host() {
    let c = parse(&[]).expect("defaults").config;
    let described: Vec<_> = c.describe().into_iter().map(|(k, _)| k).collect();
    for v in VARIABLES {
        // libpq's variables show in DATABASE_URL, Azure's host name in APP_URL and
        // KEEPALIVE_URL; the others only tell which host this is.
        let folded = matches!(
            v.name,
            "WEBSITE_HOSTNAME"
                | "PGSSLMODE"
                | "PGSSLROOTCERT"
                | "WEBSITES_ENABLE_APP_SERVICE_STORAGE"
        ) || crate::config::platform::Host::MARKERS
            .iter()
            .any(|(name, _)| *name == v.name);
        assert_eq!(
            described.contains(&v.name),
            !folded,
            "{} is described: {}",
            v.name,
            !folded
        );
    }
    // In the README's order.
    let declared: Vec<_> = VARIABLES
        .iter()
        .map(|v| v.name)
        .filter(|n| described.contains(n))
        .collect();
    assert_eq!(described, declared);
}

#[test]
fn every_documented_default_parses() {
    // Those not read for the default file:// store, and the App Service default of DATA_DIR.
    parse(&[("BLOB_URL", "s3://books")]).expect("AWS defaults");
    parse(&[
        ("BLOB_URL", "az://books"),
        ("AZURE_STORAGE_USE_EMULATOR", "1"),
    ])
    .expect("Azure defaults");
    let c = parse(&[]).expect("defaults").config;
    assert_eq!(c.max_wait, Duration::from_secs(25));
    assert_eq!(c.keepalive_interval, Duration::from_secs(300));
    assert_eq!(c.job_retention, Duration::from_secs(7 * 24 * 3600));
    assert_eq!(c.worker_memory_budget, 320 * 1024 * 1024);
    assert_eq!(c.limits.max_words, 3_000_000);
    assert_eq!(
        c.rate_limit_writes.map(|r| r.to_string()).as_deref(),
        Some("60/min")
    );
    // The limits' defaults in code (what tests and `Limits::default()` use) are the
    // variables' defaults, the decoded image's half of the memory budget included.
    assert_eq!(c.limits, crate::config::Limits::default());
    assert_eq!(c.limits.max_image_bytes, c.worker_memory_budget / 2);
}

#[test]
fn the_admin_token_is_long_plain_and_never_shown() {
    let hex = "9f2c6d1e0b7a4c3f8e5d2a1b6c9f0e3d7a4b1c8e5f2d9a6b3c0e7f4a1d8b5c2e";
    // What hosts generate: hex (openssl, Heroku), base64 (Render's generateValue).
    let longest = hex.repeat(4);
    for good in [
        hex,
        "q3Zx8+Rk2mP/0vT6yHc1nW4bJ9eL5sA7dF2gK8uQ1oE=",
        &longest,
    ] {
        let c = parse(&[("BINDERY_ADMIN_TOKEN", good)]).expect(good).config;
        assert_eq!(
            c.admin_token.as_ref().map(|t| t.expose().as_str()),
            Some(good)
        );
        let shown = c.describe();
        assert!(
            shown.contains(&("BINDERY_ADMIN_TOKEN", "[redacted]".to_owned())),
            "{shown:?}"
        );
    }
    assert!(parse(&[]).expect("unset").config.admin_token.is_none());
    for (bad, says) in [
        ("hunter2hunter2", "at least 32 characters"),
        (&format!("{hex} {hex}")[..], "without spaces"),
        (&"x".repeat(257)[..], "longer than 256"),
        (&format!("bdy_{hex}")[..], "only tokens Bindery makes"),
        // Long enough, and guessed at once.
        (&"a".repeat(32)[..], "too easy to guess"),
        ("abcdefghijklmnopqrstuvwxyz0123456789", "too easy to guess"),
        ("passwordpasswordpasswordpassword", "too easy to guess"),
        ("qwertyuiopasdfghjklzxcvbnm1234567890", "too easy to guess"),
    ] {
        let e = error(&[("BINDERY_ADMIN_TOKEN", bad)]);
        assert_eq!(e.name, "BINDERY_ADMIN_TOKEN");
        let line = e.to_string();
        assert!(line.contains(says), "{line}");
        assert!(line.contains("openssl rand -hex 32"), "{line}");
        assert!(!line.contains(bad), "the secret is echoed: {line}");
    }
}

/// Random values of the shortest length a person would generate pass the guessing rule, in
/// every alphabet hosts' generators use, with room to spare.
#[test]
fn random_admin_tokens_of_the_shortest_length_are_hard_enough_to_guess() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(40);
    let alphabets: [&[u8]; 3] = [
        b"0123456789abcdef",
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    ];
    let mut weakest = f64::INFINITY;
    for alphabet in alphabets {
        for _ in 0..500 {
            let value: String = (0..super::variables::ADMIN_TOKEN_MIN_LEN)
                .map(|_| char::from(alphabet[rng.random_range(0..alphabet.len())]))
                .collect();
            weakest = weakest.min(zxcvbn::zxcvbn(&value, &[]).guesses_log10());
            parse(&[("BINDERY_ADMIN_TOKEN", &value)]).expect("a random value is accepted");
        }
    }
    assert!(
        weakest >= super::variables::ADMIN_TOKEN_MIN_GUESSES_LOG10 + 2.0,
        "the weakest random value estimates at 10^{weakest:.1} guesses"
    );
}
