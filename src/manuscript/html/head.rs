//! What a page says about itself before its body: its title, language, authors and
//! description, and its stylesheets (inline, or files beside it).

use html5gum::{DefaultEmitter, Token, Tokenizer};

/// A page's head, as far as the book needs it.
#[derive(Debug, Default)]
pub(crate) struct Head {
    pub title: Option<String>,
    /// `<html lang>` (or `xml:lang`).
    pub language: Option<String>,
    pub authors: Vec<String>,
    pub description: Option<String>,
    pub keywords: Vec<String>,
    /// The text of each `<style>` element.
    pub styles: Vec<String>,
    /// The address of each linked stylesheet.
    pub stylesheets: Vec<String>,
}

impl Head {
    /// Reads up to the start of the body, which is all a head can be.
    pub fn read(html: &str) -> Head {
        let mut head = Head::default();
        let mut emitter = DefaultEmitter::default();
        emitter.naively_switch_states(true);
        let mut open: Option<&'static str> = None;
        let mut text = String::new();
        for token in Tokenizer::new_with_emitter(html, emitter) {
            let Ok(token) = token;
            match token {
                Token::StartTag(tag) => {
                    let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                    let attr = |key: &str| super::attribute(&tag, key).filter(|v| !v.is_empty());
                    match name.as_str() {
                        "html" => head.language = attr("lang").or_else(|| attr("xml:lang")),
                        "title" => open = Some("title"),
                        "style" => open = Some("style"),
                        "meta" => {
                            let key = attr("name").unwrap_or_default().to_ascii_lowercase();
                            let Some(content) = attr("content") else {
                                continue;
                            };
                            match key.as_str() {
                                "author" => head.authors.push(content),
                                "description" => head.description = Some(content),
                                "keywords" => head.keywords.extend(
                                    content
                                        .split(',')
                                        .map(str::trim)
                                        .filter(|k| !k.is_empty())
                                        .map(str::to_owned),
                                ),
                                _ => {}
                            }
                        }
                        "link" => {
                            let rel = attr("rel").unwrap_or_default().to_ascii_lowercase();
                            if rel.split_whitespace().any(|r| r == "stylesheet")
                                && let Some(href) = attr("href")
                            {
                                head.stylesheets.push(href);
                            }
                        }
                        "body" => break,
                        _ => {}
                    }
                    text.clear();
                }
                Token::String(s) => {
                    if open.is_some() {
                        text.push_str(&String::from_utf8_lossy(&s));
                    }
                }
                Token::EndTag(tag) => {
                    let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                    match (open, name.as_str()) {
                        (Some("title"), "title") => {
                            let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
                            if !title.is_empty() {
                                head.title = Some(title);
                            }
                            open = None;
                        }
                        (Some("style"), "style") => {
                            head.styles.push(std::mem::take(&mut text));
                            open = None;
                        }
                        (_, "head") => break,
                        _ => {}
                    }
                }
                Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
            }
        }
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_gives_title_language_authors_and_styles() {
        let head = Head::read(
            r#"<!DOCTYPE html><html lang="fr"><head><meta charset="utf-8"><title> Le
            Livre </title><meta name="author" content="A. Auteur"><style>.c1{font-style:italic}</style>
            <link rel="stylesheet" href="css/book.css"></head><body><title>not this</title>"#,
        );
        assert_eq!(head.title.as_deref(), Some("Le Livre"));
        assert_eq!(head.language.as_deref(), Some("fr"));
        assert_eq!(head.authors, ["A. Auteur"]);
        assert_eq!(head.styles, [".c1{font-style:italic}"]);
        assert_eq!(head.stylesheets, ["css/book.css"]);
    }
}
