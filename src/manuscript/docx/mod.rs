//! Word documents (DOCX): a zip of WordprocessingML parts, read with `zip` and `quick-xml`.

use super::{InputError, Limits};
use crate::document::Parsed;

pub fn read(_bytes: &[u8], _limits: &Limits) -> Result<Parsed, InputError> {
    Err(InputError::Unsupported {
        detected: "DOCX (reader not built yet)".into(),
    })
}
