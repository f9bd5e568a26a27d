//! The interior as PDF/X-1a:2001 (ISO 15930-1), the standard IngramSpark asks for: a
//! black-and-white book's pages in the device's own gray, nothing transparent, every font
//! embedded, a trim box on every page, the output intent named, and a PDF 1.3 file with a
//! classic cross-reference table. Typst 0.14 exports PDF/A and PDF/UA only, so the assembled
//! interior is rewritten here:
//!
//! - colour spaces: an ICC-based gray becomes `DeviceGray` (the same numbers), an ICC-based
//!   RGB becomes `DeviceGray` with its colours turned to their luminance, in the content
//!   streams that use them and in the images drawn in them;
//! - images: RGB samples become gray, and an image's soft mask (a PNG's alpha) is flattened
//!   onto white paper;
//! - what cannot be said in PDF/X-1a (a transparency the page itself asks for, a shading in
//!   RGB) is refused, and the interior stays a plain PDF with the reason in the report.
//!
//! The output intent names a registered printing condition (`CGATS TR 001`, US web coated,
//! which a press proofs a gray page to as well as any) rather than embedding a profile:
//! PDF/X-1a allows it, and no profile of a free licence describes the printers' presses.

use std::io::Cursor;

use anyhow::{Context as _, anyhow, bail};
use lopdf::content::{Content, Operation};
use lopdf::xref::XrefType;
use lopdf::{Dictionary, Document, Object, ObjectId, Stream, StringFormat};

use crate::printers::pdf::page_resources;

/// What the document information says of the standard.
pub(crate) const VERSION: &str = "PDF/X-1:2001";
pub(crate) const CONFORMANCE: &str = "PDF/X-1a:2001";
/// The registered characterisation the output intent names (ICC's registry).
const CONDITION: &str = "CGATS TR 001";
const REGISTRY: &str = "http://www.color.org";
const CONDITION_INFO: &str = "U.S. Web Coated (SWOP)";

/// Rewrites `doc` as PDF/X-1a:2001. `title` and `date` (`D:20240501000000Z`) fill the
/// document information the standard requires.
pub(crate) fn make(doc: &mut Document, title: &str, date: &str) -> anyhow::Result<()> {
    refuse_transparency(doc)?;
    in_device_gray(doc)?;
    boxes(doc)?;
    output_intent(doc, title, date)?;
    doc.version = "1.3".to_owned();
    doc.reference_table.cross_reference_type = XrefType::CrossReferenceTable;
    doc.prune_objects();
    Ok(())
}

/// `doc`'s colours in the device's gray, its images' and its content streams' (pages and
/// forms) alike.
pub(crate) fn in_device_gray(doc: &mut Document) -> anyhow::Result<()> {
    let gray_spaces = gray_colour_spaces(doc)?;
    convert_images(doc)?;
    convert_contents(doc, &gray_spaces)?;
    // Every colour space that named an ICC profile now names the device's gray, wherever it is
    // referred to: a resource dictionary, an image, a page's resources written in place.
    for object in doc.objects.values_mut() {
        to_device_gray(object, &gray_spaces);
    }
    Ok(())
}

/// Every reference to one of `spaces` in `object` and the objects written inside it, made
/// `DeviceGray`.
fn to_device_gray(object: &mut Object, spaces: &[ObjectId]) {
    match object {
        Object::Reference(id) if spaces.contains(id) => {
            *object = Object::Name(b"DeviceGray".to_vec());
        }
        Object::Array(items) => items.iter_mut().for_each(|o| to_device_gray(o, spaces)),
        Object::Dictionary(dict) => dict.iter_mut().for_each(|(_, o)| to_device_gray(o, spaces)),
        Object::Stream(stream) => stream
            .dict
            .iter_mut()
            .for_each(|(_, o)| to_device_gray(o, spaces)),
        _ => {}
    }
}

/// A page or form that asks for transparency itself (a fading graphics state, a blend mode, a
/// transparency group): PDF/X-1a has none, and flattening it is a renderer's work.
fn refuse_transparency(doc: &Document) -> anyhow::Result<()> {
    for object in doc.objects.values() {
        let dict = match object {
            Object::Dictionary(d) => d,
            Object::Stream(s) => &s.dict,
            _ => continue,
        };
        let faded = |key: &[u8]| {
            dict.get(key)
                .ok()
                .and_then(|v| v.as_float().ok())
                .is_some_and(|a| a < 1.0)
        };
        let blended = dict
            .get(b"BM")
            .and_then(Object::as_name)
            .is_ok_and(|m| m != b"Normal" && m != b"Compatible");
        let grouped = dict
            .get(b"S")
            .and_then(Object::as_name)
            .is_ok_and(|s| s == b"Transparency");
        // An image's soft mask is flattened below; a graphics state's is not.
        let is_image = dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .is_ok_and(|s| s == b"Image");
        let masked = !is_image
            && dict
                .get(b"SMask")
                .is_ok_and(|m| m.as_name().ok() != Some(b"None"));
        if faded(b"CA") || faded(b"ca") || blended || grouped || masked {
            bail!("a page asks for transparency, which PDF/X-1a cannot hold");
        }
        if dict.has(b"ShadingType") && colour_components(doc, dict.get(b"ColorSpace").ok()) == 3 {
            bail!("a gradient in RGB, which PDF/X-1a cannot hold");
        }
    }
    Ok(())
}

/// The ICC-based colour spaces (by the array object that holds them) of 1 or 3 components,
/// which become `DeviceGray`.
fn gray_colour_spaces(doc: &Document) -> anyhow::Result<Vec<ObjectId>> {
    let mut spaces = Vec::new();
    for (id, object) in &doc.objects {
        if let Object::Array(parts) = object
            && parts.first().and_then(|p| p.as_name().ok()) == Some(b"ICCBased")
        {
            match icc_components(doc, parts) {
                1 | 3 => spaces.push(*id),
                n => bail!("an ICC-based colour space of {n} components"),
            }
        }
    }
    Ok(spaces)
}

fn icc_components(doc: &Document, parts: &[Object]) -> i64 {
    parts
        .get(1)
        .and_then(|s| doc.dereference(s).ok())
        .and_then(|(_, s)| s.as_stream().ok())
        .and_then(|s| s.dict.get(b"N").ok())
        .and_then(|n| n.as_i64().ok())
        .unwrap_or(0)
}

/// How many components `space` has that are RGB's (3), or 1 for gray, 0 for anything else.
fn colour_components(doc: &Document, space: Option<&Object>) -> i64 {
    let Some(Ok((_, space))) = space.map(|s| doc.dereference(s)) else {
        return 0;
    };
    match space {
        Object::Name(n) if n == b"DeviceRGB" => 3,
        Object::Name(n) if n == b"DeviceGray" => 1,
        Object::Array(parts)
            if parts.first().and_then(|p| p.as_name().ok()) == Some(b"ICCBased") =>
        {
            icc_components(doc, parts)
        }
        _ => 0,
    }
}

/// Luminance of an RGB colour (ITU-R BT.601), as gray.
fn luma(r: f64, g: f64, b: f64) -> f64 {
    0.299 * r + 0.587 * g + 0.114 * b
}

/// Every image in gray: RGB samples turned to luminance, a soft mask flattened onto white.
fn convert_images(doc: &mut Document) -> anyhow::Result<()> {
    let images: Vec<ObjectId> = doc
        .objects
        .iter()
        .filter(|(_, o)| {
            o.as_stream().is_ok_and(|s| {
                s.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image")
            })
        })
        .map(|(id, _)| *id)
        .collect();
    // A soft mask is itself an image; it is folded into the one it masks, and pruned after.
    let masks: Vec<ObjectId> = images
        .iter()
        .filter_map(|id| {
            doc.get_object(*id)
                .ok()?
                .as_stream()
                .ok()?
                .dict
                .get(b"SMask")
                .ok()?
                .as_reference()
                .ok()
        })
        .collect();
    for id in images.into_iter().filter(|id| !masks.contains(id)) {
        convert_image(doc, id).with_context(|| format!("the image object {}", id.0))?;
    }
    Ok(())
}

fn convert_image(doc: &mut Document, id: ObjectId) -> anyhow::Result<()> {
    let stream = doc.get_object(id)?.as_stream()?.clone();
    let components = colour_components(doc, stream.dict.get(b"ColorSpace").ok());
    let mask = match stream.dict.get(b"SMask").and_then(Object::as_reference) {
        Ok(mask) => Some(samples(doc.get_object(mask)?.as_stream()?)?),
        Err(_) => None,
    };
    if stream
        .dict
        .get(b"ImageMask")
        .and_then(Object::as_bool)
        .unwrap_or(false)
    {
        return Ok(());
    }
    if components == 1 && mask.is_none() {
        // Gray already: only its colour space changes, with the others.
        return Ok(());
    }
    let bits = stream
        .dict
        .get(b"BitsPerComponent")
        .and_then(Object::as_i64)
        .unwrap_or(8);
    if bits != 8 {
        bail!("{bits} bits a component");
    }
    let width = usize::try_from(stream.dict.get(b"Width")?.as_i64()?)?;
    let height = usize::try_from(stream.dict.get(b"Height")?.as_i64()?)?;
    let pixels = width * height;
    let mut gray: Vec<u8> = match components {
        1 => samples(&stream)?,
        3 => samples(&stream)?
            .chunks_exact(3)
            .map(|p| luma(f64::from(p[0]), f64::from(p[1]), f64::from(p[2])).round() as u8)
            .collect(),
        n => bail!("an image in a colour space of {n} components"),
    };
    if gray.len() < pixels {
        bail!("{} samples for {width} × {height} pixels", gray.len());
    }
    gray.truncate(pixels);
    if let Some(alpha) = &mask {
        if alpha.len() < pixels {
            bail!("a soft mask of {} samples for {pixels} pixels", alpha.len());
        }
        // Onto white paper: what shows through is 255.
        for (g, a) in gray.iter_mut().zip(alpha) {
            let a = f64::from(*a) / 255.0;
            *g = (f64::from(*g) * a + 255.0 * (1.0 - a)).round() as u8;
        }
    }
    let mut dict = Dictionary::new();
    dict.set("Type", "XObject");
    dict.set("Subtype", "Image");
    dict.set("Width", i64::try_from(width)?);
    dict.set("Height", i64::try_from(height)?);
    dict.set("ColorSpace", "DeviceGray");
    dict.set("BitsPerComponent", 8);
    if let Ok(interpolate) = stream.dict.get(b"Interpolate") {
        dict.set("Interpolate", interpolate.clone());
    }
    let mut converted = Stream::new(dict, gray);
    converted
        .compress()
        .map_err(|e| anyhow!("compressing: {e}"))?;
    doc.objects.insert(id, Object::Stream(converted));
    Ok(())
}

/// An image's samples, decoded: Flate through lopdf, DCT through the `image` crate.
fn samples(stream: &Stream) -> anyhow::Result<Vec<u8>> {
    let filters = stream.filters().unwrap_or_default();
    match filters.as_slice() {
        [] => Ok(stream.content.clone()),
        [f] if f == b"FlateDecode" => {
            if stream
                .dict
                .get(b"DecodeParms")
                .and_then(Object::as_dict)
                .is_ok_and(|p| p.get(b"Predictor").and_then(Object::as_i64).unwrap_or(1) > 1)
            {
                bail!("image samples with a predictor");
            }
            stream
                .decompressed_content()
                .map_err(|e| anyhow!("inflating: {e}"))
        }
        [f] if f == b"DCTDecode" => {
            let image = image::ImageReader::with_format(
                Cursor::new(&stream.content),
                image::ImageFormat::Jpeg,
            )
            .decode()
            .context("decoding a JPEG")?;
            Ok(match image.color().channel_count() {
                1 => image.to_luma8().into_raw(),
                _ => image.to_rgb8().into_raw(),
            })
        }
        other => bail!(
            "image samples under {}",
            other
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The content streams (pages and forms) that paint in RGB, rewritten to paint in gray: a
/// colour set in an ICC-based RGB space (`scn` with three operands after `cs`) or with `rg`
/// becomes its luminance.
fn convert_contents(doc: &mut Document, gray_spaces: &[ObjectId]) -> anyhow::Result<()> {
    // The resource names, per content stream, of the spaces that are RGB.
    let rgb_spaces: Vec<ObjectId> = gray_spaces
        .iter()
        .copied()
        .filter(|id| {
            doc.get_object(*id)
                .ok()
                .and_then(|o| o.as_array().ok())
                .is_some_and(|parts| icc_components(doc, parts) == 3)
        })
        .collect();
    let mut targets: Vec<(ObjectId, Vec<Vec<u8>>)> = Vec::new();
    for (page_number, page) in doc.get_pages() {
        let resources = resource_names(doc, &page_resources(doc, page), &rgb_spaces);
        for content in doc.get_page_contents(page) {
            targets.push((content, resources.clone()));
        }
        let _ = page_number;
    }
    for (id, object) in &doc.objects {
        if let Object::Stream(s) = object
            && s.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Form")
        {
            let resources = s
                .dict
                .get(b"Resources")
                .and_then(|r| doc.dereference(r))
                .ok()
                .and_then(|(_, r)| r.as_dict().ok())
                .map(|r| resource_names(doc, r, &rgb_spaces))
                .unwrap_or_default();
            targets.push((*id, resources));
        }
    }
    for (id, rgb_names) in targets {
        let stream = doc.get_object(id)?.as_stream()?;
        let bytes = stream
            .decompressed_content()
            .unwrap_or_else(|_| stream.content.clone());
        let content = Content::decode(&bytes).map_err(|e| anyhow!("a content stream: {e}"))?;
        let Some(rewritten) = grayed(content, &rgb_names) else {
            continue;
        };
        let mut dict = stream.dict.clone();
        dict.remove(b"Filter");
        dict.remove(b"DecodeParms");
        let mut new = Stream::new(
            dict,
            rewritten
                .encode()
                .map_err(|e| anyhow!("encoding a content stream: {e}"))?,
        );
        new.compress().map_err(|e| anyhow!("compressing: {e}"))?;
        doc.objects.insert(id, Object::Stream(new));
    }
    Ok(())
}

/// `content` with every RGB colour it sets made gray, or `None` when it sets none.
fn grayed(content: Content, rgb_names: &[Vec<u8>]) -> Option<Content> {
    let mut changed = false;
    let (mut fill_rgb, mut stroke_rgb) = (false, false);
    let mut saved = Vec::new();
    let mut operations = Vec::with_capacity(content.operations.len());
    for op in content.operations {
        let numbers: Vec<f64> = op
            .operands
            .iter()
            .filter_map(|o| o.as_float().ok().map(f64::from))
            .collect();
        let mut gray = |set: &str| {
            changed = true;
            Operation::new(
                set,
                vec![Object::Real(luma(numbers[0], numbers[1], numbers[2]) as f32)],
            )
        };
        let named_rgb = |op: &Operation| {
            op.operands
                .first()
                .and_then(|n| n.as_name().ok())
                .is_some_and(|n| rgb_names.iter().any(|r| r == n))
        };
        match op.operator.as_str() {
            "q" => {
                saved.push((fill_rgb, stroke_rgb));
                operations.push(op);
            }
            "Q" => {
                (fill_rgb, stroke_rgb) = saved.pop().unwrap_or((false, false));
                operations.push(op);
            }
            "cs" => {
                fill_rgb = named_rgb(&op);
                operations.push(op);
            }
            "CS" => {
                stroke_rgb = named_rgb(&op);
                operations.push(op);
            }
            "sc" | "scn" if fill_rgb && numbers.len() == 3 => operations.push(gray("scn")),
            "SC" | "SCN" if stroke_rgb && numbers.len() == 3 => operations.push(gray("SCN")),
            "rg" if numbers.len() == 3 => operations.push(gray("g")),
            "RG" if numbers.len() == 3 => operations.push(gray("G")),
            _ => operations.push(op),
        }
    }
    changed.then_some(Content { operations })
}

/// The names under which `resources` holds the RGB spaces `rgb`.
fn resource_names(doc: &Document, resources: &Dictionary, rgb: &[ObjectId]) -> Vec<Vec<u8>> {
    resources
        .get(b"ColorSpace")
        .and_then(|c| doc.dereference(c))
        .ok()
        .and_then(|(_, c)| c.as_dict().ok())
        .map(|spaces| {
            spaces
                .iter()
                .filter(|(_, v)| v.as_reference().is_ok_and(|id| rgb.contains(&id)))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A trim box on every page: the media box where the pages do not bleed.
fn boxes(doc: &mut Document) -> anyhow::Result<()> {
    let pages: Vec<ObjectId> = doc.get_pages().into_values().collect();
    for page in pages {
        let dict = doc.get_dictionary_mut(page)?;
        if !dict.has(b"TrimBox") {
            let media = dict.get(b"MediaBox")?.clone();
            dict.set("TrimBox", media);
        }
    }
    Ok(())
}

/// The output intent, and the document information PDF/X asks for.
fn output_intent(doc: &mut Document, title: &str, date: &str) -> anyhow::Result<()> {
    let text = |s: &str| Object::String(s.as_bytes().to_vec(), StringFormat::Literal);
    let mut intent = Dictionary::new();
    intent.set("Type", "OutputIntent");
    intent.set("S", "GTS_PDFX");
    intent.set("OutputConditionIdentifier", text(CONDITION));
    intent.set("RegistryName", text(REGISTRY));
    intent.set("Info", text(CONDITION_INFO));
    let intent = doc.add_object(intent);
    let root = doc.trailer.get(b"Root")?.as_reference()?;
    let catalog = doc.get_dictionary_mut(root)?;
    catalog.set("OutputIntents", vec![Object::Reference(intent)]);
    // XMP is PDF 1.4's; a PDF 1.3 file says it all in its document information.
    catalog.remove(b"Metadata");
    let info_id = match doc.trailer.get(b"Info").and_then(Object::as_reference) {
        Ok(id) => id,
        Err(_) => {
            let id = doc.add_object(Dictionary::new());
            doc.trailer.set("Info", id);
            id
        }
    };
    let info = doc.get_dictionary_mut(info_id)?;
    info.set("GTS_PDFXVersion", text(VERSION));
    info.set("GTS_PDFXConformance", text(CONFORMANCE));
    info.set("Trapped", "False");
    info.set("Title", Object::string_literal(utf16(title)));
    for key in ["CreationDate", "ModDate"] {
        if !info.has(key.as_bytes()) {
            info.set(key, text(date));
        }
    }
    if !doc.trailer.has(b"ID") {
        bail!("the file has no identifier");
    }
    Ok(())
}

/// A text string as PDF writes one that is not all ASCII: UTF-16BE after its byte-order mark.
fn utf16(s: &str) -> Vec<u8> {
    if s.is_ascii() {
        return s.as_bytes().to_vec();
    }
    let mut out = vec![0xFE, 0xFF];
    for unit in s.encode_utf16() {
        out.extend_from_slice(&unit.to_be_bytes());
    }
    out
}
