//! Writing SQL once for both backends.
//!
//! Statements use `$N` parameters, which SQLite accepts as well as PostgreSQL, and tokens that
//! [`sql!`] renders into each backend's spelling: `{now}`, the clock (unix milliseconds from
//! the database's clock, so hosts with skewed clocks agree), and `{texts $1}`, a subquery of
//! the strings of the JSON array bound as `$1`, for `… IN ({texts $1})` with a list of any
//! length in one parameter. [`on_pool!`] and [`on_tx!`] run one
//! body against whichever backend is configured; the body is compiled once per backend, so it
//! can bind any type both support.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `text` with its tokens written in this dialect.
    pub(crate) fn render(self, text: &str) -> String {
        let (now, texts) = match self {
            Dialect::Sqlite => (sqlite_now!(), "SELECT value FROM json_each($1)"),
            Dialect::Postgres => (
                postgres_now!(),
                "SELECT jsonb_array_elements_text($1::jsonb)",
            ),
        };
        text.replace("{now}", now).replace("{texts $1}", texts)
    }
}

/// `text` for each dialect, in the order of [`Dialect`]'s variants.
pub(crate) fn render(text: &str) -> [String; 2] {
    [Dialect::Sqlite.render(text), Dialect::Postgres.render(text)]
}
