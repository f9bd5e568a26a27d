use super::*;
use crate::test_support::corpus;

/// The test house style's folder: `noir.toml`, Noto Serif's regular and italic, a leaf.
fn noir_dir() -> std::path::PathBuf {
    corpus::fixtures().join("styles/noir")
}

fn noir_source() -> Vec<u8> {
    std::fs::read(noir_dir().join("noir.toml")).unwrap()
}

fn file(name: &str) -> (String, Bytes) {
    (
        name.to_owned(),
        Bytes::from(std::fs::read(noir_dir().join(name)).unwrap()),
    )
}

fn noir_files() -> Vec<(String, Bytes)> {
    vec![
        file("NotoSerif-Regular.ttf"),
        file("NotoSerif-Italic.ttf"),
        file("leaf.svg"),
    ]
}

/// `bytes` with OpenType's embedding permission (OS/2 `fsType`) set to `fs_type`.
fn with_fs_type(bytes: &[u8], fs_type: u16) -> Bytes {
    let mut out = bytes.to_vec();
    let tables = u16::from_be_bytes([bytes[4], bytes[5]]) as usize;
    for t in 0..tables {
        let record = 12 + 16 * t;
        if &bytes[record..record + 4] == b"OS/2" {
            let offset = u32::from_be_bytes(bytes[record + 8..record + 12].try_into().unwrap());
            let at = offset as usize + 8;
            out[at..at + 2].copy_from_slice(&fs_type.to_be_bytes());
            return Bytes::from(out);
        }
    }
    panic!("the font has no OS/2 table")
}

#[test]
fn the_test_house_style_reads_with_its_fonts_and_its_ornament() {
    let house = read("noir", &noir_source(), noir_files()).unwrap();
    assert_eq!(house.name.as_str(), "noir");
    assert_eq!(house.style.body.font, "Noto Serif");
    assert_eq!(
        house.style.scene_break.mark(),
        super::super::BreakMark::Image("leaf.svg")
    );
    let fonts: Vec<&File> = house
        .files
        .iter()
        .filter(|f| f.kind == Kind::Font)
        .collect();
    assert_eq!(fonts.len(), 2);
    let leaf = house.files.iter().find(|f| f.name == "leaf.svg").unwrap();
    // Rewritten by usvg: no comment, nothing but drawing.
    let svg = String::from_utf8_lossy(&leaf.bytes);
    assert!(!svg.contains("<!--"), "{svg}");
    assert!(svg.contains("<path"), "{svg}");
    let face = font("NotoSerif-Italic.ttf", file("NotoSerif-Italic.ttf").1).unwrap();
    assert_eq!(face.family, "Noto Serif");
    assert!(face.italic && !face.bold);
}

#[test]
fn a_font_that_is_not_there_is_named_with_its_line() {
    let files = vec![file("leaf.svg")];
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert_eq!(e.line, Some(5), "{e}");
    assert!(e.message.contains("\"Noto Serif\" is not there"), "{e}");
    assert!(
        e.message.contains("EB Garamond"),
        "names the bundled ones: {e}"
    );
}

#[test]
fn an_ornament_that_is_not_there_is_named_with_its_line() {
    let files = vec![file("NotoSerif-Regular.ttf"), file("NotoSerif-Italic.ttf")];
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert_eq!(e.line, Some(21), "{e}");
    assert!(e.message.contains("leaf.svg"), "{e}");
}

#[test]
fn a_bad_key_and_a_pale_colour_are_refused_with_their_lines() {
    let source = String::from_utf8(noir_source()).unwrap();
    let bad_key = source.replace("title_case = \"upper\"", "title_kase = \"upper\"");
    let e = read("noir", bad_key.as_bytes(), noir_files()).unwrap_err();
    assert_eq!(e.line, Some(15), "{e}");
    assert!(e.message.contains("title_kase"), "{e}");
    assert!(e.message.contains("title_case"), "lists the keys: {e}");
    let pale = source.replace("#7a1c1c", "#c0c0c0");
    let e = read("noir", pale.as_bytes(), noir_files()).unwrap_err();
    assert_eq!(e.line, Some(24), "{e}");
    assert!(e.message.contains("4.5:1"), "{e}");
}

#[test]
fn a_face_whose_licence_forbids_embedding_is_refused() {
    let mut files = noir_files();
    files[0].1 = with_fs_type(&files[0].1, 0x0002);
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert!(e.message.contains("NotoSerif-Regular.ttf"), "{e}");
    assert!(e.message.contains("does not allow embedding"), "{e}");
    // Print and preview (4) and editable (8) embedding are allowed.
    let mut files = noir_files();
    files[0].1 = with_fs_type(&files[0].1, 0x0004);
    assert!(read("noir", &noir_source(), files).is_ok());
}

#[test]
fn an_ornament_that_holds_text_is_refused_as_text_in_an_image() {
    let mut files = noir_files();
    files[2].1 = Bytes::from_static(
        b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"90\" height=\"20\">\
          <text x=\"0\" y=\"15\" font-family=\"EB Garamond\">Part One</text></svg>",
    );
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert!(e.message.contains("holds text"), "{e}");
    assert!(e.message.contains("leaf.svg"), "{e}");
}

#[test]
fn files_a_style_cannot_use_are_refused_by_name() {
    let mut files = noir_files();
    files.push(("notes.txt".to_owned(), Bytes::from_static(b"hello")));
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert!(e.message.contains("notes.txt"), "{e}");
    assert!(e.message.contains(".ttf"), "{e}");

    let mut files = noir_files();
    files.push(("../../etc.ttf".to_owned(), file("NotoSerif-Regular.ttf").1));
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert!(e.message.contains("not a file name"), "{e}");

    // A font no key names.
    let source = String::from_utf8(noir_source())
        .unwrap()
        .replace("font = \"Noto Serif\"", "font = \"EB Garamond\"");
    let e = read("noir", source.as_bytes(), noir_files()).unwrap_err();
    assert!(e.message.contains("not used by the style"), "{e}");

    // Italic alone, or regular alone: print would set the text, or its emphasis, in a face
    // that is not there.
    let files = vec![file("NotoSerif-Italic.ttf"), file("leaf.svg")];
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert!(
        e.message.contains("no regular (upright, not bold) face"),
        "{e}"
    );
    let files = vec![file("NotoSerif-Regular.ttf"), file("leaf.svg")];
    let e = read("noir", &noir_source(), files).unwrap_err();
    assert!(e.message.contains("no italic face"), "{e}");
    assert!(e.message.contains("emphasis"), "{e}");

    let e = read("classic", &noir_source(), noir_files()).unwrap_err();
    assert!(e.message.contains("built-in"), "{e}");
    let e = read("Noir Style!", &noir_source(), noir_files()).unwrap_err();
    assert!(e.message.contains("not a style name"), "{e}");
}

#[test]
fn a_book_finds_its_house_fonts_among_its_resources() {
    let mut resources = std::collections::BTreeMap::new();
    resources.insert("image1.png".to_owned(), vec![1, 2, 3]);
    for (name, bytes) in noir_files() {
        resources.insert(resource_id(&name), bytes.to_vec());
    }
    let own = own_faces(&resources);
    assert_eq!(own.len(), 2);
    let families = families(&resources);
    assert!(families.has("Noto Serif") && families.has("EB Garamond"));
    assert!(is_style_file(&resource_id("leaf.svg")) && !is_style_file("image1.png"));
}
