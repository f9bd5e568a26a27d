//! Text encodings: UTF-8, UTF-16 (with or without a byte-order mark) and Windows-1252.

use super::InputError;

/// Decodes manuscript bytes, returning the text and the encoding's name (`UTF-8`, …).
pub fn decode(bytes: &[u8]) -> Result<(String, &'static str), InputError> {
    // Placeholder until the encoding detector lands: UTF-8 only.
    std::str::from_utf8(bytes)
        .map(|s| (s.trim_start_matches('\u{feff}').to_owned(), "UTF-8"))
        .map_err(|e| InputError::Encoding {
            detail: e.to_string(),
        })
}
