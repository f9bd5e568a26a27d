//! Text encodings: UTF-8, UTF-16 (with or without a byte-order mark) and Windows-1252.
//!
//! Windows-1252 accepts almost any byte, so it is the last resort, and the checks that make
//! a file "text" (no NUL bytes, no control characters, no undefined bytes) are what tell a
//! manuscript from a binary file that happens to decode.

use std::borrow::Cow;

use encoding_rs::WINDOWS_1252;

use super::InputError;

/// Decodes manuscript bytes, returning the text (line endings normalised to `\n`, no BOM)
/// and the encoding's name (`UTF-8`, `UTF-16LE`, `UTF-16BE`, `windows-1252`).
pub fn decode(bytes: &[u8]) -> Result<(String, &'static str), InputError> {
    let (text, name) = match bytes {
        [0xEF, 0xBB, 0xBF, rest @ ..] => (decode_utf8_with_bom(rest)?, "UTF-8"),
        [0xFF, 0xFE, rest @ ..] => (decode_utf16(rest, Endian::Little, 2)?, "UTF-16LE"),
        [0xFE, 0xFF, rest @ ..] => (decode_utf16(rest, Endian::Big, 2)?, "UTF-16BE"),
        _ => match utf16_without_bom(bytes) {
            Some(endian) => (decode_utf16(bytes, endian, 0)?, endian.name()),
            None => decode_single(bytes)?,
        },
    };
    Ok((normalise_newlines(&text).into_owned(), name))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endian {
    Little,
    Big,
}

impl Endian {
    fn name(self) -> &'static str {
        match self {
            Endian::Little => "UTF-16LE",
            Endian::Big => "UTF-16BE",
        }
    }
}

/// UTF-16 text without a byte-order mark is mostly ASCII with a NUL byte beside every
/// character: at odd offsets for little-endian, at even offsets for big-endian. Other text
/// has no NUL bytes at all, so a clear majority on one side is a safe signal.
fn utf16_without_bom(bytes: &[u8]) -> Option<Endian> {
    let sample = &bytes[..bytes.len().min(4096) & !1];
    if sample.len() < 2 {
        return None;
    }
    let pairs = sample.len() / 2;
    let (even, odd) = sample
        .chunks_exact(2)
        .fold((0usize, 0usize), |(e, o), pair| {
            (e + usize::from(pair[0] == 0), o + usize::from(pair[1] == 0))
        });
    // At least a third of the characters must be ASCII (one NUL byte) on the one side, and
    // hardly any NUL bytes on the other.
    if odd * 3 >= pairs && even * 20 <= pairs {
        Some(Endian::Little)
    } else if even * 3 >= pairs && odd * 20 <= pairs {
        Some(Endian::Big)
    } else {
        None
    }
}

fn decode_utf16(bytes: &[u8], endian: Endian, offset: usize) -> Result<String, InputError> {
    if !bytes.len().is_multiple_of(2) {
        return Err(InputError::Encoding {
            detail: format!(
                "the file looks like {} but has an odd number of bytes ({}), so its last character is cut in half",
                endian.name(),
                bytes.len() + offset
            ),
        });
    }
    let units = bytes.chunks_exact(2).map(|pair| match endian {
        Endian::Little => u16::from_le_bytes([pair[0], pair[1]]),
        Endian::Big => u16::from_be_bytes([pair[0], pair[1]]),
    });
    let mut text = String::with_capacity(bytes.len() / 2);
    // Byte offset of the next character (a surrogate pair is four bytes).
    let mut at = offset;
    for decoded in char::decode_utf16(units) {
        match decoded {
            Ok(c) => {
                check_control(c as u32, at)?;
                text.push(c);
                at += c.len_utf16() * 2;
            }
            Err(e) => {
                return Err(InputError::Encoding {
                    detail: format!(
                        "the {} text has an unpaired surrogate 0x{:04X} at offset {at}, which is not a character",
                        endian.name(),
                        e.unpaired_surrogate()
                    ),
                });
            }
        }
    }
    Ok(text)
}

fn decode_utf8_with_bom(bytes: &[u8]) -> Result<String, InputError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            check_controls(bytes, 3)?;
            Ok(text.to_owned())
        }
        Err(e) => {
            let at = e.valid_up_to();
            Err(InputError::Encoding {
                detail: format!(
                    "the file starts with a UTF-8 byte-order mark, but byte 0x{:02X} at offset {} is not valid UTF-8",
                    bytes.get(at).copied().unwrap_or(0),
                    at + 3
                ),
            })
        }
    }
}

/// UTF-8 if it is valid, otherwise Windows-1252.
fn decode_single(bytes: &[u8]) -> Result<(String, &'static str), InputError> {
    let bytes = strip_dos_eof(bytes);
    check_controls(bytes, 0)?;
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok((text.to_owned(), "UTF-8"));
    }
    if let Some(at) = bytes.iter().position(|b| UNDEFINED_IN_1252.contains(b)) {
        return Err(InputError::Encoding {
            detail: format!(
                "byte 0x{:02X} at offset {at} is not a character in Windows-1252, and the file is not UTF-8 or UTF-16",
                bytes[at]
            ),
        });
    }
    let (text, _) = WINDOWS_1252.decode_without_bom_handling(bytes);
    Ok((text.into_owned(), "windows-1252"))
}

/// The five bytes Windows-1252 leaves undefined (WHATWG maps them to C1 controls, which are
/// no more text than the C0 ones).
const UNDEFINED_IN_1252: [u8; 5] = [0x81, 0x8D, 0x8F, 0x90, 0x9D];

/// DOS editors ended files with Ctrl-Z (0x1A); one at the very end is not binary content.
fn strip_dos_eof(bytes: &[u8]) -> &[u8] {
    bytes.strip_suffix(&[0x1A]).unwrap_or(bytes)
}

/// In UTF-8 and Windows-1252 every control character is one byte below 0x20, never part of
/// a longer sequence, so the bytes can be checked before decoding.
fn check_controls(bytes: &[u8], offset: usize) -> Result<(), InputError> {
    match bytes
        .iter()
        .position(|&b| is_forbidden_control(u32::from(b)))
    {
        Some(at) => check_control(u32::from(bytes[at]), at + offset),
        None => Ok(()),
    }
}

fn check_control(c: u32, at: usize) -> Result<(), InputError> {
    if !is_forbidden_control(c) {
        return Ok(());
    }
    let what = if c == 0 {
        format!("a NUL byte at offset {at}")
    } else {
        format!("byte 0x{c:02X} at offset {at} is a control character")
    };
    Err(InputError::Encoding {
        detail: format!("{what}, which text never contains: this looks like a binary file"),
    })
}

fn is_forbidden_control(c: u32) -> bool {
    c < 0x20 && !matches!(c, 0x09 | 0x0A | 0x0C | 0x0D)
}

/// CRLF (Windows) and lone CR (classic Mac OS) become LF.
fn normalise_newlines(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            chars.next_if_eq(&'\n');
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn utf16(text: &str, endian: Endian) -> Vec<u8> {
        text.encode_utf16()
            .flat_map(|u| match endian {
                Endian::Little => u.to_le_bytes(),
                Endian::Big => u.to_be_bytes(),
            })
            .collect()
    }

    fn detail(bytes: &[u8]) -> String {
        match decode(bytes) {
            Err(InputError::Encoding { detail }) => detail,
            other => panic!("expected an encoding error, got {other:?}"),
        }
    }

    #[test]
    fn plain_utf8_is_utf8() {
        let (text, name) = decode("Café — naïve".as_bytes()).unwrap();
        assert_eq!((text.as_str(), name), ("Café — naïve", "UTF-8"));
    }

    #[test]
    fn a_utf8_bom_is_stripped() {
        let (text, name) = decode(b"\xEF\xBB\xBFHello").unwrap();
        assert_eq!((text.as_str(), name), ("Hello", "UTF-8"));
    }

    #[test]
    fn a_utf8_bom_over_invalid_bytes_is_an_error_with_the_offset() {
        assert!(detail(b"\xEF\xBB\xBFab\xFFc").contains("0xFF at offset 5"));
    }

    #[test]
    fn utf16_with_boms_in_both_byte_orders() {
        let mut le = vec![0xFF, 0xFE];
        le.extend(utf16("Chapter 1 — “go”", Endian::Little));
        assert_eq!(
            decode(&le).unwrap(),
            ("Chapter 1 — “go”".to_owned(), "UTF-16LE")
        );
        let mut be = vec![0xFE, 0xFF];
        be.extend(utf16("Chapter 1 — “go”", Endian::Big));
        assert_eq!(
            decode(&be).unwrap(),
            ("Chapter 1 — “go”".to_owned(), "UTF-16BE")
        );
    }

    #[test]
    fn utf16_without_bom_is_recognised_from_its_nul_bytes() {
        let text = "It was a dark and stormy night; the rain fell in torrents.";
        let le = utf16(text, Endian::Little);
        assert_eq!(decode(&le).unwrap(), (text.to_owned(), "UTF-16LE"));
        let be = utf16(text, Endian::Big);
        assert_eq!(decode(&be).unwrap(), (text.to_owned(), "UTF-16BE"));
    }

    #[test]
    fn utf16_surrogate_pairs_decode_and_unpaired_ones_are_refused() {
        let mut ok = vec![0xFF, 0xFE];
        ok.extend(utf16("a😀b", Endian::Little));
        assert_eq!(decode(&ok).unwrap().0, "a😀b");
        // "ab" then a lone high surrogate, then "c".
        let bad = [0xFF, 0xFE, b'a', 0, b'b', 0, 0x3D, 0xD8, b'c', 0];
        let d = detail(&bad);
        assert!(d.contains("unpaired surrogate 0xD83D at offset 6"), "{d}");
    }

    #[test]
    fn utf16_with_an_odd_length_is_refused() {
        assert!(detail(&[0xFF, 0xFE, b'a', 0, b'b']).contains("odd number of bytes"));
    }

    #[test]
    fn invalid_utf8_falls_back_to_windows_1252() {
        // "Café “quoted”" as Windows-1252.
        let (text, name) = decode(b"Caf\xE9 \x93quoted\x94 \x80").unwrap();
        assert_eq!((text.as_str(), name), ("Café “quoted” €", "windows-1252"));
    }

    #[test]
    fn bytes_undefined_in_windows_1252_are_refused_with_offset() {
        let d = detail(b"Caf\xE9 \x81");
        assert_eq!(
            d,
            "byte 0x81 at offset 5 is not a character in Windows-1252, and the file is not UTF-8 or UTF-16"
        );
    }

    #[test]
    fn nul_bytes_outside_utf16_mean_a_binary_file() {
        let mut bytes = b"Some text that goes on for a while before ".to_vec();
        bytes.extend([0, 1, 2, 3, b'x']);
        assert!(detail(&bytes).contains("NUL byte at offset 42"));
    }

    #[test]
    fn control_characters_mean_a_binary_file() {
        let d = detail(b"text\x07bell");
        assert!(d.contains("0x07 at offset 4 is a control character"), "{d}");
        // Tabs and form feeds are text; a DOS end-of-file mark at the very end is tolerated.
        assert_eq!(decode(b"a\tb\x0Cc\x1A").unwrap().0, "a\tb\x0Cc");
    }

    #[test]
    fn control_characters_in_utf16_are_refused_too() {
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(utf16("ab\u{1}", Endian::Little));
        assert!(detail(&bytes).contains("offset 6"));
    }

    #[test]
    fn line_endings_become_lf() {
        assert_eq!(decode(b"a\r\nb\rc\n\r\nd").unwrap().0, "a\nb\nc\n\nd");
        let mut le = vec![0xFF, 0xFE];
        le.extend(utf16("a\r\nb", Endian::Little));
        assert_eq!(decode(&le).unwrap().0, "a\nb");
    }
}
