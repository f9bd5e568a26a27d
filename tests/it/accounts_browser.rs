//! Passkeys in a real browser (headless Chromium with a virtual authenticator): an invitation
//! makes an account with a passkey, which uploads, signs out and signs in again with the
//! passkey alone, and another the same with a password; an unknown passkey is refused with its
//! reason; the invitation, account,
//! People and sign-in pages pass axe on a desktop and a phone (`tests/browser/accounts.mjs`).
//! Screenshots are kept in `target/tmp/screenshots/accounts/`.

use crate::accounts::{ADMIN, invite, serve};
use crate::common;
use crate::common::web::session;

#[test]
fn an_invitation_makes_a_passkey_account_that_signs_in_and_uploads_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let (server, _) = serve(false);
    let admin = session(&server, ADMIN);
    let link = invite(&server, &admin.cookie, &admin.csrf, "riverpress", "owner");
    let second = invite(&server, &admin.cookie, &admin.csrf, "riverpress", "author");
    // Browsers allow passkeys on https or on localhost, never on a bare address.
    let base = server.base.replace("127.0.0.1", "localhost");
    let shots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/accounts");
    let stdout = common::browser_passes(
        common::browser_script("accounts.mjs")
            .arg(&base)
            .arg(&link)
            .arg(common::corpus().join("markdown/love-among-the-chickens.md"))
            .arg(&shots)
            .arg(&second),
        "accounts with passkeys",
    );
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}
