//! The EPUB's package: where the package document is (`META-INF/container.xml`), what it
//! says of the book (title, authors, language, identifiers, description, subjects, series),
//! the files it holds (the manifest), their reading order (the spine) and its old guide,
//! and whether any of it is locked (`META-INF/encryption.xml`, `rights.xml`).

use std::collections::HashMap;

use crate::document::Metadata;
use crate::manuscript::InputError;
use crate::manuscript::archive::Archive;
use crate::manuscript::markdown::resources::{join_path, percent_decode};
use crate::manuscript::xml::{Ns, Xml};

#[derive(Debug, Clone)]
pub struct Item {
    /// The path inside the archive, as the archive spells it.
    pub path: String,
    pub media_type: String,
    pub properties: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Package {
    pub metadata: Metadata,
    /// By manifest id.
    pub items: HashMap<String, Item>,
    /// The manifest ids of the spine, in reading order, and whether each is linear.
    pub spine: Vec<(String, bool)>,
    /// The spine's `toc` (EPUB 2's NCX), by manifest id.
    pub ncx: Option<String>,
    /// EPUB 2's `<meta name="cover" content="ID">`.
    pub cover_id: Option<String>,
    /// The guide's references: type and lower-cased path (without fragment).
    pub guide: Vec<(String, String)>,
}

impl Package {
    pub fn item_with(&self, property: &str) -> Option<&Item> {
        self.items
            .values()
            .find(|i| i.properties.iter().any(|p| p == property))
    }

    pub fn cover(&self) -> Option<&Item> {
        self.item_with("cover-image")
            .or_else(|| self.cover_id.as_ref().and_then(|id| self.items.get(id)))
            .filter(|i| i.media_type.starts_with("image/"))
    }
}

fn bad(detail: impl Into<String>) -> InputError {
    InputError::BadEpub {
        detail: detail.into(),
    }
}

/// The package document's path, from the container.
pub fn rootfile(archive: &mut Archive) -> Result<String, InputError> {
    let text = archive
        .read_text("META-INF/container.xml")?
        .ok_or_else(|| bad("it has no META-INF/container.xml, which says where the book is"))?;
    let mut x = Xml::new(&text, "META-INF/container.xml");
    x.root()?;
    let mut found = None;
    while let Some(tag) = next_start(&mut x)? {
        if tag.is(Ns::Container, "rootfile") {
            let media = tag.attr("media-type").unwrap_or_default();
            if found.is_none() && (media.is_empty() || media == "application/oebps-package+xml") {
                found = tag.attr("full-path").map(|p| p.into_owned());
            }
        }
    }
    found
        .filter(|p| !p.is_empty())
        .ok_or_else(|| bad("its container names no package document (.opf)"))
}

/// Any element start, at any depth, until the end of the part.
fn next_start<'a>(x: &mut Xml<'a>) -> Result<Option<crate::manuscript::xml::Tag<'a>>, InputError> {
    use crate::manuscript::xml::Ev;
    loop {
        match x.next()? {
            Ev::Start(tag) => return Ok(Some(tag)),
            Ev::Eof => return Ok(None),
            Ev::End | Ev::Text(_) => {}
        }
    }
}

/// Refuses a book that DRM locks. Fonts alone may be obfuscated (the IDPF's and Adobe's
/// algorithms exist for that, and the text stays readable); anything else encrypted, or a
/// store's rights file, means the text cannot be read.
pub fn check_drm(archive: &mut Archive) -> Result<(), InputError> {
    if archive.contains("META-INF/rights.xml") {
        return Err(InputError::EpubDrm {
            scheme: "Adobe ADEPT".into(),
        });
    }
    if archive.contains("META-INF/sinf.xml") || archive.names().iter().any(|n| n.ends_with(".sinf"))
    {
        return Err(InputError::EpubDrm {
            scheme: "Apple FairPlay".into(),
        });
    }
    let Some(text) = archive.read_text("META-INF/encryption.xml")? else {
        return Ok(());
    };
    let mut x = Xml::new(&text, "META-INF/encryption.xml");
    x.root()?;
    let mut algorithm = String::new();
    while let Some(tag) = next_start(&mut x)? {
        match tag.name() {
            "EncryptionMethod" => {
                algorithm = tag.attr("Algorithm").unwrap_or_default().into_owned();
            }
            "CipherReference" => {
                let uri = tag.attr("URI").unwrap_or_default().to_ascii_lowercase();
                let font = [".ttf", ".otf", ".woff", ".woff2"]
                    .iter()
                    .any(|e| uri.ends_with(e));
                let obfuscation = algorithm == "http://www.idpf.org/2008/embedding"
                    || algorithm == "http://ns.adobe.com/pdf/enc#RC";
                if !(font && obfuscation) {
                    return Err(InputError::EpubDrm {
                        scheme: if algorithm.is_empty() {
                            "encryption.xml".into()
                        } else {
                            format!("{algorithm} on {uri}")
                        },
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Reads the package document at `path`.
pub fn read(archive: &mut Archive, path: &str) -> Result<Package, InputError> {
    let text = archive.read_text(path)?.ok_or_else(|| {
        bad(format!(
            "its container names {path}, which it does not hold"
        ))
    })?;
    let base = match path.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/"),
        None => String::new(),
    };
    let mut x = Xml::new(&text, path).allowing_external_doctype();
    x.root()?;
    let mut package = Package::default();
    let mut refines: Vec<(String, String, String)> = Vec::new();
    let mut titles: Vec<(Option<String>, String)> = Vec::new();
    let mut creators: Vec<(Option<String>, String, Option<String>)> = Vec::new();
    let mut series_id = None;
    while let Some(tag) = next_start(&mut x)? {
        let at = |key: &str| {
            tag.attr(key)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        match (tag.ns, tag.name()) {
            (Ns::Opf, "item") => {
                let (Some(id), Some(href)) = (at("id"), at("href")) else {
                    continue;
                };
                let href = percent_decode(&href);
                let Some(path) = join_path(&base, &href) else {
                    continue;
                };
                package.items.insert(
                    id,
                    Item {
                        path,
                        media_type: at("media-type").unwrap_or_default(),
                        properties: at("properties")
                            .unwrap_or_default()
                            .split_whitespace()
                            .map(str::to_owned)
                            .collect(),
                    },
                );
            }
            (Ns::Opf, "spine") => package.ncx = at("toc"),
            (Ns::Opf, "itemref") => {
                if let Some(idref) = at("idref") {
                    package
                        .spine
                        .push((idref, at("linear").as_deref() != Some("no")));
                }
            }
            (Ns::Opf, "reference") => {
                if let (Some(kind), Some(href)) = (at("type"), at("href")) {
                    let href = href.split('#').next().unwrap_or("").to_owned();
                    if let Some(path) = join_path(&base, &percent_decode(&href)) {
                        package
                            .guide
                            .push((kind.to_ascii_lowercase(), path.to_lowercase()));
                    }
                }
            }
            (Ns::Opf, "meta") => {
                let name = at("name");
                let content = at("content");
                if let (Some(name), Some(content)) = (&name, &content) {
                    match name.as_str() {
                        "cover" => package.cover_id = Some(content.clone()),
                        "calibre:series" => package.metadata.series = Some(content.clone()),
                        "calibre:series_index" => {
                            package.metadata.series_number = Some(trim_index(content))
                        }
                        _ => {}
                    }
                    continue;
                }
                let property = at("property");
                let refines_id = at("refines").map(|r| r.trim_start_matches('#').to_owned());
                let id = at("id");
                let value = collapse(&x.text()?);
                match (property.as_deref(), refines_id) {
                    (Some("belongs-to-collection"), None) => {
                        package.metadata.series = Some(value);
                        series_id = id;
                    }
                    (Some(property), Some(target)) => {
                        refines.push((target, property.to_owned(), value))
                    }
                    _ => {}
                }
            }
            (Ns::Meta, field) => {
                let id = at("id");
                let value = collapse(&x.text()?);
                if value.is_empty() {
                    continue;
                }
                let m = &mut package.metadata;
                match field {
                    "title" => titles.push((id, value)),
                    "creator" => creators.push((id, value, at("role"))),
                    "language" if m.language.is_none() => m.language = Some(value),
                    "identifier" if m.identifier.is_none() || is_isbn(&value) => {
                        m.identifier = Some(identifier(&value))
                    }
                    "publisher" if m.publisher.is_none() => m.publisher = Some(value),
                    "date" if m.date.is_none() => m.date = Some(value),
                    "description" if m.description.is_none() => {
                        m.description = Some(strip_tags(&value))
                    }
                    "subject" => m.subjects.push(value),
                    "rights" if m.rights.is_none() => m.rights = Some(value),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    // EPUB 3 refines: a title typed `subtitle`, a creator whose role is not the author's,
    // and the series' position.
    let refined = |id: &Option<String>, property: &str| {
        refines
            .iter()
            .find(|(target, p, _)| Some(target) == id.as_ref() && p == property)
            .map(|(_, _, value)| value.as_str())
    };
    let m = &mut package.metadata;
    for (id, title) in &titles {
        match refined(id, "title-type") {
            Some("subtitle") => m.subtitle = m.subtitle.take().or(Some(title.clone())),
            Some("main") => m.title = Some(title.clone()),
            _ if m.title.is_none() => m.title = Some(title.clone()),
            _ => {}
        }
    }
    for (id, name, role) in &creators {
        let role = refined(id, "role").or(role.as_deref());
        if role.is_none_or(|r| r == "aut") {
            m.authors.push(name.clone());
        }
    }
    if let Some(position) = refined(&series_id, "group-position") {
        m.series_number = Some(trim_index(position));
    }
    if package.spine.is_empty() {
        return Err(bad(
            "its package document has an empty spine, so it has no text in order",
        ));
    }
    Ok(package)
}

/// An identifier as the book's metadata takes it: an ISBN bare, a bare UUID (LibreOffice
/// writes one) as the URN it is.
fn identifier(value: &str) -> String {
    let value = value.trim_start_matches("urn:isbn:");
    let uuid = value.len() == 36
        && value.chars().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    if uuid {
        format!("urn:uuid:{value}")
    } else {
        value.to_owned()
    }
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `2.0` as a series position is 2.
fn trim_index(index: &str) -> String {
    index.strip_suffix(".0").unwrap_or(index).to_owned()
}

fn is_isbn(value: &str) -> bool {
    let digits: String = value
        .trim_start_matches("urn:isbn:")
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .collect();
    (digits.len() == 13 || digits.len() == 10)
        && digits.chars().all(|c| c.is_ascii_digit() || c == 'X')
}

/// Descriptions are often HTML in the metadata: its text.
fn strip_tags(text: &str) -> String {
    if !text.contains('<') {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    collapse(&out)
}
