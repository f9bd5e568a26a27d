//! The copyright page of an ebook (the EPUB's `copyright.xhtml`, the web reader's contents
//! page), stamped: one paragraph added, on a line of its own, at the end of the section
//! Bindery marks as the copyright notice (`ebook::epub::COPYRIGHT_ID`). Nothing else of the
//! page changes.

use super::StampError;
use crate::ebook::epub::COPYRIGHT_ID;
use crate::ebook::reader::STAMP_ID;

/// `page` (the file `file`) with `paragraph` at the end of its copyright section.
pub(super) fn stamp(page: &str, paragraph: &str, file: &'static str) -> Result<String, StampError> {
    if page.contains(&format!(" id=\"{STAMP_ID}\"")) {
        return Err(StampError::AlreadyStamped(file));
    }
    let open = format!("<section id=\"{COPYRIGHT_ID}\"");
    let end = page
        .find(&open)
        .and_then(|start| {
            // The section holds paragraphs only: its end is the first after it.
            page[start..].find("</section>").map(|end| start + end)
        })
        .ok_or(StampError::NoCopyrightSection(file))?;
    let mut out = String::with_capacity(page.len() + paragraph.len());
    out.push_str(&page[..end]);
    out.push_str(paragraph);
    out.push_str(&page[end..]);
    Ok(out)
}
