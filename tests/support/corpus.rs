//! Where the test manuscripts are: the committed fixtures (`tests/fixtures/`, described in its
//! README), and an outside corpus of real manuscripts when one is named.

use std::path::PathBuf;

/// The committed fixtures' directory.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
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
    let mut dirs = vec![fixtures()];
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
