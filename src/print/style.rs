//! A book's style as Typst: the definitions the print edition's template (`template.rs`) sets
//! its book with. The template lays out the pages; every decision of how the text looks comes
//! from the [`Style`] (`crate::style`), as the ebooks' CSS does (`crate::style::css`).

use std::fmt::Write as _;

use super::strings::literal;
use super::world::IMAGES;
use crate::style::{
    BreakMark, Case, FolioPosition, HeadContent, Opening, Position, Separation, Style, Weight,
    decimal,
};

/// What the definitions need besides the style.
pub(crate) struct Setup<'a> {
    pub style: &'a Style,
    /// The titles' font list.
    pub title_fonts: &'a str,
    /// How far down the page a chapter opens, in inches.
    pub sink: f64,
}

/// The text's leading and the paragraphs' spacing, for the template's first `#set par`.
pub(crate) fn leading(style: &Style) -> String {
    format!("{}em", decimal(style.body.leading.0))
}

/// How the book's paragraphs follow one another, set after the front matter.
pub(crate) fn paragraphs(style: &Style) -> String {
    let p = &style.paragraph;
    match p.separation {
        Separation::Indent => format!("#set par(first-line-indent: {}em)\n", decimal(p.indent.0)),
        Separation::Space => format!(
            "#set par(first-line-indent: 0pt, spacing: {}em)\n",
            decimal(style.body.leading.0 + 0.9)
        ),
    }
}

/// The show rules and functions the book's source calls (`bindery-quote`, …).
pub(crate) fn definitions(setup: &Setup<'_>) -> String {
    let style = setup.style;
    let c = &style.chapter;
    let accent = style.colors.accent.map_or_else(
        || "black".to_owned(),
        |c| format!("rgb({})", literal(&c.hex())),
    );
    let align = c.align.name();
    let ornament = c.ornament.as_ref().map(|o| {
        format!(
            "block(above: 0.5em, below: 0.5em, text(size: 0.7em, style: \"normal\", fill: {accent}, {}))",
            literal(&o.0)
        )
    });
    let (above, below) = match (&ornament, c.ornament_position) {
        (Some(o), Position::Above) => (o.clone(), "none".to_owned()),
        (Some(o), Position::Below) => ("none".to_owned(), o.clone()),
        (None, _) => ("none".to_owned(), "none".to_owned()),
    };
    let title_fonts = setup.title_fonts;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"#show heading: it => {{
  set par(justify: false, first-line-indent: 0pt)
  set text(weight: "regular", hyphenate: false)
  if it.level == 1 {{
    // A block, not a centred paragraph in the flow: the paragraph after a paragraph is
    // indented, the first after a heading is not.
    block(width: 100%, above: 0pt, below: 0.3in, sticky: true, {{
      v({sink:.4}in)
      set align({align})
      {above}
      it.body
      {below}
    }})
  }} else {{
    block(above: 1.4em, below: 0.8em, sticky: true, align(center, text(size: if it.level == 2 {{ 1.15em }} else {{ 1em }}, style: "italic", it.body)))
  }}
}}
#let bindery-sink = v({sink:.4}in)
#let bindery-title-font = ({title_fonts})
#let bindery-chapter-number(body) = block(above: 0pt, below: 0.6em, text(font: ({title_fonts}), size: {number_size}em, fill: {accent}, body))
#let bindery-chapter-title(body) = text(font: ({title_fonts}), size: {title_size}em, style: "{title_style}", weight: "{title_weight}", {title_case})
#let bindery-chapter-subtitle(body) = block(above: 0pt, below: 0.4in, sticky: true, width: 100%, {{
  set par(justify: false, first-line-indent: 0pt)
  align({align}, text(size: 1.2em, style: "italic", hyphenate: false, body))
}})
"#,
        sink = setup.sink,
        number_size = decimal(c.number_size.0),
        title_size = decimal(c.title_size.0),
        title_style = c.title_style.name(),
        title_weight = weight(c.title_weight),
        title_case = case(c.title_case, "body"),
    );

    let q = &style.block_quote;
    let v = &style.verse;
    let e = &style.epigraph;
    let scene = match style.scene_break.mark() {
        BreakMark::Glyph(o) => format!(
            "block(above: 1.1em, below: 1.1em, sticky: false, width: 100%, align(center, text(fill: {accent}, {})))",
            literal(&o.0)
        ),
        BreakMark::Image(file) => format!(
            "block(above: 1.1em, below: 1.1em, sticky: false, width: 100%, align(center, image({}, height: 1.2em)))",
            literal(&format!(
                "{IMAGES}{}",
                crate::style::house::resource_id(file)
            ))
        ),
        BreakMark::Space => "block(above: 0pt, below: 0pt, sticky: false, v(1.6em))".to_owned(),
    };
    let _ = write!(
        out,
        r#"// A quotation or verse stands apart: space above and below as well as the indents.
#let bindery-quote(body) = block(above: 1.3em, below: 1.3em, width: 100%, pad(left: {q_indent}em, right: {q_indent}em, text(size: {q_size}em, style: "{q_style}", body)))
#let bindery-verse(body) = pad(left: {v_indent}em, text(style: "{v_style}", body))
#let bindery-epigraph(body) = {{
  set par(justify: false, first-line-indent: 0pt)
  set text(style: "{e_style}")
  align({e_align}, body)
}}
#let bindery-scene-break = {scene}
#let bindery-lead-in(body) = smallcaps(body)
#set footnote.entry(separator: {separator})
#show footnote.entry: set text(size: {f_size}em)
"#,
        q_indent = decimal(q.indent.0),
        q_size = decimal(q.size.0),
        q_style = q.style.name(),
        v_indent = decimal(v.indent.0),
        v_style = v.style.name(),
        e_style = e.style.name(),
        e_align = e.align.name(),
        separator = if style.footnote.rule {
            "line(length: 30%, stroke: 0.5pt)"
        } else {
            "none"
        },
        f_size = decimal(style.footnote.size.0),
    );
    // Only a style with drop caps calls it: every piece's source is parsed, and kept, with
    // whatever it defines.
    if style.paragraph.opening == Opening::DropCap {
        out.push_str(&drop_cap(style, &accent));
    }
    out
}

/// `bindery-drop-cap(cap, words, rest)`: `cap` as large as `lines` lines, beside as many of
/// `words` as fill those lines at the narrower measure, the other words and `rest` below at
/// the full measure. The lines are found by measuring (a search over how many words fit), as
/// Typst lets no text flow around a box.
///
/// What the measuring keeps is most of what a drop cap costs in memory: Typst caches every
/// layout it makes, measures too, for the rest of the process. So the search starts from a
/// guess (the words' characters against a sample's width), steps out from it by doubling to
/// a count that fits and one that does not, and bisects between: one to four measures where
/// a bisection over all the words took up to six, for the same count (more words never take
/// fewer lines). And it measures copies of the words' emphases (strong, small capitals, …):
/// measured as they are, each is looked up among the pages' elements, which Typst's first
/// layout of a piece has none of, so that the whole piece is laid out, and kept, a second
/// time to settle. A note, or an emphasis inside `text(lang: …)`, still costs that second
/// layout (the pages are the same either way).
fn drop_cap(style: &Style, accent: &str) -> String {
    let lines = style.paragraph.drop_cap_lines.0;
    format!(
        r#"#let bindery-drop-cap(cap, words, rest) = layout(size => {{
  let one = measure(block(width: size.width, par[X])).height
  let two = measure(block(width: size.width, par[X #linebreak() X])).height
  let pitch = two - one
  let high = one + pitch * {below}
  let capital = measure(text(top-edge: "cap-height", bottom-edge: "baseline", "X")).height
  let letter = text(size: 1em * (high / capital), top-edge: "cap-height", bottom-edge: "baseline", fill: {accent}, cap)
  let gap = 0.12em
  let narrow = size.width - measure(letter).width - gap
  // The words to measure (new elements where the page's would be looked up) and the
  // characters up to each. A plain word is text, and costs no call.
  let fresh(c) = if c.has("children") {{
    c.children.map(fresh).join()
  }} else if c.func() in (emph, strong, underline, strike, super, sub, smallcaps) {{
    (c.func())(fresh(c.body))
  }} else {{ c }}
  let plain(c) = if c.has("text") {{ c.text }} else if c.has("children") {{
    c.children.map(plain).sum(default: "")
  }} else if c.has("body") {{ plain(c.body) }} else {{ " " }}
  let measured = ()
  let sums = ()
  let chars = 0
  for w in words {{
    if w.func() == text {{
      measured.push(w)
      chars += w.text.clusters().len()
    }} else {{
      measured.push(fresh(w))
      chars += plain(w).clusters().len()
    }}
    sums.push(chars)
  }}
  let n = words.len()
  let beside(k) = par(justify: true, first-line-indent: 0pt, measured.slice(0, k).join())
  let fits(k) = measure(width: narrow, beside(k)).height <= high + pitch * 0.3
  // The guess: the words whose characters a sample's width says the lines hold.
  let sample = "the quick brown fox jumps over a lazy dog"
  let room = {lines} * narrow.to-absolute() / (measure(sample).width / sample.len()) + 6
  let guess = calc.min(n, 1)
  for s in sums.slice(guess) {{ if s <= room {{ guess += 1 }} }}
  // `lo` words fit (or it is 0); `hi` words do not (or it is n + 1).
  let (lo, hi) = (0, n + 1)
  if n > 0 {{
    let step = 1
    if fits(guess) {{
      lo = guess
      while lo < n and hi > n {{
        let probe = calc.min(lo + step, n)
        if fits(probe) {{ lo = probe }} else {{ hi = probe }}
        step *= 2
      }}
    }} else {{
      hi = guess
      while lo == 0 and hi > 1 {{
        let probe = calc.max(hi - step, 1)
        if fits(probe) {{ lo = probe }} else {{ hi = probe }}
        step *= 2
      }}
    }}
    while lo + 1 < hi and lo < n {{
      let mid = calc.div-euclid(lo + hi, 2)
      if fits(mid) {{ lo = mid }} else {{ hi = mid }}
    }}
  }}
  block(spacing: par.leading, {{
    set par(spacing: par.leading)
    grid(columns: (auto, 1fr), column-gutter: gap, letter,
      par(justify: true, first-line-indent: 0pt, words.slice(0, lo).join() + linebreak(justify: lo < words.len())))
    if lo < words.len() or rest != none {{
      par(first-line-indent: 0pt, words.slice(lo).join() + rest)
    }}
  }})
}})
"#,
        below = lines - 1,
    )
}

/// The running heads' and folios' page setup, from each page's style letter
/// (`bindery-styles`) and folio (`bindery-folios`), which the template defines first.
pub(crate) fn margins(style: &Style, title: &str, author: &str) -> String {
    let head = &style.running_head;
    let content = |what: HeadContent| match what {
        HeadContent::Author => author.to_owned(),
        HeadContent::Title => title.to_owned(),
        // The chapter the page is in (`template::PageData::heads`).
        HeadContent::Chapter => {
            "{ let h = bindery-heads.at(p - 1, default: \"\"); if h == \"\" { none } else { h } }"
                .to_owned()
        }
        HeadContent::None => "none".to_owned(),
    };
    let shown = case(head.case, "body");
    let folio = "bindery-folios.at(p - 1, default: \"\")";
    let (head_folio, foot) = match style.folio.position {
        FolioPosition::BottomCenter => (false, format!("align(center, {folio})")),
        FolioPosition::BottomOutside => (
            false,
            format!("align(if calc.even(p) {{ left }} else {{ right }}, {folio})"),
        ),
        FolioPosition::TopOutside => (true, "none".to_owned()),
    };
    let head_line = if head_folio {
        format!(
            "if calc.even(p) {{ {folio}; h(1fr); running; h(1fr); hide({folio}) }} else {{ hide({folio}); h(1fr); running; h(1fr); {folio} }}"
        )
    } else {
        "align(center, running)".to_owned()
    };
    // A page with a folio and no running head (a chapter's opening) has its folio at the
    // foot, centred, when the others carry theirs at the head.
    let footer = if head_folio {
        format!("if s == \"f\" {{ set text(size: 0.85em); align(center, {folio}) }}")
    } else {
        format!("if s != \"n\" {{ set text(size: 0.85em); {foot} }}")
    };
    format!(
        r#"#let bindery-running(body) = if body == none {{ none }} else {{ {shown} }}
#set page(
  header: context {{
    let p = here().page()
    let s = bindery-styles.at(p - 1, default: "n")
    if s == "h" {{
      set text(size: 0.8em, tracking: 0.04em, hyphenate: false)
      let running = bindery-running(if calc.even(p) {{ {verso} }} else {{ {recto} }})
      {head_line}
    }}
  }},
  footer: context {{
    let p = here().page()
    let s = bindery-styles.at(p - 1, default: "n")
    {footer}
  }},
)
"#,
        verso = content(head.verso),
        recto = content(head.recto),
    )
}

fn weight(w: Weight) -> &'static str {
    match w {
        Weight::Regular => "regular",
        Weight::Bold => "bold",
    }
}

/// `body` in a case, as Typst source.
fn case(c: Case, body: &str) -> String {
    match c {
        Case::AsWritten => body.to_owned(),
        Case::Upper => format!("text(tracking: 0.06em, upper({body}))"),
        Case::SmallCaps => format!("smallcaps({body})"),
    }
}
