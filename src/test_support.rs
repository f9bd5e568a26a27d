//! What unit tests share: the way to the test manuscripts, and test pictures.

use std::path::{Path, PathBuf};

/// A file of the committed test fixtures (`tests/fixtures/`, described in its README).
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative)
}

/// A text fixture's contents.
pub fn fixture_text(relative: &str) -> String {
    std::fs::read_to_string(fixture(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The outside corpus of real manuscripts, when asked for by `BINDERY_CORPUS=DIR`: an extra
/// run that nothing needs. Only by name, never found by looking around the checkout, so that
/// what a run covers (and how long it takes) does not depend on what lies beside it.
pub fn outside_corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("BINDERY_CORPUS")?);
    // Asked for by name, so its absence is a mistake worth stopping for.
    assert!(
        dir.is_dir(),
        "BINDERY_CORPUS={} is not a directory",
        dir.display()
    );
    Some(dir)
}

/// The directories a sweep over every manuscript reads, each with `docx/`, `markdown/` and
/// `text/` inside: the fixtures always, then the outside corpus when present. Prints which,
/// so a run says what it covered.
pub fn sweep_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![fixture("")];
    match outside_corpus() {
        Some(outside) => {
            println!(
                "sweeping tests/fixtures and the outside corpus {}",
                outside.display()
            );
            dirs.push(outside);
        }
        None => println!(
            "sweeping tests/fixtures only (no outside corpus: set BINDERY_CORPUS to add one)"
        ),
    }
    dirs
}

/// A 300×200 JPEG, left half red and right half blue, stored with EXIF orientation 6 ("turn
/// 90° clockwise to view"), as a phone stores a portrait photo. Upright it is 200×300, red
/// on top.
pub fn sideways_photo() -> Vec<u8> {
    use image::codecs::jpeg::JpegEncoder;
    use image::{ImageEncoder, Rgb, RgbImage};
    let picture = RgbImage::from_fn(300, 200, |x, _| {
        if x < 150 {
            Rgb([220, 0, 0])
        } else {
            Rgb([0, 0, 220])
        }
    });
    let exif: Vec<u8> = [
        &b"II*\0"[..],
        &8u32.to_le_bytes(),
        &1u16.to_le_bytes(),
        &0x0112u16.to_le_bytes(),
        &3u16.to_le_bytes(),
        &1u32.to_le_bytes(),
        &6u16.to_le_bytes(),
        &0u16.to_le_bytes(),
        &0u32.to_le_bytes(),
    ]
    .concat();
    let mut jpeg = Vec::new();
    let mut encoder = JpegEncoder::new_with_quality(&mut jpeg, 95);
    encoder.set_exif_metadata(exif).expect("test setup");
    encoder
        .write_image(picture.as_raw(), 300, 200, image::ExtendedColorType::Rgb8)
        .expect("test setup");
    jpeg
}

/// Asserts that `bytes` is [`sideways_photo`] turned upright: 200×300, red on top, and no
/// orientation note left to turn it again.
pub fn assert_upright(bytes: &[u8]) {
    use image::ImageDecoder;
    use image::metadata::Orientation;
    let upright = image::load_from_memory(bytes).expect("decodes").to_rgb8();
    assert_eq!(upright.dimensions(), (200, 300), "portrait now");
    let top = upright.get_pixel(100, 40);
    let bottom = upright.get_pixel(100, 260);
    assert!(top[0] > 150 && top[2] < 80, "top is red: {top:?}");
    assert!(
        bottom[2] > 150 && bottom[0] < 80,
        "bottom is blue: {bottom:?}"
    );
    let mut decoder = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .expect("test setup")
        .into_decoder()
        .expect("test setup");
    assert_eq!(
        decoder.orientation().expect("orientation"),
        Orientation::NoTransforms
    );
}

/// Whether an outside program the unit tests hold Bindery to is installed (`program args…`
/// runs and succeeds). Without it, plain `cargo test` skips those checks and says so once, on
/// the terminal; under `scripts/test`, which sets `BINDERY_TEST_REQUIRE_ALL`, it is a failure.
pub fn have_program(program: &str, args: &[&str]) -> bool {
    use std::io::Write;
    use std::sync::Mutex;
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let ran = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ran {
        return true;
    }
    assert!(
        std::env::var_os("BINDERY_TEST_REQUIRE_ALL").is_none(),
        "{program} is missing under scripts/test: its set-up failed"
    );
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.iter().any(|p| p == program) {
        said.push(program.to_owned());
        // Straight to the terminal: the harness captures what tests print with eprintln!.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: the unit tests' checks with {program}, which is not installed; run scripts/test"
        );
    }
    false
}
