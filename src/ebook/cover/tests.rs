//! Covers: the stores' copy, the warnings, the generated design and uploads scaled.
use super::*;
use crate::ebook::xhtml::fixture;

#[test]
fn the_store_cover_of_a_generated_cover_is_a_1600_by_2560_rgb_jpeg_with_its_words_drawn() {
    let book = fixture::book();
    let (info, svg) = generate(&book.metadata);
    let jpeg = store_jpeg(&info, &svg).expect("drawn");
    assert!(jpeg.starts_with(&[0xFF, 0xD8, 0xFF]), "a JPEG");
    let decoded = image::load_from_memory(&jpeg).expect("decodes");
    assert_eq!((decoded.width(), decoded.height()), (1600, 2560));
    assert_eq!(decoded.color(), image::ColorType::Rgb8);
    assert_eq!(
        store_jpeg(&info, &svg).expect("drawn"),
        jpeg,
        "deterministic"
    );
    // The words are drawn with the bundled fonts: without its text the cover differs
    // where the title is (a machine without fonts would silently draw no text at all).
    let text = without_text(&String::from_utf8(svg.clone()).expect("UTF-8"));
    let bare = rasterise(text.as_bytes(), 160, 256).expect("drawn");
    let drawn = rasterise(&svg, 160, 256).expect("drawn");
    let changed = differing(&drawn, &bare);
    assert!(changed > 400, "only {changed} pixels of text drawn");
}

/// The longest title and subtitle allowed, with many authors: every word is drawn, and
/// nothing runs into the next block or off the frame.
#[test]
fn the_generated_cover_shows_the_longest_title_and_subtitle_whole() {
    use crate::ebook::metadata::bounds::{MAX_TITLE_CHARS, shortened};
    let words = |seed: &str| {
        let long = (1..)
            .map(|n| format!("{seed}{n}"))
            .take(60)
            .collect::<Vec<_>>()
            .join(" ");
        shortened(&long, MAX_TITLE_CHARS)
            .trim_end_matches('…')
            .to_owned()
    };
    let mut metadata = fixture::book().metadata;
    metadata.title = words("Title");
    metadata.subtitle = Some(words("Sub"));
    metadata.authors = vec!["Ann Author".into(), "Ben Writer".into(), "Cy Scribe".into()];
    assert!(metadata.title.chars().count() > MAX_TITLE_CHARS - 10);
    let (_, svg) = generate(&metadata);
    let svg = String::from_utf8(svg).expect("UTF-8");
    let texts: Vec<(u32, &str)> = svg
        .lines()
        .filter(|l| l.starts_with("<text"))
        .map(|l| {
            let y = l.split("y=\"").nth(1).and_then(|r| r.split('"').next());
            let text = l.split('>').nth(1).and_then(|r| r.split('<').next());
            (
                y.and_then(|y| y.parse().ok()).expect("y"),
                text.expect("text"),
            )
        })
        .collect();
    let drawn: String = texts.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(" ");
    assert!(!drawn.contains('…'), "something was cut: {drawn}");
    for word in metadata
        .title
        .split(' ')
        .chain(metadata.subtitle.as_deref().unwrap_or("").split(' '))
    {
        assert!(drawn.split(' ').any(|w| w == word), "{word} is not drawn");
    }
    // Top to bottom in order, inside the frame's inner line (112 to 2448).
    let ys: Vec<u32> = texts.iter().map(|(y, _)| *y).collect();
    assert!(ys.windows(2).all(|w| w[0] < w[1]), "lines overlap: {ys:?}");
    assert!(
        ys[0] > 200 && *ys.last().expect("lines") < 2448 - 60,
        "{ys:?}"
    );
}

/// How many pixels of two drawings of one size differ.
fn differing(a: &image::RgbImage, b: &image::RgbImage) -> usize {
    a.pixels().zip(b.pixels()).filter(|(a, b)| a != b).count()
}

/// The SVG without its `<text>` elements.
fn without_text(svg: &str) -> String {
    svg.lines()
        .filter(|line| !line.starts_with("<text"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_uploaded_cover_the_stores_cannot_take_as_it_is_is_named_with_its_size() {
    let cover = |width, height| CoverInfo {
        file_name: "cover.jpg".into(),
        media_type: "image/jpeg".into(),
        width,
        height,
        generated: false,
    };
    let codes =
        |c: CoverInfo| -> Vec<String> { size_warnings(&c).into_iter().map(|w| w.code).collect() };
    // Below KDP's least: refused there, and said so with its size.
    let tiny = size_warnings(&cover(800, 1200));
    assert_eq!(tiny[0].code, "cover_small");
    assert!(
        tiny[0].message.contains("800×1200") && tiny[0].message.contains("refuse"),
        "{}",
        tiny[0].message
    );
    // Above it, smaller than the stores' size: soft, never "refused".
    let soft = size_warnings(&cover(1400, 2100));
    assert!(
        soft.iter().all(|w| !w.message.contains("refuse")),
        "{soft:?}"
    );
    assert_eq!(codes(cover(1400, 2100)), ["cover_small", "cover_shape"]);
    assert_eq!(codes(cover(1000, 1600)), ["cover_small"]);
    assert!(codes(cover(1600, 2560)).is_empty());
    assert_eq!(codes(cover(1600, 2400)), ["cover_shape"]);
    let generated = CoverInfo {
        generated: true,
        ..cover(800, 1200)
    };
    assert!(
        codes(generated).is_empty(),
        "Bindery's own is the right size"
    );
}

/// An uploaded cover of another size and shape: the stores' copy is 1600×2560, the cover
/// scaled whole (not stretched) and centred on bands of its edge colour.
#[test]
fn the_store_cover_of_an_upload_is_1600_by_2560_scaled_whole_with_bands_of_its_edge() {
    // 1400×2100 (2:3): scaled to 1600×2400, with 80 px bands above and below.
    let picture = image::RgbImage::from_fn(1400, 2100, |x, _| {
        if x < 700 {
            image::Rgb([200, 30, 30])
        } else {
            image::Rgb([30, 30, 200])
        }
    });
    let mut bytes = Vec::new();
    image::DynamicImage::ImageRgb8(picture)
        .write_with_encoder(JpegEncoder::new_with_quality(&mut bytes, 95))
        .expect("encode");
    let info = CoverInfo {
        file_name: "cover.jpg".into(),
        media_type: "image/jpeg".into(),
        width: 1400,
        height: 2100,
        generated: false,
    };
    let store = image::load_from_memory(&store_jpeg(&info, &bytes).expect("store cover"))
        .expect("decodes")
        .to_rgb8();
    assert_eq!(store.dimensions(), (1600, 2560));
    let near = |p: &image::Rgb<u8>, q: [u8; 3]| p.0.iter().zip(q).all(|(a, b)| a.abs_diff(b) < 24);
    // The picture spans the width: red at the left, blue at the right, mid-height.
    assert!(near(store.get_pixel(10, 1280), [200, 30, 30]));
    assert!(near(store.get_pixel(1590, 1280), [30, 30, 200]));
    // The bands (the top 80 rows) are the edge's average, a purple, not white or black.
    let band = store.get_pixel(800, 20);
    assert!(near(band, [115, 30, 115]), "the band is {band:?}");
    assert_eq!(
        store_jpeg(&info, &bytes).expect("again"),
        store_jpeg(&info, &bytes).expect("again"),
        "deterministic"
    );
}

fn encode(width: u32, height: u32, format: ImageFormat) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(picture)
        .write_to(&mut std::io::Cursor::new(&mut out), format)
        .expect("test setup");
    out
}

#[test]
fn thumbnails_are_small_jpegs_or_the_generated_svg() {
    let png = encode(1600, 2400, ImageFormat::Png);
    let (info, bytes) = prepare("c.png", &png, &Limits::default()).expect("test setup");
    let small = thumbnail(&info, &bytes).expect("a thumbnail");
    assert_eq!(thumbnail_media_type(&small), "image/jpeg");
    let decoded = image::load_from_memory(&small).expect("a JPEG");
    assert_eq!((decoded.width(), decoded.height()), (240, 360));
    assert_eq!(
        thumbnail(&info, &bytes).expect("again"),
        small,
        "not reproducible"
    );

    let (info, svg) = generate(&fixture::book().metadata);
    let same = thumbnail(&info, &svg).expect("the SVG");
    assert_eq!(same, svg);
    assert_eq!(thumbnail_media_type(&same), "image/svg+xml");
}

#[test]
fn a_cover_within_bounds_keeps_its_bytes() {
    let png = encode(400, 600, ImageFormat::Png);
    let (info, bytes) = prepare("c.png", &png, &Limits::default()).expect("test setup");
    assert_eq!(bytes, png);
    assert_eq!(
        (info.file_name.as_str(), info.width, info.height),
        ("cover.png", 400, 600)
    );
    assert!(!info.generated);
}

#[test]
fn a_large_cover_is_scaled_to_fit_keeping_its_shape() {
    let jpeg = encode(3200, 400, ImageFormat::Jpeg);
    let (info, bytes) = prepare("wide.jpg", &jpeg, &Limits::default()).expect("test setup");
    assert_eq!((info.width, info.height), (1600, 200));
    assert_eq!(info.media_type, "image/jpeg");
    let decoded = image::load_from_memory(&bytes).expect("test setup");
    assert_eq!((decoded.width(), decoded.height()), (1600, 200));
    // Deterministic: the same upload gives the same bytes.
    assert_eq!(
        prepare("wide.jpg", &jpeg, &Limits::default())
            .expect("test setup")
            .1,
        bytes
    );

    let tall = encode(300, 5120, ImageFormat::Png);
    let (info, bytes) = prepare("tall.png", &tall, &Limits::default()).expect("test setup");
    assert_eq!(
        (info.width, info.height, info.file_name.as_str()),
        (150, 2560, "cover.png")
    );
    assert!(bytes.starts_with(b"\x89PNG"));
}

#[test]
fn a_photo_stored_sideways_is_turned_upright() {
    let jpeg = crate::test_support::sideways_photo();
    let (info, out) = prepare("phone.jpg", &jpeg, &Limits::default()).expect("accepted");
    assert_eq!((info.width, info.height), (200, 300), "now portrait");
    crate::test_support::assert_upright(&out);
}

#[test]
fn the_novels_cover_is_accepted() {
    let path = crate::test_support::fixture("love-among-the-chickens-cover.jpg");
    let bytes = std::fs::read(path).expect("test setup");
    let (info, out) = prepare("cover.jpg", &bytes, &Limits::default()).expect("test setup");
    assert_eq!(info.file_name, "cover.jpg");
    assert!(info.width <= MAX_WIDTH && info.height <= MAX_HEIGHT);
    assert!(image::load_from_memory(&out).is_ok());
}

#[test]
fn other_formats_and_huge_images_are_refused_by_name() {
    let gif = encode(10, 10, ImageFormat::Gif);
    let err = prepare("c.gif", &gif, &Limits::default()).expect_err("must be refused");
    assert_eq!(err.code(), "cover_format");
    assert!(err.to_string().contains("GIF"), "{err}");
    let err = prepare("c.pdf", b"%PDF-1.4 ...", &Limits::default()).expect_err("must be refused");
    assert!(err.to_string().contains("PDF"), "{err}");
    let err = prepare(
        "c.svg",
        b"<svg xmlns='http://www.w3.org/2000/svg'/>",
        &Limits::default(),
    )
    .expect_err("must be refused");
    assert!(err.to_string().contains("SVG"), "{err}");
    let limits = Limits {
        max_image_pixels: 100,
        ..Limits::default()
    };
    let err =
        prepare("c.png", &encode(20, 20, ImageFormat::Png), &limits).expect_err("must be refused");
    assert_eq!(err.code(), "image_too_large");
    let mut truncated = encode(300, 300, ImageFormat::Jpeg);
    truncated.truncate(200);
    assert!(prepare("c.jpg", &truncated, &Limits::default()).is_err());
}

/// An image is also held to what it takes once decoded, its depth counted: sixteen bits a
/// channel take eight bytes a pixel. Refused from the header, naming the size and what to do.
#[test]
fn an_image_too_large_once_decoded_is_refused_from_its_header() {
    let deep = image::DynamicImage::ImageRgba16(image::ImageBuffer::new(20, 20));
    let mut png = Vec::new();
    deep.write_to(&mut std::io::Cursor::new(&mut png), ImageFormat::Png)
        .expect("PNG");
    let limits = Limits {
        max_image_bytes: 20 * 20 * 8 - 1,
        ..Limits::default()
    };
    let err = prepare("deep.png", &png, &limits).expect_err("must be refused");
    assert_eq!(err.code(), "image_too_large");
    let said = err.to_string();
    assert!(
        said.contains("20×20") && said.contains("8 bits a channel"),
        "{said}"
    );
    let roomy = Limits {
        max_image_bytes: 20 * 20 * 8,
        ..Limits::default()
    };
    prepare("deep.png", &png, &roomy).expect("within the bound");
}

/// A cover many times the bounds is scaled by averaging (no float copy of it), keeping its
/// shape; one turned by its EXIF note is scaled as it lies, then turned.
#[test]
fn a_cover_many_times_the_bounds_is_scaled_to_fit_them() {
    let big = encode(4800, 7680, ImageFormat::Png);
    let (info, bytes) = prepare("big.png", &big, &Limits::default()).expect("scaled");
    assert_eq!((info.width, info.height), (1600, 2560));
    let decoded = image::load_from_memory(&bytes).expect("PNG");
    assert_eq!((decoded.width(), decoded.height()), (1600, 2560));
    assert_eq!(
        scaled_size(7680, 4800, Orientation::Rotate90),
        Some((2560, 1600)),
        "sideways, it fits the bounds turned"
    );
    assert_eq!(scaled_size(1600, 2560, Orientation::NoTransforms), None);
    assert_eq!(scaled_size(2560, 1600, Orientation::Rotate270), None);
}

#[test]
fn a_generated_cover_is_deterministic_escaped_svg_that_differs_by_title() {
    let mut metadata = fixture::metadata();
    metadata.title = "A Very Long Title <with> & Markup That Needs Several Lines To Fit".into();
    let (info, svg) = generate(&metadata);
    assert!(info.generated);
    assert_eq!(
        (info.file_name.as_str(), info.media_type.as_str()),
        ("cover.svg", "image/svg+xml")
    );
    assert_eq!(generate(&metadata).1, svg);
    let svg = String::from_utf8(svg).expect("test setup");
    assert!(svg.contains("&lt;with&gt; &amp;"));
    assert!(svg.contains("P. G. WODEHOUSE"));
    assert!(svg.contains("font-family=\"Georgia"));
    fixture::assert_well_formed(&svg);
    let mut other = metadata.clone();
    other.title = "Something Else".into();
    let other_svg = String::from_utf8(generate(&other).1).expect("test setup");
    let fill = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("<rect width"))
            .expect("test setup")
            .to_owned()
    };
    assert_ne!(fill(&svg), fill(&other_svg));
    // A title of one enormous word still fits (broken, with an ellipsis when too long).
    other.title = "x".repeat(5000);
    let huge = String::from_utf8(generate(&other).1).expect("test setup");
    assert!(huge.matches("<text").count() < 20);
}

/// A Japanese title on the generated cover is drawn in the system's Japanese face: the stores'
/// JPEG shows its characters, where the bundled fonts alone leave the title's place empty.
/// Needs Debian's `fonts-noto-cjk`, which `scripts/test` installs.
#[test]
fn a_japanese_title_is_drawn_on_the_stores_cover() {
    let scripts = crate::script_fonts::scripts_in("灯台守");
    if crate::script_fonts::files(&scripts, false).is_empty() {
        assert!(
            std::env::var_os("BINDERY_TEST_REQUIRE_ALL").is_none(),
            "no NotoSerifCJK-Regular.ttc under /usr/share/fonts: install fonts-noto-cjk"
        );
        return;
    }
    let mut metadata = fixture::book().metadata;
    metadata.title = "灯台守の一年".into();
    metadata.language = "ja".into();
    let (_, svg) = generate(&metadata);
    let svg_text = String::from_utf8(svg.clone()).expect("UTF-8");
    let bare = draw(
        &crate::svg::parse_with(&svg, crate::svg::fonts()).expect("parsed"),
        160,
        256,
    )
    .expect("drawn");
    let drawn = rasterise(&svg, 160, 256).expect("drawn");
    let changed = differing(&drawn, &bare);
    assert!(
        changed > 200,
        "the system's face changed only {changed} pixels: the title is not drawn"
    );
    let db = crate::svg::fonts_for(&svg_text);
    assert!(
        db.faces().any(|f| f
            .families
            .iter()
            .any(|(name, _)| name == "Noto Serif CJK JP")),
        "the cover's fonts lack the Japanese face"
    );
}
