//! The reader's HTML pages: the contents page (the title page, the contents and the copyright
//! notice) and one page per chapter.
//!
//! Every page is HTML5 that a strict Content-Security-Policy accepts as it is: scripts and
//! styles come only from `reader.js` and `reader.css`, no `style=` and no `on…=` attributes,
//! and every URL within the site is relative so the site works under any prefix (the links
//! out, to the book's page and its EPUB, are the server's, given as they are).

use std::collections::BTreeMap;

use crate::document::Division;
use crate::ebook::Book;
use crate::ebook::epub::{COPYRIGHT_ID, copyright_lines};
use crate::ebook::xhtml::escape::{escaped, escaped_attr};
use crate::ebook::xhtml::{PrintedPage, Target, chapter_file_name};
use crate::labels::{Key, Labels};
use crate::language::Direction;

/// Colours the browser chrome takes while a page loads (`theme-color`), per theme; the same
/// values as `--bar` in `reader.css`.
pub const LIGHT_BAR: &str = "#f3eee4";
pub const DARK_BAR: &str = "#1d1e20";

/// The page that lists the print edition's pages and goes to one (`pages.html?page=112`).
pub const PAGES_FILE: &str = "pages.html";

/// What every page of one site shares.
pub struct Site<'a> {
    pub book: &'a Book,
    /// Labels for the contents and the pager: a chapter's title, or a made-up label.
    pub labels: Vec<String>,
    /// Pixel sizes of images by site path (`images/a.png`), so pages reserve their space.
    pub image_sizes: BTreeMap<String, (u32, u32)>,
    /// The cover's site path, when the book has one.
    pub cover: Option<String>,
    /// Each chapter's title and subtitle, for the contents.
    pub toc: Vec<(String, Option<String>)>,
    /// The book's page and EPUB outside the site, when it has them.
    pub links: &'a super::Links,
    /// The print edition's pages the chapters mark, in reading order; empty without one.
    pub pages: Vec<PrintedPage>,
}

/// Which page of the site a page is, for the bar.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Contents,
    Pages,
    Chapter(usize),
}

impl Site<'_> {
    fn labels(&self) -> Labels<'_> {
        self.book.metadata.labels()
    }

    /// A label escaped for an attribute or an element's text.
    fn word(&self, key: Key) -> String {
        escaped_attr(self.labels().get(key))
    }

    fn head(&self, title: &str, links: &str) -> String {
        let m = &self.book.metadata;
        let dir = Direction::of(&m.language).as_str();
        let description = m
            .description
            .as_deref()
            .map(|d| {
                format!(
                    "<meta name=\"description\" content=\"{}\">\n",
                    escaped_attr(d)
                )
            })
            .unwrap_or_default();
        format!(
            "<!DOCTYPE html>\n\
             <html lang=\"{lang}\" dir=\"{dir}\">\n\
             <head>\n\
             <meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"color-scheme\" content=\"light dark\">\n\
             <meta name=\"theme-color\" content=\"{LIGHT_BAR}\" media=\"(prefers-color-scheme: light)\">\n\
             <meta name=\"theme-color\" content=\"{DARK_BAR}\" media=\"(prefers-color-scheme: dark)\">\n\
             {description}\
             <title>{title}</title>\n\
             <link rel=\"stylesheet\" href=\"reader.css\">\n\
             <link rel=\"manifest\" href=\"manifest.webmanifest\">\n\
             <link rel=\"icon\" type=\"image/png\" sizes=\"192x192\" href=\"icon-192.png\">\n\
             <link rel=\"apple-touch-icon\" href=\"apple-touch-icon.png\">\n\
             {links}\
             <script src=\"reader.js\"></script>\n\
             </head>\n",
            lang = escaped_attr(&m.language),
            title = escaped(title),
        )
    }

    /// The bar at the top of every page: the book's title (to the contents), on a chapter
    /// where it is in the book, and the settings. On a chapter it steps aside while the
    /// reader reads on, and comes back at a tap or a scroll back up (`reader.js`).
    fn bar(&self, place: Place) -> String {
        let current = if place == Place::Contents {
            " aria-current=\"page\""
        } else {
            ""
        };
        let chapter = match place {
            Place::Chapter(index) => Some(index),
            _ => None,
        };
        // The way to a printed page, from every page but the one that lists them.
        let pages = if self.pages.is_empty() || place == Place::Pages {
            String::new()
        } else {
            format!(
                "<a class=\"bar-pages\" href=\"{PAGES_FILE}\" title=\"{go}\">\
                 <span aria-hidden=\"true\">{short}</span>\
                 <span class=\"visually-hidden\">{go}</span></a>\n",
                go = self.word(Key::GoToPrintPage),
                short = self.word(Key::PageShort),
            )
        };
        let total = self.labels.len();
        let (class, position) = match chapter {
            Some(index) => (
                "bar bar-chapter",
                format!(
                    "<span class=\"bar-position\" data-index=\"{index}\" data-total=\"{total}\">\
                     <span class=\"visually-hidden\">{chapter} </span>{position}\
                     <span class=\"bar-percent\"></span></span>\n\
                     <span class=\"bar-progress\" aria-hidden=\"true\"><span></span></span>\n",
                    chapter = self.word(Key::ReadingChapter),
                    position = escaped(
                        &self
                            .labels()
                            .fill(
                                Key::Position,
                                &[
                                    ("n", &(index + 1).to_string()),
                                    ("total", &total.to_string())
                                ]
                            )
                            .replace(' ', "\u{a0}")
                    ),
                ),
            ),
            None => ("bar", String::new()),
        };
        format!(
            "<header class=\"{class}\">\n\
             <a class=\"bar-home\" href=\"index.html\"{current}>\
             <span class=\"bar-icon\" aria-hidden=\"true\">\u{2630}</span>\
             <span class=\"visually-hidden\">{contents}: </span>\
             <span class=\"bar-title\">{title}</span></a>\n\
             {position}\
             {pages}\
             <div class=\"controls\" role=\"group\" aria-label=\"{settings}\">\n\
             <button type=\"button\" data-action=\"smaller\" aria-label=\"{smaller}\" title=\"{smaller}\">\
             <span aria-hidden=\"true\" class=\"a-small\">A</span></button>\n\
             <button type=\"button\" data-action=\"larger\" aria-label=\"{larger}\" title=\"{larger}\">\
             <span aria-hidden=\"true\" class=\"a-large\">A</span></button>\n\
             <button type=\"button\" data-action=\"theme\" aria-pressed=\"false\" aria-label=\"{dark}\" title=\"{dark}\">\
             <span aria-hidden=\"true\" class=\"theme-icon\"></span></button>\n\
             </div>\n\
             </header>\n",
            title = escaped(&self.book.metadata.title),
            contents = self.word(Key::Contents),
            settings = self.word(Key::ReadingSettings),
            smaller = self.word(Key::SmallerText),
            larger = self.word(Key::LargerText),
            dark = self.word(Key::DarkTheme),
        )
    }

    /// `index.html`: the title page and the table of contents.
    pub fn index_page(&self) -> String {
        let m = &self.book.metadata;
        let mut html = self.head(&m.title, "");
        html.push_str("<body class=\"contents-page\">\n");
        html.push_str(&format!(
            "<a class=\"skip\" href=\"#main\">{}</a>\n",
            self.word(Key::SkipToContents)
        ));
        html.push_str(&self.bar(Place::Contents));
        html.push_str("<main id=\"main\" tabindex=\"-1\">\n");
        html.push_str(&self.book_links());
        html.push_str("<div class=\"titlepage\">\n");
        if let (Some(path), Some(cover)) = (&self.cover, &self.book.cover) {
            html.push_str(&format!(
                "<img class=\"cover\" src=\"{}\" width=\"{}\" height=\"{}\" alt=\"{}\">\n",
                escaped_attr(path),
                cover.width.max(1),
                cover.height.max(1),
                self.word(Key::Cover),
            ));
        }
        html.push_str(&format!(
            "<h1 class=\"book-title\">{}</h1>\n",
            escaped(&m.title)
        ));
        if let Some(subtitle) = &m.subtitle {
            html.push_str(&format!(
                "<p class=\"book-subtitle\">{}</p>\n",
                escaped(subtitle)
            ));
        }
        if !m.authors.is_empty() {
            html.push_str(&format!(
                "<p class=\"book-authors\">{}</p>\n",
                escaped(&self.labels().join(&m.authors))
            ));
        }
        if let Some(first) = self.labels.first() {
            // The label and the chapter line are always there, so that filling them in from
            // the remembered position moves nothing on the page. The script's words for it
            // come with it, in the book's language.
            html.push_str(&format!(
                "<p class=\"start\"><a class=\"button\" id=\"continue\" href=\"{href}\" data-continue=\"{again}\">\
                 <span class=\"continue-label\">{start}</span>\
                 <span class=\"continue-where\">{label}</span></a></p>\n",
                href = chapter_file_name(0, Target::Web),
                label = escaped(first),
                start = self.word(Key::StartReading),
                again = self.word(Key::ContinueReading),
            ));
        }
        html.push_str("</div>\n");
        html.push_str(&self.go_to_page("goto-page"));
        if !self.labels.is_empty() {
            html.push_str(&format!(
                "<nav class=\"toc\" aria-labelledby=\"toc-heading\">\n\
                 <h2 id=\"toc-heading\">{}</h2>\n<ol>\n",
                self.word(Key::Contents)
            ));
            for (i, (title, subtitle)) in self.toc.iter().enumerate() {
                let class = self.toc_class(i);
                let subtitle = subtitle
                    .as_deref()
                    .map(|s| {
                        format!(
                            "<span class=\"visually-hidden\">: </span>\
                             <span class=\"toc-subtitle\">{}</span>",
                            escaped(s)
                        )
                    })
                    .unwrap_or_default();
                html.push_str(&format!(
                    "<li class=\"{class}\"><a href=\"{}\"><span class=\"toc-title\">{}</span>{subtitle}</a></li>\n",
                    chapter_file_name(i, Target::Web),
                    escaped(title),
                ));
            }
            html.push_str("</ol>\n</nav>\n");
        }
        html.push_str(&self.copyright());
        html.push_str("</main>\n</body>\n</html>\n");
        html
    }

    /// The copyright notice at the foot of the contents page: the EPUB's copyright page, in
    /// a section with the same `id`, where an advance reader copy's line goes.
    fn copyright(&self) -> String {
        let mut html = format!(
            "<section id=\"{id}\" class=\"copyright\" aria-labelledby=\"copyright-heading\">\n\
             <h2 id=\"copyright-heading\">{heading}</h2>\n",
            id = COPYRIGHT_ID,
            heading = self.word(Key::Copyright),
        );
        for line in copyright_lines(self.book) {
            html.push_str(&format!("<p>{}</p>\n", escaped(&line)));
        }
        html.push_str("</section>\n");
        html
    }

    /// The "go to page" field: a form that asks `pages.html` for the page, which goes there
    /// (`reader.js`) or, without the script, lists every page to pick from. Empty without pages.
    fn go_to_page(&self, id: &str) -> String {
        let (Some(first), Some(last)) = (self.pages.first(), self.pages.last()) else {
            return String::new();
        };
        let edition = self
            .book
            .print
            .as_ref()
            .map(|p| format!(" ({})", escaped(&p.trim)))
            .unwrap_or_default();
        let hint = self.labels().fill(
            Key::PagesHint,
            &[("first", &first.label), ("last", &last.label)],
        );
        format!(
            "<form class=\"goto-page\" action=\"{PAGES_FILE}\" method=\"get\">\n\
             <label for=\"{id}\">{label}</label>\n\
             <input id=\"{id}\" name=\"page\" type=\"text\" autocomplete=\"off\" spellcheck=\"false\" enterkeyhint=\"go\" size=\"6\" required aria-describedby=\"{id}-hint\">\n\
             <button type=\"submit\">{go}</button>\n\
             <p class=\"goto-hint\" id=\"{id}-hint\">{hint}</p>\n\
             </form>\n",
            label = self.word(Key::GoToPage),
            go = self.word(Key::Go),
            // The trim is escaped already; the hint's own text is escaped around it.
            hint = escaped(&hint).replace("{edition}", &edition),
        )
    }

    /// `pages.html`: every printed page, linked to where it begins, and the "go to page" field;
    /// `None` for a book without a print edition's pages.
    pub fn pages_page(&self) -> Option<String> {
        if self.pages.is_empty() {
            return None;
        }
        let title = format!(
            "{} \u{2014} {}",
            self.labels().get(Key::Pages),
            self.book.metadata.title
        );
        let mut html = self.head(&title, "");
        html.push_str("<body class=\"pages-page\">\n");
        html.push_str(&format!(
            "<a class=\"skip\" href=\"#main\">{}</a>\n",
            self.word(Key::SkipToPages)
        ));
        html.push_str(&self.bar(Place::Pages));
        html.push_str("<main id=\"main\" class=\"pages\" tabindex=\"-1\">\n");
        html.push_str(&format!("<h1>{}</h1>\n", self.word(Key::PrintPages)));
        html.push_str(&self.go_to_page("goto-page"));
        // Where the script says that a page asked for is not in the book, in the words
        // it is given here ({page}, {first} and {last} filled in by the script).
        html.push_str(&format!(
            "<p class=\"goto-status\" id=\"goto-status\" role=\"status\" data-no-such-page=\"{}\" data-type-a-page=\"{}\"></p>\n",
            self.word(Key::NoSuchPage),
            self.word(Key::TypeAPage),
        ));
        html.push_str(&format!(
            "<nav class=\"page-list\" aria-labelledby=\"page-list-heading\">\n\
             <h2 id=\"page-list-heading\">{}</h2>\n<ol>\n",
            self.word(Key::EveryPage)
        ));
        for page in &self.pages {
            html.push_str(&format!(
                "<li><a href=\"{}\">{}</a></li>\n",
                escaped_attr(&page.href),
                escaped(&page.label)
            ));
        }
        html.push_str("</ol>\n</nav>\n</main>\n</body>\n</html>\n");
        Some(html)
    }

    /// The way out of the reader: back to the book's page, and its EPUB.
    fn book_links(&self) -> String {
        let mut links = String::new();
        if let Some(page) = &self.links.book_page {
            links.push_str(&format!(
                "<a class=\"book-page\" href=\"{}\"><span aria-hidden=\"true\">{arrow} </span>{}</a>\n",
                escaped_attr(page),
                self.word(Key::BookPage),
                // Back points the way the book's text runs from.
                arrow = match Direction::of(&self.book.metadata.language) {
                    Direction::LeftToRight => '\u{2190}',
                    Direction::RightToLeft => '\u{2192}',
                },
            ));
        }
        if let Some(epub) = &self.links.epub {
            links.push_str(&format!(
                "<a class=\"download\" href=\"{}\" download>{}</a>\n",
                escaped_attr(epub),
                self.word(Key::DownloadEpub)
            ));
        }
        if links.is_empty() {
            return links;
        }
        format!(
            "<nav class=\"book-links\" aria-label=\"{}\">\n{links}</nav>\n",
            self.word(Key::ThisBook)
        )
    }

    fn toc_class(&self, index: usize) -> &'static str {
        match self.book.document.chapters.get(index).map(|c| c.division) {
            Some(Division::Part) => "toc-part",
            Some(d) if d.is_front_matter() || d.is_back_matter() => "toc-matter",
            _ => "toc-chapter",
        }
    }

    /// `chapter-NNN.html`: one chapter in the reading column, with the pager below it.
    pub fn chapter_page(&self, index: usize, body: &str) -> String {
        let label = self.labels.get(index).map(String::as_str).unwrap_or("");
        let title = format!("{label} \u{2014} {}", self.book.metadata.title);
        let prev = index.checked_sub(1);
        let next = Some(index + 1).filter(|&n| n < self.labels.len());
        let mut links = String::new();
        for (rel, target) in [("prev", prev), ("next", next)] {
            if let Some(t) = target {
                links.push_str(&format!(
                    "<link rel=\"{rel}\" href=\"{}\">\n",
                    chapter_file_name(t, Target::Web)
                ));
            }
        }
        let mut html = self.head(&title, &links);
        html.push_str(&format!(
            "<body class=\"chapter-page\" data-chapter=\"{}\">\n",
            chapter_file_name(index, Target::Web)
        ));
        html.push_str(&format!(
            "<a class=\"skip\" href=\"#main\">{}</a>\n",
            self.word(Key::SkipToText)
        ));
        html.push_str(&self.bar(Place::Chapter(index)));
        html.push_str("<main id=\"main\" class=\"chapter\" tabindex=\"-1\">\n");
        html.push_str(&with_image_sizes(body, &self.image_sizes));
        html.push_str("\n</main>\n");
        html.push_str(&self.pager(prev, next));
        html.push_str("</body>\n</html>\n");
        html
    }

    fn pager(&self, prev: Option<usize>, next: Option<usize>) -> String {
        let mut html = format!(
            "<nav class=\"pager\" aria-label=\"{}\">\n",
            self.word(Key::Chapters)
        );
        let item = |rel: &str, word: &str, index: usize| {
            format!(
                "<a class=\"pager-{rel}\" rel=\"{rel}\" href=\"{}\">\
                 <span class=\"pager-dir\">{word}</span>\
                 <span class=\"pager-title\">{}</span></a>\n",
                chapter_file_name(index, Target::Web),
                escaped(self.labels.get(index).map(String::as_str).unwrap_or("")),
            )
        };
        match prev {
            Some(p) => html.push_str(&item("prev", &self.word(Key::Previous), p)),
            None => html.push_str(&format!(
                "<a class=\"pager-prev\" href=\"index.html\">\
                 <span class=\"pager-dir\">{}</span>\
                 <span class=\"pager-title\">{}</span></a>\n",
                self.word(Key::BackTo),
                self.word(Key::Contents),
            )),
        }
        match next {
            Some(n) => html.push_str(&item("next", &self.word(Key::Next), n)),
            None => html.push_str(&format!(
                "<a class=\"pager-next\" href=\"index.html\">\
                 <span class=\"pager-dir\">{}</span>\
                 <span class=\"pager-title\">{}</span></a>\n",
                self.word(Key::TheEnd),
                self.word(Key::Contents),
            )),
        }
        html.push_str("</nav>\n");
        html
    }
}

/// Gives each `<img>` of a known image its `width` and `height`, so the browser reserves the
/// image's box before it loads: the text does not jump, and a restored reading position stays
/// where it was put. Anything it does not recognise is left exactly as it was.
pub fn with_image_sizes(fragment: &str, sizes: &BTreeMap<String, (u32, u32)>) -> String {
    let mut out = String::with_capacity(fragment.len() + 64);
    let mut rest = fragment;
    while let Some(start) = rest.find("<img") {
        let after = &rest[start + 4..];
        let is_tag = after.starts_with(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>');
        let Some(tag_len) = is_tag.then(|| tag_length(after)).flatten() else {
            out.push_str(&rest[..start + 4]);
            rest = after;
            continue;
        };
        let attrs = attributes(&after[..tag_len]);
        let has_size = attrs.iter().any(|(n, _)| n == "width" || n == "height");
        let size = attrs
            .iter()
            .find(|(n, _)| n == "src")
            .and_then(|(_, src)| sizes.get(src.as_str()));
        out.push_str(&rest[..start + 4]);
        if let (false, Some((w, h))) = (has_size, size) {
            out.push_str(&format!(" width=\"{w}\" height=\"{h}\""));
        }
        out.push_str(&after[..tag_len]);
        rest = &after[tag_len..];
    }
    out.push_str(rest);
    out
}

/// Length of a tag's attributes up to and including its closing `>`, honouring quotes.
fn tag_length(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// A tag's attributes as (lowercase name, unescaped-enough value) pairs. Values are compared
/// to plain site paths, so only `&amp;` needs undoing.
fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut attrs = Vec::new();
    let mut chars = tag.char_indices().peekable();
    loop {
        while chars
            .next_if(|(_, c)| c.is_ascii_whitespace() || *c == '/')
            .is_some()
        {}
        let Some(&(start, c)) = chars.peek() else {
            break;
        };
        if c == '>' {
            break;
        }
        let mut end = start;
        while let Some((i, c)) =
            chars.next_if(|(_, c)| !matches!(c, '=' | '>' | '/') && !c.is_ascii_whitespace())
        {
            end = i + c.len_utf8();
        }
        let name = tag[start..end].to_ascii_lowercase();
        while chars.next_if(|(_, c)| c.is_ascii_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '=').is_some() {
            while chars.next_if(|(_, c)| c.is_ascii_whitespace()).is_some() {}
            match chars.next_if(|(_, c)| *c == '"' || *c == '\'') {
                Some((_, q)) => {
                    for (_, c) in chars.by_ref() {
                        if c == q {
                            break;
                        }
                        value.push(c);
                    }
                }
                None => {
                    while let Some((_, c)) =
                        chars.next_if(|(_, c)| !c.is_ascii_whitespace() && *c != '>')
                    {
                        value.push(c);
                    }
                }
            }
        }
        if name.is_empty() {
            // A stray character; step over it so the loop always advances.
            chars.next();
            continue;
        }
        attrs.push((name, value.replace("&amp;", "&")));
    }
    attrs
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    fn sizes() -> BTreeMap<String, (u32, u32)> {
        BTreeMap::from([("images/a.png".to_owned(), (640, 480))])
    }

    #[test]
    fn images_get_their_size_so_text_does_not_jump() {
        let html = with_image_sizes(
            "<p><img src=\"images/a.png\" alt=\"x > y\"/> and <img alt='b' src='images/b.png'/></p>",
            &sizes(),
        );
        assert_eq!(
            html,
            "<p><img width=\"640\" height=\"480\" src=\"images/a.png\" alt=\"x > y\"/> and \
             <img alt='b' src='images/b.png'/></p>"
        );
    }

    #[test]
    fn sizes_already_given_and_odd_markup_are_left_alone() {
        for fragment in [
            "<img width=\"3\" src=\"images/a.png\">",
            "<imgx src=\"images/a.png\">",
            "text <img",
            "<img src=\"images/a.png",
            "<img =\"\" src==images/a.png ü>",
        ] {
            let html = with_image_sizes(fragment, &sizes());
            assert!(
                html == fragment || html.contains("width=\"640\""),
                "{fragment} became {html}"
            );
            assert_eq!(html.replace(" width=\"640\" height=\"480\"", ""), fragment);
        }
    }
}
