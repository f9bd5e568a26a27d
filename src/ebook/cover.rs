//! Covers: an uploaded JPEG or PNG, scaled to fit 1600×2560, or a generated typographic cover.

use std::fmt::Write as _;

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};
use sha2::{Digest, Sha256};

use super::xhtml::escape::{collapse, escaped};
use super::{BookMetadata, CoverInfo};
use crate::manuscript::image::{self as image_check, JPEG_QUALITY};
use crate::manuscript::{InputError, Limits};

/// Largest cover Bindery keeps; bigger uploads are scaled down to fit.
pub const MAX_WIDTH: u32 = 1600;
pub const MAX_HEIGHT: u32 = 2560;

/// Checks and scales an uploaded cover. Returns its description and the bytes to store.
pub fn prepare(
    name: &str,
    bytes: &[u8],
    limits: &Limits,
) -> Result<(CoverInfo, Vec<u8>), InputError> {
    let format = match image::guess_format(bytes) {
        Ok(f @ (ImageFormat::Jpeg | ImageFormat::Png)) => f,
        Ok(other) => {
            return Err(InputError::CoverFormat {
                name: name.to_owned(),
                detected: format!(
                    "a {} image",
                    other
                        .extensions_str()
                        .first()
                        .map_or("unknown", |e| e)
                        .to_uppercase()
                ),
            });
        }
        Err(_) => {
            return Err(InputError::CoverFormat {
                name: name.to_owned(),
                detected: describe(bytes).to_owned(),
            });
        }
    };
    // The header first: a huge image is refused before anything decodes it.
    let info = image_check::probe(name, bytes, limits)?;
    let bad = |detail: String| InputError::BadImage {
        name: name.to_owned(),
        detail,
    };
    let mut decoder = ImageReader::with_format(Cursor::new(bytes), format)
        .into_decoder()
        .map_err(|e| bad(e.to_string()))?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let (file_name, media_type) = match format {
        ImageFormat::Png => ("cover.png", "image/png"),
        _ => ("cover.jpg", "image/jpeg"),
    };
    let describe = |width, height| CoverInfo {
        file_name: file_name.into(),
        media_type: media_type.into(),
        width,
        height,
        generated: false,
    };
    let Some((width, height)) = scaled_size(info.width, info.height, orientation) else {
        // Within the bounds: as it is, or turned upright.
        drop(decoder);
        let (info, bytes) = image_check::upright(name, bytes.to_vec(), info)?;
        return Ok((describe(info.width, info.height), bytes));
    };
    // Scaled while it lies as stored, then turned: turning the large one would hold it twice.
    let decoded = DynamicImage::from_decoder(decoder).map_err(|e| bad(e.to_string()))?;
    let factor = f64::from(info.width) / f64::from(width);
    let mut scaled = if factor >= AREA_AVERAGE_FROM {
        // Each source pixel into one target pixel: nothing held beyond the two images.
        decoded.thumbnail_exact(width, height)
    } else {
        // Lanczos holds a float copy of the source's width by the target's height, which only
        // a source under 1.5 times the bounds keeps small.
        decoded.resize_exact(width, height, FilterType::Lanczos3)
    };
    drop(decoded);
    scaled.apply_orientation(orientation);
    let mut out = Vec::new();
    let encoded = match format {
        ImageFormat::Png => scaled.write_with_encoder(PngEncoder::new(&mut out)),
        _ => {
            let rgb = DynamicImage::ImageRgb8(scaled.to_rgb8());
            rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))
        }
    };
    encoded.map_err(|e| bad(e.to_string()))?;
    Ok((describe(scaled.width(), scaled.height()), out))
}

/// From this much larger than the bounds a cover is scaled by averaging the pixels each target
/// pixel covers, which is as sharp as Lanczos there and holds no float copy of the image (a
/// 5000×8000 cover's was 200 MB on top of its 160 MB of pixels, past the default budget).
const AREA_AVERAGE_FROM: f64 = 1.5;

/// The size to scale a cover of `width`×`height` pixels (as stored) to, so that turned by
/// `orientation` it fits 1600×2560 keeping its shape; `None` when it fits already.
fn scaled_size(width: u32, height: u32, orientation: Orientation) -> Option<(u32, u32)> {
    let sideways = matches!(
        orientation,
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    );
    // The bounds as the stored pixels lie.
    let (max_w, max_h) = if sideways {
        (MAX_HEIGHT, MAX_WIDTH)
    } else {
        (MAX_WIDTH, MAX_HEIGHT)
    };
    if width <= max_w && height <= max_h {
        return None;
    }
    Some(fitted(width, height, max_w, max_h))
}

/// `width`×`height` scaled, up or down, to the largest size within `max_w`×`max_h` of the
/// same shape.
fn fitted(width: u32, height: u32, max_w: u32, max_h: u32) -> (u32, u32) {
    let scale = (f64::from(max_w) / f64::from(width)).min(f64::from(max_h) / f64::from(height));
    let side = |n: u32, max: u32| ((f64::from(n) * scale).round() as u32).clamp(1, max);
    (side(width, max_w), side(height, max_h))
}

/// The largest thumbnail: twice the size the pages show a cover at, for sharp screens.
pub const THUMBNAIL_WIDTH: u32 = 240;
pub const THUMBNAIL_HEIGHT: u32 = 384;

/// A small copy of a prepared cover for the pages: a JPEG within 240×384, or a generated SVG
/// cover as it is (text, and sharp at any size). The same cover gives the same bytes.
pub fn thumbnail(cover: &CoverInfo, bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    if cover.media_type == "image/svg+xml" {
        return Ok(bytes.to_vec());
    }
    let decoded = image::load_from_memory(bytes)?;
    // `thumbnail` samples down in one pass: a fraction of a Lanczos resize's time, and at
    // this size no one sees the difference.
    let small = if decoded.width() > THUMBNAIL_WIDTH || decoded.height() > THUMBNAIL_HEIGHT {
        decoded.thumbnail(THUMBNAIL_WIDTH, THUMBNAIL_HEIGHT)
    } else {
        decoded
    };
    Ok(jpeg(small.to_rgb8())?)
}

/// The cover as the stores ask for it (KDP: a JPEG, ideally 1600×2560, in RGB), always
/// exactly 1600×2560: a generated cover drawn at that size with the fonts Bindery bundles
/// (never the machine's, so every server draws the same pixels); an uploaded one scaled to
/// fit (up or down, never stretched) and, when its shape is not the stores' 1:1.6, set on a
/// ground of its own edges' colour, in bands above and below (a wider cover) or at the sides
/// (a narrower one). Nothing of the cover is cut off. The same cover gives the same bytes.
pub fn store_jpeg(cover: &CoverInfo, bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let rgb = if cover.media_type == "image/svg+xml" {
        rasterise(bytes, STORE_WIDTH, STORE_HEIGHT)?
    } else if cover.media_type == "image/jpeg"
        && (cover.width, cover.height) == (STORE_WIDTH, STORE_HEIGHT)
    {
        // Already what the stores take.
        return Ok(bytes.to_vec());
    } else {
        fit_to_store(image::load_from_memory(bytes)?.to_rgb8())
    };
    Ok(jpeg(rgb)?)
}

/// `rgb` scaled to fit 1600×2560 and centred on a ground of the average colour of the edges
/// the bands meet (so a cover with a dark border gets dark bands).
fn fit_to_store(rgb: image::RgbImage) -> image::RgbImage {
    let (w, h) = rgb.dimensions();
    if (w, h) == (STORE_WIDTH, STORE_HEIGHT) {
        return rgb;
    }
    let (sw, sh) = fitted(w, h, STORE_WIDTH, STORE_HEIGHT);
    let scaled = image::imageops::resize(&rgb, sw, sh, FilterType::Lanczos3);
    drop(rgb);
    if (sw, sh) == (STORE_WIDTH, STORE_HEIGHT) {
        return scaled;
    }
    // The edges the bands touch: top and bottom rows for bands above and below, else the
    // left and right columns.
    let edge: Vec<&image::Rgb<u8>> = if sh < STORE_HEIGHT {
        (0..sw)
            .flat_map(|x| [scaled.get_pixel(x, 0), scaled.get_pixel(x, sh - 1)])
            .collect()
    } else {
        (0..sh)
            .flat_map(|y| [scaled.get_pixel(0, y), scaled.get_pixel(sw - 1, y)])
            .collect()
    };
    let mean = |c: usize| {
        let sum: u64 = edge.iter().map(|p| u64::from(p.0[c])).sum();
        (sum / edge.len().max(1) as u64) as u8
    };
    let ground = image::Rgb([mean(0), mean(1), mean(2)]);
    let mut canvas = image::RgbImage::from_pixel(STORE_WIDTH, STORE_HEIGHT, ground);
    image::imageops::overlay(
        &mut canvas,
        &scaled,
        i64::from((STORE_WIDTH - sw) / 2),
        i64::from((STORE_HEIGHT - sh) / 2),
    );
    canvas
}

/// `rgb` as a JPEG at Bindery's quality.
fn jpeg(rgb: image::RgbImage) -> image::ImageResult<Vec<u8>> {
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(rgb)
        .write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))?;
    Ok(out)
}

/// The size of the stores' cover: what KDP asks for.
pub const STORE_WIDTH: u32 = MAX_WIDTH;
pub const STORE_HEIGHT: u32 = MAX_HEIGHT;

/// The least KDP takes: below it an ebook's cover is refused.
pub const STORE_MIN_WIDTH: u32 = 1000;
pub const STORE_MIN_HEIGHT: u32 = 1600;

/// Report warnings for an uploaded cover that the stores' copy cannot show as it is: too
/// small for them (refused below KDP's least, soft below their size), or of another shape
/// (set on bands of its edge colour).
pub fn size_warnings(cover: &CoverInfo) -> Vec<crate::report::Warning> {
    use crate::report::Warning;
    if cover.generated {
        return Vec::new();
    }
    let (w, h) = (cover.width, cover.height);
    let mut warnings = Vec::new();
    if w < STORE_MIN_WIDTH || h < STORE_MIN_HEIGHT {
        warnings.push(Warning::new(
            "cover_small",
            format!(
                "The cover is {w}×{h} pixels, below the {STORE_MIN_WIDTH}×{STORE_MIN_HEIGHT} \
                 Kindle Direct Publishing accepts: the stores may refuse the ebook's cover. \
                 Upload one of {STORE_WIDTH}×{STORE_HEIGHT} pixels."
            ),
        ));
    } else if w < STORE_WIDTH && h < STORE_HEIGHT {
        warnings.push(Warning::new(
            "cover_small",
            format!(
                "The cover is {w}×{h} pixels; the stores' copy is scaled up to fit \
                 {STORE_WIDTH}×{STORE_HEIGHT} and may look soft. Upload one of \
                 {STORE_WIDTH}×{STORE_HEIGHT} pixels for the stores."
            ),
        ));
    }
    // Within half a percent of 1:1.6 is the same shape to the eye (1000×1600, 1563×2500).
    let ratio = f64::from(h) / f64::from(w.max(1));
    let wanted = f64::from(STORE_HEIGHT) / f64::from(STORE_WIDTH);
    if (ratio / wanted - 1.0).abs() > 0.005 {
        let bands = if ratio < wanted {
            "above and below"
        } else {
            "at the sides"
        };
        warnings.push(Warning::new(
            "cover_shape",
            format!(
                "The cover is {w}×{h} pixels, not the stores' shape (1:1.6, \
                 {STORE_WIDTH}×{STORE_HEIGHT}); their copy shows all of it, with bands of its \
                 edge colour {bands}. Upload a cover of that shape to fill it."
            ),
        ));
    }
    warnings
}

/// An SVG drawn on white at `width`×`height` pixels.
fn rasterise(svg: &[u8], width: u32, height: u32) -> anyhow::Result<image::RgbImage> {
    draw(&crate::svg::parse(svg)?, width, height)
}

/// `tree` drawn on white at `width`×`height` pixels.
fn draw(tree: &resvg::usvg::Tree, width: u32, height: u32) -> anyhow::Result<image::RgbImage> {
    use resvg::tiny_skia;
    let mut pixmap = tiny_skia::Pixmap::new(width, height)
        .ok_or_else(|| anyhow::anyhow!("a {width}×{height} canvas cannot be made"))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    let size = tree.size();
    let transform = tiny_skia::Transform::from_scale(
        width as f32 / size.width(),
        height as f32 / size.height(),
    );
    resvg::render(tree, transform, &mut pixmap.as_mut());
    // Opaque on white, so the premultiplied channels are the colours.
    let rgba = image::RgbaImage::from_raw(width, height, pixmap.take())
        .ok_or_else(|| anyhow::anyhow!("the drawn cover has the wrong size"))?;
    Ok(image::DynamicImage::ImageRgba8(rgba).to_rgb8())
}

/// The media type of a stored thumbnail, from its first bytes.
pub fn thumbnail_media_type(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "image/jpeg"
    } else if bytes.starts_with(b"\x89PNG") {
        "image/png"
    } else {
        "image/svg+xml"
    }
}

/// What a file that is not an image is, for the error message.
fn describe(bytes: &[u8]) -> &'static str {
    let head = &bytes[..bytes.len().min(512)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    if bytes.is_empty() {
        "an empty file"
    } else if bytes.starts_with(b"%PDF") {
        "a PDF document"
    } else if text.contains("<svg") {
        "an SVG drawing"
    } else if bytes.starts_with(b"PK\x03\x04") {
        "a zip archive"
    } else if crate::manuscript::image::is_known_unsupported(bytes).is_some() {
        "an image in a format ebooks do not support (EMF, WMF, TIFF or BMP)"
    } else {
        "not an image"
    }
}

/// A typographic cover (SVG) from the title and authors. The colours come from a hash of
/// the title, so every book looks different but the same book always looks the same.
pub fn generate(metadata: &BookMetadata) -> (CoverInfo, Vec<u8>) {
    let title = match collapse(&metadata.title) {
        t if t.is_empty() => "Untitled".to_owned(),
        t => t,
    };
    let subtitle = metadata
        .subtitle
        .as_deref()
        .map(collapse)
        .unwrap_or_default();
    let authors: Vec<String> = metadata
        .authors
        .iter()
        .map(|a| collapse(a))
        .filter(|a| !a.is_empty())
        .collect();
    let palette = Palette::from_title(&title);
    let font = "Georgia, 'Palatino Linotype', 'Times New Roman', serif";
    let (w, h) = (MAX_WIDTH, MAX_HEIGHT);
    let centre = w / 2;

    let mut svg = String::new();
    svg.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">"
    );
    let mut label = title.clone();
    if !authors.is_empty() {
        label = metadata.labels().fill(
            crate::labels::Key::TitleBy,
            &[("title", &label), ("authors", &authors.join(", "))],
        );
    }
    let _ = writeln!(svg, "<title>{}</title>", escaped(&label));
    let _ = writeln!(
        svg,
        "<rect width=\"{w}\" height=\"{h}\" fill=\"{}\"/>",
        palette.background
    );
    // A double frame.
    let _ = writeln!(
        svg,
        "<rect x=\"80\" y=\"80\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"8\"/>",
        w - 160,
        h - 160,
        palette.accent
    );
    let _ = writeln!(
        svg,
        "<rect x=\"112\" y=\"112\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
        w - 224,
        h - 224,
        palette.accent
    );

    let (size, lines) = fit_title(&title);
    let line_height = size * 6 / 5;
    let block = line_height * lines.len() as u32;
    let mut y = 1000u32.saturating_sub(block / 2).max(360) + size;
    for line in &lines {
        let _ = writeln!(
            svg,
            "<text x=\"{centre}\" y=\"{y}\" font-family=\"{font}\" font-size=\"{size}\" fill=\"{}\" text-anchor=\"middle\">{}</text>",
            palette.foreground,
            escaped(line)
        );
        y += line_height;
    }

    // Ornament: a rule broken by a diamond.
    let oy = y - line_height + size / 2 + 110;
    let _ = writeln!(
        svg,
        "<path d=\"M{} {oy} H{} M{} {oy} H{}\" stroke=\"{}\" stroke-width=\"4\"/>",
        centre - 360,
        centre - 60,
        centre + 60,
        centre + 360,
        palette.accent
    );
    let _ = writeln!(
        svg,
        "<path d=\"M{centre} {} L{} {oy} L{centre} {} L{} {oy} Z\" fill=\"{}\"/>",
        oy - 36,
        centre + 36,
        oy + 36,
        centre - 36,
        palette.accent
    );

    let mut y = oy + 170;
    if !subtitle.is_empty() {
        let (size, lines) = fit_subtitle(&subtitle);
        for line in lines {
            let _ = writeln!(
                svg,
                "<text x=\"{centre}\" y=\"{y}\" font-family=\"{font}\" font-size=\"{size}\" font-style=\"italic\" fill=\"{}\" text-anchor=\"middle\">{}</text>",
                palette.foreground,
                escaped(&line)
            );
            y += size * 5 / 4;
        }
    }

    if !authors.is_empty() {
        let names = authors.join(" · ");
        let lines = wrap(&names, caps_per_line(84, 6), 3);
        let mut y = 2280 - 104 * (lines.len() as u32).saturating_sub(1);
        for line in lines {
            let _ = writeln!(
                svg,
                "<text x=\"{centre}\" y=\"{y}\" font-family=\"{font}\" font-size=\"84\" letter-spacing=\"6\" fill=\"{}\" text-anchor=\"middle\">{}</text>",
                palette.foreground,
                escaped(&line.to_uppercase())
            );
            y += 104;
        }
    }
    svg.push_str("</svg>\n");
    (
        CoverInfo {
            file_name: "cover.svg".into(),
            media_type: "image/svg+xml".into(),
            width: w,
            height: h,
            generated: true,
        },
        svg.into_bytes(),
    )
}

/// Characters that fit on a line of the cover at `size` pixels: the frame leaves 1240
/// pixels, and a serif's lower case averages a little over half an em.
fn chars_per_line(size: u32) -> usize {
    (1240 * 100 / (size * 55)) as usize
}

/// The same for spaced capitals (the authors' line), which run wider.
fn caps_per_line(size: u32, spacing: u32) -> usize {
    (1240 * 100 / (size * 70 + spacing * 100)) as usize
}

/// The largest title size at which the title takes at most five lines, or else at most nine
/// at a smaller size: the longest title allowed (`bounds::MAX_TITLE_CHARS`) fits whole.
fn fit_title(title: &str) -> (u32, Vec<String>) {
    for size in [180, 160, 140, 120, 104, 92] {
        let lines = wrap(title, chars_per_line(size), usize::MAX);
        if lines.len() <= 5 {
            return (size, lines);
        }
    }
    for size in [80, 72] {
        let lines = wrap(title, chars_per_line(size), usize::MAX);
        if lines.len() <= 9 {
            return (size, lines);
        }
    }
    (64, wrap(title, chars_per_line(64), 10))
}

/// The subtitle's size: 72 pixels on up to four lines, smaller for a long one, so that the
/// longest allowed fits whole in the room between the ornament and the authors.
fn fit_subtitle(subtitle: &str) -> (u32, Vec<String>) {
    for size in [72, 60] {
        let lines = wrap(subtitle, chars_per_line(size), usize::MAX);
        if lines.len() <= 4 {
            return (size, lines);
        }
    }
    (48, wrap(subtitle, chars_per_line(48), 6))
}

/// Greedy word wrap into at most `max_lines` lines of `width` characters; words longer
/// than a line are broken, and text past the last line ends in an ellipsis.
fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let width = width.max(4);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let chars: Vec<char> = word.chars().collect();
        for piece in chars.chunks(width) {
            let piece: String = piece.iter().collect();
            let len = line.chars().count();
            if len > 0 && len + 1 + piece.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&piece);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            let kept: String = last.chars().take(width.saturating_sub(1)).collect();
            *last = format!("{kept}…");
        }
    }
    lines
}

/// Cover colours: a dark background of a hue taken from the title, light type, and an
/// accent of a neighbouring hue.
struct Palette {
    background: String,
    foreground: String,
    accent: String,
}

impl Palette {
    fn from_title(title: &str) -> Palette {
        let digest = Sha256::digest(title.as_bytes());
        let hue = f64::from(u16::from_be_bytes([digest[0], digest[1]]) % 360);
        let saturation = 0.30 + f64::from(digest[2] % 30) / 100.0;
        let lightness = 0.16 + f64::from(digest[3] % 10) / 100.0;
        Palette {
            background: hsl(hue, saturation, lightness),
            foreground: hsl(hue, 0.30, 0.93),
            accent: hsl((hue + 35.0) % 360.0, 0.55, 0.66),
        }
    }
}

/// `#rrggbb` for a hue in degrees, saturation and lightness in 0–1.
fn hsl(hue: f64, saturation: f64, lightness: f64) -> String {
    let [r, g, b] = hsl_rgb(hue, saturation, lightness);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// RGB bytes for a hue in degrees, saturation and lightness in 0–1 (covers and reader icons
/// draw their colours the same way).
pub(crate) fn hsl_rgb(hue: f64, saturation: f64, lightness: f64) -> [u8; 3] {
    let c = (1.0 - (2.0 * lightness - 1.0).abs()) * saturation;
    let h = hue / 60.0;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = lightness - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    [byte(r), byte(g), byte(b)]
}

#[cfg(test)]
mod tests;
