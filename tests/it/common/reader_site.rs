//! A reader's site, as files, served on the loopback by `tests/browser/serve.py` with the
//! Content-Security-Policy the server sends with a reader (`ebook::reader::
//! CONTENT_SECURITY_POLICY`, passed to it: the script keeps no copy), for the browser tests
//! that make a site without a server.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The server, stopped when dropped (however the test ends), and where it serves.
pub struct Served {
    child: Child,
    port: u16,
}

impl Served {
    /// The URL of `path` in the site (`index.html`).
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves `site` once it listens: the script picks a free port and prints it first.
pub fn serve(site: &Path) -> Served {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/serve.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg("0")
        .arg(site)
        .arg(bindery::ebook::reader::CONTENT_SECURITY_POLICY)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 serve.py");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the port");
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("serve.py printed {line:?}, not its port"));
    Served { child, port }
}
