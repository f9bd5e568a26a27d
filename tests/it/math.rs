//! Mathematics through `bindery convert`: the math fixtures (`tests/fixtures/math/`: TeX in
//! `markdown/math.md`, Word equations in `docx/equations.docx`) come out as MathML that holds
//! each expression's symbols, marked as EPUB asks, and what cannot be converted stays TeX
//! with a warning. EPUBCheck passes them in `convert::every_corpus_file_…`, as every fixture.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{BIN, corpus};

/// Converts `input`; the EPUB's path and the report's warnings.
fn converted(input: &Path, dir: &Path) -> (PathBuf, Vec<serde_json::Value>) {
    let epub = dir.join("book.epub");
    let out = crate::convert::convert(input, &epub, &["--json"]);
    assert!(
        out.status.success(),
        "{}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json report");
    let warnings = report["report"]["warnings"]
        .as_array()
        .expect("warnings")
        .clone();
    (epub, warnings)
}

/// The EPUB's files whose names end with `suffix`, in the archive's order, as text.
fn entries(epub: &Path, suffix: &str) -> Vec<(String, String)> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(epub).expect("epub")).expect("zip");
    let mut out = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).expect("entry");
        let name = entry.name().expect("name").to_string();
        if name.ends_with(suffix) {
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("utf-8");
            out.push((name, text));
        }
    }
    out
}

/// Every `<math>…</math>` of the book's chapters, in reading order.
fn equations(epub: &Path) -> Vec<String> {
    let mut all = Vec::new();
    for (name, xhtml) in entries(epub, ".xhtml") {
        if !name.contains("chapter") {
            continue;
        }
        let mut rest = xhtml.as_str();
        while let Some(start) = rest.find("<math") {
            let end = rest[start..].find("</math>").expect("closed") + start + "</math>".len();
            all.push(rest[start..end].to_owned());
            rest = &rest[end..];
        }
    }
    all
}

/// What a reader sees of an equation: its text without the TeX annotation, tags removed and
/// the predefined entities resolved (written here, not borrowed from the code under test).
fn shown_text(mathml: &str) -> String {
    let without = match (mathml.find("<annotation"), mathml.find("</annotation>")) {
        (Some(a), Some(b)) => format!("{}{}", &mathml[..a], &mathml[b..]),
        _ => mathml.to_owned(),
    };
    let mut text = String::new();
    let mut in_tag = false;
    for c in without.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn annotation(mathml: &str) -> Option<String> {
    let start = mathml.find("encoding=\"application/x-tex\">")? + 29;
    let end = mathml[start..].find("</annotation>")? + start;
    Some(
        mathml[start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

/// The symbols of a case the MathML lacks; a list inside the list is any one of several.
/// Spaces are not symbols (MathML writes `\text{a b}`'s as no-break spaces).
fn missing_symbols(case: &serde_json::Value, shown: &str) -> Vec<String> {
    let compact: String = shown.split_whitespace().collect();
    let has = |symbol: &str| compact.contains(&symbol.split_whitespace().collect::<String>());
    case["symbols"]
        .as_array()
        .expect("symbols")
        .iter()
        .filter(|s| match s {
            serde_json::Value::Array(any) => {
                !any.iter().any(|a| has(a.as_str().unwrap_or("\u{0}")))
            }
            s => !has(s.as_str().unwrap_or("\u{0}")),
        })
        .map(|s| s.to_string())
        .collect()
}

/// What is wrong with a case's MathML: displayed when it should not be or the other way,
/// symbols missing.
fn misrendered(case: &serde_json::Value, mathml: &str, display: bool) -> Vec<String> {
    let mut wrong = Vec::new();
    if mathml.contains("display=\"block\"") != display {
        wrong.push(format!("{}: display should be {display}", case["id"]));
    }
    let shown = shown_text(mathml);
    let missing = missing_symbols(case, &shown);
    if !missing.is_empty() {
        wrong.push(format!("{}: lacks {missing:?} in {shown:?}", case["id"]));
    }
    wrong
}

fn cases(name: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(corpus().join("math").join(name)).expect("cases");
    serde_json::from_str(&text).expect("json")
}

/// What every book with MathML must be: each chapter holding it marked `mathml` in the
/// manifest and no other, the MathML namespace unprefixed, the feature declared.
fn assert_marked_as_epub_asks(epub: &Path) {
    let (_, opf) = entries(epub, "content.opf").remove(0);
    let chapters = entries(epub, ".xhtml");
    let mut marked = 0;
    for (name, xhtml) in &chapters {
        let href = name.trim_start_matches("OEBPS/");
        let item = opf
            .lines()
            .find(|l| l.contains(&format!("href=\"{href}\"")))
            .unwrap_or_else(|| panic!("{href} is not in the manifest"));
        let has = xhtml.contains("<math xmlns=\"http://www.w3.org/1998/Math/MathML\"");
        assert_eq!(item.contains("properties=\"mathml\""), has, "{item}");
        marked += usize::from(has);
        assert!(
            !xhtml.contains("<m:math") && !xhtml.contains("xmlns:m="),
            "{name}"
        );
        assert!(!xhtml.contains(" style=\""), "{name}: an inline style");
    }
    assert!(marked > 0, "no chapter holds MathML");
    assert!(
        opf.contains("<meta property=\"schema:accessibilityFeature\">MathML</meta>"),
        "{opf}"
    );
}

#[test]
fn every_tex_expression_of_the_markdown_fixture_is_mathml_with_its_symbols() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (epub, warnings) = converted(&corpus().join("markdown/math.md"), dir.path());
    assert!(warnings.is_empty(), "{warnings:#?}");
    let found = equations(&epub);
    let expected: Vec<_> = cases("tex.json")
        .into_iter()
        .filter(|c| c["expect"] == "ok" && c["bindery"] != "tex")
        .collect();
    assert!(expected.len() >= 50, "only {} expressions", expected.len());
    assert_eq!(found.len(), expected.len(), "equations in the book");
    let mut failures = Vec::new();
    for (case, mathml) in expected.iter().zip(&found) {
        let tex = case["tex"].as_str().expect("tex");
        if annotation(mathml).as_deref() != Some(tex) {
            failures.push(format!(
                "{}: annotation is not its TeX: {mathml}",
                case["id"]
            ));
            continue;
        }
        let display = case["display"].as_bool().expect("display");
        failures.extend(misrendered(case, mathml, display));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_marked_as_epub_asks(&epub);
    // Prices stay prices.
    let text: String = entries(&epub, ".xhtml")
        .into_iter()
        .map(|(_, x)| x)
        .collect();
    assert!(
        text.contains("mathematics: it cost $5 and $10"),
        "currency became math"
    );
    assert!(text.contains("from $x$1 onwards"), "$x$1 became math");
}

#[test]
fn every_word_equation_of_the_docx_fixture_is_mathml_with_its_symbols() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (epub, warnings) = converted(&corpus().join("docx/equations.docx"), dir.path());
    let found = equations(&epub);
    let expected = cases("omml.json");
    assert_eq!(found.len(), expected.len(), "equations in the book");
    let mut failures = Vec::new();
    for (case, mathml) in expected.iter().zip(&found) {
        let display = case["omml"]
            .as_str()
            .is_some_and(|o| o.starts_with("<m:oMathPara"));
        failures.extend(misrendered(case, mathml, display));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_marked_as_epub_asks(&epub);
    // The one element Bindery does not know (`m:foo`, in the fixture on purpose) is named.
    let codes: Vec<_> = warnings
        .iter()
        .map(|w| (w["code"].as_str(), w["message"].as_str()))
        .collect();
    assert_eq!(codes.len(), 1, "{codes:?}");
    assert_eq!(codes[0].0, Some("math_element_unknown"));
    assert!(codes[0].1.is_some_and(|m| m.contains("m:foo")), "{codes:?}");
}

#[test]
fn tex_that_cannot_be_converted_stays_code_with_a_warning_and_a_nesting_bomb_is_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let unconvertible: Vec<_> = cases("tex.json")
        .into_iter()
        .filter(|c| c["bindery"] == "tex")
        .collect();
    let bomb = "{".repeat(200) + "x" + &"}".repeat(200);
    let mut text = String::from("# Gaps\n\n");
    for case in &unconvertible {
        text.push_str(&format!("$${}$$\n\n", case["tex"].as_str().expect("tex")));
    }
    text.push_str(&format!("A bomb: ${bomb}$, and $a+b$ after it.\n"));
    let input = dir.path().join("gaps.md");
    std::fs::write(&input, text).expect("write");
    let (epub, warnings) = converted(&input, dir.path());
    let messages: Vec<&str> = warnings
        .iter()
        .filter(|w| w["code"] == "math_not_converted")
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert_eq!(messages.len(), unconvertible.len() + 1, "{messages:#?}");
    assert!(
        messages
            .last()
            .is_some_and(|m| m.contains("nests more than 100")),
        "{messages:#?}"
    );
    let xhtml: String = entries(&epub, ".xhtml")
        .into_iter()
        .map(|(_, x)| x)
        .collect();
    assert_eq!(
        xhtml.matches("<code class=\"tex").count(),
        unconvertible.len() + 1
    );
    // The equation after the bomb is converted all the same.
    assert_eq!(equations(&epub).len(), 1);
}

/// TeX as people write it (`markdown/tex-as-written.md`): macros defined in the manuscript,
/// the constructs math-core lacks, labels and references across the book, each as MathML
/// holding its symbols; and the macro bomb fails its own expression alone, quickly.
#[test]
fn tex_as_people_write_it_becomes_mathml_and_a_macro_bomb_fails_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = std::time::Instant::now();
    let (epub, warnings) = converted(&corpus().join("markdown/tex-as-written.md"), dir.path());
    let took = started.elapsed();
    let failed: Vec<&str> = warnings
        .iter()
        .filter(|w| w["code"] == "math_not_converted")
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert_eq!(failed.len(), 1, "only the bomb: {failed:#?}");
    assert!(
        failed[0].contains("\\a") && failed[0].contains("expands"),
        "{failed:?}"
    );
    // The whole book, bomb included, in a debug build on a loaded machine.
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let shown: Vec<String> = equations(&epub).iter().map(|m| shown_text(m)).collect();
    let all = shown.join(" | ");
    let has = |what: &str, symbols: &[&str]| {
        assert!(
            shown.iter().any(|s| {
                let s: String = s.split_whitespace().collect();
                symbols.iter().all(|x| s.contains(x))
            }),
            "{what}: no equation shows {symbols:?} in {all}"
        );
    };
    has("\\newcommand with an argument", &["𝐯", "ℝ"]);
    has("an optional argument's default", &["‖", "2"]);
    has("an optional argument given", &["∞"]);
    has("\\def with two parameters", &["⟨", "a", "b", "⟩"]);
    has("\\DeclareMathOperator", &["Tr", "A"]);
    has("\\DeclareMathOperator*", &["arg", "max"]);
    has("\\operatorname", &["rank", "M"]);
    has("\\text and \\mbox in cases", &["if", "otherwise", "never"]);
    has("\\boxed", &["x=42"]);
    has("\\substack", &["0≤i≤m", "P(i,j)"]);
    has("\\tag", &["E=mc2", "(E1)"]);
    has("\\ensuremath", &["α+β"]);
    has("gather", &["x+y=z", "u=v"]);
    has("multline", &["x4", "x3", "x2"]);
    let mathml: String = equations(&epub).join("\n");
    assert!(
        mathml.contains(r#"<menclose notation="box">"#),
        "\\boxed is a frame"
    );
    assert!(
        mathml.contains("updiagonalstrike") && mathml.contains("downdiagonalstrike"),
        "\\cancel, \\bcancel and \\xcancel strike"
    );
    // `\eqref{eq:sum}` before its equation, and after it, both show its number; the
    // equation with `\tag{E1}` is referred to by it.
    let numbers: Vec<&String> = shown
        .iter()
        .filter(|s| s.trim().starts_with('(') || s.trim() == "E1")
        .collect();
    assert!(
        shown.iter().filter(|s| s.trim() == "(1)").count() >= 2,
        "\\eqref{{eq:sum}} before and after the align: {numbers:?}"
    );
    assert!(
        shown.iter().any(|s| s.trim() == "(E1)") && shown.iter().any(|s| s.trim() == "E1"),
        "\\eqref and \\ref to the tag: {numbers:?}"
    );
    assert!(!mathml.contains("@@@"), "no placeholder is left");
    // Definitions show nothing: no equation is empty.
    assert!(shown.iter().all(|s| !s.trim().is_empty()), "{all}");
    // The equation after the bomb is converted all the same.
    has("after the bomb", &["y2"]);
}

/// The reader written for the Markdown fixture, served under the reader's policy
/// (`tests/browser/serve.py`), in Chromium: `tests/browser/reader-math.mjs`.
#[test]
fn the_readers_chapters_lay_out_every_equation_and_pass_axe() {
    if !common::need::browser() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let site = dir.path().join("site");
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg("convert")
        .arg(corpus().join("markdown/math.md"))
        .arg("-o")
        .arg(dir.path().join("book.epub"))
        .args(["--quiet", "--reader"])
        .arg(&site)
        .output()
        .expect("run bindery convert");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let served = common::reader_site::serve(&site);
    let url = served.url("index.html");
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/math");
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    common::browser_passes(
        common::browser_script("reader-math.mjs")
            .arg(&url)
            .arg(&shots),
        "the equations",
    );
}
