//! Lists (`numbering.xml`): what kind of list each numbering level is, and the numbers Word
//! would show. Word counts per abstract numbering definition, so two `w:num`s over the same
//! definition continue each other unless one restarts with `w:startOverride`.

use std::collections::{HashMap, HashSet};

use crate::document::ListKind;
use crate::manuscript::InputError;
use crate::manuscript::xml::{Ns, Xml};

const LEVELS: usize = 9;

#[derive(Debug, Clone, Copy)]
struct Level {
    kind: ListKind,
    start: u32,
}

impl Default for Level {
    fn default() -> Self {
        Level {
            kind: ListKind::Bullet,
            start: 1,
        }
    }
}

#[derive(Debug, Default)]
struct Num {
    abstract_id: String,
    /// Per level: a restart value, and a level definition replacing the abstract one.
    start_overrides: Vec<(u8, u32)>,
    level_overrides: Vec<(u8, Level)>,
}

#[derive(Debug, Default)]
pub struct Numbering {
    abstracts: HashMap<String, [Level; LEVELS]>,
    nums: HashMap<String, Num>,
}

impl Numbering {
    pub fn parse(text: &str, part: &str) -> Result<Numbering, InputError> {
        let mut x = Xml::new(text, part);
        x.root()?;
        let mut numbering = Numbering::default();
        while let Some(tag) = x.child()? {
            match (tag.ns, tag.name()) {
                (Ns::W, "abstractNum") => {
                    let id = tag.attr("abstractNumId").unwrap_or_default().into_owned();
                    let mut levels = [Level::default(); LEVELS];
                    while let Some(t) = x.child()? {
                        if t.is(Ns::W, "lvl") {
                            let ilvl = t.attr("ilvl").and_then(|v| v.parse::<usize>().ok());
                            let level = read_level(&mut x)?;
                            if let Some(slot) = ilvl.and_then(|i| levels.get_mut(i)) {
                                *slot = level;
                            }
                        } else {
                            x.skip()?;
                        }
                    }
                    numbering.abstracts.insert(id, levels);
                    continue;
                }
                (Ns::W, "num") => {
                    let id = tag.attr("numId").unwrap_or_default().into_owned();
                    let mut num = Num::default();
                    while let Some(t) = x.child()? {
                        match t.name() {
                            "abstractNumId" => {
                                num.abstract_id = t.val().unwrap_or_default().into_owned()
                            }
                            "lvlOverride" => {
                                let ilvl: u8 =
                                    t.attr("ilvl").and_then(|v| v.parse().ok()).unwrap_or(0);
                                while let Some(o) = x.child()? {
                                    match o.name() {
                                        "startOverride" => {
                                            if let Some(v) = o.val().and_then(|v| v.parse().ok()) {
                                                num.start_overrides.push((ilvl, v));
                                            }
                                        }
                                        "lvl" => {
                                            num.level_overrides.push((ilvl, read_level(&mut x)?));
                                            continue;
                                        }
                                        _ => {}
                                    }
                                    x.skip()?;
                                }
                                continue;
                            }
                            _ => {}
                        }
                        x.skip()?;
                    }
                    numbering.nums.insert(id, num);
                    continue;
                }
                _ => {}
            }
            x.skip()?;
        }
        Ok(numbering)
    }

    fn level(&self, num: &Num, ilvl: u8) -> Level {
        if let Some((_, level)) = num.level_overrides.iter().find(|(l, _)| *l == ilvl) {
            return *level;
        }
        self.abstracts
            .get(&num.abstract_id)
            .and_then(|levels| levels.get(usize::from(ilvl)))
            .copied()
            .unwrap_or_default()
    }
}

/// Reads a `w:lvl` whose start was just read.
fn read_level(x: &mut Xml) -> Result<Level, InputError> {
    let mut level = Level::default();
    while let Some(t) = x.child()? {
        match t.name() {
            "start" => level.start = t.val().and_then(|v| v.parse().ok()).unwrap_or(1),
            "numFmt" => level.kind = kind(t.val().as_deref().unwrap_or("bullet")),
            _ => {}
        }
        x.skip()?;
    }
    Ok(level)
}

fn kind(num_fmt: &str) -> ListKind {
    match num_fmt {
        "bullet" | "none" => ListKind::Bullet,
        "lowerLetter" => ListKind::LowerAlpha,
        "upperLetter" => ListKind::UpperAlpha,
        "lowerRoman" => ListKind::LowerRoman,
        "upperRoman" => ListKind::UpperRoman,
        _ => ListKind::Decimal,
    }
}

/// One numbered paragraph, as Word would show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub level: u8,
    pub kind: ListKind,
    pub number: u32,
}

/// Running counters, fed every numbered paragraph in document order.
#[derive(Debug, Default)]
pub struct Counters {
    values: HashMap<String, [Option<u32>; LEVELS]>,
    pending: HashMap<(String, u8), u32>,
    seen: HashSet<String>,
}

impl Counters {
    /// The item a paragraph with `numId` and `ilvl` is, or `None` when it is not numbered
    /// (`numId` 0 or unknown).
    pub fn next(&mut self, numbering: &Numbering, num_id: &str, ilvl: u8) -> Option<Item> {
        let num = numbering.nums.get(num_id)?;
        let ilvl = ilvl.min(LEVELS as u8 - 1);
        let abstract_id = &num.abstract_id;
        if self.seen.insert(num_id.to_owned()) {
            for &(l, start) in &num.start_overrides {
                if let Some(v) = self
                    .values
                    .entry(abstract_id.clone())
                    .or_default()
                    .get_mut(usize::from(l))
                {
                    *v = None;
                }
                self.pending.insert((abstract_id.clone(), l), start);
            }
        }
        let level = numbering.level(num, ilvl);
        let values = self.values.entry(abstract_id.clone()).or_default();
        let i = usize::from(ilvl);
        let number = match values[i] {
            Some(v) => v.saturating_add(1),
            None => self
                .pending
                .remove(&(abstract_id.clone(), ilvl))
                .unwrap_or(level.start),
        };
        values[i] = Some(number);
        for deeper in values.iter_mut().skip(i + 1) {
            *deeper = None;
        }
        Some(Item {
            level: ilvl,
            kind: level.kind,
            number,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUMBERING: &str = r#"<w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
      <w:abstractNum w:abstractNumId="0">
        <w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl>
        <w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/></w:lvl>
      </w:abstractNum>
      <w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
      <w:num w:numId="2"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>
      <w:num w:numId="3"><w:abstractNumId w:val="0"/></w:num>
    </w:numbering>"#;

    #[test]
    fn numbers_continue_across_nums_until_a_start_override_restarts_them() {
        let n = Numbering::parse(NUMBERING, "word/numbering.xml").expect("test input");
        let mut c = Counters::default();
        let numbers: Vec<u32> = [("1", 0), ("1", 0), ("1", 1), ("1", 1), ("1", 0), ("1", 1)]
            .iter()
            .map(|(id, l)| c.next(&n, id, *l).expect("test input").number)
            .collect();
        assert_eq!(numbers, [1, 2, 1, 2, 3, 1]);
        assert_eq!(c.next(&n, "2", 0).expect("test input").number, 1);
        assert_eq!(c.next(&n, "1", 0).expect("test input").number, 2);
        assert_eq!(c.next(&n, "3", 0).expect("test input").number, 3);
        assert_eq!(
            c.next(&n, "1", 1).expect("test input").kind,
            ListKind::LowerAlpha
        );
        assert_eq!(c.next(&n, "0", 0), None);
    }
}
