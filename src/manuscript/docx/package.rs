//! The Open Packaging layer: which part is the document (found through relationships, not
//! assumed), what each part's relationships point at, and the core properties.

use std::collections::HashMap;

use crate::document::Metadata;
use crate::manuscript::InputError;
use crate::manuscript::archive::Archive;
use crate::manuscript::xml::{Ns, Xml};

/// One relationship of a part.
#[derive(Debug, Clone)]
pub struct Rel {
    /// The last segment of the relationship type (`image`, `hyperlink`, `footnotes`…), which
    /// is the same in transitional and strict OOXML.
    pub kind: String,
    /// A part name in the archive, or the URL as written when `external`.
    pub target: String,
    pub external: bool,
}

#[derive(Debug, Default)]
pub struct Rels {
    by_id: HashMap<String, Rel>,
    /// In document order, for "the first relationship of this kind".
    order: Vec<String>,
}

impl Rels {
    /// The relationships of `part` (empty when it has none).
    pub fn load(archive: &mut Archive, part: &str) -> Result<Rels, InputError> {
        let name = rels_name(part);
        let Some(text) = archive.read_text(&name)? else {
            return Ok(Rels::default());
        };
        let mut x = Xml::new(&text, &name);
        x.root()?;
        let mut rels = Rels::default();
        while let Some(tag) = x.child()? {
            if tag.is(Ns::Package, "Relationship") {
                let id = tag.attr("Id").unwrap_or_default().into_owned();
                let kind = tag.attr("Type").unwrap_or_default();
                let kind = kind.rsplit('/').next().unwrap_or_default().to_owned();
                let target = tag.attr("Target").unwrap_or_default();
                let external = tag.attr("TargetMode").as_deref() == Some("External");
                let target = if external {
                    target.into_owned()
                } else {
                    resolve(part, &target)
                };
                rels.order.push(id.clone());
                rels.by_id.insert(
                    id,
                    Rel {
                        kind,
                        target,
                        external,
                    },
                );
            }
            x.skip()?;
        }
        Ok(rels)
    }

    pub fn get(&self, id: &str) -> Option<&Rel> {
        self.by_id.get(id)
    }

    /// The target part of the first internal relationship of a kind.
    pub fn part_of_kind(&self, kind: &str) -> Option<&str> {
        self.order
            .iter()
            .filter_map(|id| self.by_id.get(id))
            .find(|r| r.kind == kind && !r.external)
            .map(|r| r.target.as_str())
    }
}

/// `word/_rels/document.xml.rels` for `word/document.xml`; `_rels/.rels` for the package.
fn rels_name(part: &str) -> String {
    match part.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
        None => format!("_rels/{part}.rels"),
    }
}

/// The part a relative `target` names, seen from `source` (a part name, or `""` for the
/// package root).
pub fn resolve(source: &str, target: &str) -> String {
    let target = percent_decode(target);
    let mut parts: Vec<&str> = Vec::new();
    if !target.starts_with('/')
        && let Some((dir, _)) = source.rsplit_once('/')
    {
        parts.extend(dir.split('/').filter(|s| !s.is_empty()));
    }
    for segment in target.split(['/', '\\']) {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The main document part: through the package's officeDocument relationship, else the
/// content type that declares it, else the conventional name.
pub fn main_part(archive: &mut Archive, package: &Rels) -> Result<String, InputError> {
    if let Some(part) = package.part_of_kind("officeDocument")
        && archive.contains(part)
    {
        return Ok(part.to_owned());
    }
    if let Some(text) = archive.read_text("[Content_Types].xml")? {
        let mut x = Xml::new(&text, "[Content_Types].xml");
        x.root()?;
        while let Some(tag) = x.child()? {
            let content_type = tag.attr("ContentType").unwrap_or_default();
            if tag.is(Ns::Package, "Override")
                && content_type.starts_with("application/vnd.")
                && content_type.contains("wordprocessingml.document.main+xml")
                && let Some(name) = tag.attr("PartName")
            {
                let part = resolve("", &name);
                if archive.contains(&part) {
                    return Ok(part);
                }
            }
            x.skip()?;
        }
    }
    if archive.contains("word/document.xml") {
        return Ok("word/document.xml".into());
    }
    Err(InputError::NotDocx)
}

/// What `docProps/core.xml` says about the book.
pub fn core_properties(
    archive: &mut Archive,
    package: &Rels,
    metadata: &mut Metadata,
) -> Result<(), InputError> {
    let part = package
        .part_of_kind("core-properties")
        .unwrap_or("docProps/core.xml")
        .to_owned();
    let Some(text) = archive.read_text(&part)? else {
        return Ok(());
    };
    let mut x = Xml::new(&text, &part);
    x.root()?;
    while let Some(tag) = x.child()? {
        let name = tag.name().to_owned();
        let value = x.text()?;
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        // Templates leave placeholders such as `<%DESCRIPTION%>` in the properties.
        if value.is_empty() || (value.contains("<%") && value.contains("%>")) {
            continue;
        }
        let list = |v: &str, seps: &[char]| -> Vec<String> {
            v.split(seps)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        match name.as_str() {
            "title" => metadata.title = Some(value),
            "creator" => metadata.authors = list(&value, &[';']),
            "language" => metadata.language = Some(value),
            "description" => metadata.description = Some(value),
            "identifier" => metadata.identifier = Some(value),
            "subject" => metadata.subjects.insert(0, value),
            "keywords" => metadata.subjects.extend(list(&value, &[',', ';'])),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_relative_to_their_source_part() {
        assert_eq!(
            resolve("word/document.xml", "media/image1.png"),
            "word/media/image1.png"
        );
        assert_eq!(
            resolve("word/document.xml", "../customXml/item.xml"),
            "customXml/item.xml"
        );
        assert_eq!(
            resolve("word/document.xml", "/word/media/a%20b.png"),
            "word/media/a b.png"
        );
        assert_eq!(resolve("", "word/document.xml"), "word/document.xml");
        assert_eq!(resolve("", "../../../etc/passwd"), "etc/passwd");
    }

    #[test]
    fn relationship_part_names() {
        assert_eq!(
            rels_name("word/document.xml"),
            "word/_rels/document.xml.rels"
        );
        assert_eq!(rels_name(""), "_rels/.rels");
    }
}
