//! The names of the book domain, parsed once where they enter: a [`BookId`] (a UUID, so
//! book URLs cannot be guessed, and a path like `../x` never becomes a blob key), the
//! [`Tenant`] a book belongs to, and a [`RevisionId`], one version of a book: each manuscript
//! given for it, numbered from 1. A revision's files live under its own prefix
//! (`super::keys`) and its steps form its own workflow, so two revisions of a book never share
//! a file or a job.
//!
//! Both are serde- and sqlx-transparent: JSON, job payloads and the database keep the plain
//! strings they always held. What the database returns was parsed when it was written, so it
//! is read back as it is.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// A book's id: a UUID, as `BookId::new` makes it.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type,
)]
#[serde(transparent)]
#[sqlx(transparent)]
pub struct BookId(String);

impl BookId {
    /// A fresh id.
    pub fn new() -> Self {
        BookId(uuid::Uuid::new_v4().to_string())
    }

    /// The id a caller gave (a path, a cursor, a blob store's folder), or `None` when it is not
    /// a book id at all: such a value never reaches storage.
    pub fn parse(value: &str) -> Option<Self> {
        uuid::Uuid::parse_str(value)
            .is_ok()
            .then(|| BookId(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Any text, for the tests' hand-written rows.
    #[cfg(test)]
    pub(crate) fn unchecked(value: &str) -> Self {
        BookId(value.to_owned())
    }
}

impl Default for BookId {
    fn default() -> Self {
        Self::new()
    }
}

/// One revision of one book. In a job's payload it is the fields `book` and `revision`
/// (flattened); a payload from before revisions has no `revision`, and is revision 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RevisionId {
    pub book: BookId,
    #[serde(rename = "revision", default = "first")]
    pub number: u32,
}

fn first() -> u32 {
    1
}

impl RevisionId {
    /// The revision that made the book.
    pub fn first(book: &BookId) -> Self {
        RevisionId {
            book: book.clone(),
            number: 1,
        }
    }

    pub fn of(book: &BookId, number: u32) -> Self {
        RevisionId {
            book: book.clone(),
            number,
        }
    }

    /// The id of its steps' workflow: the book's id for revision 1 (as before revisions), so
    /// a book's first build reads as it always did.
    pub fn workflow(&self) -> String {
        if self.number == 1 {
            self.book.to_string()
        } else {
            format!("{}/r{}", self.book, self.number)
        }
    }
}

impl std::fmt::Display for RevisionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} revision {}", self.book, self.number)
    }
}

/// The tenant a book, a job or a catalog belongs to: an API token's name, 1 to 64 ASCII
/// letters, digits, `-`, `_` or `.` (so it is also a safe path segment in the blob store).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type,
)]
#[serde(transparent)]
#[sqlx(transparent)]
pub struct Tenant(String);

impl Tenant {
    /// A tenant named by a person or a tool (`bindery token create`, a test's submission), or
    /// `None` when the name could not be one.
    pub fn parse(value: &str) -> Option<Self> {
        // A tenant is named by its token, so a token's name is the rule: any a token may
        // have been stored under.
        crate::tokens::stored_name(value).then(|| Tenant(value.to_owned()))
    }

    /// The tenant of an authenticated caller: its token row, checked when it was created.
    pub fn of(caller: &crate::tokens::Tenant) -> Self {
        Tenant(caller.tenant.clone())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! text {
    ($name:ident) => {
        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        // Its derived `Hash` and `Eq` are the text's, so maps keyed by it answer to a `&str`.
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl From<&$name> for String {
            fn from(value: &$name) -> String {
                value.0.clone()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    };
}

text!(BookId);
text!(Tenant);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_from_before_revisions_is_revision_1() {
        #[derive(Deserialize, Serialize)]
        struct Step {
            #[serde(flatten)]
            revision: RevisionId,
            chapter: usize,
        }
        let book = BookId::new();
        let old: Step =
            serde_json::from_str(&format!(r#"{{"book":"{book}","chapter":3}}"#)).expect("old");
        assert_eq!(old.revision, RevisionId::first(&book));
        assert_eq!(old.revision.workflow(), book.to_string());
        let new = Step {
            revision: RevisionId::of(&book, 4),
            chapter: 3,
        };
        let json = serde_json::to_string(&new).expect("json");
        assert_eq!(
            json,
            format!(r#"{{"book":"{book}","revision":4,"chapter":3}}"#)
        );
        let back: Step = serde_json::from_str(&json).expect("back");
        assert_eq!(back.revision.workflow(), format!("{book}/r4"));
    }

    #[test]
    fn only_a_uuid_is_a_book_id() {
        let id = BookId::new();
        assert_eq!(BookId::parse(id.as_str()), Some(id.clone()));
        for bad in [
            "",
            "b1",
            "../x",
            "books/x",
            "not-a-uuid-at-all-but-36-characters",
        ] {
            assert_eq!(BookId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tenant_is_a_token_name() {
        for good in ["alice", "a", "team-1.prod_x", &"x".repeat(64)] {
            assert_eq!(Tenant::parse(good).as_deref(), Some(good), "{good}");
        }
        for bad in ["", "a b", "../x", "a/b", "é", &"x".repeat(65)] {
            assert_eq!(Tenant::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn json_keeps_the_plain_strings() {
        let id = BookId::new();
        let json = serde_json::to_string(&id).expect("serialise");
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<BookId>(&json).expect("read"), id);
        let tenant = Tenant::parse("alice").expect("a tenant");
        assert_eq!(
            serde_json::to_string(&tenant).expect("serialise"),
            "\"alice\""
        );
    }
}
