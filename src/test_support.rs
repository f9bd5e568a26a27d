//! What unit tests share: the way to the corpus of real manuscripts.

use std::path::{Path, PathBuf};

/// A file of the shared corpus (`../shared/corpus` from the project, found by walking up from
/// the crate so worktrees and clones next to `shared/` work), or under `BINDERY_CORPUS`.
pub fn corpus_file(relative: &str) -> PathBuf {
    let base = std::env::var_os("BINDERY_CORPUS")
        .map(PathBuf::from)
        .or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .map(|a| a.join("shared/corpus"))
                .find(|p| p.is_dir())
        })
        .unwrap_or_else(|| {
            panic!("the corpus (shared/corpus) is not above the project; set BINDERY_CORPUS")
        });
    base.join(relative)
}
