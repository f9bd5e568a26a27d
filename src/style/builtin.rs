//! The built-in styles: the files in `styles/`, compiled into the binary. Each is read like a
//! house style (strictly), and a test reads them all.

use super::{Style, StyleName};

/// Each built-in style's name and file, in the order the picker shows them; the first is the
/// default ([`super::DEFAULT`]).
pub const FILES: &[(&str, &str)] = &[
    ("bindery", include_str!("../../styles/bindery.toml")),
    ("classic", include_str!("../../styles/classic.toml")),
    ("modern", include_str!("../../styles/modern.toml")),
    ("romance", include_str!("../../styles/romance.toml")),
    ("thriller", include_str!("../../styles/thriller.toml")),
    ("fantasy", include_str!("../../styles/fantasy.toml")),
    ("literary", include_str!("../../styles/literary.toml")),
    ("large-print", include_str!("../../styles/large-print.toml")),
];

/// The built-in style called `name`.
pub fn get(name: &str) -> Option<Style> {
    let (_, source) = FILES.iter().find(|(n, _)| *n == name)?;
    // The files are checked by this module's test; one that fails to read is a build's bug.
    Style::parse(source).ok()
}

/// The built-in style `asked` names, with its name; or why there is none, naming the styles
/// there are.
pub fn choose(asked: &str) -> Result<(StyleName, Style), String> {
    StyleName::parse(asked)
        .ok()
        .and_then(|name| get(name.as_str()).map(|style| (name, style)))
        .ok_or_else(|| {
            let names: Vec<String> = names().map(String::from).collect();
            format!(
                "{:?} is not a style here; the styles are {}.",
                asked.chars().take(40).collect::<String>(),
                names.join(", ")
            )
        })
}

/// The built-in style's file as written, for people to start a house style from.
pub fn source(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The names of the built-in styles, in order.
pub fn names() -> impl Iterator<Item = StyleName> {
    FILES
        .iter()
        .filter_map(|(name, _)| StyleName::parse(name).ok())
}

/// The default style.
pub fn default_style() -> Style {
    get(super::DEFAULT).unwrap_or_else(|| {
        unreachable!("the default style's file is compiled in and read by a test")
    })
}
