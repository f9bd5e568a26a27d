//! What a declaration of a variable is: its documentation, how its text is parsed, what it is
//! when unset, and how `bindery config` shows it; and `variables!`, the macro that turns the
//! list of declarations in [`super::variables`] into typed constants, the table of variables
//! and the [`Settings`] struct.

use std::collections::BTreeMap;

use super::{Config, ConfigError, Settings};

/// One environment variable Bindery understands, as documented (README, `--help`) and shown.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    pub name: &'static str,
    /// As documented: a value (parsed when the variable is unset), a description of a value
    /// worked out from others (`$DATA_DIR/logs`), or empty for "unset".
    pub default: &'static str,
    pub example: &'static str,
    pub secret: bool,
    pub help: &'static str,
    /// What `bindery config` prints for it; `None` for a variable folded into another's value.
    pub shown: Option<fn(&Config) -> String>,
}

/// A variable and how its text becomes a `T`.
pub struct Var<T: 'static> {
    pub variable: Variable,
    pub(super) parse: fn(&str) -> Result<T, String>,
    /// Unset: `None` parses the documented default, so that it is written once.
    pub(super) unset: Option<fn() -> T>,
    /// Where [`Settings`] keeps its value, for a variable that stands alone.
    pub(super) field: Option<fn(&Settings) -> &T>,
}

impl<T> Var<T> {
    /// Its value: the text set, or its default, parsed; a bad value is an error naming it.
    pub fn read(&self, env: &Env) -> Result<T, ConfigError> {
        let text = match (env.raw(&self.variable), self.unset) {
            (Some(text), _) => text,
            (None, Some(unset)) => return Ok(unset()),
            (None, None) => self.variable.default,
        };
        (self.parse)(text).map_err(|problem| ConfigError::new(&self.variable, text, problem))
    }

    /// Its value in a configuration, for a variable that [`Settings`] keeps (`None` for one
    /// folded into another value).
    pub fn value<'c>(&self, config: &'c Config) -> Option<&'c T> {
        self.field.map(|field| field(config))
    }
}

/// The environment as Bindery reads it: a variable set to blanks counts as unset.
pub struct Env(BTreeMap<String, String>);

impl Env {
    pub fn new(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        Self(vars.into_iter().collect())
    }

    /// The text of a declared variable, trimmed; `None` when unset or blank.
    pub fn raw(&self, variable: &Variable) -> Option<&str> {
        self.get(variable.name)
    }

    /// Whether a declared variable is set, by name (for [`crate::config::platform::Host::detect`]).
    pub fn is_set(&self, name: &str) -> bool {
        debug_assert!(
            super::VARIABLES.iter().any(|v| v.name == name),
            "{name} undeclared"
        );
        self.get(name).is_some()
    }

    /// Whether a declared variable is set to blanks: for the one variable whose empty value
    /// means something (`LOG_DIR`, off).
    pub fn given_blank(&self, variable: &Variable) -> bool {
        self.0
            .get(variable.name)
            .is_some_and(|s| s.trim().is_empty())
    }

    /// Names that are set, declared or not.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|s| s.trim()).filter(|s| !s.is_empty())
    }
}

/// How `bindery config` prints a value, when its type says it all.
pub trait Show {
    fn show(&self) -> String;
}

macro_rules! show_with_display {
    ($($ty:ty),*) => {
        $(impl Show for $ty {
            fn show(&self) -> String {
                self.to_string()
            }
        })*
    };
}

show_with_display!(
    u16,
    u64,
    u32,
    usize,
    bool,
    String,
    std::num::NonZeroUsize,
    std::net::IpAddr
);

impl Show for std::time::Duration {
    fn show(&self) -> String {
        humantime::format_duration(*self).to_string()
    }
}

/// A URL shows without its password, as every URL Bindery prints.
impl Show for url::Url {
    fn show(&self) -> String {
        super::secret::redact_url(self)
    }
}

impl Show for std::path::PathBuf {
    fn show(&self) -> String {
        self.display().to_string()
    }
}

/// Unset shows as nothing.
impl<T: Show> Show for Option<T> {
    fn show(&self) -> String {
        self.as_ref().map_or_else(String::new, Show::show)
    }
}

impl<T> Show for super::Secret<T> {
    fn show(&self) -> String {
        "[redacted]".to_owned()
    }
}

/// Declares every variable, in the order the README lists them. Each entry is
///
/// ```text
/// /// Help, as the README and `--help` give it.
/// var NAME: Type = value("default"), example "value", parse PARSER, {USE};
/// ```
///
/// - `var` or `secret` (a secret is never echoed in an error or printed).
/// - `value("…")`: the default, parsed by `PARSER` when the variable is unset (a `&str` const
///   instead of the literal where another module owns the fact); `unset`: none,
///   and the variable reads as `Option<Type>`; `derived("…")`: likewise, the default being
///   worked out from other variables by hand-written code, and the text only documents it.
/// - `PARSER`: `fn(&str) -> Result<Type, String>`, the error being the problem in words.
/// - `{field name}`: the value stands alone and [`Settings`] keeps it (`config.name`), shown by
///   its type's [`Show`]; `{field name, shown f}` shows it with `f(&value)` instead.
///   `{shown f}`: the variable is folded into another value, read by hand-written code, and
///   shown as `f(&config)` says; `{hidden}`: likewise, and not shown.
macro_rules! variables {
    ($(
        $(#[doc = $help:literal])+
        $kind:ident $name:ident: $ty:ty = $fallback:ident $(($default:expr))?,
            example $example:literal, parse $parse:expr, $use:tt;
    )*) => {
        $(
            $(#[doc = $help])+
            pub const $name: $crate::config::Var<variables!(@stored $fallback $ty)> =
                $crate::config::Var {
                    variable: $crate::config::Variable {
                        name: stringify!($name),
                        default: variables!(@default $fallback $($default)?),
                        example: $example,
                        secret: variables!(@secret $kind),
                        help: concat!($($help),+).trim_ascii(),
                        shown: variables!(@shown $use),
                    },
                    parse: variables!(@parse $fallback $parse),
                    unset: variables!(@unset $fallback),
                    field: variables!(@field $use),
                };
        )*

        /// Every variable Bindery reads, in the README's order.
        pub const VARIABLES: &[$crate::config::Variable] = &[$($name.variable),*];

        variables!(@settings [] $($kind $name: $ty = $fallback, $use;)*);
    };

    (@stored value $ty:ty) => { $ty };
    (@stored unset $ty:ty) => { Option<$ty> };
    (@stored derived $ty:ty) => { Option<$ty> };

    (@default value $default:expr) => { $default };
    (@default derived $default:expr) => { $default };
    (@default unset) => { "" };

    (@secret var) => { false };
    (@secret secret) => { true };

    (@parse value $parse:expr) => { $parse };
    (@parse $other:ident $parse:expr) => { |text| ($parse)(text).map(Some) };

    (@unset value) => { None };
    (@unset $other:ident) => { Some(|| None) };

    (@field {field $field:ident $($more:tt)*}) => { Some(|s: &Settings| &s.$field) };
    (@field {$($other:tt)*}) => { None };

    (@shown {field $field:ident}) => {
        Some(|c: &$crate::config::Config| $crate::config::variable::Show::show(&c.$field))
    };
    (@shown {field $field:ident, shown $shown:expr}) => {
        Some(|c: &$crate::config::Config| ($shown)(&c.$field))
    };
    (@shown {shown $shown:expr}) => { Some($shown) };
    (@shown {hidden}) => { None };

    // The variables that stand alone become the fields of `Settings`, read in declaration order.
    (@settings [$($field:ident $name:ident ($stored:ty))*]) => {
        /// The value of every variable that stands alone, as declared in
        /// [`variables`](self); [`Config`](super::Config) dereferences to it.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $(
                #[doc = concat!("`", stringify!($name), "`")]
                pub $field: $stored,
            )*
        }

        impl Settings {
            pub(super) fn read(env: &$crate::config::Env) -> Result<Self, $crate::config::ConfigError> {
                Ok(Self {
                    $($field: $name.read(env)?,)*
                })
            }
        }
    };
    (@settings [$($done:tt)*] $kind:ident $name:ident: $ty:ty = $fallback:ident,
        {field $field:ident $($more:tt)*}; $($rest:tt)*) => {
        variables!(@settings [$($done)* $field $name (variables!(@stored $fallback $ty))] $($rest)*);
    };
    (@settings [$($done:tt)*] $kind:ident $name:ident: $ty:ty = $fallback:ident,
        $use:tt; $($rest:tt)*) => {
        variables!(@settings [$($done)*] $($rest)*);
    };
}

pub(super) use variables;
