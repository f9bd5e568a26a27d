//! A Word table as the body reads it (rows of cells, each with its grid span and vertical
//! merge), and the table of the document model it becomes.

use super::assemble::Item;
use crate::document::{Cell, Inline, Row, Table};
use crate::manuscript::xml::Tag;

#[derive(Default)]
pub(super) struct RawRow {
    pub header: bool,
    pub skip: u32,
    pub cells: Vec<RawCell>,
}

pub(super) struct RawCell {
    pub span: u32,
    pub merge: Merge,
    pub items: Vec<Item>,
}

#[derive(PartialEq, Eq, Clone, Copy)]
pub(super) enum Merge {
    None,
    Restart,
    Continue,
}

/// Vertical merges become row spans (a continuing cell adds one to the cell above it that
/// starts at the same grid column); leading rows marked as headers repeat on each page in
/// Word, and are the table's head here.
pub(super) fn build_table(rows: Vec<RawRow>, caption: Vec<Inline>) -> Table {
    let mut out: Vec<(bool, Row)> = Vec::new();
    // Grid column → (row, cell) of the cell a vertical merge continues.
    let mut origins: std::collections::HashMap<u32, (usize, usize)> = Default::default();
    for raw in rows {
        let r = out.len();
        let mut row = Row::default();
        let mut col = raw.skip;
        for cell in raw.cells {
            let start = col;
            col = col.saturating_add(cell.span);
            if cell.merge == Merge::Continue
                && let Some(&(or, oc)) = origins.get(&start)
                && let Some(origin) = out.get_mut(or).and_then(|(_, row)| row.cells.get_mut(oc))
            {
                origin.rowspan += 1;
                continue;
            }
            let mut c = Cell::new(super::assemble::assemble(cell.items));
            c.colspan = cell.span;
            if cell.merge == Merge::Restart {
                origins.insert(start, (r, row.cells.len()));
            } else {
                origins.remove(&start);
            }
            row.cells.push(c);
        }
        out.push((raw.header, row));
    }
    // The head is the leading header rows, extended over any rows its cells span into.
    let mut head_len = out.iter().take_while(|(h, _)| *h).count();
    let mut i = 0;
    while i < head_len {
        let reach = out[i]
            .1
            .cells
            .iter()
            .map(|c| c.rowspan as usize)
            .max()
            .unwrap_or(1);
        head_len = head_len.max((i + reach).min(out.len()));
        i += 1;
    }
    let mut table = Table {
        caption,
        ..Table::default()
    };
    for (i, (_, row)) in out.into_iter().enumerate() {
        if i < head_len {
            table.head.push(row);
        } else {
            table.body.push(row);
        }
    }
    table
}

/// `w:tblLook`: `w:firstRow="1"`, or bit 0x20 of the older hexadecimal `w:val`.
pub(super) fn first_row_look(tag: &Tag) -> bool {
    match tag.attr("firstRow") {
        Some(v) => v == "1" || v == "true" || v == "on",
        None => tag
            .val()
            .and_then(|v| u32::from_str_radix(&v, 16).ok())
            .is_some_and(|v| v & 0x20 != 0),
    }
}
