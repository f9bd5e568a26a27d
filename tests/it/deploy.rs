//! Deploying the way users deploy: to an app host with a managed PostgreSQL over TLS, a
//! connection budget, a disk that may be thrown away, a router that cuts long requests, and
//! `web` processes that stay in the balancer while workers come and go, and a binary replaced
//! in place under a running service.

mod budget;
mod disks;
mod guides;
mod manifests;
mod procfile;
mod readiness;
mod tls;
mod upgrade;

use std::process::Output;

/// The one line a refused start prints on stderr, asserting that it is one line.
pub fn one_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one line on stderr, got:\n{stderr}"
    );
    lines[0].to_owned()
}

/// A small Markdown book, enough for every pipeline step.
pub const BOOK: &str = "---\ntitle: Deployed\nauthor: A. Writer\n---\n\n# One\n\nThe first chapter.\n\n# Two\n\nThe second chapter.\n";
