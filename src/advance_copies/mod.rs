//! Advance reader copies: a book's editions made personal for one reader, each naming the
//! person it was made for, so that a copy that leaks names its source.

pub mod links;
pub mod stamp;
