//! What a printer's preflight reads in a PDF, read back from the file itself: its pages and
//! their boxes, its fonts' programs, each image's resolution where it is printed, transparency,
//! colour spaces, bookmarks, encryption and the PDF/X standard it claims.

use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId};

/// Points to the inch.
const PT: f64 = 72.0;
/// The most bytes of a page's content read: far more than any book's page holds.
const MAX_CONTENT_BYTES: usize = 64 << 20;
/// Form XObjects nest no deeper than this before the walk stops descending.
const MAX_FORM_DEPTH: usize = 12;

/// A PDF as a printer's preflight sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PdfFacts {
    pub pages: u32,
    /// The first page's trim box (else its media box) and media box, in inches.
    pub trim: (f64, f64),
    pub media: (f64, f64),
    /// How many pages' trim differs from the first's.
    pub uneven_pages: u32,
    /// Fonts the file uses without their programs, by name.
    pub fonts_not_embedded: Vec<String>,
    /// The image printed at the lowest resolution.
    pub lowest_image: Option<ImageResolution>,
    /// Soft masks, constant alpha below 1, blend modes or transparency groups.
    pub transparency: bool,
    /// Colour in RGB (device, calibrated or ICC-based).
    pub rgb: bool,
    /// Colour spaces that are not the device's own (ICC-based, calibrated, Lab).
    pub device_independent_colour: bool,
    /// An outline (bookmarks).
    pub bookmarks: bool,
    pub encrypted: bool,
    /// The PDF/X standard the file claims (its document information's `GTS_PDFXConformance`,
    /// else its `GTS_PDFXVersion`).
    pub pdfx: Option<String>,
}

/// An image where it is printed.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageResolution {
    /// Pixels per inch, the lower of across and down.
    pub dpi: f64,
    /// Its page, from 1.
    pub page: u32,
    pub pixels: (i64, i64),
}

impl PdfFacts {
    /// Reads `bytes` as a printer would.
    pub fn read(bytes: &[u8]) -> anyhow::Result<PdfFacts> {
        let doc = Document::load_mem(bytes)?;
        let mut facts = PdfFacts {
            encrypted: doc.is_encrypted(),
            ..PdfFacts::default()
        };
        let pages = doc.get_pages();
        facts.pages = u32::try_from(pages.len())?;
        let mut first_trim = None;
        for (&number, &page) in &pages {
            let dict = doc.get_dictionary(page)?;
            let media = rect(&doc, dict.get(b"MediaBox").ok()).unwrap_or_default();
            let trim = rect(&doc, dict.get(b"TrimBox").ok()).unwrap_or(media);
            let trim = inches(trim);
            match first_trim {
                None => {
                    first_trim = Some(trim);
                    facts.trim = trim;
                    facts.media = inches(media);
                }
                Some(first) if !same_size(first, trim) => facts.uneven_pages += 1,
                Some(_) => {}
            }
            let resources = page_resources(&doc, page);
            let content = doc
                .get_page_content_with_limit(page, MAX_CONTENT_BYTES)
                .unwrap_or_default();
            walk(&doc, &content, &resources, IDENTITY, number, 0, &mut facts)?;
        }
        for object in doc.objects.values() {
            let dict = match object {
                Object::Dictionary(d) => d,
                Object::Stream(s) => &s.dict,
                _ => continue,
            };
            look_at(&doc, dict, &mut facts);
        }
        facts.fonts_not_embedded.sort();
        facts.fonts_not_embedded.dedup();
        let catalog = doc.catalog()?;
        facts.bookmarks = catalog
            .get(b"Outlines")
            .and_then(|o| doc.dereference(o))
            .ok()
            .and_then(|(_, o)| o.as_dict().ok())
            .is_some_and(|outlines| outlines.has(b"First"));
        let info = doc
            .trailer
            .get(b"Info")
            .and_then(|info| doc.dereference(info))
            .ok()
            .and_then(|(_, info)| info.as_dict().ok());
        let said = |key: &[u8]| {
            info.and_then(|info| info.get(key).ok())
                .and_then(|v| v.as_str().ok())
                .map(|v| String::from_utf8_lossy(v).into_owned())
        };
        // PDF/X-1a names its conformance level apart from the version (`PDF/X-1:2001`).
        facts.pdfx = said(b"GTS_PDFXConformance").or_else(|| said(b"GTS_PDFXVersion"));
        Ok(facts)
    }
}

/// What one object says of fonts, transparency and colour.
fn look_at(doc: &Document, dict: &Dictionary, facts: &mut PdfFacts) {
    let name = |key: &[u8]| dict.get(key).and_then(Object::as_name).ok();
    if name(b"Type") == Some(b"Font")
        && let Some(missing) = font_without_program(doc, dict)
    {
        facts.fonts_not_embedded.push(missing);
    }
    // An extended graphics state that blends, fades or masks.
    let faded = |key: &[u8]| dict.get(key).ok().and_then(number).is_some_and(|a| a < 1.0);
    if faded(b"CA") || faded(b"ca") {
        facts.transparency = true;
    }
    if dict
        .get(b"SMask")
        .is_ok_and(|mask| mask.as_name().ok() != Some(b"None"))
    {
        facts.transparency = true;
    }
    if name(b"BM").is_some_and(|mode| mode != b"Normal" && mode != b"Compatible") {
        facts.transparency = true;
    }
    if name(b"S") == Some(b"Transparency") {
        facts.transparency = true;
    }
    // Colour spaces, wherever they are named: resources, images, shadings.
    if let Ok(space) = dict.get(b"ColorSpace") {
        colour_space(doc, space, facts, 0);
    }
    if let Ok(Object::Dictionary(spaces)) = dict
        .get(b"Resources")
        .and_then(|r| doc.dereference(r))
        .map(|(_, r)| r)
        .and_then(Object::as_dict)
        .and_then(|r| r.get(b"ColorSpace"))
        .and_then(|c| doc.dereference(c))
        .map(|(_, c)| c)
    {
        for (_, space) in spaces.iter() {
            colour_space(doc, space, facts, 0);
        }
    }
}

/// A font's name when its program is not in the file. Type 3 fonts are drawn by the file's
/// own procedures; a composite font's program is its descendant's.
fn font_without_program(doc: &Document, font: &Dictionary) -> Option<String> {
    let subtype = font.get(b"Subtype").and_then(Object::as_name).ok()?;
    let named = || {
        font.get(b"BaseFont")
            .and_then(Object::as_name)
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_else(|_| "a font with no name".to_owned())
    };
    match subtype {
        b"Type3" => None,
        b"Type0" => {
            let descendant = font
                .get(b"DescendantFonts")
                .and_then(|d| doc.dereference(d))
                .ok()
                .and_then(|(_, d)| d.as_array().ok())
                .and_then(|d| d.first())
                .and_then(|d| doc.dereference(d).ok())
                .and_then(|(_, d)| d.as_dict().ok());
            match descendant {
                Some(descendant) => font_without_program(doc, descendant),
                None => Some(named()),
            }
        }
        _ => {
            let descriptor = font
                .get(b"FontDescriptor")
                .and_then(|d| doc.dereference(d))
                .ok()
                .and_then(|(_, d)| d.as_dict().ok());
            let embedded = descriptor
                .is_some_and(|d| d.has(b"FontFile") || d.has(b"FontFile2") || d.has(b"FontFile3"));
            (!embedded).then(named)
        }
    }
}

/// Marks what `space` is: RGB, or not the device's own.
fn colour_space(doc: &Document, space: &Object, facts: &mut PdfFacts, depth: usize) {
    if depth > 4 {
        return;
    }
    let Ok((_, space)) = doc.dereference(space) else {
        return;
    };
    match space {
        Object::Name(name) if name == b"DeviceRGB" => facts.rgb = true,
        Object::Array(parts) => {
            let Some(family) = parts.first().and_then(|f| f.as_name().ok()) else {
                return;
            };
            match family {
                b"ICCBased" => {
                    facts.device_independent_colour = true;
                    let components = parts
                        .get(1)
                        .and_then(|s| doc.dereference(s).ok())
                        .and_then(|(_, s)| s.as_stream().ok())
                        .and_then(|s| s.dict.get(b"N").ok())
                        .and_then(|n| n.as_i64().ok());
                    if components == Some(3) {
                        facts.rgb = true;
                    }
                }
                b"CalRGB" => {
                    facts.device_independent_colour = true;
                    facts.rgb = true;
                }
                b"CalGray" | b"Lab" => facts.device_independent_colour = true,
                // The alternate space, and an indexed space's base, are what prints.
                b"Indexed" => {
                    if let Some(base) = parts.get(1) {
                        colour_space(doc, base, facts, depth + 1);
                    }
                }
                b"Separation" | b"DeviceN" => {
                    if let Some(alternate) = parts.get(2) {
                        colour_space(doc, alternate, facts, depth + 1);
                    }
                }
                b"Pattern" => {
                    if let Some(under) = parts.get(1) {
                        colour_space(doc, under, facts, depth + 1);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// A transformation matrix, `[a b c d e f]`.
type Matrix = [f64; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `m` then `n`: the matrix that maps as `m` and then as `n`.
fn then(m: Matrix, n: Matrix) -> Matrix {
    [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]
}

/// Runs a content stream's graphics state as far as images need it: each image drawn is
/// measured where it lands, each form drawn is walked in turn; and the operators that paint in
/// RGB are noted.
fn walk(
    doc: &Document,
    content: &[u8],
    resources: &Dictionary,
    start: Matrix,
    page: u32,
    depth: usize,
    facts: &mut PdfFacts,
) -> anyhow::Result<()> {
    // A stream that does not decode is the printer's to refuse; nothing more is learnt here.
    let Ok(content) = Content::decode(content) else {
        return Ok(());
    };
    let mut ctm = start;
    let mut saved = Vec::new();
    for op in &content.operations {
        match op.operator.as_str() {
            "q" => saved.push(ctm),
            "Q" => ctm = saved.pop().unwrap_or(start),
            "cm" => {
                if let Some(m) = matrix(&op.operands) {
                    ctm = then(m, ctm);
                }
            }
            "rg" | "RG" => facts.rgb = true,
            "Do" => {
                let Some(name) = op.operands.first().and_then(|n| n.as_name().ok()) else {
                    continue;
                };
                let Some(xobject) = resources
                    .get(b"XObject")
                    .and_then(|x| doc.dereference(x))
                    .ok()
                    .and_then(|(_, x)| x.as_dict().ok())
                    .and_then(|x| x.get(name).ok())
                    .and_then(|x| doc.dereference(x).ok())
                    .and_then(|(_, x)| x.as_stream().ok())
                else {
                    continue;
                };
                let dict = &xobject.dict;
                match dict.get(b"Subtype").and_then(Object::as_name).ok() {
                    Some(b"Image") => measure_image(dict, ctm, page, facts),
                    Some(b"Form") if depth < MAX_FORM_DEPTH => {
                        let form = dict
                            .get(b"Matrix")
                            .ok()
                            .and_then(|m| m.as_array().ok())
                            .and_then(|m| matrix(m))
                            .unwrap_or(IDENTITY);
                        let own = dict
                            .get(b"Resources")
                            .and_then(|r| doc.dereference(r))
                            .ok()
                            .and_then(|(_, r)| r.as_dict().ok())
                            .unwrap_or(resources);
                        let bytes = xobject
                            .decompressed_content()
                            .unwrap_or_else(|_| xobject.content.clone());
                        walk(doc, &bytes, own, then(form, ctm), page, depth + 1, facts)?;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// An image drawn into the unit square under `ctm`: its pixels over the inches it covers.
fn measure_image(dict: &Dictionary, ctm: Matrix, page: u32, facts: &mut PdfFacts) {
    // A stencil mask is a shape, not a picture.
    if dict
        .get(b"ImageMask")
        .and_then(Object::as_bool)
        .unwrap_or(false)
    {
        return;
    }
    let size = |key: &[u8]| dict.get(key).and_then(Object::as_i64).ok();
    let (Some(w), Some(h)) = (size(b"Width"), size(b"Height")) else {
        return;
    };
    let across = ctm[0].hypot(ctm[1]) / PT;
    let down = ctm[2].hypot(ctm[3]) / PT;
    if across <= 0.0 || down <= 0.0 {
        return;
    }
    let dpi = (w as f64 / across).min(h as f64 / down);
    if facts.lowest_image.as_ref().is_none_or(|low| dpi < low.dpi) {
        facts.lowest_image = Some(ImageResolution {
            dpi,
            page,
            pixels: (w, h),
        });
    }
}

fn matrix(operands: &[Object]) -> Option<Matrix> {
    let values: Vec<f64> = operands.iter().filter_map(number).collect();
    <[f64; 6]>::try_from(values).ok()
}

fn number(object: &Object) -> Option<f64> {
    object.as_float().ok().map(f64::from)
}

/// A page's resources, inherited from its tree where it has none of its own.
pub(crate) fn page_resources(doc: &Document, page: ObjectId) -> Dictionary {
    let (own, inherited) = doc.get_page_resources(page).unwrap_or((None, Vec::new()));
    if let Some(own) = own {
        return own.clone();
    }
    inherited
        .into_iter()
        .find_map(|id| doc.get_dictionary(id).ok().cloned())
        .unwrap_or_default()
}

fn rect(doc: &Document, object: Option<&Object>) -> Option<[f64; 4]> {
    let (_, object) = doc.dereference(object?).ok()?;
    let values: Vec<f64> = object.as_array().ok()?.iter().filter_map(number).collect();
    <[f64; 4]>::try_from(values).ok()
}

/// Width and height of a box, in inches.
fn inches(r: [f64; 4]) -> (f64, f64) {
    ((r[2] - r[0]).abs() / PT, (r[3] - r[1]).abs() / PT)
}

/// Two sizes within a hundredth of an inch of each other.
fn same_size(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).abs() < 0.01 && (a.1 - b.1).abs() < 0.01
}
