//! The interior PDF assembled from its pieces' PDFs (read and written with `lopdf`).
//!
//! Each piece's pages are copied in book order with what they use, the seed page that opens
//! every piece ([`super::glyphs`]) left out. Objects that are the same in several pieces (each
//! face's subset, which the seed makes identical, and any other shared resource) are kept
//! once: two objects are the same when their contents, and the objects they refer to, are.
//! A piece of an odd page count is followed by a blank verso, so that the next opens on a
//! recto. The book gets one page tree, an outline of its chapters, page labels that match the
//! folios (roman front matter, then arabic), its copyright page as a named destination
//! ([`super::COPYRIGHT_DESTINATION`]), and, when the pages bleed, a trim box and a bleed
//! box on every page: the trim against the spine (left on a recto, right on a verso, the other
//! way round in a book bound on the right).

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context as _, anyhow};
use lopdf::{Dictionary, Document, Object, ObjectId, Stream, StringFormat};
use sha2::{Digest, Sha256};

/// A chapter's entry in the outline.
#[derive(Debug, Clone)]
pub(crate) struct Bookmark {
    pub title: String,
    /// Its physical page, from 1.
    pub page: usize,
}

/// How the pages are to be boxed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bleed {
    /// Beyond the trim, in points.
    pub points: f64,
    pub bound_on_right: bool,
    /// The pages bleed past the spine edge too.
    pub at_spine: bool,
}

/// What the book's pages are called and where a reader goes.
pub(crate) struct Marks<'a> {
    /// For the page labels, one a physical page.
    pub folios: &'a [String],
    /// For the outline.
    pub bookmarks: &'a [Bookmark],
    /// The copyright page's physical page, from 1: the destination
    /// [`super::COPYRIGHT_DESTINATION`].
    pub copyright: Option<usize>,
}

/// The book from `pieces` (each a PDF whose first page is the seed), its pages marked by
/// `marks`.
pub(crate) fn assemble(
    pieces: &[Vec<u8>],
    marks: &Marks<'_>,
    bleed: Option<Bleed>,
    pdfx: Option<&PdfX>,
) -> anyhow::Result<Assembled> {
    let mut out = Document::with_version("1.7");
    let mut next: u32 = 1;
    let mut pages: Vec<ObjectId> = Vec::new();
    let mut first: Option<Front> = None;
    for (k, bytes) in pieces.iter().enumerate() {
        let piece = Document::load_mem(bytes).with_context(|| format!("reading piece {k}"))?;
        let own: Vec<ObjectId> = piece.page_iter().skip(1).collect();
        let front = Front::of(&piece);
        let mut roots = own.clone();
        if k == 0 {
            roots.extend(front.info);
            roots.extend(front.metadata);
        }
        let map = copy(&piece, &roots, &mut out, &mut next)
            .with_context(|| format!("copying piece {k}"))?;
        let media = own
            .iter()
            .map(|page| media_box(&piece, *page))
            .collect::<anyhow::Result<Vec<_>>>()?;
        for (page, media) in own.iter().zip(&media) {
            let id = map[page];
            let dict = out.get_dictionary_mut(id)?;
            dict.set("MediaBox", media.clone());
            pages.push(id);
        }
        if k + 1 < pieces.len() && own.len() % 2 == 1 {
            let blank = (next, 0);
            next += 1;
            let mut dict = Dictionary::new();
            dict.set("Type", "Page");
            dict.set("MediaBox", media.last().cloned().unwrap_or(Object::Null));
            dict.set("Resources", Dictionary::new());
            out.objects.insert(blank, Object::Dictionary(dict));
            pages.push(blank);
        }
        if k == 0 {
            first = Some(Front {
                info: front.info.map(|id| map[&id]),
                metadata: front.metadata.map(|id| map[&id]),
                ..front
            });
        }
    }
    // A piece whose set pages came out other than measured (`print_layout_unsettled`, its
    // warning) leaves the folios a page out from there: the labels follow the folios.
    dedupe(&mut out, &pages);

    let tree = (next, 0);
    next += 1;
    for (index, page) in pages.iter().enumerate() {
        let dict = out.get_dictionary_mut(*page)?;
        dict.set("Parent", tree);
        if let Some(bleed) = bleed {
            let media = numbers(dict.get(b"MediaBox")?)?;
            let [x0, y0, x1, y1] = media[..] else {
                return Err(anyhow!("a /MediaBox of {} numbers", media.len()));
            };
            let b = bleed.points;
            // Page 1 is a recto.
            let trim = if bleed.at_spine {
                [x0 + b, y0 + b, x1 - b, y1 - b]
            } else if (index % 2 == 0) != bleed.bound_on_right {
                [x0, y0 + b, x1 - b, y1 - b]
            } else {
                [x0 + b, y0 + b, x1, y1 - b]
            };
            dict.set("TrimBox", rect(trim));
            dict.set("BleedBox", rect([x0, y0, x1, y1]));
        }
    }
    let mut tree_dict = Dictionary::new();
    tree_dict.set("Type", "Pages");
    tree_dict.set(
        "Kids",
        pages
            .iter()
            .map(|p| Object::Reference(*p))
            .collect::<Vec<_>>(),
    );
    tree_dict.set("Count", i64::try_from(pages.len())?);
    out.objects.insert(tree, Object::Dictionary(tree_dict));

    let mut catalog = Dictionary::new();
    catalog.set("Type", "Catalog");
    catalog.set("Pages", tree);
    catalog.set("PageLabels", page_labels(marks.folios));
    if let Some(page) = marks.copyright.and_then(|p| pages.get(p.checked_sub(1)?)) {
        catalog.set("Names", destinations(super::COPYRIGHT_DESTINATION, *page));
    }
    if let Some(outline) = outline(&mut out, &mut next, &pages, marks.bookmarks) {
        catalog.set("Outlines", outline);
        catalog.set("PageMode", "UseOutlines");
    }
    let front = first.ok_or_else(|| anyhow!("no pieces to assemble"))?;
    if let Some(lang) = front.lang {
        catalog.set("Lang", lang);
    }
    if let Some(metadata) = front.metadata {
        catalog.set("Metadata", metadata);
    }
    let root = (next, 0);
    out.objects.insert(root, Object::Dictionary(catalog));
    out.max_id = next;
    out.trailer = Dictionary::new();
    out.trailer.set("Root", root);
    if let Some(info) = front.info {
        out.trailer.set("Info", info);
    }
    if let Some(id) = front.id {
        out.trailer.set("ID", id);
    }
    // PDF/X rewrites the whole file; one it cannot make leaves the plain PDF as it was.
    let mut refused = None;
    if let Some(pdfx) = pdfx {
        let mut standard = out.clone();
        match super::pdfx::make(&mut standard, &pdfx.title, &pdfx.date) {
            Ok(()) => out = standard,
            Err(e) => refused = Some(format!("{e:#}")),
        }
    }
    let mut bytes = Vec::new();
    out.save_to(&mut bytes)
        .context("writing the assembled PDF")?;
    Ok(Assembled {
        pdf: bytes,
        pdfx_refused: refused,
    })
}

/// What PDF/X's document information needs of the book.
#[derive(Debug, Clone)]
pub(crate) struct PdfX {
    pub title: String,
    /// `D:20240501120000Z`.
    pub date: String,
}

/// The assembled interior, and why it is not PDF/X where it was asked to be.
pub(crate) struct Assembled {
    pub pdf: Vec<u8>,
    pub pdfx_refused: Option<String>,
}

/// What the book takes from its first piece: the document information, the XMP metadata, the
/// language and the file identifier (the same in every piece, made from the book's own).
struct Front {
    info: Option<ObjectId>,
    metadata: Option<ObjectId>,
    lang: Option<Object>,
    id: Option<Object>,
}

impl Front {
    fn of(piece: &Document) -> Front {
        let catalog = piece.catalog().ok();
        Front {
            info: piece
                .trailer
                .get(b"Info")
                .and_then(Object::as_reference)
                .ok(),
            metadata: catalog
                .and_then(|c| c.get(b"Metadata").ok())
                .and_then(|m| m.as_reference().ok()),
            lang: catalog.and_then(|c| c.get(b"Lang").ok()).cloned(),
            id: piece.trailer.get(b"ID").ok().cloned(),
        }
    }
}

/// Copies `roots` and everything they refer to (but a page's parent) from `piece` into `out`,
/// under new numbers from `next`, in the order met; answers each copied object's new id.
fn copy(
    piece: &Document,
    roots: &[ObjectId],
    out: &mut Document,
    next: &mut u32,
) -> anyhow::Result<HashMap<ObjectId, ObjectId>> {
    let mut map: HashMap<ObjectId, ObjectId> = HashMap::new();
    let mut order = Vec::new();
    let mut queue: std::collections::VecDeque<ObjectId> = roots.iter().copied().collect();
    while let Some(id) = queue.pop_front() {
        if map.contains_key(&id) {
            continue;
        }
        let object = piece
            .get_object(id)
            .with_context(|| format!("object {id:?} is missing"))?;
        map.insert(id, (*next, 0));
        *next += 1;
        order.push(id);
        references(object, &mut |r| queue.push_back(r));
    }
    for id in order {
        let mut object = piece.get_object(id)?.clone();
        if let Object::Dictionary(dict) = &mut object
            && is_page(dict)
        {
            dict.remove(b"Parent");
        }
        renumber(&mut object, &|r| map.get(&r).copied());
        out.objects.insert(map[&id], object);
    }
    Ok(map)
}

fn is_page(dict: &Dictionary) -> bool {
    dict.get(b"Type")
        .and_then(Object::as_name)
        .is_ok_and(|n| n == b"Page")
}

/// The objects `object` refers to, a page's parent left out.
fn references(object: &Object, f: &mut dyn FnMut(ObjectId)) {
    match object {
        Object::Reference(id) => f(*id),
        Object::Array(items) => items.iter().for_each(|o| references(o, f)),
        Object::Dictionary(dict) => {
            let page = is_page(dict);
            for (key, value) in dict.iter() {
                if !(page && key == b"Parent") {
                    references(value, f);
                }
            }
        }
        Object::Stream(stream) => references(&Object::Dictionary(stream.dict.clone()), f),
        _ => {}
    }
}

fn renumber(object: &mut Object, map: &dyn Fn(ObjectId) -> Option<ObjectId>) {
    match object {
        Object::Reference(id) => {
            if let Some(new) = map(*id) {
                *id = new;
            }
        }
        Object::Array(items) => items.iter_mut().for_each(|o| renumber(o, map)),
        Object::Dictionary(dict) => dict.iter_mut().for_each(|(_, v)| renumber(v, map)),
        Object::Stream(Stream { dict, .. }) => dict.iter_mut().for_each(|(_, v)| renumber(v, map)),
        _ => {}
    }
}

/// Keeps one copy of each object several pieces hold alike (pages aside, which are each their
/// own), and points every reference at it.
fn dedupe(out: &mut Document, pages: &[ObjectId]) {
    // A page is never alike another: its digest is none.
    let mut digests: HashMap<ObjectId, Option<[u8; 32]>> =
        pages.iter().map(|p| (*p, None)).collect();
    let ids: Vec<ObjectId> = out.objects.keys().copied().collect();
    for id in &ids {
        digest(out, *id, &mut digests, &mut Vec::new());
    }
    // The first (lowest-numbered, so earliest piece's) of each alike set stays.
    let mut kept: BTreeMap<[u8; 32], ObjectId> = BTreeMap::new();
    let mut replaced: HashMap<ObjectId, ObjectId> = HashMap::new();
    for id in &ids {
        if let Some(Some(d)) = digests.get(id) {
            match kept.get(d) {
                Some(first) => {
                    replaced.insert(*id, *first);
                }
                None => {
                    kept.insert(*d, *id);
                }
            }
        }
    }
    for id in replaced.keys() {
        out.objects.remove(id);
    }
    for object in out.objects.values_mut() {
        renumber(object, &|r| replaced.get(&r).copied());
    }
}

/// A digest of object `id` and all it refers to; `None` for what refers back to itself
/// (pages and their annotations), which is never merged.
fn digest(
    out: &Document,
    id: ObjectId,
    digests: &mut HashMap<ObjectId, Option<[u8; 32]>>,
    path: &mut Vec<ObjectId>,
) -> Option<[u8; 32]> {
    if let Some(known) = digests.get(&id) {
        return *known;
    }
    if path.contains(&id) {
        return None;
    }
    let object = out.objects.get(&id)?;
    path.push(id);
    let mut hasher = Sha256::new();
    let whole = feed(out, object, &mut hasher, digests, path);
    path.pop();
    let result = whole.then(|| hasher.finalize().into());
    digests.insert(id, result);
    result
}

/// Feeds `object` to `hasher`; false when something it refers to cannot be digested.
fn feed(
    out: &Document,
    object: &Object,
    hasher: &mut Sha256,
    digests: &mut HashMap<ObjectId, Option<[u8; 32]>>,
    path: &mut Vec<ObjectId>,
) -> bool {
    let mut tag = |t: &[u8], body: &[u8]| {
        hasher.update(t);
        hasher.update((body.len() as u64).to_le_bytes());
        hasher.update(body);
    };
    match object {
        Object::Null => tag(b"n", b""),
        Object::Boolean(b) => tag(b"b", &[u8::from(*b)]),
        Object::Integer(i) => tag(b"i", &i.to_le_bytes()),
        Object::Real(r) => tag(b"r", &r.to_le_bytes()),
        Object::Name(n) => tag(b"N", n),
        Object::String(s, _) => tag(b"s", s),
        Object::Reference(r) => match digest(out, *r, digests, path) {
            Some(d) => tag(b"R", &d),
            None => return false,
        },
        Object::Array(items) => {
            tag(b"A", &(items.len() as u64).to_le_bytes());
            for item in items {
                if !feed(out, item, hasher, digests, path) {
                    return false;
                }
            }
        }
        Object::Dictionary(dict) => return feed_dict(out, dict, hasher, digests, path),
        Object::Stream(stream) => {
            if !feed_dict(out, &stream.dict, hasher, digests, path) {
                return false;
            }
            hasher.update(b"S");
            hasher.update((stream.content.len() as u64).to_le_bytes());
            hasher.update(&stream.content);
        }
    }
    true
}

fn feed_dict(
    out: &Document,
    dict: &Dictionary,
    hasher: &mut Sha256,
    digests: &mut HashMap<ObjectId, Option<[u8; 32]>>,
    path: &mut Vec<ObjectId>,
) -> bool {
    hasher.update(b"D");
    hasher.update((dict.len() as u64).to_le_bytes());
    for (key, value) in dict.iter() {
        hasher.update((key.len() as u64).to_le_bytes());
        hasher.update(key);
        if !feed(out, value, hasher, digests, path) {
            return false;
        }
    }
    true
}

/// A page's media box: its own, or its page tree's.
fn media_box(piece: &Document, page: ObjectId) -> anyhow::Result<Object> {
    let mut dict = piece.get_dictionary(page)?;
    loop {
        if let Ok(media) = dict.get(b"MediaBox") {
            return Ok(piece.dereference(media)?.1.clone());
        }
        let parent = dict
            .get(b"Parent")
            .and_then(Object::as_reference)
            .map_err(|_| anyhow!("page {page:?} has no media box"))?;
        dict = piece.get_dictionary(parent)?;
    }
}

fn numbers(object: &Object) -> anyhow::Result<Vec<f64>> {
    object
        .as_array()?
        .iter()
        .map(|n| n.as_float().map(f64::from).map_err(Into::into))
        .collect()
}

fn rect(r: [f64; 4]) -> Object {
    Object::Array(
        r.iter()
            .map(|v| Object::Real((v * 10_000.0).round() as f32 / 10_000.0))
            .collect(),
    )
}

/// Roman labels up to the first arabic folio, arabic from it, each range starting where its
/// folios do.
fn page_labels(folios: &[String]) -> Dictionary {
    let mut nums = Vec::new();
    let arabic = folios
        .iter()
        .position(|f| f.bytes().all(|b| b.is_ascii_digit()) && !f.is_empty());
    if arabic != Some(0) {
        nums.push(Object::Integer(0));
        nums.push(Object::Dictionary(Dictionary::from_iter([(
            "S",
            Object::Name(b"r".to_vec()),
        )])));
    }
    if let Some(at) = arabic {
        let start: i64 = folios[at].parse().unwrap_or(1);
        nums.push(Object::Integer(i64::try_from(at).unwrap_or(0)));
        nums.push(Object::Dictionary(Dictionary::from_iter([
            ("S", Object::Name(b"D".to_vec())),
            ("St", Object::Integer(start)),
        ])));
    }
    Dictionary::from_iter([("Nums", Object::Array(nums))])
}

/// A name tree of destinations holding one: `name`, the whole of `page`.
fn destinations(name: &str, page: ObjectId) -> Dictionary {
    let destination = Object::Array(vec![Object::Reference(page), Object::Name(b"Fit".to_vec())]);
    let tree = Dictionary::from_iter([(
        "Names",
        Object::Array(vec![
            Object::String(name.as_bytes().to_vec(), StringFormat::Literal),
            destination,
        ]),
    )]);
    Dictionary::from_iter([("Dests", Object::Dictionary(tree))])
}

/// The outline: one entry a bookmark, in order, each opening its page.
fn outline(
    out: &mut Document,
    next: &mut u32,
    pages: &[ObjectId],
    bookmarks: &[Bookmark],
) -> Option<ObjectId> {
    let marks: Vec<(&Bookmark, ObjectId)> = bookmarks
        .iter()
        .filter_map(|b| Some((b, *pages.get(b.page.checked_sub(1)?)?)))
        .collect();
    if marks.is_empty() {
        return None;
    }
    let root = (*next, 0);
    *next += 1;
    let ids: Vec<ObjectId> = marks
        .iter()
        .map(|_| {
            let id = (*next, 0);
            *next += 1;
            id
        })
        .collect();
    for (i, ((mark, page), id)) in marks.iter().zip(&ids).enumerate() {
        let mut item = Dictionary::new();
        item.set("Title", text_string(&mark.title));
        item.set("Parent", root);
        if i > 0 {
            item.set("Prev", ids[i - 1]);
        }
        if let Some(next) = ids.get(i + 1) {
            item.set("Next", *next);
        }
        item.set(
            "Dest",
            vec![Object::Reference(*page), Object::Name(b"Fit".to_vec())],
        );
        out.objects.insert(*id, Object::Dictionary(item));
    }
    let mut dict = Dictionary::new();
    dict.set("Type", "Outlines");
    dict.set("First", ids[0]);
    dict.set("Last", ids[ids.len() - 1]);
    dict.set("Count", i64::try_from(ids.len()).unwrap_or(0));
    out.objects.insert(root, Object::Dictionary(dict));
    Some(root)
}

/// A PDF text string: ASCII as it is, anything else in UTF-16BE after its byte-order mark.
fn text_string(text: &str) -> Object {
    if text.is_ascii() {
        Object::String(text.as_bytes().to_vec(), StringFormat::Literal)
    } else {
        let mut bytes = vec![0xFE, 0xFF];
        for unit in text.encode_utf16() {
            bytes.extend_from_slice(&unit.to_be_bytes());
        }
        Object::String(bytes, StringFormat::Hexadecimal)
    }
}
