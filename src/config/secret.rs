//! Values that must never reach a log line or a terminal by accident.

use std::fmt;

use url::Url;

/// A value that must never reach a log line or a terminal by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// The secret itself, for the one place that needs it (a connection, a signature).
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// A URL with any password replaced, for logs and `bindery config`.
pub fn redact_url(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("REDACTED"));
    }
    // Set as a plain word, since a password's brackets would be percent-encoded.
    shown.to_string().replacen(":REDACTED@", ":[redacted]@", 1)
}
