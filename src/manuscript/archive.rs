//! The zip container, opened defensively: every entry name is checked before anything is
//! read, and every read is bounded by what was actually inflated, never by what the archive
//! claims (a zip bomb declares small sizes and inflates to gigabytes).

use std::collections::HashMap;
use std::io::{Cursor, Read};

use zip::ZipArchive;
use zip::result::ZipError;

use crate::manuscript::{InputError, Limits};

pub struct Archive<'b> {
    zip: ZipArchive<Cursor<&'b [u8]>>,
    /// Lower-cased part name → entry index: OPC part names are case-insensitive.
    index: HashMap<String, usize>,
    /// Entry names as the archive spells them, in its order.
    names: Vec<String>,
    limits: Limits,
    /// Bytes inflated so far, over all entries.
    inflated: u64,
}

impl<'b> Archive<'b> {
    pub fn open(bytes: &'b [u8], limits: &Limits) -> Result<Self, InputError> {
        let zip = ZipArchive::new(Cursor::new(bytes)).map_err(corrupt)?;
        if zip.len() > limits.max_zip_entries {
            return Err(InputError::TooManyEntries {
                entries: zip.len(),
                limit: limits.max_zip_entries,
            });
        }
        let mut index = HashMap::with_capacity(zip.len());
        let mut names = Vec::with_capacity(zip.len());
        let mut declared_total: u64 = 0;
        for i in 0..zip.len() {
            let entry = zip.by_index_data(i).map_err(corrupt)?;
            let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
            if is_unsafe(&name) {
                return Err(InputError::UnsafePath { entry: name });
            }
            declared_total = declared_total.saturating_add(entry.size());
            if entry.size() > limits.max_inflated_bytes
                || declared_total > limits.max_inflated_bytes
            {
                return Err(InputError::ZipBomb {
                    entry: name,
                    limit: limits.max_inflated_bytes,
                });
            }
            index.entry(name.to_lowercase()).or_insert(i);
            names.push(name);
        }
        Ok(Archive {
            zip,
            index,
            names,
            limits: *limits,
            inflated: 0,
        })
    }

    /// Every entry's name, in the archive's order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(&name.to_lowercase())
    }

    /// The inflated bytes of a part, or `None` when the archive has no such part.
    pub fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, InputError> {
        let Some(&i) = self.index.get(&name.to_lowercase()) else {
            return Ok(None);
        };
        let remaining = self.limits.max_inflated_bytes.saturating_sub(self.inflated);
        let bomb = || InputError::ZipBomb {
            entry: name.to_owned(),
            limit: self.limits.max_inflated_bytes,
        };
        let file = self.zip.by_index(i).map_err(corrupt)?;
        if file.is_dir() {
            return Ok(None);
        }
        if file.size() > remaining {
            return Err(bomb());
        }
        // The declared size only sizes the buffer (capped); the read itself is what counts.
        let mut out = Vec::with_capacity(file.size().min(1 << 24) as usize);
        if let Err(e) = file.take(remaining.saturating_add(1)).read_to_end(&mut out) {
            // The zip crate stops an entry that inflates past its declared size: an archive
            // that lies about sizes is a bomb, not mere damage.
            if e.to_string().contains("larger than its declared") {
                return Err(bomb());
            }
            // The buffer could not grow: in the reading child, past its memory limit.
            if e.kind() == std::io::ErrorKind::OutOfMemory {
                return Err(InputError::OutOfMemory {
                    step: format!("inflating {name}"),
                });
            }
            return Err(InputError::CorruptZip {
                detail: format!("{name}: {e}"),
            });
        }
        let got = out.len() as u64;
        if got > remaining {
            return Err(bomb());
        }
        self.inflated += got;
        Ok(Some(out))
    }

    /// A part as text: UTF-8 (a byte-order mark is dropped) or UTF-16 with a byte-order mark.
    pub fn read_text(&mut self, name: &str) -> Result<Option<String>, InputError> {
        let Some(bytes) = self.read(name)? else {
            return Ok(None);
        };
        decode(name, bytes).map(Some)
    }
}

/// What the archive's entries say they inflate to, together (0 when it cannot be read: the
/// reader then says why). Cheap: only the central directory is read.
pub fn declared_size(bytes: &[u8]) -> u64 {
    let Ok(mut zip) = ZipArchive::new(Cursor::new(bytes)) else {
        return 0;
    };
    (0..zip.len())
        .filter_map(|i| zip.by_index_raw(i).ok().map(|e| e.size()))
        .fold(0u64, u64::saturating_add)
}

fn decode(name: &str, bytes: Vec<u8>) -> Result<String, InputError> {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        let (text, _, bad) = encoding_rs::UTF_16LE.decode(&bytes);
        if bad {
            return Err(not_text(name));
        }
        return Ok(text.into_owned());
    }
    let mut text = String::from_utf8(bytes).map_err(|_| not_text(name))?;
    if text.starts_with('\u{feff}') {
        text.drain(..3);
    }
    Ok(text)
}

fn not_text(name: &str) -> InputError {
    InputError::Xml {
        part: name.to_owned(),
        detail: "the text is not UTF-8 or UTF-16".into(),
    }
}

/// Whether an entry name could escape a directory it is extracted to. Bindery never writes
/// entries to disk, but such a name has no business in a manuscript.
fn is_unsafe(name: &str) -> bool {
    let n = name.replace('\\', "/");
    let b = n.as_bytes();
    n.starts_with('/')
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
        || n.split('/').any(|c| c == "..")
        || n.contains('\0')
}

fn corrupt(e: ZipError) -> InputError {
    InputError::CorruptZip {
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_names_are_recognised() {
        for bad in [
            "/etc/passwd",
            "C:/x",
            "c:\\x",
            "a/../../b",
            "..",
            "a\\..\\b",
        ] {
            assert!(is_unsafe(bad), "{bad}");
        }
        for good in [
            "word/document.xml",
            "word/media/a..b.png",
            "[Content_Types].xml",
        ] {
            assert!(!is_unsafe(good), "{good}");
        }
    }
}
