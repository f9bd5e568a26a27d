//! Home-screen icons: the cover letterboxed onto a square when it is a JPEG or PNG, else a
//! plain generated icon (an open book) in a colour of the book's own.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader, Limits, Rgba, RgbaImage, imageops};
use sha2::{Digest, Sha256};

/// A cover small enough for Bindery's cover step (1600×2560) decodes well inside this.
const MAX_DECODE_BYTES: u64 = 64 * 1024 * 1024;

/// A square source for the icons: the cover letterboxed, or the generated icon.
pub struct IconSource(RgbaImage);

impl IconSource {
    /// From the cover's bytes when they are a JPEG or PNG that decodes, else generated from
    /// `seed` (the book's identifier) so each book's icon has its own colour.
    pub fn new(cover: Option<(&str, &[u8])>, seed: &str) -> IconSource {
        cover
            .and_then(|(media_type, bytes)| decode_cover(media_type, bytes))
            .map(|img| IconSource(letterbox(&img)))
            .unwrap_or_else(|| IconSource(generated(seed, 512)))
    }

    /// The icon as a PNG of `size`×`size`.
    pub fn png(&self, size: u32) -> anyhow::Result<Vec<u8>> {
        let square = if self.0.width() == size {
            self.0.clone()
        } else {
            imageops::thumbnail(&self.0, size, size)
        };
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgba8(square).write_to(&mut out, ImageFormat::Png)?;
        Ok(out.into_inner())
    }
}

fn decode_cover(media_type: &str, bytes: &[u8]) -> Option<DynamicImage> {
    let format = match media_type {
        "image/jpeg" => ImageFormat::Jpeg,
        "image/png" => ImageFormat::Png,
        _ => return None,
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    reader
        .decode()
        .ok()
        .filter(|i| i.width() > 0 && i.height() > 0)
}

/// The cover scaled to fit a 512-pixel square, on a ground of its own average colour so the
/// bars read as part of the picture rather than as empty space.
fn letterbox(cover: &DynamicImage) -> RgbaImage {
    const SIZE: u32 = 512;
    let rgba = cover.to_rgba8();
    let ground = average(&rgba);
    let (w, h) = fit(rgba.width(), rgba.height(), SIZE);
    let scaled = imageops::thumbnail(&rgba, w, h);
    let mut square = RgbaImage::from_pixel(SIZE, SIZE, ground);
    imageops::overlay(
        &mut square,
        &scaled,
        i64::from((SIZE - w) / 2),
        i64::from((SIZE - h) / 2),
    );
    square
}

/// Largest size with the same proportions that fits in a `size` square (at least 1×1).
fn fit(width: u32, height: u32, size: u32) -> (u32, u32) {
    let (w, h) = (u64::from(width.max(1)), u64::from(height.max(1)));
    let s = u64::from(size);
    let (fw, fh) = if w >= h {
        (s, (h * s / w).max(1))
    } else {
        ((w * s / h).max(1), s)
    };
    (
        u32::try_from(fw).unwrap_or(size),
        u32::try_from(fh).unwrap_or(size),
    )
}

/// Mean colour of the image, opaque (the icon must not be see-through on a home screen).
fn average(img: &RgbaImage) -> Rgba<u8> {
    let mut sum = [0u64; 3];
    for p in img.pixels() {
        for (s, c) in sum.iter_mut().zip(p.0) {
            *s += u64::from(c);
        }
    }
    let n = u64::from(img.width()) * u64::from(img.height());
    let mean = |s: u64| u8::try_from(s / n.max(1)).unwrap_or(u8::MAX);
    Rgba([mean(sum[0]), mean(sum[1]), mean(sum[2]), 255])
}

/// An open book in paper colour on a ground whose hue comes from `seed`.
fn generated(seed: &str, size: u32) -> RgbaImage {
    let digest = Sha256::digest(seed.as_bytes());
    let hue = f32::from(u16::from(digest[0]) << 8 | u16::from(digest[1])) / 65536.0 * 360.0;
    let ground = hsl(hue, 0.42, 0.30);
    let paper = Rgba([251, 248, 242, 255]);
    let mut img = RgbaImage::from_pixel(size, size, ground);
    // Proportions of a 100-unit square; everything stays inside the central 80% so that a
    // platform that rounds or masks the icon does not cut the drawing.
    let unit = |v: u32| v * size / 100;
    let fill = |img: &mut RgbaImage, x0: u32, y0: u32, x1: u32, y1: u32, colour: Rgba<u8>| {
        for y in unit(y0)..unit(y1) {
            for x in unit(x0)..unit(x1) {
                img.put_pixel(x, y, colour);
            }
        }
    };
    // Two pages with the spine between them, and lines of text on each.
    fill(&mut img, 20, 28, 48, 72, paper);
    fill(&mut img, 52, 28, 80, 72, paper);
    for row in 0..5 {
        let y = 36 + row * 7;
        fill(&mut img, 25, y, 43, y + 2, ground);
        fill(
            &mut img,
            57,
            y,
            if row == 4 { 67 } else { 75 },
            y + 2,
            ground,
        );
    }
    img
}

fn hsl(hue: f32, saturation: f32, lightness: f32) -> Rgba<u8> {
    let [r, g, b] =
        crate::ebook::cover::hsl_rgb(f64::from(hue), f64::from(saturation), f64::from(lightness));
    Rgba([r, g, b, 255])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    fn png_cover(width: u32, height: u32) -> Vec<u8> {
        let img = RgbaImage::from_pixel(width, height, Rgba([200, 30, 30, 255]));
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgba8(img)
            .write_to(&mut out, ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    fn decoded(png: &[u8]) -> RgbaImage {
        image::load_from_memory(png).unwrap().to_rgba8()
    }

    #[test]
    fn a_tall_cover_is_letterboxed_onto_a_square() {
        let cover = png_cover(100, 160);
        let icon = decoded(
            &IconSource::new(Some(("image/png", &cover)), "x")
                .png(192)
                .unwrap(),
        );
        assert_eq!(icon.dimensions(), (192, 192));
        // The cover fills the middle; the bars take the cover's own colour, fully opaque.
        assert_eq!(icon.get_pixel(96, 96).0, [200, 30, 30, 255]);
        assert_eq!(icon.get_pixel(2, 96).0, [200, 30, 30, 255]);
    }

    #[test]
    fn svg_or_broken_covers_give_a_generated_icon() {
        let from_svg = IconSource::new(Some(("image/svg+xml", b"<svg/>")), "urn:a");
        let from_junk = IconSource::new(Some(("image/png", b"not a png")), "urn:a");
        let a = from_svg.png(512).unwrap();
        assert_eq!(a, from_junk.png(512).unwrap());
        assert_eq!(decoded(&a).dimensions(), (512, 512));
        let other_book = IconSource::new(None, "urn:b").png(512).unwrap();
        assert_ne!(a, other_book, "two books should not share an icon");
    }

    #[test]
    fn fitting_keeps_proportions() {
        assert_eq!(fit(1600, 2560, 512), (320, 512));
        assert_eq!(fit(2560, 1600, 512), (512, 320));
        assert_eq!(fit(1, 100_000, 512), (1, 512));
        assert_eq!(fit(0, 0, 512), (512, 512));
    }
}
