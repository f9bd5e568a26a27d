//! The print edition stamped by an incremental update (ISO 32000-1, 7.5.6): every byte of the
//! interior kept, then the new objects, a cross-reference section of the same kind as the
//! interior's last and a trailer pointing back to it.
//!
//! The line is set alone by Typst (`print::set_line`: the print edition's faces, any script, the
//! device's gray) and its page becomes a form, drawn at the top of the copyright page's trim
//! box, centred. The copyright page is the interior's destination
//! `print::COPYRIGHT_DESTINATION`; an interior made before it was named has its copyright page
//! fourth, as the template lays out the front matter (half title, its verso, the title page
//! and its verso). Only that page's dictionary is written again: its contents become the old
//! ones wrapped in `q … Q`, then the form's, and its resources name the form.

use std::collections::BTreeMap;

use anyhow::{Context as _, anyhow};
use lopdf::{Dictionary, Document, IncrementalDocument, Object, ObjectId, Stream};

use super::{Stamp, StampError};
use crate::print::{COPYRIGHT_DESTINATION, set_line};

/// The form's name among the copyright page's resources: a page that has it is stamped.
const FORM: &[u8] = b"BinderyAdvanceCopy";
/// The line's size, in points: a little over the copyright notice's (0.8 em of 10–11 pt).
const SIZE: f64 = 9.0;
/// From the trim's top edge to the line's, in points: the print edition's top margin
/// (0.75 in), where its text block begins.
const TOP: f64 = 54.0;
/// Left free on either side of the line, in points: the line wraps within the rest.
const SIDES: f64 = 72.0;

pub(super) fn stamp(original: &[u8], stamp: &Stamp) -> Result<Vec<u8>, StampError> {
    let prev = Document::load_mem(original).map_err(|e| StampError::NotAPdf(e.to_string()))?;
    if prev.is_encrypted() {
        return Err(StampError::NotAPdf("it is encrypted".into()));
    }
    let page_id = copyright_page(&prev)?;
    let mut page = prev
        .get_dictionary(page_id)
        .map_err(|e| StampError::NotAPdf(format!("its copyright page: {e}")))?
        .clone();
    let [x0, _, x1, y1] = trim_box(&prev, page_id)?;
    let mut resources = resources(&prev, &page)?;
    let mut forms = match resources.get(b"XObject") {
        Ok(forms) => prev
            .dereference(forms)
            .and_then(|(_, f)| f.as_dict())
            .cloned()
            .map_err(|e| StampError::NotAPdf(format!("its copyright page's XObjects: {e}")))?,
        Err(_) => Dictionary::new(),
    };
    if forms.has(FORM) {
        return Err(StampError::AlreadyStamped("the PDF's copyright page"));
    }
    let contents = contents(&prev, &page)?;

    let line = set_line(
        &stamp.printed(),
        &stamp.language,
        (x1 - x0 - 2.0 * SIDES).max(SIDES),
        SIZE,
    )?;
    let line_pdf = Document::load_mem(&line.pdf).context("reading the line back")?;

    let mut update = IncrementalDocument::create_from(original.to_vec(), prev);
    let doc = &mut update.new_document;
    let mut next = doc.max_id + 1;
    let form = form(&line_pdf, doc, &mut next)?;
    // The page's own contents may leave the graphics state changed: the form is drawn in
    // the state the page began with.
    let save = add(
        doc,
        &mut next,
        Object::Stream(plain_stream(b"q\n".to_vec())),
    );
    let x = x0 + (x1 - x0 - line.width) / 2.0;
    let y = y1 - TOP - line.height;
    let draw = format!(
        "Q\nq 1 0 0 1 {x:.3} {y:.3} cm /{} Do Q\n",
        String::from_utf8_lossy(FORM)
    );
    let draw = add(
        doc,
        &mut next,
        Object::Stream(plain_stream(draw.into_bytes())),
    );
    let mut all = vec![Object::Reference(save)];
    all.extend(contents);
    all.push(Object::Reference(draw));
    page.set("Contents", Object::Array(all));
    forms.set(FORM, Object::Reference(form));
    resources.set("XObject", Object::Dictionary(forms));
    page.set("Resources", Object::Dictionary(resources));
    doc.objects.insert(page_id, Object::Dictionary(page));
    doc.max_id = next - 1;

    let mut out = Vec::with_capacity(original.len() + line.pdf.len() + 1024);
    update
        .save_to(&mut out)
        .context("writing the update after the interior")?;
    Ok(out)
}

/// The interior's copyright page: its named destination, else its fourth page.
pub(super) fn copyright_page(doc: &Document) -> Result<ObjectId, StampError> {
    let tree = doc
        .catalog()
        .and_then(|c| c.get_deref(b"Names", doc))
        .and_then(Object::as_dict)
        .and_then(|n| n.get_deref(b"Dests", doc))
        .and_then(Object::as_dict);
    if let Ok(tree) = tree {
        let mut named = Default::default();
        doc.get_named_destinations(tree, &mut named)
            .map_err(|e| StampError::NotAPdf(format!("its destinations: {e}")))?;
        if let Some(destination) = named.get(COPYRIGHT_DESTINATION.as_bytes()) {
            return destination
                .page()
                .and_then(Object::as_reference)
                .map_err(|e| {
                    StampError::NotAPdf(format!("its copyright page's destination: {e}"))
                });
        }
    }
    doc.get_pages()
        .get(&4)
        .copied()
        .ok_or(StampError::NoCopyrightPage(COPYRIGHT_DESTINATION))
}

/// The page's trim box (its media box where it has none): `[x0, y0, x1, y1]`.
fn trim_box(doc: &Document, page: ObjectId) -> Result<[f64; 4], StampError> {
    let mut at = doc.get_dictionary(page).ok();
    let mut media = None;
    // The media box is inherited through the page tree; a trim box is the page's own. The
    // walk up is bounded: a tree is never this deep, a cycle would be.
    for depth in 0..32 {
        let Some(dict) = at else { break };
        let own = if depth == 0 {
            dict.get(b"TrimBox")
                .ok()
                .or_else(|| dict.get(b"MediaBox").ok())
        } else {
            dict.get(b"MediaBox").ok()
        };
        if own.is_some() {
            media = own;
            break;
        }
        at = dict
            .get(b"Parent")
            .and_then(Object::as_reference)
            .and_then(|p| doc.get_dictionary(p))
            .ok();
    }
    let numbers: Vec<f64> = media
        .and_then(|m| doc.dereference(m).ok())
        .and_then(|(_, m)| m.as_array().ok())
        .map(|m| {
            m.iter()
                .filter_map(|n| n.as_float().ok().map(f64::from))
                .collect()
        })
        .unwrap_or_default();
    match numbers[..] {
        [a, b, c, d] => Ok([a.min(c), b.min(d), a.max(c), b.max(d)]),
        _ => Err(StampError::NotAPdf(
            "its copyright page has no media box".into(),
        )),
    }
}

/// A copy of the page's resource dictionary (its own, or the one it inherits).
fn resources(doc: &Document, page: &Dictionary) -> Result<Dictionary, StampError> {
    let mut at = Some(page);
    for _ in 0..32 {
        let Some(dict) = at else { break };
        if let Ok(resources) = dict.get(b"Resources") {
            return doc
                .dereference(resources)
                .and_then(|(_, r)| r.as_dict())
                .cloned()
                .map_err(|e| StampError::NotAPdf(format!("its copyright page's resources: {e}")));
        }
        at = dict
            .get(b"Parent")
            .and_then(Object::as_reference)
            .and_then(|p| doc.get_dictionary(p))
            .ok();
    }
    Ok(Dictionary::new())
}

/// The page's content streams, as references in their order.
fn contents(doc: &Document, page: &Dictionary) -> Result<Vec<Object>, StampError> {
    let Ok(contents) = page.get(b"Contents") else {
        return Ok(Vec::new());
    };
    let bad = || StampError::NotAPdf("its copyright page's contents are not streams".into());
    match contents {
        Object::Reference(id) => match doc.get_object(*id) {
            Ok(Object::Array(parts)) => Ok(parts.clone()),
            Ok(Object::Stream(_)) => Ok(vec![contents.clone()]),
            _ => Err(bad()),
        },
        Object::Array(parts) => Ok(parts.clone()),
        _ => Err(bad()),
    }
}

/// The line's page as a form in `doc`, with copies of what it uses, numbered from `next`.
fn form(line: &Document, doc: &mut Document, next: &mut u32) -> anyhow::Result<ObjectId> {
    let page_id = line
        .page_iter()
        .next()
        .ok_or_else(|| anyhow!("the line's PDF has no page"))?;
    let page = line.get_dictionary(page_id)?;
    let bbox = page.get(b"MediaBox")?.clone();
    let resources = match page.get(b"Resources") {
        Ok(r) => r.clone(),
        Err(_) => Object::Dictionary(Dictionary::new()),
    };
    let mut copied = BTreeMap::new();
    let resources = copy(line, &resources, doc, next, &mut copied, 0)?;
    let mut dict = Dictionary::new();
    dict.set("Type", "XObject");
    dict.set("Subtype", "Form");
    dict.set("BBox", bbox);
    dict.set("Resources", resources);
    let mut stream = Stream::new(dict, line.get_page_content(page_id));
    stream
        .compress()
        .map_err(|e| anyhow!("compressing the line: {e}"))?;
    Ok(add(doc, next, Object::Stream(stream)))
}

/// `object` of `from`, with every object it refers to copied into `to` under a new number
/// (once each), and its references renumbered.
fn copy(
    from: &Document,
    object: &Object,
    to: &mut Document,
    next: &mut u32,
    copied: &mut BTreeMap<ObjectId, ObjectId>,
    depth: usize,
) -> anyhow::Result<Object> {
    // Fonts and their descriptors and files: a few levels. Deeper is not Typst's line.
    if depth > 32 {
        return Err(anyhow!("the line's resources nest too deep"));
    }
    Ok(match object {
        Object::Reference(id) => {
            if let Some(new) = copied.get(id) {
                return Ok(Object::Reference(*new));
            }
            let new = (*next, 0);
            *next += 1;
            copied.insert(*id, new);
            let target = from.get_object(*id)?.clone();
            let target = copy(from, &target, to, next, copied, depth + 1)?;
            to.objects.insert(new, target);
            Object::Reference(new)
        }
        Object::Array(items) => Object::Array(
            items
                .iter()
                .map(|item| copy(from, item, to, next, copied, depth + 1))
                .collect::<anyhow::Result<_>>()?,
        ),
        Object::Dictionary(dict) => {
            Object::Dictionary(copy_dict(from, dict, to, next, copied, depth)?)
        }
        Object::Stream(stream) => {
            let dict = copy_dict(from, &stream.dict, to, next, copied, depth)?;
            Object::Stream(Stream::new(dict, stream.content.clone()).with_compression(false))
        }
        other => other.clone(),
    })
}

fn copy_dict(
    from: &Document,
    dict: &Dictionary,
    to: &mut Document,
    next: &mut u32,
    copied: &mut BTreeMap<ObjectId, ObjectId>,
    depth: usize,
) -> anyhow::Result<Dictionary> {
    let mut out = Dictionary::new();
    for (key, value) in dict.iter() {
        out.set(key.clone(), copy(from, value, to, next, copied, depth + 1)?);
    }
    Ok(out)
}

fn add(doc: &mut Document, next: &mut u32, object: Object) -> ObjectId {
    let id = (*next, 0);
    *next += 1;
    doc.objects.insert(id, object);
    id
}

fn plain_stream(content: Vec<u8>) -> Stream {
    Stream::new(Dictionary::new(), content).with_compression(false)
}
