//! What changed between two revisions of a book, for the author and the proofreader: the
//! chapters added, removed, renamed, moved or changed, each changed one's words added and
//! removed with a word-level diff (unchanged text folded), the print edition's page count
//! before and after, the first printed page that differs and the chapters whose pages moved,
//! and the warnings that are new or gone.
//!
//! Chapters are matched by their text, then by their title, then (a few left over) by how
//! alike their words are; a chapter matched to one that sits elsewhere in the order has moved.
//! Pure: two revisions' models, reports and paginations in, a report out.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use similar::{Algorithm, ChangeTag, TextDiff};

use super::{Book, Pagination};
use crate::document::positions::TextPosition;
use crate::document::{Chapter, inline_text, plain_text, positions::text_blocks};
use crate::report::Report;

/// Words of unchanged text kept on each side of a change; the rest of an unchanged run is
/// folded.
const CONTEXT_WORDS: usize = 12;

/// How long one chapter's word diff may take: past it, the diff is coarser (whole runs marked
/// as changed), never slower. A chapter rewritten end to end is the worst case.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// Chapters left unmatched by text and title are compared word for word only this many at a
/// time (each pair is a diff).
const MOST_COMPARED: usize = 40;

/// How alike two chapters' words must be (0 to 1) to be one chapter rewritten.
const ALIKE: f32 = 0.5;

/// One revision as the comparison reads it.
pub struct Version<'a> {
    pub number: u32,
    pub book: &'a Book,
    pub report: Option<&'a Report>,
    /// Where its printed pages begin, when it has a print edition.
    pub pagination: Option<&'a Pagination>,
}

/// What changed from revision `from` to revision `to`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Changes {
    pub from: u32,
    pub to: u32,
    /// Every chapter that is not the same text at the same place under the same title, in the
    /// newer revision's order (removed ones where they were).
    pub chapters: Vec<ChapterChange>,
    /// The print edition, when both revisions have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub print: Option<PrintChanges>,
    pub warnings: WarningChanges,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChapterChange {
    pub status: ChapterStatus,
    /// Its title in the newer revision (in the older, for a removed chapter).
    pub title: String,
    /// Its title in the older revision, when it was renamed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// Its place (from 1) in each revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_position: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_position: Option<usize>,
    /// It sits elsewhere among the chapters the two revisions share.
    pub moved: bool,
    pub words_added: usize,
    pub words_removed: usize,
    /// The word-level diff of a changed chapter: runs of unchanged, inserted and deleted text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<Run>,
}

/// What became of a chapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChapterStatus {
    Added,
    Removed,
    Changed,
    /// Its text is the same: it was renamed or moved.
    Unchanged,
}

impl ChapterStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Removed => "removed",
            Self::Changed => "changed",
            Self::Unchanged => "unchanged",
        }
    }
}

/// A diff run's text is the same in both, only in the newer, or only in the older.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Equal,
    Insert,
    Delete,
}

/// A run of a chapter's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub op: Op,
    pub text: String,
    /// Words of unchanged text left out in the middle of this run (`equal` only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folded: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrintChanges {
    pub pages_before: usize,
    pub pages_after: usize,
    /// The folio of the first page of the newer print edition whose text differs; none when
    /// no text changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_page_that_differs: Option<String>,
    /// The chapters whose printed pages are not the same pages as before: a proofreader checks
    /// these again.
    pub chapters_moved: Vec<PagesMoved>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PagesMoved {
    pub title: String,
    /// Its first and last folios, before and after.
    pub before: (String, String),
    pub after: (String, String),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WarningChanges {
    pub new: Vec<WarningLine>,
    pub gone: Vec<WarningLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WarningLine {
    pub code: String,
    pub message: String,
}

/// What changed from `from` to `to`.
pub fn compare(from: &Version<'_>, to: &Version<'_>) -> Changes {
    let old = &from.book.document.chapters;
    let new = &to.book.document.chapters;
    let old_text: Vec<String> = old.iter().map(|c| plain_text(&c.blocks)).collect();
    let new_text: Vec<String> = new.iter().map(|c| plain_text(&c.blocks)).collect();
    let pairs = match_chapters(old, new, &old_text, &new_text);
    let moved = moved(&pairs);

    let mut chapters = Vec::new();
    let mut first_change: Option<TextPosition> = None;
    let mut note = |at: TextPosition| {
        if first_change.is_none_or(|first| at < first) {
            first_change = Some(at);
        }
    };
    let matched_old: HashSet<usize> = pairs.iter().map(|(o, _)| *o).collect();
    for (j, chapter) in new.iter().enumerate() {
        match pairs.iter().find(|(_, n)| *n == j) {
            Some(&(i, _)) => {
                let was = &old[i];
                let renamed = was.title != chapter.title;
                let is_moved = moved.contains(&(i, j));
                let changed = old_text[i] != new_text[j];
                if changed {
                    note(first_difference(was, chapter, j));
                }
                if !(changed || renamed || is_moved) {
                    continue;
                }
                let (diff, added, removed) = if changed {
                    word_diff(&old_text[i], &new_text[j])
                } else {
                    (Vec::new(), 0, 0)
                };
                chapters.push(ChapterChange {
                    status: if changed {
                        ChapterStatus::Changed
                    } else {
                        ChapterStatus::Unchanged
                    },
                    title: chapter.title.clone(),
                    renamed_from: renamed.then(|| was.title.clone()),
                    from_position: Some(i + 1),
                    to_position: Some(j + 1),
                    moved: is_moved,
                    words_added: added,
                    words_removed: removed,
                    diff,
                });
            }
            None => {
                note(TextPosition {
                    chapter: j,
                    block: 0,
                    offset: 0,
                });
                chapters.push(ChapterChange {
                    status: ChapterStatus::Added,
                    title: chapter.title.clone(),
                    renamed_from: None,
                    from_position: None,
                    to_position: Some(j + 1),
                    moved: false,
                    words_added: words(&new_text[j]),
                    words_removed: 0,
                    diff: Vec::new(),
                });
            }
        }
    }
    for (i, chapter) in old.iter().enumerate() {
        if matched_old.contains(&i) {
            continue;
        }
        // Where it was: before the first chapter after it that both revisions have.
        let next = pairs
            .iter()
            .filter(|(o, _)| *o > i)
            .map(|(_, n)| *n)
            .min()
            .unwrap_or(new.len());
        note(TextPosition {
            chapter: next,
            block: 0,
            offset: 0,
        });
        let at = chapters
            .iter()
            .position(|c| c.to_position.is_some_and(|p| p > next))
            .unwrap_or(chapters.len());
        chapters.insert(
            at,
            ChapterChange {
                status: ChapterStatus::Removed,
                title: chapter.title.clone(),
                renamed_from: None,
                from_position: Some(i + 1),
                to_position: None,
                moved: false,
                words_added: 0,
                words_removed: words(&old_text[i]),
                diff: Vec::new(),
            },
        );
    }
    Changes {
        from: from.number,
        to: to.number,
        chapters,
        print: print_changes(from, to, &pairs, first_change),
        warnings: warning_changes(from.report, to.report),
    }
}

/// Pairs of chapter indexes (older, newer) that are one chapter.
fn match_chapters(
    old: &[Chapter],
    new: &[Chapter],
    old_text: &[String],
    new_text: &[String],
) -> Vec<(usize, usize)> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    // The same text: the same chapter, wherever it went (the nearest first, for repeats).
    for (j, text) in new_text.iter().enumerate() {
        let same = (0..old.len())
            .filter(|&i| old_text[i] == *text && old_free_at(&pairs, i))
            .min_by_key(|&i| i.abs_diff(j));
        if let Some(i) = same {
            pairs.push((i, j));
        }
    }
    // The same title, when it names one chapter on each side.
    for (j, chapter) in new.iter().enumerate() {
        if !new_free_at(&pairs, j) || chapter.title.is_empty() {
            continue;
        }
        let titled: Vec<usize> = (0..old.len())
            .filter(|&i| old_free_at(&pairs, i) && old[i].title == chapter.title)
            .collect();
        if let [i] = titled[..] {
            pairs.push((i, j));
        }
    }
    // Alike words, for a few left over (a chapter renamed and rewritten).
    let old_left: Vec<usize> = (0..old.len()).filter(|&i| old_free_at(&pairs, i)).collect();
    let new_left: Vec<usize> = (0..new.len()).filter(|&j| new_free_at(&pairs, j)).collect();
    if old_left.len() <= MOST_COMPARED && new_left.len() <= MOST_COMPARED {
        let mut scored: Vec<(f32, usize, usize)> = Vec::new();
        for &i in &old_left {
            for &j in &new_left {
                let ratio = TextDiff::configure()
                    .algorithm(Algorithm::Patience)
                    .timeout(DIFF_TIMEOUT)
                    .diff_words(old_text[i].as_str(), new_text[j].as_str())
                    .ratio();
                if ratio >= ALIKE {
                    scored.push((ratio, i, j));
                }
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, i, j) in scored {
            if old_free_at(&pairs, i) && new_free_at(&pairs, j) {
                pairs.push((i, j));
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

fn old_free_at(pairs: &[(usize, usize)], i: usize) -> bool {
    !pairs.iter().any(|(o, _)| *o == i)
}

fn new_free_at(pairs: &[(usize, usize)], j: usize) -> bool {
    !pairs.iter().any(|(_, n)| *n == j)
}

/// The pairs that moved: those outside the longest run of pairs whose newer places rise as
/// their older places do (the chapters that kept their order).
fn moved(pairs: &[(usize, usize)]) -> HashSet<(usize, usize)> {
    // `pairs` is sorted by older place; the longest increasing subsequence of the newer places.
    let n = pairs.len();
    let mut best = vec![1usize; n];
    let mut before = vec![usize::MAX; n];
    for k in 0..n {
        for m in 0..k {
            if pairs[m].1 < pairs[k].1 && best[m] + 1 > best[k] {
                best[k] = best[m] + 1;
                before[k] = m;
            }
        }
    }
    let mut kept = HashSet::new();
    if let Some(mut k) = (0..n).max_by_key(|&k| (best[k], std::cmp::Reverse(k))) {
        loop {
            kept.insert(pairs[k]);
            if before[k] == usize::MAX {
                break;
            }
            k = before[k];
        }
    }
    pairs
        .iter()
        .filter(|p| !kept.contains(p))
        .copied()
        .collect()
}

/// The word-level diff of two chapters' text, unchanged runs folded, and the words it adds and
/// removes.
fn word_diff(old: &str, new: &str) -> (Vec<Run>, usize, usize) {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(DIFF_TIMEOUT)
        .diff_words(old, new);
    let mut runs: Vec<Run> = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        let op = match change.tag() {
            ChangeTag::Equal => Op::Equal,
            ChangeTag::Insert => Op::Insert,
            ChangeTag::Delete => Op::Delete,
        };
        let text = change.value();
        if !text.trim().is_empty() {
            match change.tag() {
                ChangeTag::Insert => added += 1,
                ChangeTag::Delete => removed += 1,
                ChangeTag::Equal => {}
            }
        }
        match runs.last_mut() {
            Some(last) if last.op == op => last.text.push_str(text),
            _ => runs.push(Run {
                op,
                text: text.to_owned(),
                folded: 0,
            }),
        }
    }
    let last = runs.len().saturating_sub(1);
    for (k, run) in runs.iter_mut().enumerate() {
        if run.op == Op::Equal {
            fold(run, k > 0, k < last);
        }
    }
    (runs, added, removed)
}

/// Keeps `CONTEXT_WORDS` of an unchanged run next to each change (`before`: a change precedes
/// it; `after`: one follows it), folding the middle.
fn fold(run: &mut Run, before: bool, after: bool) {
    let words: Vec<&str> = run.text.split_whitespace().collect();
    let keep = usize::from(before) * CONTEXT_WORDS + usize::from(after) * CONTEXT_WORDS;
    if words.len() <= keep + CONTEXT_WORDS / 2 {
        return;
    }
    let head = if before { CONTEXT_WORDS } else { 0 };
    let tail = if after { CONTEXT_WORDS } else { 0 };
    let lead = if run.text.starts_with(char::is_whitespace) {
        " "
    } else {
        ""
    };
    let trail = if run.text.ends_with(char::is_whitespace) {
        " "
    } else {
        ""
    };
    let mut text = String::new();
    text.push_str(lead);
    text.push_str(&words[..head].join(" "));
    text.push_str(" … ");
    text.push_str(&words[words.len() - tail..].join(" "));
    text.push_str(trail);
    run.folded = words.len() - head - tail;
    run.text = text.replace("  ", " ");
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Where the text of chapter `new` (at index `at` in its revision) first differs from `old`:
/// the first text block that differs, at the first byte that does.
fn first_difference(old: &Chapter, new: &Chapter, at: usize) -> TextPosition {
    let old_blocks: Vec<String> = text_blocks(old)
        .into_iter()
        .map(|b| inline_text(b))
        .collect();
    let new_blocks: Vec<String> = text_blocks(new)
        .into_iter()
        .map(|b| inline_text(b))
        .collect();
    for (block, text) in new_blocks.iter().enumerate() {
        let was = old_blocks.get(block).map_or("", String::as_str);
        if was != text {
            let offset = text
                .char_indices()
                .zip(was.chars())
                .find(|((_, a), b)| a != b)
                .map_or(was.len().min(text.len()), |((i, _), _)| i);
            return TextPosition {
                chapter: at,
                block,
                offset,
            };
        }
    }
    // Only blocks removed at its end: it differs where they were.
    TextPosition {
        chapter: at,
        block: new_blocks.len(),
        offset: 0,
    }
}

fn print_changes(
    from: &Version<'_>,
    to: &Version<'_>,
    pairs: &[(usize, usize)],
    first_change: Option<TextPosition>,
) -> Option<PrintChanges> {
    let (before, after) = (from.pagination?, to.pagination?);
    let first_page_that_differs = first_change.and_then(|at| {
        after
            .pages
            .iter()
            .take_while(|p| p.at <= at)
            .last()
            .or(after.pages.first())
            .map(|p| p.label.clone())
    });
    let titles = &to.book.document.chapters;
    let mut chapters_moved = Vec::new();
    for &(i, j) in pairs {
        let (Some(was), Some(is)) = (pages_of(before, i), pages_of(after, j)) else {
            continue;
        };
        if was != is {
            chapters_moved.push(PagesMoved {
                title: titles[j].title.clone(),
                before: was,
                after: is,
            });
        }
    }
    chapters_moved.sort_by_key(|m| {
        titles
            .iter()
            .position(|c| c.title == m.title)
            .unwrap_or(usize::MAX)
    });
    // The page count the report gives (blank pages too), else the pages that hold text.
    let count = |version: &Version<'_>, pagination: &Pagination| {
        version
            .report
            .and_then(|r| r.print.as_ref())
            .and_then(|p| p.pages)
            .map_or(pagination.pages.len(), |n| n as usize)
    };
    Some(PrintChanges {
        pages_before: count(from, before),
        pages_after: count(to, after),
        first_page_that_differs,
        chapters_moved,
    })
}

/// The first and last folios of chapter `index`'s pages.
fn pages_of(pagination: &Pagination, index: usize) -> Option<(String, String)> {
    let pages: Vec<&str> = pagination
        .pages
        .iter()
        .filter(|p| p.at.chapter == index)
        .map(|p| p.label.as_str())
        .collect();
    Some(((*pages.first()?).to_owned(), (*pages.last()?).to_owned()))
}

fn warning_changes(from: Option<&Report>, to: Option<&Report>) -> WarningChanges {
    let lines = |report: Option<&Report>| -> BTreeSet<WarningLine> {
        report
            .into_iter()
            .flat_map(|r| &r.warnings)
            .map(|w| WarningLine {
                code: w.code.clone(),
                message: w.message.clone(),
            })
            .collect()
    };
    let (before, after) = (lines(from), lines(to));
    WarningChanges {
        new: after.difference(&before).cloned().collect(),
        gone: before.difference(&after).cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: Op, text: &str) -> Run {
        Run {
            op,
            text: text.to_owned(),
            folded: 0,
        }
    }

    #[test]
    fn a_changed_word_is_one_word_out_and_one_in_with_the_rest_folded() {
        let long: String = (0..60).map(|i| format!("w{i} ")).collect();
        let old = format!("{long}the stormy night. {long}");
        let new = format!("{long}the calm night. {long}");
        let (diff, added, removed) = word_diff(&old, &new);
        assert_eq!((added, removed), (1, 1));
        let changed: Vec<&Run> = diff.iter().filter(|r| r.op != Op::Equal).collect();
        assert_eq!(
            changed,
            [&run(Op::Delete, "stormy"), &run(Op::Insert, "calm")]
        );
        let folded: usize = diff.iter().map(|r| r.folded).sum();
        assert!(folded > 90, "{diff:?}");
        assert!(diff[0].text.contains('…'), "{diff:?}");
        // Stored as JSON at publication, and read back as it was made.
        let json = serde_json::to_string(&diff).unwrap();
        assert!(json.contains(r#""op":"delete""#), "{json}");
        assert_eq!(serde_json::from_str::<Vec<Run>>(&json).unwrap(), diff);
    }

    #[test]
    fn chapters_that_kept_their_order_did_not_move_and_one_that_jumped_did() {
        let pairs = [(0, 0), (1, 3), (2, 1), (3, 2)];
        let moved = moved(&pairs);
        assert_eq!(moved, HashSet::from([(1, 3)]));
    }
}
