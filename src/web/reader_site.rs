//! How the web reader's static site is served, to its book's tenant (`files`) and to an
//! advance-reader link's visitor (`advance_copies`) alike: which paths name a file of it, and
//! the answer's headers (revalidated every time, the reader's own Content-Security-Policy).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;

use super::conditional::{self, Answer};

/// The file a path under the reader names (its contents page for the bare folder), or `None`
/// for a path that could leave it (an empty or hidden part).
pub(crate) fn file_name(path: &str) -> Option<String> {
    let file = if path.is_empty() {
        crate::ebook::reader::STAMPED_PAGE
    } else {
        path
    };
    (!file
        .split('/')
        .any(|part| part.is_empty() || part.starts_with('.')))
    .then(|| file.to_owned())
}

/// The answer carrying the reader's `file`.
pub(crate) fn answer(req: &HttpRequest, file: &str, bytes: Bytes) -> HttpResponse {
    Answer::new(req, conditional::etag(&bytes))
        // Revalidate every time: the service worker is what makes the reader fast and offline.
        .header((header::CACHE_CONTROL, "private, no-cache"))
        .header((
            header::CONTENT_SECURITY_POLICY,
            crate::ebook::reader::CONTENT_SECURITY_POLICY,
        ))
        .header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .header((header::REFERRER_POLICY, "no-referrer"))
        .body(content_type(file), bytes)
}

pub(crate) fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "webmanifest" => "application/manifest+json",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        _ => "application/octet-stream",
    }
}
