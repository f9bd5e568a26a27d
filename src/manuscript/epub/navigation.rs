//! The EPUB's own table of contents (EPUB 3's navigation document, or EPUB 2's NCX): the
//! title of each document it lists, and the landmarks that say which documents are the
//! tool's title page, copyright page or contents.

use html5gum::{DefaultEmitter, Token, Tokenizer};

use crate::manuscript::InputError;
use crate::manuscript::markdown::resources::resolve;
use crate::manuscript::xml::{Ev, Ns, Xml};

#[derive(Debug, Default)]
pub struct Navigation {
    /// Lower-cased path, whether the entry points at the document's start (no fragment),
    /// and the entry's title, in the table's order.
    pub titles: Vec<(String, bool, String)>,
    /// The landmark's type and the lower-cased path it points at.
    pub landmarks: Vec<(String, String)>,
}

impl Navigation {
    /// The title of the entry pointing at the start of `path`.
    pub fn title_of(&self, path: &str) -> Option<&str> {
        self.titles
            .iter()
            .find(|(p, start, _)| *start && p == path)
            .map(|(_, _, t)| t.as_str())
    }

    /// EPUB 3's navigation document, at `path`.
    pub fn read_nav(html: &str, path: &str) -> Navigation {
        let base = directory(path);
        let mut nav = Navigation::default();
        let mut emitter = DefaultEmitter::default();
        emitter.naively_switch_states(true);
        // Which `<nav>` we are in, and the link being read.
        let mut kind: Option<String> = None;
        let mut depth = 0usize;
        let mut link: Option<(String, String, String)> = None;
        for token in Tokenizer::new_with_emitter(html, emitter) {
            let Ok(token) = token;
            match token {
                Token::StartTag(tag) => {
                    let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                    let attr = |key: &str| crate::manuscript::html::attribute(&tag, key);
                    if name == "nav" {
                        depth += 1;
                        if depth == 1 {
                            kind = attr("epub:type").or_else(|| attr("role"));
                        }
                    } else if name == "a"
                        && kind.is_some()
                        && let Some(href) = attr("href")
                    {
                        link = Some((href, attr("epub:type").unwrap_or_default(), String::new()));
                    }
                }
                Token::String(text) => {
                    if let Some((_, _, title)) = &mut link {
                        title.push_str(&String::from_utf8_lossy(&text));
                    }
                }
                Token::EndTag(tag) => {
                    let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                    if name == "nav" {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            kind = None;
                        }
                    } else if name == "a"
                        && let Some((href, types, title)) = link.take()
                        && let Some(target) = resolve(&base, &href)
                    {
                        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
                        match kind.as_deref().unwrap_or("") {
                            k if k.contains("landmarks") => {
                                for t in types.split_whitespace() {
                                    nav.landmarks.push((t.to_owned(), target.clone()));
                                }
                            }
                            k if k.contains("toc") => {
                                nav.titles.push((target, !href.contains('#'), title));
                            }
                            _ => {}
                        }
                    }
                }
                Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
            }
        }
        nav
    }

    /// EPUB 2's NCX, at `path`.
    pub fn read_ncx(text: &str, path: &str) -> Result<Navigation, InputError> {
        let base = directory(path);
        let mut nav = Navigation::default();
        let mut x = Xml::new(text, path).allowing_external_doctype();
        x.root()?;
        // The label of each open navPoint, innermost last.
        let mut labels: Vec<String> = Vec::new();
        let mut open: Vec<bool> = Vec::new();
        loop {
            match x.next()? {
                Ev::Start(tag) => {
                    let point = tag.is(Ns::Ncx, "navPoint");
                    open.push(point);
                    if point {
                        labels.push(String::new());
                    } else if tag.is(Ns::Ncx, "text") && !labels.is_empty() {
                        let text = x.text()?;
                        open.pop();
                        if let Some(label) = labels.last_mut()
                            && label.is_empty()
                        {
                            *label = text.split_whitespace().collect::<Vec<_>>().join(" ");
                        }
                    } else if tag.is(Ns::Ncx, "content")
                        && let Some(src) = tag.attr("src")
                        && let Some(target) = resolve(&base, &src)
                        && let Some(label) = labels.last()
                    {
                        nav.titles.push((target, !src.contains('#'), label.clone()));
                    }
                }
                Ev::End => {
                    if open.pop() == Some(true) {
                        labels.pop();
                    }
                }
                Ev::Text(_) => {}
                Ev::Eof => break,
            }
        }
        Ok(nav)
    }
}

fn directory(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nav_gives_titles_and_landmarks() {
        let nav = Navigation::read_nav(
            r#"<html xmlns:epub="http://www.idpf.org/2007/ops"><body>
            <nav epub:type="toc"><ol><li><a href="text/one.xhtml">Chapter
            One</a><ol><li><a href="text/one.xhtml#s2">A section</a></li></ol></li></ol></nav>
            <nav epub:type="landmarks"><ol><li><a epub:type="titlepage" href="text/title.xhtml">Title</a></li></ol></nav>
            </body></html>"#,
            "OEBPS/nav.xhtml",
        );
        assert_eq!(nav.title_of("oebps/text/one.xhtml"), Some("Chapter One"));
        assert_eq!(nav.titles.len(), 2);
        assert_eq!(
            nav.landmarks,
            [("titlepage".to_owned(), "oebps/text/title.xhtml".to_owned())]
        );
    }

    #[test]
    fn the_ncx_gives_titles_with_its_doctype_passed_over() {
        let ncx = r#"<?xml version="1.0"?>
<!DOCTYPE ncx PUBLIC "-//NISO//DTD ncx 2005-1//EN" "http://www.daisy.org/z3986/2005/ncx-2005-1.dtd">
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>
<navPoint id="n1" playOrder="1"><navLabel><text>Chapter I</text></navLabel><content src="ch1.html"/>
<navPoint id="n2" playOrder="2"><navLabel><text>Part</text></navLabel><content src="ch1.html#p2"/></navPoint>
</navPoint></navMap></ncx>"#;
        let nav = Navigation::read_ncx(ncx, "OPS/toc.ncx").expect("reads");
        assert_eq!(nav.title_of("ops/ch1.html"), Some("Chapter I"));
        assert_eq!(nav.titles.len(), 2);
        let bomb = r#"<!DOCTYPE ncx [<!ENTITY a "aaaa">]><ncx/>"#;
        assert!(Navigation::read_ncx(bomb, "toc.ncx").is_err());
    }
}
