//! The story of a part (the document body, a footnote, a table cell, a text box): block-level
//! elements and the runs inside paragraphs, read in one streaming pass.
//!
//! What Word shows is what is kept: inserted text yes, deleted text no, the displayed result
//! of a field and not its instruction, the content of content controls, one branch of a
//! markup-compatibility choice (so an image drawn both as DrawingML and VML appears once).

use super::assemble::Item;
use super::fields::{field_link, symbol};
use super::images::Images;
use super::inlines::{self, AtomKind, Atoms};
use super::numbering::{Counters, Numbering};
use super::omml;
use super::package::Rels;
use super::styles::{self, Class, RunProps, Styles};
use super::table::{Merge, RawCell, RawRow, build_table, first_row_look};
use crate::document::{Align, Block, Inline, LinkTarget, Table, inline_text};
use crate::manuscript::archive::Archive;
use crate::manuscript::xml::{Ev, Ns, Tag, Xml};
use crate::manuscript::{InputError, Limits, Meter};
use crate::report::Warning;

/// Document-wide state shared by every part's reader.
pub struct Context<'a, 'b> {
    pub styles: &'a Styles,
    pub numbering: &'a Numbering,
    pub archive: &'a mut Archive<'b>,
    pub limits: &'a Limits,
    /// What the model holds so far, against the book's limits.
    pub meter: Meter,
    pub images: Images,
    pub counters: Counters,
    pub warnings: Vec<Warning>,
    /// Note ids in the order the text refers to them.
    pub note_refs: Vec<String>,
    pub comments: usize,
    pub text_boxes: usize,
    /// Paragraphs in the Subtitle, Author and Date styles at the top of the body.
    pub subtitle: Option<String>,
    pub authors: Vec<String>,
    pub date: Option<String>,
    /// Open complex fields (`w:fldChar`), which may span paragraphs.
    fields: Vec<Field>,
    /// Office Math elements already reported as not converted (once each per book).
    math_unknown: std::collections::BTreeSet<String>,
}

impl<'a, 'b> Context<'a, 'b> {
    pub fn new(
        styles: &'a Styles,
        numbering: &'a Numbering,
        archive: &'a mut Archive<'b>,
        limits: &'a Limits,
    ) -> Self {
        Context {
            styles,
            numbering,
            archive,
            limits,
            meter: Meter::new(limits),
            images: Images::default(),
            counters: Counters::default(),
            warnings: Vec::new(),
            note_refs: Vec::new(),
            comments: 0,
            text_boxes: 0,
            subtitle: None,
            authors: Vec::new(),
            date: None,
            fields: Vec::new(),
            math_unknown: std::collections::BTreeSet::new(),
        }
    }

    /// Whether text is currently a field instruction rather than its displayed result.
    fn in_instruction(&self) -> bool {
        self.fields.iter().any(|f| !f.result)
    }

    /// The link of the innermost hyperlink field being displayed.
    fn field_link(&self) -> Option<&LinkTarget> {
        self.fields.iter().rev().find_map(|f| f.link.as_ref())
    }
}

struct Field {
    instruction: String,
    /// Past `separate`: runs are the displayed result.
    result: bool,
    link: Option<LinkTarget>,
}

/// A paragraph being read.
#[derive(Default)]
struct Para {
    atoms: Atoms,
    /// Blocks of text boxes anchored in the paragraph, placed after it.
    after: Vec<Item>,
    /// A horizontal rule drawn as a VML shape (`o:hr`).
    rule: bool,
}

/// Reads one part's blocks.
pub struct Body<'x, 'c, 'a, 'b> {
    x: &'c mut Xml<'x>,
    ctx: &'c mut Context<'a, 'b>,
    rels: &'c Rels,
    /// Where the part's story is: only the document body has a title page.
    is_body: bool,
    /// Anchors from paragraphs with no text, waiting for the next paragraph.
    anchors: Vec<String>,
    /// Text that flows into the next paragraph: a drop cap, or a paragraph whose mark was
    /// deleted with tracked changes.
    carry: Vec<Inline>,
    /// Whether the body has had a heading or text yet (for the title page).
    started: bool,
}

impl<'x, 'c, 'a, 'b> Body<'x, 'c, 'a, 'b> {
    pub fn new(
        x: &'c mut Xml<'x>,
        ctx: &'c mut Context<'a, 'b>,
        rels: &'c Rels,
        is_body: bool,
    ) -> Self {
        Body {
            x,
            ctx,
            rels,
            is_body,
            anchors: Vec::new(),
            carry: Vec::new(),
            started: false,
        }
    }

    /// Reads block-level children up to the end of the current element.
    pub fn blocks(&mut self, out: &mut Vec<Item>, top: bool) -> Result<(), InputError> {
        while let Some(tag) = self.x.child()? {
            self.block(tag, out, top)?;
        }
        Ok(())
    }

    fn block(&mut self, tag: Tag, out: &mut Vec<Item>, top: bool) -> Result<(), InputError> {
        match tag.ns {
            Ns::W => match tag.name() {
                "p" => self.paragraph(out, top),
                "tbl" => {
                    let table = self.table()?;
                    out.push(Item::Block(Block::Table(table)));
                    self.started = true;
                    Ok(())
                }
                "del" | "moveFrom" => self.x.skip(),
                "bookmarkStart" => {
                    self.bookmark(&tag);
                    self.x.skip()
                }
                "altChunk" => {
                    self.ctx.warnings.push(Warning::new(
                        "imported_content_dropped",
                        "The document embeds another file (an \"alternative format chunk\"), which was left out. Paste its text into the document instead.",
                    ));
                    self.x.skip()
                }
                name if is_property(name) => self.x.skip(),
                // `sdt`, `sdtContent`, `customXml`, `ins`, `moveTo`, `smartTag`…: containers.
                _ => self.blocks(out, top),
            },
            Ns::Mc => self.alternate(tag, &mut |body, tag| body.block(tag, out, top)),
            _ => self.x.skip(),
        }
    }

    fn bookmark(&mut self, tag: &Tag) {
        if let Some(name) = tag.attr("name")
            && !name.is_empty()
            && name != "_GoBack"
        {
            self.anchors.push(name.into_owned());
        }
    }

    /// `mc:AlternateContent`: the first `mc:Choice` (DrawingML, the modern form) and never
    /// the `mc:Fallback` that repeats it.
    fn alternate(
        &mut self,
        tag: Tag,
        each: &mut dyn FnMut(&mut Self, Tag) -> Result<(), InputError>,
    ) -> Result<(), InputError> {
        if tag.name() != "AlternateContent" {
            return self.x.skip();
        }
        let mut taken = false;
        while let Some(branch) = self.x.child()? {
            if !taken && (branch.name() == "Choice" || branch.name() == "Fallback") {
                taken = true;
                while let Some(child) = self.x.child()? {
                    each(self, child)?;
                }
            } else {
                self.x.skip()?;
            }
        }
        Ok(())
    }

    // ---- Paragraphs ----

    fn paragraph(&mut self, out: &mut Vec<Item>, top: bool) -> Result<(), InputError> {
        self.ctx.meter.element()?;
        let mut ppr = styles::ParaPr::default();
        let mut para = Para::default();
        for anchor in std::mem::take(&mut self.anchors) {
            self.ctx.meter.element()?;
            para.atoms.push(0, None, AtomKind::Anchor(anchor));
        }
        let mut base: Option<RunProps> = None;
        while let Some(tag) = self.x.child()? {
            if tag.is(Ns::W, "pPr") {
                ppr = styles::read_ppr(self.x)?;
                continue;
            }
            let base = *base.get_or_insert_with(|| self.base_props(&ppr));
            self.inline(tag, &mut para, base, None)?;
        }
        // A field instruction never spans paragraphs; one left open is broken, and must not
        // swallow the rest of the book.
        self.ctx.fields.retain(|f| f.result);
        self.finish_paragraph(ppr, para, out, top)
    }

    /// Run formatting a paragraph's style gives its text, unless the style is a heading or
    /// other kind whose bold or italics are only its look.
    fn base_props(&self, ppr: &styles::ParaPr) -> RunProps {
        let style = self.ctx.styles.paragraph(ppr.style.as_deref());
        if style.class.decorates() || ppr.outline.is_some_and(|l| l < 9) {
            RunProps::default()
        } else {
            style.props
        }
    }

    fn finish_paragraph(
        &mut self,
        ppr: styles::ParaPr,
        para: Para,
        out: &mut Vec<Item>,
        top: bool,
    ) -> Result<(), InputError> {
        let style = self.ctx.styles.paragraph(ppr.style.as_deref());
        let mut class = style.class;
        if let Some(level) = ppr.outline
            && matches!(class, Class::Normal | Class::Heading(_))
        {
            class = if level < 9 {
                Class::Heading(level + 1)
            } else {
                Class::Normal
            };
        }
        let align = ppr.align.or(style.align).unwrap_or_default();
        let num_id = ppr.num_id.clone().or(style.num_id.clone());
        let ilvl = ppr.ilvl.or(style.ilvl).unwrap_or(0);
        let item = match (&num_id, class) {
            (Some(id), Class::Normal | Class::Quote) if id != "0" => {
                self.ctx.counters.next(self.ctx.numbering, id, ilvl)
            }
            _ => None,
        };
        if ppr.page_break_before {
            out.push(Item::Block(Block::PageBreak));
        }

        // A page break inside the paragraph splits it.
        let Para { atoms, after, rule } = para;
        let links = atoms.links;
        let mut segments: Vec<Vec<inlines::Atom>> = vec![Vec::new()];
        for atom in atoms.atoms {
            if atom.kind == AtomKind::PageBreak {
                segments.push(Vec::new());
            } else if let Some(last) = segments.last_mut() {
                last.push(atom);
            }
        }
        let count = segments.len();
        for (i, mut segment) in segments.into_iter().enumerate() {
            if i > 0 {
                out.push(Item::Block(Block::PageBreak));
            }
            let last = i + 1 == count;
            if class == Class::Code {
                let text = code_text(&segment);
                if !text.trim().is_empty() {
                    out.push(Item::Code(text));
                }
                continue;
            }
            inlines::trim(&mut segment);
            let mut content = inlines::build(segment, &links);
            if !self.carry.is_empty() {
                content = inlines::join(std::mem::take(&mut self.carry), content);
            }
            if last && (ppr.drop_cap || ppr.mark.deleted) {
                // The next paragraph continues this one.
                self.carry = content;
                continue;
            }
            if !has_text(&content) {
                if rule && class == Class::Normal {
                    out.push(Item::Block(Block::SceneBreak));
                }
                self.anchors.extend(anchors_of(&content));
                continue;
            }
            self.emit(class, item, align, content, out, top);
        }
        out.extend(after);
        if ppr.section_break {
            out.push(Item::Block(Block::PageBreak));
        }
        Ok(())
    }

    fn emit(
        &mut self,
        class: Class,
        item: Option<super::numbering::Item>,
        align: Align,
        content: Vec<Inline>,
        out: &mut Vec<Item>,
        top: bool,
    ) {
        let title_page = top && self.is_body && !self.started;
        let plain = || {
            inline_text(&content)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let paragraph = |content| Block::Paragraph { align, content };
        match class {
            Class::Title if top && self.is_body => {
                // Level 0 marks a Title paragraph; the document reader decides whether it
                // is the book's title or (used throughout) a top-level heading.
                out.push(Item::Block(Block::Heading {
                    level: 0,
                    id: None,
                    content,
                }));
                return;
            }
            Class::Subtitle if title_page && self.ctx.subtitle.is_none() => {
                self.ctx.subtitle = Some(plain());
                return;
            }
            Class::Author if title_page => {
                self.ctx.authors.push(plain());
                return;
            }
            Class::Date if title_page && self.ctx.date.is_none() => {
                self.ctx.date = Some(plain());
                return;
            }
            _ => {}
        }
        self.started = true;
        let block = match class {
            Class::Heading(level) => {
                let (id, content) = take_first_anchor(content);
                Item::Block(Block::Heading {
                    level: level.min(6),
                    id,
                    content,
                })
            }
            Class::Quote if item.is_none() => Item::Quote(paragraph(content)),
            Class::DefinitionTerm => Item::Term(content),
            Class::Definition => Item::Definition(paragraph(content)),
            Class::Caption => Item::Caption(content),
            _ => match item {
                Some(item) => Item::ListItem(item, paragraph(content)),
                None => Item::Block(simple_block(align, content)),
            },
        };
        out.push(block);
    }

    // ---- Runs and inline containers ----

    fn inline(
        &mut self,
        tag: Tag,
        para: &mut Para,
        base: RunProps,
        link: Option<usize>,
    ) -> Result<(), InputError> {
        match tag.ns {
            Ns::W => match tag.name() {
                "r" => self.run(para, base, link),
                "hyperlink" => {
                    let target = tag
                        .attr("id")
                        .and_then(|id| self.rels.get(&id))
                        .filter(|rel| rel.external)
                        .map(|rel| {
                            let mut url = rel.target.clone();
                            if let Some(anchor) = tag.attr("anchor") {
                                url.push('#');
                                url.push_str(&anchor);
                            }
                            LinkTarget::External(url)
                        })
                        .or_else(|| {
                            tag.attr("anchor")
                                .map(|a| LinkTarget::Internal(a.into_owned()))
                        });
                    let link = target.map(|t| para.atoms.link(t)).or(link);
                    self.inlines(para, base, link)
                }
                "fldSimple" => {
                    let link = tag
                        .attr("instr")
                        .and_then(|i| field_link(&i))
                        .map(|t| para.atoms.link(t))
                        .or(link);
                    self.inlines(para, base, link)
                }
                "bookmarkStart" => {
                    if let Some(name) = tag.attr("name")
                        && !name.is_empty()
                        && name != "_GoBack"
                    {
                        para.atoms
                            .push(0, link, AtomKind::Anchor(name.into_owned()));
                    }
                    self.x.skip()
                }
                "del" | "moveFrom" | "commentRangeStart" | "commentRangeEnd" | "proofErr" => {
                    self.x.skip()
                }
                name if is_property(name) => self.x.skip(),
                // `ins`, `moveTo`, `smartTag`, `customXml`, `sdt`, `sdtContent`, `dir`…
                _ => self.inlines(para, base, link),
            },
            Ns::M if matches!(tag.name(), "oMath" | "oMathPara") => self.equation(&tag, para, link),
            Ns::M => {
                if tag.name() == "t" {
                    let text = self.x.text()?;
                    self.text(para, base.bits(), link, &text)
                } else {
                    self.inlines(para, base, link)
                }
            }
            Ns::Mc => self.alternate(tag, &mut |body, tag| body.inline(tag, para, base, link)),
            _ => self.inlines(para, base, link),
        }
    }

    /// A Word equation (`m:oMath`, or `m:oMathPara` and the equations it displays).
    fn equation(
        &mut self,
        tag: &Tag,
        para: &mut Para,
        link: Option<usize>,
    ) -> Result<(), InputError> {
        let (maths, unknown) = omml::read(self.x, tag)?;
        if self.ctx.in_instruction() {
            return Ok(());
        }
        for name in unknown {
            if self.ctx.math_unknown.insert(name.clone()) {
                self.ctx.warnings.push(Warning::new(
                    "math_element_unknown",
                    format!(
                        "A Word equation uses {name}, which Bindery does not convert to MathML; its text is kept in the equation. Check how it reads."
                    ),
                ));
            }
        }
        for math in maths {
            self.ctx.meter.element()?;
            self.ctx.meter.text(&math.text())?;
            para.atoms.push(0, link, AtomKind::Math(math));
        }
        Ok(())
    }

    fn inlines(
        &mut self,
        para: &mut Para,
        base: RunProps,
        link: Option<usize>,
    ) -> Result<(), InputError> {
        while let Some(tag) = self.x.child()? {
            self.inline(tag, para, base, link)?;
        }
        Ok(())
    }

    fn text(
        &mut self,
        para: &mut Para,
        fmt: u16,
        link: Option<usize>,
        text: &str,
    ) -> Result<(), InputError> {
        if self.ctx.in_instruction() {
            return Ok(());
        }
        self.ctx.meter.text(text)?;
        let link = link.or_else(|| self.ctx.field_link().cloned().map(|t| para.atoms.link(t)));
        para.atoms.text(fmt, link, text);
        Ok(())
    }

    fn run(
        &mut self,
        para: &mut Para,
        base: RunProps,
        link: Option<usize>,
    ) -> Result<(), InputError> {
        let mut bits = base.bits();
        while let Some(tag) = self.x.child()? {
            if tag.ns == Ns::Mc {
                self.alternate(tag, &mut |body, tag| body.run_child(tag, para, bits, link))?;
                continue;
            }
            if tag.is(Ns::W, "rPr") {
                let rpr = styles::read_rpr(self.x)?;
                let styled = match &rpr.style {
                    Some(id) => base.over(self.ctx.styles.character(id).props),
                    None => base,
                };
                bits = styled.over(rpr.props).bits();
                continue;
            }
            self.run_child(tag, para, bits, link)?;
        }
        Ok(())
    }

    fn run_child(
        &mut self,
        tag: Tag,
        para: &mut Para,
        bits: u16,
        link: Option<usize>,
    ) -> Result<(), InputError> {
        if tag.ns != Ns::W {
            return self.x.skip();
        }
        match tag.name() {
            "t" => {
                let text = self.x.text()?;
                return self.text(para, bits, link, &text);
            }
            "tab" | "ptab" => self.text(para, bits, link, " ")?,
            "noBreakHyphen" => self.text(para, bits, link, "\u{2011}")?,
            "softHyphen" => self.text(para, bits, link, "\u{ad}")?,
            "sym" => {
                if let Some(c) = symbol(tag.attr("font").as_deref(), tag.attr("char").as_deref()) {
                    self.text(para, bits, link, c.encode_utf8(&mut [0; 4]))?;
                }
            }
            "br" | "cr" if !self.ctx.in_instruction() => {
                let kind = match tag.attr("type").as_deref() {
                    Some("page") => AtomKind::PageBreak,
                    _ => AtomKind::Break,
                };
                self.ctx.meter.element()?;
                para.atoms.push(bits, link, kind);
            }
            "footnoteReference" | "endnoteReference" => {
                if let Some(id) = tag.attr("id") {
                    let prefix = if tag.name() == "footnoteReference" {
                        "fn"
                    } else {
                        "en"
                    };
                    let id = format!("{prefix}{id}");
                    self.ctx.meter.element()?;
                    self.ctx.note_refs.push(id.clone());
                    para.atoms.push(bits, link, AtomKind::NoteRef(id));
                }
            }
            "commentReference" => self.ctx.comments += 1,
            "fldChar" => match tag.attr("fldCharType").as_deref() {
                Some("begin") => self.ctx.fields.push(Field {
                    instruction: String::new(),
                    result: false,
                    link: None,
                }),
                Some("separate") => {
                    if let Some(field) = self.ctx.fields.last_mut() {
                        field.result = true;
                        field.link = field_link(&field.instruction);
                    }
                }
                Some("end") => {
                    self.ctx.fields.pop();
                }
                _ => {}
            },
            "instrText" => {
                let text = self.x.text()?;
                if let Some(field) = self.ctx.fields.last_mut()
                    && !field.result
                {
                    field.instruction.push_str(&text);
                }
                return Ok(());
            }
            "drawing" | "pict" | "object" if !self.ctx.in_instruction() => {
                return self.graphic(para, bits, link);
            }
            // Anything else in a run (`delText`, `footnoteRef`, `lastRenderedPageBreak`,
            // `separator`…) shows no text of the book.
            _ => {}
        }
        self.x.skip()
    }

    // ---- Pictures, shapes and text boxes ----

    /// Reads a `w:drawing`, `w:pict` or `w:object`: its images, and the text of any text box.
    fn graphic(
        &mut self,
        para: &mut Para,
        bits: u16,
        link: Option<usize>,
    ) -> Result<(), InputError> {
        let mut alt = String::new();
        let mut pictures: Vec<String> = Vec::new();
        self.graphic_children(para, &mut alt, &mut pictures)?;
        for rel_id in pictures {
            let Some(rel) = self.rels.get(&rel_id) else {
                continue;
            };
            if rel.external {
                self.ctx.warnings.push(Warning::new(
                    "image_external",
                    format!("An image links to {} instead of being embedded in the document; it was left out.", rel.target),
                ));
                continue;
            }
            let target = rel.target.clone();
            if let Some(id) = self.ctx.images.add(
                self.ctx.archive,
                self.ctx.limits,
                &target,
                &alt,
                &mut self.ctx.warnings,
            )? {
                self.ctx.meter.element()?;
                para.atoms.push(
                    bits,
                    link,
                    AtomKind::Image {
                        id,
                        alt: alt.clone(),
                    },
                );
            }
        }
        Ok(())
    }

    fn graphic_children(
        &mut self,
        para: &mut Para,
        alt: &mut String,
        pictures: &mut Vec<String>,
    ) -> Result<(), InputError> {
        while let Some(tag) = self.x.child()? {
            self.graphic_element(tag, para, alt, pictures)?;
        }
        Ok(())
    }

    fn graphic_element(
        &mut self,
        tag: Tag,
        para: &mut Para,
        alt: &mut String,
        pictures: &mut Vec<String>,
    ) -> Result<(), InputError> {
        match (tag.ns, tag.name()) {
            (Ns::Wp, "docPr") => {
                let text = tag
                    .attr("descr")
                    .filter(|d| !d.trim().is_empty())
                    .or_else(|| tag.attr("title"));
                if let Some(text) = text
                    && alt.is_empty()
                {
                    *alt = text.trim().to_owned();
                }
                self.x.skip()
            }
            (Ns::A, "blip") => {
                if let Some(id) = tag.attr("embed").or_else(|| tag.attr("link")) {
                    pictures.push(id.into_owned());
                }
                self.x.skip()
            }
            (Ns::V, "imagedata") => {
                if let Some(id) = tag.attr("id") {
                    pictures.push(id.into_owned());
                }
                if alt.is_empty()
                    && let Some(title) = tag.attr("title")
                {
                    *alt = title.trim().to_owned();
                }
                self.x.skip()
            }
            (Ns::W, "txbxContent") => {
                self.ctx.text_boxes += 1;
                let mut items = Vec::new();
                let anchors = std::mem::take(&mut self.anchors);
                let carry = std::mem::take(&mut self.carry);
                self.blocks(&mut items, false)?;
                self.anchors = anchors;
                self.carry = carry;
                para.after.extend(items);
                Ok(())
            }
            (Ns::Mc, _) => self.alternate(tag, &mut |body, child| {
                body.graphic_element(child, para, alt, pictures)
            }),
            (ns, name) => {
                if ns == Ns::V && tag.attr("hr").is_some_and(|v| v == "t" || v == "true") {
                    para.rule = true;
                }
                if is_property(name) && ns != Ns::V {
                    self.x.skip()
                } else {
                    self.graphic_children(para, alt, pictures)
                }
            }
        }
    }

    // ---- Tables ----

    fn table(&mut self) -> Result<Table, InputError> {
        let mut rows: Vec<RawRow> = Vec::new();
        let mut caption = Vec::new();
        let mut first_row_head = false;
        self.table_rows(&mut rows, &mut caption, &mut first_row_head)?;
        if first_row_head
            && rows.len() > 1
            && !rows.iter().any(|r| r.header)
            && let Some(first) = rows.first_mut()
        {
            first.header = true;
        }
        Ok(build_table(rows, caption))
    }

    fn table_rows(
        &mut self,
        rows: &mut Vec<RawRow>,
        caption: &mut Vec<Inline>,
        first_row_head: &mut bool,
    ) -> Result<(), InputError> {
        while let Some(tag) = self.x.child()? {
            if tag.ns != Ns::W {
                self.x.skip()?;
                continue;
            }
            match tag.name() {
                "tr" => {
                    if let Some(row) = self.row()? {
                        rows.push(row);
                    }
                }
                "tblPr" => {
                    while let Some(t) = self.x.child()? {
                        match t.name() {
                            "tblCaption" => {
                                if let Some(v) = t.val().filter(|v| !v.trim().is_empty()) {
                                    *caption = vec![Inline::Text(v.trim().to_owned())];
                                }
                            }
                            // The table style sets the first row apart, as pandoc reads it.
                            "tblLook" => *first_row_head = first_row_look(&t),
                            _ => {}
                        }
                        self.x.skip()?;
                    }
                }
                "del" | "moveFrom" => self.x.skip()?,
                name if is_property(name) || name == "tblGrid" => self.x.skip()?,
                _ => self.table_rows(rows, caption, first_row_head)?,
            }
        }
        Ok(())
    }

    fn row(&mut self) -> Result<Option<RawRow>, InputError> {
        let mut row = RawRow::default();
        let mut deleted = false;
        self.row_children(&mut row, &mut deleted)?;
        Ok((!deleted).then_some(row))
    }

    fn row_children(&mut self, row: &mut RawRow, deleted: &mut bool) -> Result<(), InputError> {
        while let Some(tag) = self.x.child()? {
            if tag.ns != Ns::W {
                self.x.skip()?;
                continue;
            }
            match tag.name() {
                "tc" => {
                    let cell = self.cell()?;
                    row.cells.push(cell);
                }
                "trPr" => {
                    while let Some(t) = self.x.child()? {
                        match t.name() {
                            "tblHeader" => row.header = t.on(),
                            "gridBefore" => {
                                row.skip = t.val().and_then(|v| v.parse().ok()).unwrap_or(0)
                            }
                            "del" => *deleted = true,
                            _ => {}
                        }
                        self.x.skip()?;
                    }
                }
                "del" | "moveFrom" => self.x.skip()?,
                name if is_property(name) => self.x.skip()?,
                _ => self.row_children(row, deleted)?,
            }
        }
        Ok(())
    }

    fn cell(&mut self) -> Result<RawCell, InputError> {
        let mut cell = RawCell {
            span: 1,
            merge: Merge::None,
            items: Vec::new(),
        };
        let anchors = std::mem::take(&mut self.anchors);
        while let Some(tag) = self.x.child()? {
            if tag.is(Ns::W, "tcPr") {
                while let Some(t) = self.x.child()? {
                    match t.name() {
                        "gridSpan" => {
                            cell.span = t
                                .val()
                                .and_then(|v| v.parse().ok())
                                .unwrap_or(1)
                                .clamp(1, 1000)
                        }
                        "vMerge" => {
                            cell.merge = match t.val().as_deref() {
                                Some("restart") => Merge::Restart,
                                _ => Merge::Continue,
                            }
                        }
                        _ => {}
                    }
                    self.x.skip()?;
                }
                continue;
            }
            self.block(tag, &mut cell.items, false)?;
        }
        // Bookmarks at the end of a cell stay in it.
        if !self.anchors.is_empty() {
            let content = self.anchors.drain(..).map(Inline::Anchor).collect();
            cell.items.push(Item::Block(Block::Paragraph {
                align: Align::Default,
                content,
            }));
        }
        self.anchors = anchors;
        Ok(cell)
    }
}

/// Elements that hold properties, not content (`w:rPr`, `w:tblPr`, `w:sdtPr`, `w:rPrChange`…).
fn is_property(name: &str) -> bool {
    name.ends_with("Pr") || name.ends_with("PrEx") || name.ends_with("PrChange")
}

fn has_text(content: &[Inline]) -> bool {
    content.iter().any(|i| match i {
        Inline::Text(t) | Inline::Code(t) => !t.trim().is_empty(),
        Inline::Image { .. } | Inline::NoteRef(_) | Inline::Math(_) => true,
        Inline::LineBreak | Inline::Anchor(_) => false,
        container => container.children().is_some_and(|c| has_text(c)),
    })
}

fn anchors_of(content: &[Inline]) -> Vec<String> {
    let mut out = Vec::new();
    for inline in content {
        if let Inline::Anchor(a) = inline {
            out.push(a.clone());
        }
    }
    out
}

/// A heading's id is its first bookmark; the rest stay as anchors in its text.
fn take_first_anchor(mut content: Vec<Inline>) -> (Option<String>, Vec<Inline>) {
    let position = content.iter().position(|i| matches!(i, Inline::Anchor(_)));
    match position.map(|p| content.remove(p)) {
        Some(Inline::Anchor(id)) => (Some(id), content),
        _ => (None, content),
    }
}

/// A paragraph, a scene break or a figure.
fn simple_block(align: Align, content: Vec<Inline>) -> Block {
    let text = inline_text(&content);
    if is_scene_break(text.trim(), align) {
        return Block::SceneBreak;
    }
    let mut visible = content.iter().filter(|i| match i {
        Inline::Text(t) => !t.trim().is_empty(),
        Inline::Anchor(_) => false,
        _ => true,
    });
    if let (Some(Inline::Image { image, alt }), None) = (visible.next(), visible.next()) {
        return Block::Figure {
            image: image.clone(),
            alt: alt.clone(),
            caption: Vec::new(),
        };
    }
    Block::Paragraph { align, content }
}

/// `***`, `* * *`, `#`, or a short centred ornament (`❧`, `⁂`, `~ ~ ~`).
pub fn is_scene_break(text: &str, align: Align) -> bool {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if matches!(squeezed.as_str(), "***" | "#" | "###" | "****" | "*****") {
        return true;
    }
    align == Align::Center
        && !squeezed.is_empty()
        && squeezed.chars().count() <= 5
        && !squeezed.chars().any(char::is_alphanumeric)
}

fn code_text(atoms: &[inlines::Atom]) -> String {
    let mut out = String::new();
    for atom in atoms {
        match &atom.kind {
            AtomKind::Text(t) => out.push_str(t),
            AtomKind::Break => out.push('\n'),
            _ => {}
        }
    }
    out
}

/// Reads a notes part (`footnotes.xml`, `endnotes.xml`): note id → its items.
pub fn read_notes(
    x: &mut Xml,
    ctx: &mut Context,
    rels: &Rels,
    prefix: &str,
) -> Result<Vec<(String, Vec<Item>)>, InputError> {
    x.root()?;
    let mut notes = Vec::new();
    while let Some(tag) = x.child()? {
        let separator = matches!(
            tag.attr("type").as_deref(),
            Some("separator" | "continuationSeparator" | "continuationNotice")
        );
        if tag.ns == Ns::W && (tag.name() == "footnote" || tag.name() == "endnote") && !separator {
            let id = format!("{prefix}{}", tag.attr("id").unwrap_or_default());
            let mut items = Vec::new();
            let mut body = Body::new(x, ctx, rels, false);
            body.blocks(&mut items, false)?;
            notes.push((id, items));
        } else {
            x.skip()?;
        }
    }
    Ok(notes)
}

/// Reads the main document part: the blocks of `w:body`.
pub fn read_document(x: &mut Xml, ctx: &mut Context, rels: &Rels) -> Result<Vec<Item>, InputError> {
    let root = x.root()?;
    if !root.is(Ns::W, "document") {
        return Err(x.error("the root element is not a WordprocessingML document"));
    }
    let mut items = Vec::new();
    while let Some(tag) = x.child()? {
        if tag.is(Ns::W, "body") {
            let mut body = Body::new(x, ctx, rels, true);
            body.blocks(&mut items, true)?;
            // Bookmarks after the last paragraph still need a home.
            if !body.anchors.is_empty() {
                let content = body.anchors.drain(..).map(Inline::Anchor).collect();
                items.push(Item::Block(Block::Paragraph {
                    align: Align::Default,
                    content,
                }));
            }
            if !body.carry.is_empty() {
                let content = std::mem::take(&mut body.carry);
                items.push(Item::Block(Block::Paragraph {
                    align: Align::Default,
                    content,
                }));
            }
        } else {
            x.skip()?;
        }
    }
    // Keep the shape of a read `Ev` match exhaustive for future events.
    let _ = Ev::Eof;
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scene_breaks_are_recognised_and_ordinary_short_lines_are_not() {
        for text in ["***", "* * *", "#", "*  *  *"] {
            assert!(is_scene_break(text, Align::Default), "{text}");
        }
        for text in ["❧", "⁂", "~ ~ ~", "— — —"] {
            assert!(is_scene_break(text, Align::Center), "{text}");
            assert!(!is_scene_break(text, Align::Default), "{text}");
        }
        for text in ["I", "Fin", "1.", "* * * * * *"] {
            assert!(!is_scene_break(text, Align::Center), "{text}");
        }
    }
}
