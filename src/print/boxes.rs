//! The trim and bleed boxes a printer reads from a page with bleed.
//!
//! Typst 0.14 has no page bleed (it came in 0.15, which is slower on books), so the pages are
//! laid out on the media (trim plus bleed on the fore-edge, top and bottom) and the boxes are
//! written here: each page object gains a `/TrimBox` on the trim, which sits against the spine
//! (left on a recto, right on a verso), and a `/BleedBox` on the media. The PDF typst-pdf writes
//! is plain objects with one classic cross-reference table; the boxes are put into the page
//! objects and every offset after them moved, so the file stays one revision, and the same
//! input still gives the same bytes.

use anyhow::{Context as _, anyhow, bail};

/// Adds the boxes to every page; `bleed` is in points.
pub(crate) fn add_trim_boxes(
    pdf: &[u8],
    bleed: f64,
    bound_on_right: bool,
) -> anyhow::Result<Vec<u8>> {
    let xref_at = start_xref(pdf)?;
    let table = XrefTable::parse(pdf, xref_at)?;
    let kids = page_kids(pdf, &table)?;
    // Insertions, by offset in the old file.
    let mut inserts: Vec<(usize, String)> = Vec::with_capacity(kids.len());
    for (index, object) in kids.iter().enumerate() {
        let offset = table
            .offset(*object)
            .ok_or_else(|| anyhow!("page object {object} is not in the cross-reference table"))?;
        let body = object_body(pdf, offset)?;
        let media = find(body, b"/MediaBox [")
            .ok_or_else(|| anyhow!("page object {object} has no /MediaBox"))?;
        let close = find(&body[media..], b"]")
            .map(|c| media + c + 1)
            .ok_or_else(|| anyhow!("page object {object}: unterminated /MediaBox"))?;
        let numbers: Vec<f64> =
            std::str::from_utf8(&body[media + b"/MediaBox [".len()..close - 1])?
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .with_context(|| format!("page object {object}: reading its /MediaBox"))?;
        let [x0, y0, x1, y1] = numbers[..] else {
            bail!(
                "page object {object}: a /MediaBox of {} numbers",
                numbers.len()
            );
        };
        // Page 1 is a recto: its spine edge is on the left, its bleed on the right (the other
        // way round in a book bound on the right, one in a right-to-left script).
        let trim = if (index % 2 == 0) != bound_on_right {
            [x0, y0 + bleed, x1 - bleed, y1 - bleed]
        } else {
            [x0 + bleed, y0 + bleed, x1, y1 - bleed]
        };
        let text = format!(
            "\n  /TrimBox [{}]\n  /BleedBox [{}]",
            numbers_text(&trim),
            numbers_text(&[x0, y0, x1, y1])
        );
        inserts.push((offset + close, text));
    }
    inserts.sort_by_key(|(at, _)| *at);

    let mut out =
        Vec::with_capacity(pdf.len() + inserts.iter().map(|(_, t)| t.len()).sum::<usize>());
    let mut copied = 0;
    for (at, text) in &inserts {
        out.extend_from_slice(&pdf[copied..*at]);
        out.extend_from_slice(text.as_bytes());
        copied = *at;
    }
    // Everything after the last page object moves by the whole insertion; before it, by what
    // was inserted before it.
    let shift = |old: usize| -> usize {
        old + inserts
            .iter()
            .take_while(|(at, _)| *at < old)
            .map(|(_, t)| t.len())
            .sum::<usize>()
    };
    out.extend_from_slice(&pdf[copied..xref_at]);
    let new_xref = out.len();
    out.extend_from_slice(&table.write(shift));
    out.extend_from_slice(&pdf[table.end..trailer_end(pdf, table.end)?]);
    out.extend_from_slice(format!("startxref\n{new_xref}\n%%EOF").as_bytes());
    Ok(out)
}

fn numbers_text(numbers: &[f64]) -> String {
    numbers
        .iter()
        .map(|n| {
            let s = format!("{n:.4}");
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn start_xref(pdf: &[u8]) -> anyhow::Result<usize> {
    let tail = &pdf[pdf.len().saturating_sub(64)..];
    let at = find(tail, b"startxref").ok_or_else(|| anyhow!("no startxref"))?;
    let number = std::str::from_utf8(&tail[at + b"startxref".len()..])?
        .split_whitespace()
        .next()
        .ok_or_else(|| anyhow!("startxref without an offset"))?;
    Ok(number.parse()?)
}

/// Where the trailer ends: at its `startxref`.
fn trailer_end(pdf: &[u8], from: usize) -> anyhow::Result<usize> {
    find(&pdf[from..], b"startxref")
        .map(|at| from + at)
        .ok_or_else(|| anyhow!("no startxref after the trailer"))
}

/// An object's text from its header to `endobj`.
fn object_body(pdf: &[u8], offset: usize) -> anyhow::Result<&[u8]> {
    let rest = &pdf[offset..];
    let end = find(rest, b"endobj").ok_or_else(|| anyhow!("no endobj after {offset}"))?;
    Ok(&rest[..end])
}

/// The page objects, in page order, from the root page tree's `/Kids`.
fn page_kids(pdf: &[u8], table: &XrefTable) -> anyhow::Result<Vec<u32>> {
    for (object, offset) in table.objects() {
        let body = object_body(pdf, offset)?;
        if find(body, b"/Type /Pages").is_none() || find(body, b"/Parent").is_some() {
            continue;
        }
        let kids =
            find(body, b"/Kids [").ok_or_else(|| anyhow!("page tree {object} has no /Kids"))?;
        let list = &body[kids + b"/Kids [".len()..];
        let end =
            find(list, b"]").ok_or_else(|| anyhow!("page tree {object}: unterminated /Kids"))?;
        let words: Vec<&str> = std::str::from_utf8(&list[..end])?
            .split_whitespace()
            .collect();
        let mut pages = Vec::with_capacity(words.len() / 3);
        for reference in words.chunks(3) {
            match reference {
                [number, "0", "R"] => pages.push(number.parse()?),
                other => bail!("page tree {object}: {other:?} is not a page reference"),
            }
        }
        // A nested page tree would hold /Pages among its kids; typst-pdf writes a flat one.
        for page in &pages {
            let body = object_body(
                pdf,
                table
                    .offset(*page)
                    .ok_or_else(|| anyhow!("no page {page}"))?,
            )?;
            if find(body, b"/Type /Page\n").is_none() {
                bail!("object {page} in the page tree is not a page");
            }
        }
        return Ok(pages);
    }
    bail!("no page tree")
}

/// A classic cross-reference table: subsections of 20-byte entries.
struct XrefTable {
    /// (first object number, entries as written).
    sections: Vec<(u32, Vec<[u8; 20]>)>,
    /// Offset just past the last entry (where `trailer` starts).
    end: usize,
}

impl XrefTable {
    fn parse(pdf: &[u8], at: usize) -> anyhow::Result<XrefTable> {
        let mut pos = at;
        let line = |pos: &mut usize| -> anyhow::Result<&str> {
            let rest = &pdf[*pos..];
            let end = rest
                .iter()
                .position(|b| *b == b'\n')
                .ok_or_else(|| anyhow!("unterminated line in the cross-reference table"))?;
            *pos += end + 1;
            Ok(std::str::from_utf8(&rest[..end])?.trim_end_matches('\r'))
        };
        if line(&mut pos)?.trim() != "xref" {
            bail!("no classic cross-reference table at {at}");
        }
        let mut sections = Vec::new();
        loop {
            let save = pos;
            let header = line(&mut pos)?;
            if header.starts_with("trailer") {
                return Ok(XrefTable {
                    sections,
                    end: save,
                });
            }
            let mut words = header.split_whitespace();
            let (Some(first), Some(count)) = (words.next(), words.next()) else {
                bail!("bad cross-reference subsection header {header:?}");
            };
            let (first, count): (u32, usize) = (first.parse()?, count.parse()?);
            let mut entries = Vec::with_capacity(count);
            for _ in 0..count {
                let entry: [u8; 20] = pdf
                    .get(pos..pos + 20)
                    .ok_or_else(|| anyhow!("truncated cross-reference table"))?
                    .try_into()?;
                entries.push(entry);
                pos += 20;
            }
            sections.push((first, entries));
        }
    }

    fn objects(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        self.sections.iter().flat_map(|(first, entries)| {
            entries.iter().enumerate().filter_map(move |(i, e)| {
                (e[17] == b'n')
                    .then(|| std::str::from_utf8(&e[..10]).ok()?.parse().ok())
                    .flatten()
                    .map(|offset| (first + i as u32, offset))
            })
        })
    }

    fn offset(&self, object: u32) -> Option<usize> {
        self.objects().find(|(o, _)| *o == object).map(|(_, at)| at)
    }

    fn write(&self, shift: impl Fn(usize) -> usize) -> Vec<u8> {
        let mut out = b"xref\n".to_vec();
        for (first, entries) in &self.sections {
            out.extend_from_slice(format!("{first} {}\n", entries.len()).as_bytes());
            for entry in entries {
                if entry[17] == b'n' {
                    let old: usize = std::str::from_utf8(&entry[..10])
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    out.extend_from_slice(format!("{:010}", shift(old)).as_bytes());
                    out.extend_from_slice(&entry[10..]);
                } else {
                    out.extend_from_slice(entry);
                }
            }
        }
        out
    }
}
