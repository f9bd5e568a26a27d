//! The deploy guides hold no command that nobody answers for: every shell block in
//! `docs/deploy/` starts with a comment saying where it runs, `# needs HOST` for commands that
//! need the host (no test here can reach one) or `# tested: scripts/container` for commands that
//! script runs as written; and no guide repeats a manifest's contents, which live in the
//! committed files alone.

use std::path::{Path, PathBuf};

fn guides() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("docs/deploy")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    found.sort();
    assert!(found.len() >= 7, "the guides: {found:?}");
    found
}

/// Each fenced block of a Markdown text: its info string and its lines.
fn blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), Vec::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, lines)), None) => lines.push(line.to_owned()),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// What runs the blocks marked `# tested: …`, and the text that shows it reads a guide.
const RUNNERS: &[&str] = &["scripts/container"];

#[test]
fn every_command_in_the_guides_says_where_it_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tested = 0;
    for guide in guides() {
        let name = guide
            .strip_prefix(root)
            .expect("in the repository")
            .display()
            .to_string();
        let text = std::fs::read_to_string(&guide).expect("read the guide");
        for (info, lines) in blocks(&text) {
            let language = info.split_whitespace().next().unwrap_or("");
            // A manifest's contents belong in the manifest: no TOML, YAML, JSON or Procfile here.
            assert!(
                matches!(language, "sh" | ""),
                "{name}: a ```{info} block; point at the committed file instead"
            );
            if language.is_empty() {
                continue;
            }
            let first = lines.first().map(String::as_str).unwrap_or("");
            if let Some(runner) = first.strip_prefix("# tested: ") {
                assert!(
                    RUNNERS.contains(&runner),
                    "{name}: unknown runner {runner:?}"
                );
                let script = std::fs::read_to_string(root.join(runner)).expect("the runner");
                assert!(
                    script.contains(&name) && script.contains("# tested: scripts/container"),
                    "{name}: {runner} does not run this guide's blocks"
                );
                tested += 1;
            } else {
                assert!(
                    first.starts_with("# needs ") && first.len() > "# needs ".len(),
                    "{name}: a shell block that says neither `# needs HOST` nor `# tested: …`:\n{}",
                    lines.join("\n")
                );
            }
        }
        // Plain blocks hold no commands either.
        for (info, lines) in blocks(&text).iter().filter(|(i, _)| i.is_empty()) {
            assert!(
                !lines.iter().any(|l| l.trim_start().starts_with("bindery ")
                    || l.trim_start().starts_with("curl ")),
                "{name}: a command in an unmarked ```{info} block:\n{}",
                lines.join("\n")
            );
        }
    }
    assert!(tested >= 5, "the compose guide's blocks are run: {tested}");
}

/// CI runs the README's test command and nothing beside it: what a contributor runs from the
/// README is what decides whether a change lands.
#[test]
fn ci_runs_exactly_the_readmes_test_command() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let section = &readme[readme.find("## Test it").expect("a \"Test it\" section")..];
    let (_, lines) = blocks(section)
        .into_iter()
        .find(|(info, _)| info == "sh")
        .expect("a sh block in \"Test it\"");
    let [command] = lines.as_slice() else {
        panic!("the README's test command is one line: {lines:?}");
    };
    let ci = std::fs::read_to_string(root.join(".ci/run")).expect(".ci/run");
    let commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|l| !l.starts_with("set ") && !l.starts_with("cd ") && !l.starts_with("export "))
        .collect();
    assert_eq!(
        commands,
        [format!("exec {command}")],
        ".ci/run must run the README's test command and nothing else"
    );
}
