//! Images embedded in the document: each media part is read once, checked, and named.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::document::Image;
use crate::manuscript::archive::Archive;
use crate::manuscript::image::{is_known_unsupported, probe, upright};
use crate::manuscript::{InputError, Limits};
use crate::report::Warning;

#[derive(Debug, Default)]
pub struct Images {
    /// Media part → image id, or `None` when the part was dropped.
    by_part: HashMap<String, Option<String>>,
    ids: HashSet<String>,
    pub images: Vec<Image>,
    pub resources: BTreeMap<String, Vec<u8>>,
}

impl Images {
    /// The id of the image in `part`, reading and checking it the first time. `None` when
    /// the image cannot go into a book (a warning says so); an error when it claims to be a
    /// picture and is not one.
    pub fn add(
        &mut self,
        archive: &mut Archive,
        limits: &Limits,
        part: &str,
        alt: &str,
        warnings: &mut Vec<Warning>,
    ) -> Result<Option<String>, InputError> {
        if let Some(known) = self.by_part.get(part) {
            return Ok(known.clone());
        }
        let described = if alt.trim().is_empty() {
            String::new()
        } else {
            format!(" (“{}”)", alt.trim())
        };
        let id = match archive.read(part)? {
            None => {
                warnings.push(
                    Warning::new(
                        "image_missing",
                        format!("An image{described} refers to {part}, which the document does not contain; it was left out."),
                    )
                    .at(part),
                );
                None
            }
            Some(bytes) => {
                if let Some(format) = is_known_unsupported(&bytes) {
                    warnings.push(
                        Warning::new(
                            "image_unsupported",
                            format!("An image{described} is in {format} format, which e-readers cannot show; it was left out. Insert it as PNG or JPEG instead."),
                        )
                        .at(part),
                    );
                    None
                } else {
                    let name = part.rsplit('/').next().unwrap_or(part);
                    let info = probe(name, &bytes, limits)?;
                    let (info, bytes) = upright(name, bytes, info)?;
                    let id = self.unique_id(name, info.extension());
                    self.images.push(Image {
                        id: id.clone(),
                        media_type: info.media_type().to_owned(),
                        width: info.width,
                        height: info.height,
                    });
                    self.resources.insert(id.clone(), bytes);
                    Some(id)
                }
            }
        };
        self.by_part.insert(part.to_owned(), id.clone());
        Ok(id)
    }

    /// A safe file name from the part's name and the real format's extension.
    fn unique_id(&mut self, name: &str, extension: &str) -> String {
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        let mut stem: String = stem
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .take(60)
            .collect();
        if !stem.starts_with(|c: char| c.is_ascii_alphabetic()) {
            stem.insert_str(0, "image");
        }
        let mut id = format!("{stem}.{extension}");
        let mut n = 2;
        while self.ids.contains(&id) {
            id = format!("{stem}-{n}.{extension}");
            n += 1;
        }
        self.ids.insert(id.clone());
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_and_unique() {
        let mut images = Images::default();
        assert_eq!(images.unique_id("image1.jpeg", "jpg"), "image1.jpg");
        assert_eq!(images.unique_id("image1.jpeg", "jpg"), "image1-2.jpg");
        assert_eq!(images.unique_id("ünï cödé.png", "png"), "ncd.png");
        assert_eq!(images.unique_id("1.png", "png"), "image1.png");
    }
}
