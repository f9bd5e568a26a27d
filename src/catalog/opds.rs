//! The OPDS 1.2 acquisition feed: an Atom feed with one entry per book, each with an
//! acquisition link to its EPUB, its cover, and the web reader as an HTML alternate.

use std::io;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use super::{Catalog, Listing};
use crate::books::Tenant;

/// The feed's media type, as OPDS 1.2 names an acquisition feed.
pub const MEDIA_TYPE: &str = "application/atom+xml;profile=opds-catalog;kind=acquisition";
/// Where the web serves the feed (its `self` and `start` link).
pub const PATH: &str = "/opds";

const ATOM: &str = "http://www.w3.org/2005/Atom";
const DC: &str = "http://purl.org/dc/terms/";
const OPDS: &str = "http://opds-spec.org/2010/catalog";
const REL_ACQUISITION: &str = "http://opds-spec.org/acquisition";
const REL_IMAGE: &str = "http://opds-spec.org/image";
const REL_THUMBNAIL: &str = "http://opds-spec.org/image/thumbnail";

/// The feed's bytes. Deterministic: the same catalog gives the same bytes.
pub fn render(catalog: &Catalog) -> anyhow::Result<Vec<u8>> {
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    writer
        .create_element("feed")
        .with_attributes([("xmlns", ATOM), ("xmlns:dc", DC), ("xmlns:opds", OPDS)])
        .write_inner_content(|w| {
            text(w, "id", &feed_id(&catalog.tenant))?;
            text(w, "title", &format!("Bindery: {}", catalog.tenant))?;
            text(w, "updated", &catalog.updated)?;
            // Atom wants an author on the feed when an entry may have none.
            w.create_element("author")
                .write_inner_content(|w| text(w, "name", "Bindery"))?;
            for rel in ["self", "start"] {
                w.create_element("link")
                    .with_attributes([("rel", rel), ("href", PATH), ("type", MEDIA_TYPE)])
                    .write_empty()?;
            }
            for book in &catalog.books {
                entry(w, book)?;
            }
            Ok(())
        })?;
    let mut bytes = writer.into_inner();
    bytes.push(b'\n');
    Ok(bytes)
}

fn entry(w: &mut Writer<Vec<u8>>, book: &Listing) -> io::Result<()> {
    let e = &book.entry;
    w.create_element("entry").write_inner_content(|w| {
        text(w, "title", &e.title)?;
        text(w, "id", &format!("urn:uuid:{}", book.id))?;
        text(w, "updated", &book.updated)?;
        text(w, "published", &book.published)?;
        for author in &e.authors {
            w.create_element("author")
                .write_inner_content(|w| text(w, "name", author))?;
        }
        text(w, "dc:identifier", &e.identifier)?;
        text(w, "dc:language", &e.language)?;
        if let Some(publisher) = &e.publisher {
            text(w, "dc:publisher", publisher)?;
        }
        if let Some(issued) = &e.issued {
            text(w, "dc:issued", issued)?;
        }
        if let Some(rights) = &e.rights {
            text(w, "rights", rights)?;
        }
        for subject in &e.subjects {
            let subject = xml_safe(subject);
            w.create_element("category")
                .with_attributes([("term", subject.as_str()), ("label", subject.as_str())])
                .write_empty()?;
        }
        if let Some(description) = &e.description {
            w.create_element("summary")
                .with_attribute(("type", "text"))
                .write_text_content(BytesText::new(&xml_safe(description)))?;
        }
        if let (Some(href), Some(cover)) = (&book.links.cover, &e.cover) {
            link(w, REL_IMAGE, href, &cover.media_type, None)?;
            // Readers list books with thumbnails, and most cannot draw SVG: a raster cover
            // serves as its own thumbnail; a generated SVG one gets none.
            if cover.media_type != "image/svg+xml" {
                link(w, REL_THUMBNAIL, href, &cover.media_type, None)?;
            }
        }
        link(
            w,
            REL_ACQUISITION,
            &book.links.epub,
            "application/epub+zip",
            None,
        )?;
        if let Some(pdf) = &book.links.pdf {
            link(
                w,
                REL_ACQUISITION,
                pdf,
                "application/pdf",
                Some("Print edition (PDF)"),
            )?;
        }
        link(
            w,
            "alternate",
            &book.links.reader,
            "text/html",
            Some("Read in the browser"),
        )?;
        Ok(())
    })?;
    Ok(())
}

fn link(
    w: &mut Writer<Vec<u8>>,
    rel: &str,
    href: &str,
    media_type: &str,
    title: Option<&str>,
) -> io::Result<()> {
    let mut element = w.create_element("link").with_attributes([
        ("rel", rel),
        ("href", href),
        ("type", media_type),
    ]);
    if let Some(title) = title {
        element = element.with_attribute(("title", title));
    }
    element.write_empty()?;
    Ok(())
}

/// `<name>value</name>`, escaped, without characters XML 1.0 cannot hold.
fn text(w: &mut Writer<Vec<u8>>, name: &str, value: &str) -> io::Result<()> {
    w.create_element(name)
        .write_text_content(BytesText::new(&xml_safe(value)))?;
    Ok(())
}

/// Drops the control characters XML 1.0 forbids even as references; escaping is the writer's.
fn xml_safe(value: &str) -> String {
    value
        .chars()
        .filter(|&c| {
            matches!(c, '\t' | '\n' | '\r')
                || ('\u{20}'..='\u{D7FF}').contains(&c)
                || ('\u{E000}'..='\u{FFFD}').contains(&c)
                || c >= '\u{10000}'
        })
        .collect()
}

/// A stable id per tenant: the same tenant's feed keeps its id across refreshes.
fn feed_id(tenant: &Tenant) -> String {
    let name = format!("bindery:catalog:{tenant}");
    format!(
        "urn:uuid:{}",
        uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, name.as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Cover, Entry, Links};
    use quick_xml::Reader;

    fn listing(title: &str, cover: Option<&str>) -> Listing {
        let entry = Entry {
            title: title.into(),
            subtitle: None,
            authors: vec!["A. Author".into(), "B & C".into()],
            language: "en".into(),
            identifier: "urn:isbn:9780000000002".into(),
            description: Some("A <b>bold</b> claim.\u{1}".into()),
            publisher: None,
            issued: Some("2024".into()),
            subjects: vec!["Fiction".into()],
            series: None,
            series_number: None,
            rights: None,
            cover: cover.map(|media_type| Cover {
                file: "cover.x".into(),
                media_type: media_type.into(),
            }),
            // A print edition, when the book has a cover: both ways are listed.
            print: cover.is_some(),
        };
        let id = "6f1c2a9e-0000-4000-8000-000000000001";
        Listing {
            id: id.into(),
            links: Links::of(id, &entry),
            entry,
            published: "2024-05-01T12:00:00Z".into(),
            updated: "2024-05-02T12:00:00Z".into(),
        }
    }

    /// Every start tag's name and attributes, in document order (also proves well-formedness).
    fn elements(xml: &[u8]) -> Vec<(String, Vec<(String, String)>)> {
        let mut reader = Reader::from_reader(xml);
        reader.config_mut().check_end_names = true;
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            match reader.read_event_into(&mut buf).expect("well-formed XML") {
                Event::Start(e) | Event::Empty(e) => out.push((
                    e.name().as_ref().to_owned(),
                    e.attributes()
                        .map(|a| {
                            let a = a.expect("attribute");
                            (
                                a.key.as_ref().to_owned(),
                                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                    .expect("value")
                                    .into_owned(),
                            )
                        })
                        .collect(),
                )),
                Event::Eof => return out,
                _ => {}
            }
            buf.clear();
        }
    }

    #[test]
    fn a_feed_is_well_formed_escaped_and_linked() {
        let catalog = Catalog {
            tenant: Tenant::parse("alice").expect("a tenant"),
            updated: "2024-05-02T12:00:00Z".into(),
            books: vec![listing("Fish & <Chips>", Some("image/jpeg"))],
        };
        let xml = render(&catalog).expect("render");
        let text = String::from_utf8(xml.clone()).expect("utf-8");
        assert!(
            text.contains("<title>Fish &amp; &lt;Chips&gt;</title>"),
            "{text}"
        );
        assert!(!text.contains('\u{1}'), "control characters are dropped");
        let found = elements(&xml);
        let links: Vec<(&str, &str)> = found
            .iter()
            .filter(|(name, _)| name == "link")
            .map(|(_, attrs)| {
                let get = |k: &str| {
                    attrs
                        .iter()
                        .find(|(key, _)| key == k)
                        .map_or("", |(_, v)| v.as_str())
                };
                (get("rel"), get("href"))
            })
            .collect();
        let id = "6f1c2a9e-0000-4000-8000-000000000001";
        assert_eq!(
            links,
            vec![
                ("self", "/opds"),
                ("start", "/opds"),
                (REL_IMAGE, &*format!("/books/{id}/reader/cover.x")),
                (REL_THUMBNAIL, &*format!("/books/{id}/reader/cover.x")),
                (REL_ACQUISITION, &*format!("/books/{id}/epub")),
                (REL_ACQUISITION, &*format!("/books/{id}/pdf")),
                ("alternate", &*format!("/books/{id}/reader/")),
            ]
        );
        assert_eq!(render(&catalog).expect("render"), xml, "deterministic");
    }

    #[test]
    fn an_svg_cover_gets_no_thumbnail_and_a_book_without_cover_no_image() {
        for (cover, images) in [(Some("image/svg+xml"), 1), (None, 0)] {
            let catalog = Catalog {
                tenant: Tenant::parse("t").expect("a tenant"),
                updated: "2024-05-02T12:00:00Z".into(),
                books: vec![listing("T", cover)],
            };
            let xml = render(&catalog).expect("render");
            let count = elements(&xml)
                .iter()
                .filter(|(_, attrs)| {
                    attrs
                        .iter()
                        .any(|(k, v)| k == "rel" && v.starts_with(REL_IMAGE))
                })
                .count();
            assert_eq!(count, images, "{cover:?}");
        }
    }

    #[test]
    fn the_feed_id_is_stable_per_tenant() {
        let (alice, bob) = (
            Tenant::parse("alice").expect("a tenant"),
            Tenant::parse("bob").expect("a tenant"),
        );
        assert_eq!(feed_id(&alice), feed_id(&alice));
        assert_ne!(feed_id(&alice), feed_id(&bob));
        assert!(feed_id(&alice).starts_with("urn:uuid:"));
    }
}
