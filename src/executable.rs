//! Starting this program again: the worker child of `bindery serve` and the manuscript reader
//! of each `parse` step run the very executable that is running now.
//!
//! Not the file at its path: a deploy that replaces the binary in place (a package upgrade, a
//! copy over it, `cargo install`) unlinks the running process's file, so that
//! `current_exe()` reads `…/bindery (deleted)`, which cannot be started ("bindery (deleted)
//! read-manuscript" failed every `parse` step until a restart); and the file now at that path
//! is another version, which this one must not start behind its back. `/proc/self/exe` opens
//! the file the process runs, deleted or not, so it is started where it exists (Linux), with
//! this process's own `argv[0]`. The kernel names a process after the path it was started
//! from (`exe`), so the new one names itself back ([`name_this_process`]).

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;

/// The running executable, however its file has fared since it started.
const THIS_EXECUTABLE: &str = "/proc/self/exe";

/// A command that runs this executable again.
pub fn command() -> anyhow::Result<tokio::process::Command> {
    let (path, arg0) = this_executable()?;
    let mut command = tokio::process::Command::new(path);
    command.arg0(arg0);
    Ok(command)
}

/// The path to start, and the `argv[0]` to give it.
fn this_executable() -> anyhow::Result<(PathBuf, OsString)> {
    let arg0 = std::env::args_os()
        .next()
        .unwrap_or_else(|| OsString::from("bindery"));
    let proc = PathBuf::from(THIS_EXECUTABLE);
    if proc.exists() {
        return Ok((proc, arg0));
    }
    let path = std::env::current_exe().context("finding this executable")?;
    Ok((path, arg0))
}

/// Gives this process the name of its program (`ps`, `top`, the kernel's OOM report) when it
/// was started through `/proc/self/exe` and so is called `exe`. Call first thing in `main`.
pub fn name_this_process() {
    let Ok(name) = std::fs::read_to_string("/proc/self/comm") else {
        return;
    };
    if name.trim_end() != "exe" {
        return;
    }
    let program = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.as_encoded_bytes().to_vec()))
        .filter(|n| !n.is_empty() && !n.contains(&0))
        .unwrap_or_else(|| b"bindery".to_vec());
    if let Ok(program) = std::ffi::CString::new(program) {
        // Best effort: only the name shown is at stake.
        let _ = nix::sys::prctl::set_name(&program);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_executable_is_the_running_file_and_keeps_its_name() {
        let (path, arg0) = this_executable().expect("this executable");
        assert_eq!(path, PathBuf::from(THIS_EXECUTABLE));
        assert_eq!(Some(arg0), std::env::args_os().next());
    }
}
