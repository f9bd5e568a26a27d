//! `bindery convert`: the pipeline's stages in this process, with no server and no queue.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Config;
use crate::convert::Options;
use crate::document::keys::{self, Given, Named};
use crate::manuscript::Format;
use crate::paperback::Edition;
use crate::pipeline::in_memory::{self, ConvertError};
use crate::print::{self, Paper, PrintCover, PrintEdition, PrintError, Trim};
use crate::report::{PrinterCheck, RuleCheck, Verdict};
use crate::style::house::House;
use crate::style::{Style, StyleName};

/// Exit code when the manuscript (or an option) is refused: sysexits' EX_DATAERR.
const EXIT_BAD_INPUT: u8 = 65;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The manuscript: Markdown, DOCX, OpenDocument (.odt, .fodt), EPUB, HTML (a page, or a
    /// .zip of one with its images) or plain text (the format is read from the content, which
    /// must be what the file name says).
    pub manuscript: PathBuf,
    /// Where to write the EPUB [default: the manuscript's name with .epub, here].
    #[arg(short, long, value_name = "BOOK.epub")]
    pub output: Option<PathBuf>,
    /// Cover image (JPEG or PNG); without one, a typographic cover is generated.
    #[arg(long, value_name = "IMAGE")]
    pub cover: Option<PathBuf>,
    /// Metadata that overrides the manuscript's (the keys are listed from
    /// `document::keys`, as the API's form is).
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta, help = meta_help())]
    pub meta: Vec<(String, String)>,
    /// Number the EPUB as revision N of its book (`schema:version`, from 2 on), as the service
    /// numbers a book's later versions; with the book's identifier (`--meta identifier=…`),
    /// the EPUB is the service's, byte for byte.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub revision: Option<u32>,
    /// The book's style: a built-in one (bindery, classic, modern, romance, thriller,
    /// fantasy, literary, large-print) or a style file (`house.toml`), whose fonts it names
    /// must be bundled. As `--meta style=NAME` for a built-in one.
    #[arg(long, value_name = "NAME|FILE")]
    pub style: Option<String>,
    /// Read the manuscript as this format instead of sniffing it.
    #[arg(long, value_parser = ["markdown", "docx", "odt", "epub", "html", "text"])]
    pub format: Option<String>,
    /// Also write the offline web reader (a static site) into this directory.
    #[arg(long, value_name = "DIR")]
    pub reader: Option<PathBuf>,
    /// Also typeset the print edition's interior as a press-ready PDF.
    #[arg(long, value_name = "BOOK.pdf")]
    pub pdf: Option<PathBuf>,
    /// The print edition's trim size: 5x8, 5.25x8, 5.5x8.5, 6x9, a5 or royal (else the
    /// metadata's `trim`, else 6x9).
    #[arg(long, value_name = "SIZE", requires = "pdf")]
    pub trim: Option<Trim>,
    /// 0.125 in of bleed beyond the trim on the print edition's outside edges (as
    /// `--meta bleed=yes`).
    #[arg(long, requires = "pdf")]
    pub bleed: bool,
    /// The print edition's paper: white or cream (else the metadata's `paper`, else white).
    #[arg(long, value_name = "PAPER", requires = "pdf")]
    pub paper: Option<Paper>,
    /// Also typeset the print edition's cover (back, spine and front, with bleed) as a PDF.
    #[arg(long, value_name = "COVER.pdf", requires = "pdf")]
    pub print_cover: Option<PathBuf>,
    /// Print the report as JSON on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress bar and no report, only errors.
    #[arg(short, long)]
    pub quiet: bool,
}

fn parse_meta(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE (example: --meta title=\"My Book\")"))?;
    Ok((k.trim().to_owned(), v.to_owned()))
}

/// `--meta`'s help: every key with its other spellings, from the one table of them.
fn meta_help() -> String {
    format!(
        "Metadata that overrides the manuscript's, e.g. --meta title=\"My Book\" --meta \
         author=\"A. Writer\". Keys (other spellings in brackets): {}; and labels.KEY for one \
         of the words Bindery writes, e.g. --meta labels.contents=Inhalt",
        keys::field_names_with_aliases()
    )
}

/// The `--meta` pairs and the print edition's flags, which are metadata as the upload's fields
/// are (one place decides). A key given twice, under any of its spellings (`--meta author=…
/// --meta authors=…`, `--trim` with `--meta trim=…`), is a mistake to name, not a value to pick.
/// `style` is `--style`'s name, read once by [`style_choice`].
fn metadata(
    args: &ConvertArgs,
    style: Option<&StyleName>,
) -> Result<BTreeMap<String, String>, Failure> {
    let flags = [
        args.trim
            .map(|trim| ("trim", trim.name().to_owned(), "--trim")),
        args.paper
            .map(|paper| ("paper", paper.name().to_owned(), "--paper")),
        args.bleed.then(|| ("bleed", "yes".to_owned(), "--bleed")),
        style.map(|name| ("style", name.to_string(), "--style")),
    ];
    let pairs = args
        .meta
        .iter()
        .map(|(key, value)| (key.as_str(), value.clone(), format!("--meta {key}")))
        .chain(
            flags
                .into_iter()
                .flatten()
                .map(|(key, value, flag)| (key, value, flag.to_owned())),
        );
    let mut given = Given::default();
    let mut metadata = BTreeMap::new();
    for (key, value, said) in pairs {
        // An unknown key is named by the metadata's resolution, with the keys it knows.
        if let Ok(named) = Named::parse(key) {
            given.note(named, &said).map_err(|twice| {
                Failure::Input(format!(
                    "{} and {} give the same metadata ({}): give it once",
                    twice.first,
                    twice.again,
                    named.key()
                ))
            })?;
        }
        metadata.insert(key.to_owned(), value);
    }
    Ok(metadata)
}

/// `--style`: a built-in style's name, or a style file read (and refused with its line) here,
/// named by its file's stem, with the font files beside it whose families it names and the
/// ornament image it names (as a house style is uploaded with them).
fn style_choice(args: &ConvertArgs) -> Result<Option<(StyleName, Option<House>)>, Failure> {
    let Some(value) = &args.style else {
        return Ok(None);
    };
    let path = Path::new(value);
    let is_file = value.ends_with(".toml") || value.contains(std::path::MAIN_SEPARATOR);
    if !is_file {
        let name = StyleName::parse(value).map_err(Failure::Input)?;
        return Ok(Some((name, None)));
    }
    let refused = |e: String| Failure::Input(format!("the style file {}: {e}", path.display()));
    let source = std::fs::read(path).map_err(|e| refused(e.to_string()))?;
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let style = Style::parse(&String::from_utf8_lossy(&source)).map_err(|e| refused(e.message))?;
    let files = files_beside(path, &style).map_err(|e| refused(format!("{e:#}")))?;
    let house = crate::style::house::read(&stem, &source, files).map_err(|e| refused(e.message))?;
    Ok(Some((house.name.clone(), Some(house))))
}

/// The files beside a style file that it uses: the fonts of the families it names (each font
/// file read for its family), and the ornament image it names.
fn files_beside(path: &Path, style: &Style) -> anyhow::Result<Vec<(String, bytes::Bytes)>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let families = style.families();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let lower = name.to_ascii_lowercase();
        let wanted = if lower.ends_with(".ttf") || lower.ends_with(".otf") {
            let bytes = bytes::Bytes::from(std::fs::read(entry.path())?);
            let family = crate::style::house::font(&name, bytes.clone())
                .ok()
                .map(|face| face.family);
            family
                .is_some_and(|f| families.contains(&f.as_str()))
                .then_some(bytes)
        } else if style.scene_break.image.as_deref() == Some(name.as_str()) {
            Some(bytes::Bytes::from(std::fs::read(entry.path())?))
        } else {
            None
        };
        if let Some(bytes) = wanted {
            files.push((name, bytes));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

pub fn run(config: &Config, args: ConvertArgs) -> ExitCode {
    match convert_file(config, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(message)) => {
            eprintln!("bindery convert: {}: {message}", args.manuscript.display());
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Err(Failure::Other(e)) => {
            eprintln!("bindery convert: {e:#}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    Input(String),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

fn convert_file(config: &Config, args: &ConvertArgs) -> Result<(), Failure> {
    let started = Instant::now();
    crate::print::use_operator_fonts(config);
    let manuscript = read_limited(&args.manuscript, config.limits.max_manuscript_bytes)?;
    let cover = match &args.cover {
        Some(path) => Some((
            file_name(path),
            read_limited(path, config.limits.max_manuscript_bytes)?,
        )),
        None => None,
    };
    let (style, house) = match style_choice(args)? {
        Some((name, house)) => (Some(name), house),
        None => (None, None),
    };
    let metadata = metadata(args, style.as_ref())?;
    let options = Options {
        metadata,
        file_name: Some(file_name(&args.manuscript)),
        format: args.format.as_deref().and_then(Format::parse),
        modified: modified_time(&args.manuscript),
        identifier: None,
        revision: args.revision,
        house_styles: house
            .iter()
            .map(|house| crate::convert::HouseStyle {
                name: house.name.clone(),
                style: house.style.clone(),
                files: house
                    .files
                    .iter()
                    .map(|file| crate::convert::StyleFile {
                        name: file.name.clone(),
                        blob: None,
                    })
                    .collect(),
            })
            .collect(),
    };
    let output = args.output.clone().unwrap_or_else(|| {
        let stem = args
            .manuscript
            .file_stem()
            .map_or_else(|| "book".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(format!("{stem}.epub"))
    });

    let bar = progress_bar(args.quiet);
    let converted = in_memory::convert(
        &manuscript,
        cover.as_ref().map(|(n, b)| (n.as_str(), b.as_slice())),
        &options,
        &config.limits,
        &config.default_language,
        in_memory::Extras {
            // A site that stands alone: no service's page or download to link back to.
            reader: args
                .reader
                .is_some()
                .then(crate::ebook::reader::Links::default)
                .as_ref(),
            print: args.pdf.is_some(),
            house_files: house.as_ref().map_or(&[], |house| house.files.as_slice()),
        },
        |step, done, total| {
            if let Some(bar) = &bar {
                bar.set_message(step.to_owned());
                if step == in_memory::RENDER {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                }
            }
        },
    );
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let converted = match converted {
        Ok(c) => c,
        Err(ConvertError::Input(e)) => return Err(Failure::Input(e.to_string())),
        Err(ConvertError::Internal(e)) => return Err(Failure::Other(e)),
    };

    write_atomically(&output, &converted.epub)?;
    if let (Some(dir), Some(files)) = (&args.reader, &converted.reader) {
        for (path, bytes) in files {
            let target = dir.join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| anyhow::anyhow!("creating {}: {e}", parent.display()))?;
            }
            std::fs::write(&target, bytes)
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", target.display()))?;
        }
    }

    // The ebook is written whatever becomes of the print editions.
    let mut editions: Vec<Written> = Vec::new();
    if let Some(pdf_path) = &args.pdf {
        if converted.print.is_empty() {
            return Err(Failure::Input(
                "no print edition: the book lists none (editions=none); list one, or leave \
                 --pdf out"
                    .to_owned(),
            ));
        }
        let reference = converted.book.metadata.reference_edition();
        // The reference edition first: its files are the ones `--pdf` and `--print-cover` name.
        let mut made: Vec<&in_memory::MadeEdition> = converted.print.iter().collect();
        made.sort_by_key(|m| m.edition != reference);
        for made in made {
            let first = made.edition == reference;
            let typeset = printed(&made.made)?;
            let pdf = beside(pdf_path, made.edition, first);
            write_atomically(&pdf, &typeset.pdf)?;
            let cover = match &args.print_cover {
                Some(cover_path) => {
                    let front = converted.book.cover.as_ref().map(|c| c.file_name.as_str());
                    let cover = print::cover(
                        &converted.book.metadata,
                        front,
                        &converted.resources,
                        typeset.pages,
                        &made.options,
                    )
                    .map_err(|e| Failure::Other(anyhow::anyhow!("no print cover: {}", said(&e))))?;
                    let path = beside(cover_path, made.edition, first);
                    write_atomically(&path, &cover.pdf)?;
                    Some((path, cover))
                }
                None => None,
            };
            let check = print::preflight(typeset, cover.as_ref().map(|(_, c)| c), &made.options)
                .map_err(Failure::Other)?;
            editions.push(Written {
                edition: made.edition,
                pdf,
                typeset,
                cover,
                check,
            });
        }
    }
    // As the service's report has them: a failed rule is a warning of the print edition's.
    let mut warnings = Vec::new();
    for written in &editions {
        let at = print::where_printed(&converted.book.metadata, written.edition);
        for warning in written.check.iter().flat_map(print::failed_rules) {
            warnings.push(warning.at(at.clone()));
        }
    }
    let mut report = converted.report.clone();
    for warning in warnings {
        report.warn(warning);
    }

    if args.json {
        let described: Vec<serde_json::Value> = editions.iter().map(Written::json).collect();
        let first = described.first();
        let out = serde_json::json!({
            "output": output,
            "bytes": converted.epub.len(),
            "title": converted.book.metadata.title,
            "language": converted.book.metadata.language,
            "identifier": converted.book.metadata.identifier,
            "report": report,
            "pdf": first.map(|e| e["pdf"].clone()),
            "print_cover": first.map(|e| e["print_cover"].clone()),
            "printer_check": first.map(|e| e["printer_check"].clone()),
            "editions": described,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(anyhow::Error::from)?
        );
    } else if !args.quiet {
        print_report(
            &output,
            &converted,
            &report,
            &editions,
            args.print_cover.is_some(),
            started.elapsed().as_millis(),
        );
    }
    Ok(())
}

/// A print edition as `convert` wrote it: its interior, its cover and its printer's check.
struct Written<'a> {
    edition: Edition,
    pdf: PathBuf,
    typeset: &'a PrintEdition,
    cover: Option<(PathBuf, PrintCover)>,
    check: Option<PrinterCheck>,
}

impl Written<'_> {
    fn json(&self) -> serde_json::Value {
        let e = self.typeset;
        serde_json::json!({
            "edition": self.edition,
            "pdf": {
                "output": self.pdf,
                "bytes": e.pdf.len(),
                "pages": e.pages,
                "trim": e.trim,
                "trim_inches": e.trim.inches(),
                "bleed": e.bleed,
                "paper": e.paper,
                "gutter_inches": e.gutter,
                "page_starts": e.page_starts,
                "folios": e.folios,
                "pieces": e.pieces,
                "warnings": e.warnings,
            },
            "print_cover": self.cover.as_ref().map(|(path, c)| serde_json::json!({
                "output": path,
                "bytes": c.pdf.len(),
                "width_inches": c.width,
                "height_inches": c.height,
                "spine_inches": c.spine,
                "warnings": c.warnings,
            })),
            "printer_check": self.check,
        })
    }
}

/// Where an edition is written: the reference edition (the one the EPUB's page list follows)
/// at `path` itself, the others beside it under their edition's name (`book.pdf`,
/// `book-hardcover.pdf`, `book-large-print.pdf`).
fn beside(path: &Path, edition: Edition, reference: bool) -> PathBuf {
    if reference {
        return path.to_owned();
    }
    let stem = path
        .file_stem()
        .map_or_else(|| "book".into(), |s| s.to_string_lossy().into_owned());
    let extension = path
        .extension()
        .map_or_else(|| "pdf".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!(
        "{stem}-{}.{extension}",
        edition.name().replace('_', "-")
    ))
}

/// The printer's check of one edition: how many rules it passed, and each that did not.
fn print_check(out: &mut impl Write, check: &PrinterCheck, with_cover: bool) {
    let broken: Vec<&RuleCheck> = check
        .rules
        .iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .collect();
    let failed = broken.iter().filter(|r| r.verdict == Verdict::Fail).count();
    let _ = writeln!(
        out,
        "Checked against {}'s {}: {}{}",
        check.name,
        count(check.rules.len() as u64, "rule"),
        if check.passed {
            "passed".to_owned()
        } else {
            format!("{failed} failed")
        },
        if with_cover {
            "."
        } else {
            " (the cover's rules too with --print-cover)."
        }
    );
    for rule in broken {
        let mark = if rule.verdict == Verdict::Fail {
            "failed"
        } else {
            "advice"
        };
        let _ = writeln!(
            out,
            "  - [{mark}] {}: {}; wanted {}. {}",
            rule.label,
            rule.found,
            rule.wanted,
            rule.advice.as_deref().unwrap_or_default()
        );
    }
}

/// The print edition, or why there is none: the author's (exit 65) when the book is too
/// long for a paperback, asks for settings Bindery does not print or is in a script it has no
/// font for, else Bindery's.
fn printed(edition: &Result<PrintEdition, PrintError>) -> Result<&PrintEdition, Failure> {
    edition.as_ref().map_err(|e| match e.detail() {
        // A refusal whose message says it all is the book's to change.
        None => Failure::Input(format!("no print edition: {e}")),
        Some(_) => Failure::Other(anyhow::anyhow!("no print edition: {}", said(e))),
    })
}

/// A print error as `convert` says it: to the person who runs it, the operator, what the
/// typesetter said as well.
fn said(e: &PrintError) -> String {
    match e.detail() {
        Some(detail) => format!("{e} ({detail})"),
        None => e.to_string(),
    }
}

fn print_report(
    output: &Path,
    c: &in_memory::Converted,
    report: &crate::report::Report,
    editions: &[Written<'_>],
    with_covers: bool,
    millis: u128,
) {
    let s = &report.statistics;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "Wrote {} ({} KiB) in {millis} ms: \"{}\", {}, {}, {}, {} ({}).",
        output.display(),
        c.epub.len().div_ceil(1024),
        c.book.metadata.title,
        count(s.chapters, "chapter"),
        count(s.words, "word"),
        count(s.images, "image"),
        count(s.notes, "note"),
        report.format,
    );
    let several = editions.len() > 1;
    for written in editions {
        let e = written.typeset;
        let (width, height) = e.trim.inches();
        let name = if several {
            format!("{} edition", written.edition.label())
        } else {
            "print edition".to_owned()
        };
        let _ = writeln!(
            out,
            "Wrote {} ({} KiB) in {} ms: {name}, {} (typeset in {}), trim {} ({width:.2}×{height:.2} in{}), gutter {} in, {} paper.",
            written.pdf.display(),
            e.pdf.len().div_ceil(1024),
            e.layout_time.as_millis(),
            count(u64::from(e.pages), "page"),
            count(u64::from(e.pieces), "piece"),
            e.trim,
            if e.bleed { ", 0.125 in bleed" } else { "" },
            e.gutter,
            e.paper,
        );
        if let Some((path, cover)) = &written.cover {
            let _ = writeln!(
                out,
                "Wrote {} ({} KiB): {} cover, {:.3}×{:.3} in with {}, spine {:.3} in.",
                path.display(),
                cover.pdf.len().div_ceil(1024),
                written.edition.label(),
                cover.width,
                cover.height,
                if written.edition == Edition::Hardcover {
                    "the wrap"
                } else {
                    "bleed"
                },
                cover.spine,
            );
            for w in &cover.warnings {
                let _ = writeln!(out, "  - [{}] {} (print cover)", w.code, w.message);
            }
        }
        if let Some(check) = &written.check {
            print_check(&mut out, check, with_covers);
        }
    }
    // The print edition's warnings are in the book's report already, marked "print edition".
    let warnings = &report.warnings;
    if warnings.is_empty() {
        let _ = writeln!(out, "No warnings.");
    } else {
        let _ = writeln!(out, "{}:", count(warnings.len() as u64, "warning"));
        for w in warnings {
            match &w.location {
                Some(at) => {
                    let _ = writeln!(out, "  - [{}] {} ({at})", w.code, w.message);
                }
                None => {
                    let _ = writeln!(out, "  - [{}] {}", w.code, w.message);
                }
            }
        }
    }
    let steps: Vec<String> = c
        .report
        .timings
        .iter()
        .map(|t| format!("{} {} ms", t.step, t.millis))
        .collect();
    let _ = writeln!(out, "Steps: {}.", steps.join(", "));
}

fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn progress_bar(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(1);
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg:14} [{bar:30}] {pos}/{len}") {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Reads a file, refusing before reading one over the limit.
fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, Failure> {
    let meta = std::fs::metadata(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    if meta.is_dir() {
        return Err(Failure::Input("is a directory, not a file".into()));
    }
    if meta.len() > limit {
        return Err(Failure::Input(
            crate::manuscript::InputError::TooLarge {
                size: meta.len(),
                limit,
            }
            .to_string(),
        ));
    }
    std::fs::read(path)
        .map_err(|e| Failure::Other(anyhow::anyhow!("cannot read {}: {e}", path.display())))
}

/// `dcterms:modified` for a command-line conversion: `SOURCE_DATE_EPOCH` when set (the
/// reproducible-builds convention), else the manuscript's modification time; either way,
/// converting the same file twice gives the same bytes.
fn modified_time(path: &Path) -> Option<String> {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .or_else(|| {
            let mtime = std::fs::metadata(path).ok()?.modified().ok()?;
            let secs = mtime.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
            i64::try_from(secs).ok()
        })?;
    chrono::DateTime::from_timestamp(secs, 0).map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".{}.tmp-{}", file_name(path), std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("writing {}: {e}", path.display())
    })
}
