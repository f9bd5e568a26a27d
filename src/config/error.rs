//! A variable with a value Bindery cannot use.

use super::{VARIABLES, Variable};

/// A variable with a value Bindery cannot use. Displays as the one line the user sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}{shown} {problem} (example: {name}={example})")]
pub struct ConfigError {
    pub name: &'static str,
    /// `="value"`, or nothing when the problem is not the value as written.
    shown: String,
    pub(super) problem: String,
    example: &'static str,
}

impl ConfigError {
    pub(super) fn new(variable: &Variable, value: &str, problem: impl Into<String>) -> Self {
        // An unset secret has nothing to hide, and "[redacted]" would suggest it was set.
        let shown = if variable.secret && !value.is_empty() {
            "=[redacted]".to_owned()
        } else {
            format!("={value:?}")
        };
        Self {
            name: variable.name,
            shown,
            problem: problem.into(),
            example: variable.example,
        }
    }

    /// A problem with what a variable leads to rather than how it is written (a database that
    /// refuses the connection it describes, a disk the platform throws away): `problem` starts
    /// right after the name, as in "DATABASE_URL names a database that does not exist".
    pub fn about(name: &'static str, problem: impl Into<String>) -> Self {
        Self {
            name,
            shown: String::new(),
            problem: problem.into(),
            example: lookup(name).example,
        }
    }
}

fn lookup(name: &str) -> &'static Variable {
    VARIABLES
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("{name} is missing from config::VARIABLES"))
}
