//! Plain-text manuscripts: paragraphs at blank lines, chapters from common heading forms.

use super::InputError;
use crate::document::Parsed;

pub fn read(_text: &str) -> Result<Parsed, InputError> {
    Err(InputError::Unsupported {
        detected: "plain text (reader not built yet)".into(),
    })
}
