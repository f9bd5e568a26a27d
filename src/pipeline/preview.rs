//! A book's preview in a style (`GET /api/v1/books/{id}/preview?style=`): made on demand by a
//! job of its own, once per revision and style (its unique key), and kept with the revision's
//! files. It sets a few pages of the book (`print::previews`) and the same passages as the
//! reader shows them (`ebook::reader::passages_page`); `preview.json`, written last, says it
//! is whole.

use serde::{Deserialize, Serialize};

use crate::books::{RevisionId, keys};
use crate::jobs::{Job, JobContext, NewJob, Outcome};
use crate::services::Services;
use crate::style::StyleName;
use crate::style::preview::Look;

/// Make revision `revision`'s preview in `style`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MakePreview {
    #[serde(flatten)]
    pub revision: RevisionId,
    pub style: StyleName,
    /// A house style's version (`house_styles::Kept::version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// What a preview holds, `preview.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Made {
    /// The first chapter's opening page, when the book has a chapter of running text.
    pub opening: bool,
    /// A page with a scene break, when the book has one.
    pub scene: bool,
}

/// The file that says a preview is whole, and what it holds.
pub const MADE: &str = "preview.json";

impl MakePreview {
    /// Its job, once per revision and look however often it is asked for.
    pub fn job(revision: &RevisionId, look: &Look, tenant: &str) -> NewJob {
        NewJob::of(&MakePreview {
            revision: revision.clone(),
            style: look.style.clone(),
            version: look.version.clone(),
        })
        .unique_key(format!(
            "preview:{}:{}:{look}",
            revision.book, revision.number
        ))
        .tenant(tenant)
    }
}

impl Job for MakePreview {
    const NAME: &'static str = "book.preview";
    const QUEUE: &'static str = super::steps::QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let blobs = &app.blobs;
        // A built-in style, or a house style of the book's tenant with its files.
        let (look, style, files) = match crate::style::builtin::get(self.style.as_str()) {
            Some(style) => (
                Look {
                    style: self.style.clone(),
                    version: None,
                },
                style,
                Vec::new(),
            ),
            None => {
                let Some(book) = crate::books::get(&app.db, &self.revision.book).await? else {
                    return Ok(Outcome::Discard("the book is gone".to_owned()));
                };
                let Some(kept) =
                    crate::house_styles::find(&app.db, &book.tenant, &self.style).await?
                else {
                    return Ok(Outcome::Discard(format!("no style {}", self.style)));
                };
                let Some(house) = kept.house_style() else {
                    return Ok(Outcome::Discard(format!(
                        "the style {} does not read",
                        self.style
                    )));
                };
                let files = crate::house_styles::files(blobs, &house).await?;
                (kept.look(), house.style, files)
            }
        };
        let key = |file: &str| keys::preview(&self.revision, &look, file);
        if blobs.get_opt(&key(MADE)).await?.is_some() {
            return Ok(Outcome::done());
        }
        let Some(model) = blobs.get_opt(&keys::model(&self.revision)).await? else {
            return Ok(Outcome::Discard("the revision keeps no files".to_owned()));
        };
        let mut book: crate::ebook::Book = serde_json::from_slice(&model)?;
        drop(model);
        book.metadata.style = self.style.clone();
        book.style = style;
        book.style_files = files.iter().map(|(name, _)| name.clone()).collect();
        let resources: crate::convert::Resources = files
            .into_iter()
            .map(|(name, bytes)| (crate::style::house::resource_id(&name), bytes.to_vec()))
            .collect();
        let made = tokio::task::spawn_blocking(move || {
            // The book becomes its excerpt: the print edition and the reader show the same.
            let excerpt = crate::style::preview::excerpt(&book.document);
            book.document = excerpt.document;
            let options = crate::print::PrintOptions::of(&book.metadata);
            let pages =
                crate::print::previews(&book, &resources, excerpt.opening, excerpt.scene, &options);
            let html = crate::ebook::reader::passages_page(&book);
            let fonts = crate::ebook::epub::book_fonts(&book, &resources);
            let css = crate::ebook::reader::stylesheet(&book, &fonts);
            // The stylesheet's own files: the house style's fonts and ornament (the bundled
            // fonts are served from the binary).
            let mut own: Vec<(String, Vec<u8>)> = fonts
                .iter()
                .filter(|face| {
                    crate::style::fonts::Families::bundled()
                        .by_file(&face.file)
                        .is_none()
                })
                .map(|face| (format!("fonts/{}", face.file), face.bytes.to_vec()))
                .collect();
            if let Ok(Some((file, _, bytes))) = crate::ebook::epub::book_ornament(&book, &resources)
            {
                own.push((
                    format!("{}{file}", crate::style::css::ORNAMENTS),
                    bytes.to_vec(),
                ));
            }
            (pages, html, css, own)
        })
        .await?;
        let (pages, html, css, own) = made;
        for (file, bytes) in own {
            blobs.put(&key(&file), bytes).await?;
        }
        let pages = pages.map_err(|e| anyhow::anyhow!("the preview's pages: {e}"))?;
        blobs.put(&key("title.png"), pages.title).await?;
        if let Some(png) = &pages.opening {
            blobs.put(&key("opening.png"), png.clone()).await?;
        }
        if let Some(png) = &pages.scene {
            blobs.put(&key("scene.png"), png.clone()).await?;
        }
        blobs.put(&key("reader.html"), html).await?;
        blobs.put(&key("reader.css"), css).await?;
        let made = Made {
            opening: pages.opening.is_some(),
            scene: pages.scene.is_some(),
        };
        blobs.put(&key(MADE), serde_json::to_vec(&made)?).await?;
        tracing::info!(style = %self.style, revision = self.revision.number, "preview made");
        Ok(Outcome::done())
    }
}
