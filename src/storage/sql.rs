//! Writing SQL once for both backends.
//!
//! Statements use `$N` parameters, which SQLite accepts as well as PostgreSQL, and a `{now}`
//! token that [`sql!`] renders into each backend's clock expression (unix milliseconds from the
//! database's clock, so hosts with skewed clocks agree). [`on_pool!`] and [`on_tx!`] run one
//! body against whichever backend is configured; the body is compiled once per backend, so it
//! can bind any type both support.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `text` with its `{now}` token written as this dialect's clock.
    pub(crate) fn render(self, text: &str) -> String {
        let now = match self {
            Dialect::Sqlite => sqlite_now!(),
            Dialect::Postgres => postgres_now!(),
        };
        text.replace("{now}", now)
    }
}

/// `text` for each dialect, in the order of [`Dialect`]'s variants.
pub(crate) fn render(text: &str) -> [String; 2] {
    [Dialect::Sqlite.render(text), Dialect::Postgres.render(text)]
}
