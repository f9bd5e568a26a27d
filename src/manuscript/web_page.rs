//! Web pages: one `.html` file, or a `.zip` of a page with its images and stylesheets (what
//! Google Docs downloads as "Web page"). The page's text is read by [`super::html`], with its
//! stylesheet's emphasis, its notes and its MathML; its images come from the zip.

use std::collections::HashMap;

use super::archive::Archive;
use super::html::{self, Head, Looks, Page};
use super::{InputError, Limits, encoding};
use crate::document::{Document, Metadata, Parsed, chapters};

pub fn read(bytes: &[u8], limits: &Limits) -> Result<Parsed, InputError> {
    let Site { html, base, files } = if bytes.starts_with(b"PK") {
        Site::unzip(bytes, limits)?
    } else {
        let (html, _) = encoding::decode(bytes)?;
        Site {
            html,
            base: String::new(),
            files: HashMap::new(),
        }
    };
    let head = Head::read(&html);
    let mut sheets = head.styles.clone();
    for href in &head.stylesheets {
        if let Some(css) = super::markdown::resources::resolve(&base, href)
            .and_then(|p| files.get(&p))
            .and_then(|b| String::from_utf8(b.clone()).ok())
        {
            sheets.push(css);
        }
    }
    let looks = Looks::parse(&sheets);
    let documents = HashMap::new();
    let mut page = Page::new(&looks, &documents);
    page.title_classes = true;
    let read = html::pages(limits, files, |b| {
        b.res.base = base.clone();
        html::page(&html, b, &mut page)?;
        Ok(std::mem::take(&mut page.note_kinds))
    })?;
    let mut metadata = Metadata {
        title: page.title.take(),
        subtitle: page.subtitle.take(),
        authors: head.authors,
        language: head.language,
        description: head.description,
        subjects: head.keywords,
        ..Metadata::default()
    };
    let mut warnings = read.warnings;
    let chapters = chapters::split(read.blocks, &mut metadata, &mut warnings);
    if metadata.title.is_none() {
        metadata.title = head.title;
    }
    Ok(Parsed {
        document: Document {
            metadata,
            chapters,
            notes: read.notes,
            images: read.images,
        },
        resources: read.resources,
        warnings,
        cover: None,
    })
}

/// A page and the files beside it.
struct Site {
    html: String,
    /// The page's directory inside the zip.
    base: String,
    /// Images and stylesheets, by lower-cased path.
    files: HashMap<String, Vec<u8>>,
}

impl Site {
    /// The zip's page (the one HTML file, or the shallowest, `index.html` first) and every
    /// image and stylesheet in it.
    fn unzip(bytes: &[u8], limits: &Limits) -> Result<Site, InputError> {
        let mut archive = Archive::open(bytes, limits)?;
        let names = archive.names().to_vec();
        let is_page = |n: &str| {
            let n = n.to_ascii_lowercase();
            (n.ends_with(".html") || n.ends_with(".htm") || n.ends_with(".xhtml"))
                && !n.starts_with("__macosx/")
        };
        let page = names
            .iter()
            .filter(|n| is_page(n))
            .min_by_key(|n| {
                let lower = n.to_ascii_lowercase();
                let file = lower.rsplit('/').next().unwrap_or(&lower).to_owned();
                (n.matches('/').count(), !file.starts_with("index."), lower)
            })
            .cloned()
            .ok_or(InputError::NoPage)?;
        let html = match archive.read(&page)? {
            Some(bytes) => encoding::decode(&bytes)?.0,
            None => return Err(InputError::NoPage),
        };
        let base = match page.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => String::new(),
        };
        let mut files = HashMap::new();
        for name in names {
            let lower = name.to_ascii_lowercase();
            let wanted = [".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".css"]
                .iter()
                .any(|e| lower.ends_with(e));
            if wanted && let Some(bytes) = archive.read(&name)? {
                files.insert(lower, bytes);
            }
        }
        Ok(Site { html, base, files })
    }
}
