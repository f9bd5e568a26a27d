//! What styles say about the text they style, for the few properties the model keeps:
//! italic, bold, underline, strikethrough, small capitals, raised or lowered, hidden. A web
//! page's stylesheet and an OpenDocument's styles each set these in their own terms; both
//! readers open the same frames for them.

use super::InputError;
use super::markdown::builder::{Builder, InlineKind};

/// Each property as set (`Some`), or left to what the text is inside (`None`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Look {
    pub italic: Option<bool>,
    pub bold: Option<bool>,
    pub underline: Option<bool>,
    pub strike: Option<bool>,
    pub small_caps: Option<bool>,
    /// Raised (`true`, superscript) or lowered (`false`, subscript).
    pub raised: Option<bool>,
    pub hidden: bool,
}

impl Look {
    pub fn is_empty(&self) -> bool {
        *self == Look::default()
    }

    /// `other`'s settings over these (a later rule, or a style over its parent's).
    pub fn over(&mut self, other: &Look) {
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f; } )* };
        }
        take!(italic, bold, underline, strike, small_caps, raised);
        self.hidden |= other.hidden;
    }

    /// What this look adds to text already looking like `outer`.
    pub fn beyond(&self, outer: &Look) -> Look {
        let on = |mine: Option<bool>, theirs: Option<bool>| {
            (mine == Some(true) && theirs != Some(true)).then_some(true)
        };
        Look {
            italic: on(self.italic, outer.italic),
            bold: on(self.bold, outer.bold),
            underline: on(self.underline, outer.underline),
            strike: on(self.strike, outer.strike),
            small_caps: on(self.small_caps, outer.small_caps),
            raised: match (self.raised, outer.raised) {
                (Some(r), None) => Some(r),
                _ => None,
            },
            hidden: self.hidden && !outer.hidden,
        }
    }

    /// The inline frames that show what is on.
    fn kinds(&self) -> Vec<InlineKind> {
        let on = |v: Option<bool>| v == Some(true);
        [
            (on(self.italic), InlineKind::Emphasis),
            (on(self.bold), InlineKind::Strong),
            (on(self.underline), InlineKind::Underline),
            (on(self.strike), InlineKind::Strikethrough),
            (on(self.small_caps), InlineKind::SmallCaps),
            (self.raised == Some(true), InlineKind::Superscript),
            (self.raised == Some(false), InlineKind::Subscript),
        ]
        .into_iter()
        .filter_map(|(set, kind)| set.then_some(kind))
        .collect()
    }

    /// Opens a frame for each property that is on, named `html` (so that the element's end
    /// closes them); returns how many.
    pub fn open(&self, b: &mut Builder, html: Option<&'static str>) -> Result<usize, InputError> {
        let kinds = self.kinds();
        let opened = kinds.len();
        for kind in kinds {
            b.open_inline(kind, html)?;
        }
        Ok(opened)
    }
}
