//! Stamping an advance reader copy (`advance_copies::stamp`) of a long novel: its EPUB, its
//! print edition's interior and its web reader's contents page, each stamped many times in one
//! process from the files the pipeline made. Prints the median, the fastest and the slowest
//! of each, the first call apart (it loads the typesetter's library and faces).
//!
//! `cargo bench --bench stamp [-- RUNS]` (release build; 21 runs unless told). The book is the
//! novel of `tests/fixtures` (or `BINDERY_CORPUS`'s) with its chapters repeated to about
//! 105,000 words, as `scripts/bench-convert` makes it (`scripts/lib/long_books.py`); it is
//! converted once, in process, with its print edition and web reader. The stamped EPUB and
//! PDF are left in `target/bench/` for a person (or EPUBCheck, qpdf) to open.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bindery::advance_copies::stamp::{self, READER_PAGE, Stamp};
use bindery::convert::Options;
use bindery::manuscript::Limits;
use bindery::pipeline::in_memory::{self, Extras};

const WORDS: usize = 105_000;
const LINK: &str = "urn:uuid:0b7f3c1e-2d4a-4f6b-9e8d-1a2b3c4d5e6f";

/// The novel's directory: the committed fixtures, or `BINDERY_CORPUS` to measure another
/// copy laid out the same way.
fn corpus() -> PathBuf {
    std::env::var_os("BINDERY_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

/// The novel's chapters (each from its `## ` heading) repeated until the book has `words`
/// words, each copy's titles told apart: `long_books.big_markdown`'s book.
fn long_novel(words: usize) -> String {
    let novel = std::fs::read_to_string(corpus().join("markdown/love-among-the-chickens.md"))
        .expect("the novel");
    let (front, body) = match novel
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
    {
        Some((front, body)) => (format!("---\n{front}\n---\n"), body.to_owned()),
        None => (String::new(), novel.clone()),
    };
    let mut cuts: Vec<usize> = body.match_indices("\n## ").map(|(at, _)| at + 1).collect();
    if body.starts_with("## ") {
        cuts.insert(0, 0);
    }
    if cuts.is_empty() {
        cuts.push(0);
    }
    let chapters: Vec<&str> = cuts
        .iter()
        .zip(cuts.iter().skip(1).chain([&body.len()]))
        .map(|(a, b)| &body[*a..*b])
        .collect();
    let mut out = front;
    out.push_str(&body[..cuts[0]]);
    let (mut total, mut copy) = (0, 0);
    while total < words {
        copy += 1;
        for chapter in &chapters {
            if total >= words {
                break;
            }
            match chapter.split_once('\n') {
                Some((heading, rest)) if heading.starts_with("## ") => {
                    out.push_str(&format!("{heading} ({copy})\n{rest}\n"));
                }
                _ => {
                    out.push_str(chapter);
                    out.push('\n');
                }
            }
            total += chapter.split_whitespace().count();
        }
    }
    out
}

/// `f` run `runs` times after a first call: (the first call's time, every other's, sorted).
fn measure(runs: usize, mut f: impl FnMut()) -> (Duration, Vec<Duration>) {
    let started = Instant::now();
    f();
    let first = started.elapsed();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    (first, times)
}

fn report(what: &str, (first, times): (Duration, Vec<Duration>)) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "stamp {what}: median {:.3} ms (fastest {:.3}, slowest {:.3}, {} runs; first call {:.1} ms)",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len(),
        ms(first),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a number among the arguments is the runs.
    let runs = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(21)
        .max(1);
    let manuscript = long_novel(WORDS);
    let started = Instant::now();
    let links = bindery::ebook::reader::Links::default();
    let book = in_memory::convert(
        manuscript.as_bytes(),
        None,
        &Options::default(),
        &Limits::default(),
        "en",
        Extras {
            reader: Some(&links),
            print: true,
            house_files: &[],
        },
        |_, _, _| {},
    )
    .expect("the novel converts");
    let interior = book
        .reference()
        .and_then(|edition| edition.made.as_ref().ok())
        .expect("the novel has a print edition");
    let index = book
        .reader
        .as_ref()
        .and_then(|site| site.iter().find(|(path, _)| path == READER_PAGE))
        .map(|(_, bytes)| bytes.clone())
        .expect("the reader has its contents page");
    println!(
        "the book: {} words, converted in {:.1} s; EPUB {} KB, interior PDF {} KB of {} pages, {READER_PAGE} {} KB",
        manuscript.split_whitespace().count(),
        started.elapsed().as_secs_f64(),
        book.epub.len() / 1024,
        interior.pdf.len() / 1024,
        interior.pages,
        index.len() / 1024,
    );

    let jane = Stamp::for_book("Jane Roe", LINK, &book.book.metadata).expect("a stamp");
    report(
        "EPUB",
        measure(runs, || {
            stamp::epub(&book.epub, &jane).expect("stamped");
        }),
    );
    report(
        "PDF",
        measure(runs, || {
            stamp::pdf(&interior.pdf, &jane).expect("stamped");
        }),
    );
    // A name in a script the bundled faces lack: the system's CJK face is read and subset.
    let yamada = Stamp::for_book("山田 太郎", LINK, &book.book.metadata).expect("a stamp");
    report(
        "PDF, a name in CJK",
        measure(runs, || {
            stamp::pdf(&interior.pdf, &yamada).expect("stamped");
        }),
    );
    report(
        "web reader's page",
        measure(runs, || {
            stamp::reader_page(&index, &jane).expect("stamped");
        }),
    );

    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&out).expect("target/bench");
    let pdf = stamp::pdf(&interior.pdf, &jane).expect("stamped");
    assert!(
        pdf.starts_with(&interior.pdf),
        "the interior is the PDF's prefix"
    );
    for (name, bytes) in [
        (
            "stamp-105k.epub",
            stamp::epub(&book.epub, &jane).expect("stamped"),
        ),
        ("stamp-105k.pdf", pdf),
    ] {
        std::fs::write(out.join(name), bytes).expect("written");
    }
    println!(
        "stamped for Jane Roe: {}/stamp-105k.{{epub,pdf}}",
        out.display()
    );
}
