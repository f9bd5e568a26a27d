//! Bindery: a self-hosted manuscript-to-ebook service in one binary.
//!
//! The architecture is in `DESIGN.md`; the module tree follows it. `supervisor` runs the web
//! process and watches its `worker` child; `storage` is the only channel between them.

pub mod cli;
pub mod config;
pub mod keepalive;
pub mod signals;
pub mod storage;
pub mod supervisor;
pub mod telemetry;
pub mod web;
pub mod worker;
