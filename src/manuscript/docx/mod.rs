//! Word documents (DOCX): a zip of WordprocessingML parts, read with `zip` and `quick-xml`.
//!
//! The layers, bottom up: [`Archive`] (a zip read defensively, shared with the other zip
//! formats), [`xml`] (a guarded pull
//! parser), [`package`] (relationships and core properties), [`styles`] and [`numbering`]
//! (what paragraphs mean), [`body`] (the streaming reader of a story), [`inlines`] (runs to
//! nested inlines), [`assemble`] (paragraphs to lists, quotations, captions); document-wide clean-up is
//! [`super::tidy`].

mod assemble;
mod body;
mod fields;
mod images;
mod inlines;
mod numbering;
mod omml;
mod package;
mod styles;
mod table;

use super::{InputError, Limits};
use crate::document::{Document, Metadata, Note, NoteKind, Parsed, chapters};
use crate::report::Warning;

use super::archive::Archive;
use super::xml::Xml;
use body::Context;
use package::Rels;

pub fn read(bytes: &[u8], limits: &Limits) -> Result<Parsed, InputError> {
    let mut archive = Archive::open(bytes, limits)?;
    let package = Rels::load(&mut archive, "")?;
    let main = package::main_part(&mut archive, &package)?;
    let rels = Rels::load(&mut archive, &main)?;

    let styles = match rels.part_of_kind("styles") {
        Some(part) => match archive.read_text(part)? {
            Some(text) => styles::Styles::parse(&text, part)?,
            None => styles::Styles::default(),
        },
        None => styles::Styles::default(),
    };
    let numbering = match rels.part_of_kind("numbering") {
        Some(part) => match archive.read_text(part)? {
            Some(text) => numbering::Numbering::parse(&text, part)?,
            None => numbering::Numbering::default(),
        },
        None => numbering::Numbering::default(),
    };
    let mut metadata = Metadata::default();
    package::core_properties(&mut archive, &package, &mut metadata)?;

    let text = archive.read_text(&main)?.ok_or(InputError::NotDocx)?;
    let mut ctx = Context::new(&styles, &numbering, &mut archive, limits);
    let items = body::read_document(&mut Xml::new(&text, &main), &mut ctx, &rels)?;
    drop(text);

    let mut notes = Vec::new();
    for (kind, prefix, note_kind) in [
        ("footnotes", "fn", NoteKind::Footnote),
        ("endnotes", "en", NoteKind::Endnote),
    ] {
        let Some(part) = rels.part_of_kind(kind) else {
            continue;
        };
        let Some(text) = ctx.archive.read_text(part)? else {
            continue;
        };
        let note_rels = Rels::load(ctx.archive, part)?;
        let read = body::read_notes(&mut Xml::new(&text, part), &mut ctx, &note_rels, prefix)?;
        notes.extend(read.into_iter().map(|(id, items)| Note {
            id,
            kind: note_kind,
            blocks: assemble::assemble(items),
        }));
    }

    let mut blocks = assemble::assemble(items);
    let title = super::tidy::title_paragraphs(&mut blocks);
    super::tidy::page_breaks(&mut blocks);
    let mut warnings = std::mem::take(&mut ctx.warnings);
    let mut notes = super::tidy::order_notes(notes, &ctx.note_refs, &mut blocks, &mut warnings);
    super::tidy::unused_anchors(&mut blocks, &mut notes);

    super::tidy::title_from_paragraphs(&mut metadata, title, &mut warnings);
    if metadata.subtitle.is_none() {
        metadata.subtitle = ctx.subtitle.take();
    }
    if metadata.authors.is_empty() {
        metadata.authors = std::mem::take(&mut ctx.authors);
    }
    if metadata.date.is_none() {
        metadata.date = ctx.date.take();
    }
    if metadata.language.is_none() {
        metadata.language = styles.language.clone();
    }
    if ctx.comments > 0 {
        warnings.push(Warning::new(
            "comment_dropped",
            format!(
                "{} comment{} in the document {} left out of the book.",
                ctx.comments,
                if ctx.comments == 1 { "" } else { "s" },
                if ctx.comments == 1 { "was" } else { "were" }
            ),
        ));
    }
    if ctx.text_boxes > 0 {
        warnings.push(Warning::new(
            "text_box_flattened",
            format!(
                "The text of {} text box{} or shape{} was placed after the paragraph it is anchored to; check that it reads well there.",
                ctx.text_boxes,
                if ctx.text_boxes == 1 { "" } else { "es" },
                if ctx.text_boxes == 1 { "" } else { "s" },
            ),
        ));
    }

    let images = std::mem::take(&mut ctx.images);
    let chapters = chapters::split(blocks, &mut metadata, &mut warnings);
    Ok(Parsed {
        document: Document {
            metadata,
            chapters,
            notes,
            images: images.images,
        },
        resources: images.resources,
        warnings,
        cover: None,
    })
}

#[cfg(test)]
mod tests;
