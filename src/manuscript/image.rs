//! Checking an image before anything decodes it: a recognised format, and no more pixels
//! than the limit (a 100,000 × 100,000 PNG is a few kilobytes and would decode to 40 GB).

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};

use super::{InputError, Limits};

/// What a valid image is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInfo {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
}

impl ImageInfo {
    pub fn media_type(&self) -> &'static str {
        media_type(self.format)
    }

    pub fn extension(&self) -> &'static str {
        match self.format {
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Png => "png",
            ImageFormat::Gif => "gif",
            ImageFormat::WebP => "webp",
            _ => "bin",
        }
    }
}

/// EPUB core media types, the only raster formats Bindery puts in a book.
pub fn media_type(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Png => "image/png",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => "application/octet-stream",
    }
}

/// Reads an image's format and size from its header, without decoding pixels.
pub fn probe(name: &str, bytes: &[u8], limits: &Limits) -> Result<ImageInfo, InputError> {
    let bad = |detail: String| InputError::BadImage {
        name: name.to_owned(),
        detail,
    };
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| bad(e.to_string()))?;
    let format = match reader.format() {
        Some(f @ (ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::Gif | ImageFormat::WebP)) => {
            f
        }
        Some(other) => return Err(bad(format!("{other:?} images are not supported"))),
        None => return Err(bad("not a JPEG, PNG, GIF or WebP file".into())),
    };
    let decoder = reader.into_decoder().map_err(|e| bad(e.to_string()))?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(bad("it has no pixels".into()));
    }
    if u64::from(width) * u64::from(height) > limits.max_image_pixels {
        return Err(InputError::ImageTooLarge {
            name: name.to_owned(),
            width,
            height,
            limit: limits.max_image_pixels,
        });
    }
    // The pixels at their depth: a 16-bit RGBA image takes eight bytes a pixel, and what
    // decodes it (a cover's scaling, a photo turned upright, the print edition) holds them all.
    let decoded = decoder.total_bytes();
    if decoded > limits.max_image_bytes {
        return Err(InputError::ImageTooDeep {
            name: name.to_owned(),
            width,
            height,
            decoded,
            limit: limits.max_image_bytes,
        });
    }
    Ok(ImageInfo {
        format,
        width,
        height,
    })
}

/// JPEG quality when Bindery re-encodes a photo (turned upright, or a cover scaled down):
/// visually lossless at e-book sizes.
pub const JPEG_QUALITY: u8 = 88;

/// Phones store a portrait photo sideways with an EXIF note to turn it; browsers obey the
/// note, many e-readers do not. So a JPEG or PNG carrying such a note has its pixels turned
/// here and the note dropped; any other image comes back untouched. `info` is what [`probe`]
/// found (so the pixel limit has been checked before this decodes anything).
pub fn upright(
    name: &str,
    bytes: Vec<u8>,
    info: ImageInfo,
) -> Result<(ImageInfo, Vec<u8>), InputError> {
    if !matches!(info.format, ImageFormat::Jpeg | ImageFormat::Png) {
        return Ok((info, bytes));
    }
    let bad = |detail: String| InputError::BadImage {
        name: name.to_owned(),
        detail,
    };
    let turned = {
        let mut decoder = ImageReader::with_format(Cursor::new(&bytes), info.format)
            .into_decoder()
            .map_err(|e| bad(e.to_string()))?;
        let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
        if orientation == Orientation::NoTransforms {
            None
        } else {
            let mut decoded =
                DynamicImage::from_decoder(decoder).map_err(|e| bad(e.to_string()))?;
            decoded.apply_orientation(orientation);
            Some(decoded)
        }
    };
    let Some(decoded) = turned else {
        return Ok((info, bytes));
    };
    let mut out = Vec::new();
    match info.format {
        ImageFormat::Png => decoded.write_with_encoder(PngEncoder::new(&mut out)),
        _ => DynamicImage::ImageRgb8(decoded.to_rgb8())
            .write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)),
    }
    .map_err(|e| bad(e.to_string()))?;
    let turned = ImageInfo {
        width: decoded.width(),
        height: decoded.height(),
        ..info
    };
    Ok((turned, out))
}

/// Legacy vector formats Word embeds (EMF, WMF) and TIFF: real images that no e-reader
/// shows. Recognising them lets a reader drop them with a warning instead of failing.
pub fn is_known_unsupported(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x01, 0x00, 0x00, 0x00, ..] if bytes.get(40..44) == Some(b" EMF") => Some("EMF"),
        [0xD7, 0xCD, 0xC6, 0x9A, ..] | [0x01 | 0x02, 0x00, 0x09, 0x00, ..] => Some("WMF"),
        [b'I', b'I', 0x2A, 0x00, ..] | [b'M', b'M', 0x00, 0x2A, ..] => Some("TIFF"),
        [b'B', b'M', ..] => Some("BMP"),
        _ => None,
    }
}
