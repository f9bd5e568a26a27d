//! Values that must never reach a log line or a terminal by accident.
//!
//! Two ways: a [`Secret`] is a value known to be one, which prints as `[redacted]`; and URLs,
//! wherever they are shown, lose what carries a secret by one rule ([`redact_urls`]): the
//! password of their user info, and every query parameter whose name says it is a secret
//! ([`secret_parameter`]). The rule is applied to `bindery config`, to every log line (stdout,
//! the files and the database: an error's text can hold the URL a client asked for), and to
//! the URLs the service prints itself.

use std::borrow::Cow;
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

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Words that make a query parameter secret when they are its whole name or a word of it
/// (`password`, `sig`, `access_token`, `X-Amz-Signature`, `api-key`).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "sig",
    "signature",
    "token",
    "key",
    "apikey",
    "secret",
    "credential",
    "credentials",
    "auth",
];

/// Endings that make a parameter secret even when written as one word (`sslpassword`,
/// `accessToken`, `clientSecret`).
const SECRET_ENDINGS: &[&str] = &[
    "password",
    "passwd",
    "token",
    "secret",
    "signature",
    "apikey",
];

/// Whether a query parameter named `name` (as decoded) carries a secret.
pub fn secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| SECRET_WORDS.contains(&word))
        || {
            let joined: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
            SECRET_ENDINGS.iter().any(|ending| joined.ends_with(ending))
        }
}

/// A URL with its secrets replaced ([`redact_urls`]), for logs and `bindery config`.
pub fn redact_url(url: &Url) -> String {
    redact_urls(url.as_str()).into_owned()
}

/// `text` with every URL in it (`scheme://…`) stripped of its secrets: a user info password and
/// the value of every secret query parameter become `[redacted]`. Text without `://` (almost
/// every log line) is returned as it is, without a copy; redacting twice changes nothing more.
pub fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme before `://` belongs to the URL; what comes before it is copied.
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        out.push_str(&rest[..scheme_start]);
        let url_start = at + 3;
        let len = rest[url_start..]
            .find(ends_url)
            .unwrap_or(rest.len() - url_start);
        out.push_str(&rest[scheme_start..url_start]);
        redact_after_scheme(&rest[url_start..url_start + len], &mut out);
        rest = &rest[url_start + len..];
    }
    out.push_str(rest);
    if out == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

/// Where a URL written in text ends: characters a URL does not hold unescaped, and that
/// commonly close one in prose or a message (`(url)`, `"url"`, `<url>`).
fn ends_url(c: char) -> bool {
    c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\' | ')')
}

/// Writes `url` (what follows `scheme://`) with its secrets redacted.
fn redact_after_scheme(url: &str, out: &mut String) {
    let authority_len = url.find(['/', '?', '#']).unwrap_or(url.len());
    let (authority, rest) = url.split_at(authority_len);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            match user_info.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(REDACTED);
                }
                None => out.push_str(user_info),
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    let Some(query_at) = rest.find('?') else {
        out.push_str(rest);
        return;
    };
    let (path, query) = rest.split_at(query_at + 1);
    out.push_str(path);
    let (query, fragment) = match query.find('#') {
        Some(hash) => query.split_at(hash),
        None => (query, ""),
    };
    for (n, pair) in query.split('&').enumerate() {
        if n > 0 {
            out.push('&');
        }
        let name = pair.split_once('=').map_or(pair, |(name, _)| name);
        let decoded = form_urlencoded::parse(name.as_bytes())
            .next()
            .map(|(name, _)| name.into_owned())
            .unwrap_or_default();
        if let Some((_, value)) = pair.split_once('=')
            && secret_parameter(&decoded)
        {
            out.push_str(name);
            out.push('=');
            out.push_str(REDACTED);
            // A `;` ends the value too: in a connection string the next setting follows it.
            if let Some(semicolon) = value.find(';') {
                out.push_str(&value[semicolon..]);
            }
        } else {
            out.push_str(pair);
        }
    }
    out.push_str(fragment);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_parameters_are_named_by_their_words() {
        for name in [
            "password",
            "sig",
            "token",
            "key",
            "secret",
            "Password",
            "access_token",
            "api_key",
            "apiKey",
            "api-key",
            "X-Amz-Signature",
            "X-Amz-Credential",
            "client_secret",
            "sslpassword",
            "accessToken",
            "auth",
        ] {
            assert!(secret_parameter(name), "{name} is secret");
        }
        for name in [
            "sslmode",
            "sslrootcert",
            "sv",
            "se",
            "sp",
            "application_name",
            "page",
            "keepalive",
            "monkeys",
            "signal",
            "passage",
        ] {
            assert!(!secret_parameter(name), "{name} is not");
        }
    }

    #[test]
    fn every_url_in_a_text_loses_its_password_and_secret_parameters() {
        let cases = [
            (
                "postgres://bindery:hunter2@db.example.com:5432/books?sslmode=verify-full&password=p2",
                "postgres://bindery:[redacted]@db.example.com:5432/books?sslmode=verify-full&password=[redacted]",
            ),
            (
                "BlobEndpoint=https://acct.blob.core.windows.net/?sv=2024&sig=abc%2Fdef;AccountName=acct",
                "BlobEndpoint=https://acct.blob.core.windows.net/?sv=2024&sig=[redacted];AccountName=acct",
            ),
            (
                "keep-alive request failed (https://books.example.com/healthz?token=t0k3n#top)",
                "keep-alive request failed (https://books.example.com/healthz?token=[redacted]#top)",
            ),
            (
                "two: http://a/?key=1&x=2 and \"https://u@b/?%73ig=3\"",
                "two: http://a/?key=[redacted]&x=2 and \"https://u@b/?%73ig=[redacted]\"",
            ),
            ("no url here: a=b?password=c", "no url here: a=b?password=c"),
            (
                "https://plain.example.com/path?page=2",
                "https://plain.example.com/path?page=2",
            ),
        ];
        for (given, expected) in cases {
            let once = redact_urls(given);
            assert_eq!(once, expected);
            assert_eq!(
                redact_urls(&once),
                expected,
                "redacting again changes nothing"
            );
        }
        assert!(matches!(redact_urls("nothing to do"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_url_value_is_redacted_by_the_same_rule() {
        let url = Url::parse("https://user:pw@example.com/x?token=abc&page=1").expect("url");
        assert_eq!(
            redact_url(&url),
            "https://user:[redacted]@example.com/x?token=[redacted]&page=1"
        );
    }
}
