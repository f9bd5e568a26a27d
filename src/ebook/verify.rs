//! The pipeline's `verify` step: structural self-checks of a finished EPUB, read back from its
//! bytes the way a reading system would. It is not EPUBCheck (the test suite runs that on
//! every corpus file); it catches what a packaging bug or a truncated write would break, in
//! milliseconds and without Java.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Cursor, Read};

use quick_xml::XmlVersion;
use quick_xml::events::Event;
use quick_xml::reader::Reader;

const MIMETYPE: &str = "application/epub+zip";

/// Returns every problem found; empty means the package is sound.
pub fn check_epub(bytes: &[u8]) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    match check(bytes, &mut problems) {
        Ok(()) if problems.is_empty() => Ok(()),
        Ok(()) => Err(problems),
        Err(fatal) => {
            problems.push(fatal);
            Err(problems)
        }
    }
}

fn check(bytes: &[u8], problems: &mut Vec<String>) -> Result<(), String> {
    let mut zip =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| format!("not a zip: {e}"))?;
    {
        let first = zip
            .by_index(0)
            .map_err(|e| format!("no first entry: {e}"))?;
        let name = first.name().map(|n| n.into_owned()).unwrap_or_default();
        if name != "mimetype" {
            problems.push(format!("first entry is {name:?}, not mimetype"));
        }
        if first.compression() != zip::CompressionMethod::Stored {
            problems.push("mimetype is compressed".into());
        }
    }
    if read(&mut zip, "mimetype")? != MIMETYPE.as_bytes() {
        problems.push("mimetype does not say application/epub+zip".into());
    }
    let container = read(&mut zip, "META-INF/container.xml")?;
    let opf_path = first_attribute(&container, "rootfile", "full-path")
        .ok_or("META-INF/container.xml names no rootfile")?;
    let opf = read(&mut zip, &opf_path)?;
    let base = opf_path.rsplit_once('/').map_or("", |(dir, _)| dir);

    let mut items: BTreeMap<String, (String, String, String)> = BTreeMap::new(); // id → (href, type, properties)
    let mut spine = Vec::new();
    let mut metadata: BTreeMap<String, String> = BTreeMap::new();
    let mut reader = Reader::from_reader(opf.as_slice());
    let mut current: Option<String> = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let name = e.local_name().as_ref().to_owned();
                let attr = |key: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == key)
                        .and_then(|a| {
                            a.normalized_value(XmlVersion::Implicit1_0)
                                .ok()
                                .map(|v| v.into_owned())
                        })
                        .unwrap_or_default()
                };
                match name.as_str() {
                    "item" => {
                        items.insert(
                            attr("id"),
                            (attr("href"), attr("media-type"), attr("properties")),
                        );
                    }
                    "itemref" => spine.push(attr("idref")),
                    "identifier" | "title" | "language" => current = Some(name),
                    "meta" if attr("property") == "dcterms:modified" => {
                        current = Some("modified".into())
                    }
                    _ => current = None,
                }
            }
            Ok(Event::Text(t)) => {
                if let Some(key) = current.take() {
                    let text = t.xml_content(XmlVersion::Implicit1_0).trim().to_owned();
                    metadata.entry(key).or_insert(text);
                }
            }
            Ok(Event::End(_)) => current = None,
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("{opf_path} is not well-formed: {e}")),
        }
    }
    for key in ["identifier", "title", "language", "modified"] {
        if metadata.get(key).is_none_or(String::is_empty) {
            problems.push(format!("the package has no {key}"));
        }
    }
    if !items
        .values()
        .any(|(_, _, p)| p.split_whitespace().any(|p| p == "nav"))
    {
        problems.push("no navigation document".into());
    }
    if spine.is_empty() {
        problems.push("the spine is empty".into());
    }
    for idref in &spine {
        if !items.contains_key(idref) {
            problems.push(format!("spine item {idref:?} is not in the manifest"));
        }
    }

    let names: BTreeSet<String> = zip
        .file_names()
        .map(|n| n.map(std::borrow::Cow::into_owned))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("unreadable entry name: {e}"))?;
    let mut listed = BTreeSet::new();
    for (href, media_type, _) in items.values() {
        let path = if base.is_empty() {
            href.clone()
        } else {
            format!("{base}/{href}")
        };
        if !names.contains(&path) {
            problems.push(format!("{path} is in the manifest but not in the package"));
            continue;
        }
        if media_type == "application/xhtml+xml"
            || media_type == "application/x-dtbncx+xml"
            || media_type == "image/svg+xml"
        {
            let content = read(&mut zip, &path)?;
            if let Err(e) = well_formed(&content) {
                problems.push(format!("{path} is not well-formed XML: {e}"));
            }
        }
        listed.insert(path);
    }
    for name in &names {
        let is_package_file =
            name == "mimetype" || name.starts_with("META-INF/") || *name == opf_path;
        if !is_package_file && !listed.contains(name) && !name.ends_with('/') {
            problems.push(format!("{name} is in the package but not in the manifest"));
        }
    }
    Ok(())
}

fn read<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
) -> Result<Vec<u8>, String> {
    let mut file = zip.by_name(name).map_err(|e| format!("{name}: {e}"))?;
    let mut out = Vec::new();
    file.read_to_end(&mut out)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok(out)
}

fn well_formed(xml: &[u8]) -> Result<(), String> {
    let mut reader = Reader::from_reader(xml);
    let mut depth = 0usize;
    let mut roots = 0usize;
    loop {
        match reader.read_event() {
            Ok(Event::Start(_)) => {
                if depth == 0 {
                    roots += 1;
                }
                depth += 1;
            }
            Ok(Event::Empty(_)) if depth == 0 => roots += 1,
            Ok(Event::End(_)) => depth = depth.saturating_sub(1),
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    match (depth, roots) {
        (0, 1) => Ok(()),
        (0, n) => Err(format!("{n} root elements")),
        _ => Err("unclosed elements".into()),
    }
}

fn first_attribute(xml: &[u8], element: &str, key: &str) -> Option<String> {
    let mut reader = Reader::from_reader(xml);
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == element => {
                return e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == key)
                    .and_then(|a| {
                        a.normalized_value(XmlVersion::Implicit1_0)
                            .ok()
                            .map(|v| v.into_owned())
                    });
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    fn epub(entries: &[(&str, &str)], store_mimetype: bool) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, content) in entries {
            let method = if *name == "mimetype" && store_mimetype {
                zip::CompressionMethod::Stored
            } else {
                zip::CompressionMethod::Deflated
            };
            zip.start_file(
                *name,
                SimpleFileOptions::default().compression_method(method),
            )
            .unwrap();
            zip.write_all(content.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    const CONTAINER: &str = r#"<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;
    const OPF: &str = r#"<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:uuid:1</dc:identifier><dc:title>T</dc:title><dc:language>en</dc:language><meta property="dcterms:modified">2000-01-01T00:00:00Z</meta></metadata><manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c1"/></spine></package>"#;
    const PAGE: &str = r#"<html xmlns="http://www.w3.org/1999/xhtml"><body><p>x</p></body></html>"#;

    #[test]
    fn a_sound_package_passes() {
        let bytes = epub(
            &[
                ("mimetype", MIMETYPE),
                ("META-INF/container.xml", CONTAINER),
                ("OEBPS/content.opf", OPF),
                ("OEBPS/nav.xhtml", PAGE),
                ("OEBPS/c1.xhtml", PAGE),
            ],
            true,
        );
        assert_eq!(check_epub(&bytes), Ok(()));
    }

    #[test]
    fn broken_packages_name_their_problem() {
        let bytes = epub(
            &[
                ("mimetype", MIMETYPE),
                ("META-INF/container.xml", CONTAINER),
                ("OEBPS/content.opf", OPF),
                ("OEBPS/nav.xhtml", PAGE),
                ("OEBPS/c1.xhtml", "<html><body><p>x</body></html>"),
                ("OEBPS/stray.css", "p{}"),
            ],
            false,
        );
        let problems = check_epub(&bytes).unwrap_err().join("\n");
        assert!(problems.contains("mimetype is compressed"), "{problems}");
        assert!(
            problems.contains("c1.xhtml is not well-formed"),
            "{problems}"
        );
        assert!(
            problems.contains("stray.css is in the package but not in the manifest"),
            "{problems}"
        );
        assert!(check_epub(b"PK\x03\x04 truncated").is_err());
    }
}
