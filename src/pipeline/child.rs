//! A step's work in a child process of its own, limited by `setrlimit`.
//!
//! Some steps cost what the input decides: reading a manuscript (a 1 MB DOCX can inflate to
//! millions of words) and typesetting the print edition (Typst's memory grows with the book,
//! and it has no cancellation). Such a step runs its work as a hidden subcommand of this
//! executable, limited to `WORKER_MEMORY_BUDGET` of memory and `STEP_CPU_LIMIT` of processor
//! time, so that a book that finds a way to be expensive cannot take the worker down with it
//! (under a host's memory limit, that is a restart of the whole service, into the same job).
//!
//! The child reads its inputs from the blob store and writes its outputs there, like any
//! step; the request arrives as JSON on stdin and the answer leaves as one JSON line on
//! stdout. A child stopped by a limit is [`Ran::Stopped`] with the reason an author reads;
//! the worker is untouched.

use std::future::Future;
use std::process::{ExitCode, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use crate::books::BookId;
use crate::config::Config;
use crate::manuscript::InputError;
use crate::storage::BlobStore;
use crate::storage::fault::{self, Fault, OutOfReach, StorageFull};

/// The most a child's answer may be.
const MAX_ANSWER: u64 = 16 * 1024 * 1024;

/// One kind of limited child.
#[derive(Debug, Clone, Copy)]
pub struct Child {
    /// The hidden subcommand (`bindery read-manuscript`).
    pub subcommand: &'static str,
    /// What it does, for the author's error (`reading the manuscript`).
    pub work: &'static str,
}

/// How a child ended, when it ended in a way that is not worth retrying.
#[derive(Debug)]
pub enum Ran<R> {
    /// It did its work and answered.
    Answered(R),
    /// A limit stopped it: the book is too big or too complex for this step.
    Stopped(InputError),
}

impl Child {
    /// Runs the child and waits for it. `Err` is a failure worth retrying (the child could
    /// not start, or died in a way no limit explains).
    pub async fn run<Q: Serialize, R: DeserializeOwned>(
        &self,
        config: &Config,
        book: &BookId,
        request: &Q,
    ) -> anyhow::Result<Ran<R>> {
        let mut child = crate::executable::command()
            .with_context(|| format!("finding this executable for {}", self.work))?
            .arg(self.subcommand)
            // On stdin, not as an argument: the book's options (a long description) could
            // pass the kernel's limit on one argument's length.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A job cancelled or a worker stopping takes its child with it.
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting bindery {}", self.subcommand))?;
        let pid = child.id().unwrap_or(0);
        tracing::debug!(book.id = %book, child.pid = pid, child.work = self.work, "working in a child process");
        let mut stdin = child.stdin.take().context("the child has no stdin")?;
        stdin.write_all(&serde_json::to_vec(request)?).await?;
        drop(stdin);
        let mut stdout = child.stdout.take().context("the child has no stdout")?;
        let stderr = child.stderr.take().context("the child has no stderr")?;
        // The child's log lines go on to the worker's own stream; an allocation that failed
        // is how an out-of-memory child announces itself before it aborts, or panics (a
        // library that tries to reserve, then unwraps the failure).
        let (logged_by, work) = (book.clone(), self.work);
        // In the step's span, so that its lines carry the job as well as the book.
        let relay = tokio::spawn(tracing::Instrument::in_current_span(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            let mut out_of_memory = false;
            while let Ok(Some(line)) = lines.next_line().await {
                out_of_memory |= says_out_of_memory(&line);
                // As an event of the worker's, so that the log stays one format (JSON
                // lines). The line is a field, not the message: it can name the server's
                // paths and storage, and the book's log shows its tenant messages only of
                // lines written for them.
                tracing::warn!(book.id = %logged_by, child.pid = pid, child.work = work, child.line = %line, "a step's child process logged a line");
            }
            out_of_memory
        }));
        let mut answer = String::new();
        // The answer is one line, at most what a piece of a print edition measures (the
        // glyphs of its faces); more is a bug, and is not read into memory.
        (&mut stdout)
            .take(MAX_ANSWER)
            .read_to_string(&mut answer)
            .await
            .context("reading the child's answer")?;
        let status = child.wait().await.context("waiting for the child")?;
        let out_of_memory = relay.await.unwrap_or(false);
        // The most memory any child of this worker has held, this one included (the kernel
        // keeps it for children that have been waited for, killed ones too).
        let largest = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
            .map_or(0, |usage| {
                u64::try_from(usage.max_rss()).unwrap_or(0) * 1024
            });
        tracing::debug!(book.id = %book, child.pid = pid, child.work = self.work, ?status, children.max_rss = largest, "a step's child process ended");
        self.interpret(config, book, status, out_of_memory, &answer)
    }

    fn interpret<R: DeserializeOwned>(
        &self,
        config: &Config,
        book: &BookId,
        status: ExitStatus,
        out_of_memory: bool,
        answer: &str,
    ) -> anyhow::Result<Ran<R>> {
        use std::os::unix::process::ExitStatusExt;

        use nix::sys::signal::Signal;
        let step = self.work.to_owned();
        let signal = status.signal();
        // A child aborts only when an allocation fails (a panic exits 101).
        if out_of_memory || signal == Some(Signal::SIGABRT as i32) {
            tracing::warn!(book.id = %book, ?status, child.work = self.work, "a step's child process ran out of memory");
            return Ok(Ran::Stopped(InputError::OutOfMemory { step }));
        }
        if signal == Some(Signal::SIGXCPU as i32) {
            tracing::warn!(book.id = %book, ?status, child.work = self.work, "a step's child process ran out of processor time");
            return Ok(Ran::Stopped(InputError::StepTooSlow {
                step,
                seconds: config.step_cpu_limit.as_secs(),
            }));
        }
        if status.code() == Some(i32::from(OutOfReach::EXIT_CODE)) {
            return Err(anyhow::Error::new(OutOfReach(format!(
                "the process {} could not reach the blob store",
                self.work
            ))));
        }
        if status.code() == Some(i32::from(StorageFull::EXIT_CODE)) {
            return Err(anyhow::Error::new(StorageFull(format!(
                "the process {} found the blob store full",
                self.work
            ))));
        }
        if !status.success() {
            anyhow::bail!("the process {} ended with {status}", self.work);
        }
        let answer: Answer<R> = serde_json::from_str(answer.trim()).with_context(|| {
            let shown = &answer[..answer.floor_char_boundary(300)];
            format!("the process {} answered {shown:?}", self.work)
        })?;
        tracing::info!(book.id = %book, child.work = self.work, child.peak_rss = answer.peak_rss, "a step's child process answered");
        Ok(Ran::Answered(answer.answer))
    }

    /// The child's side: limits itself, reads its request from stdin, does `work` on one
    /// thread's runtime with the blob store. Exits 0 with the answer on stdout, or with the
    /// reason on stderr: [`OutOfReach::EXIT_CODE`] when the blob store could not be reached
    /// and [`StorageFull::EXIT_CODE`] when it is full (the job waits for either without
    /// spending an attempt), else 1.
    pub fn main<Q, R, F, Fut>(&self, config: &Config, work: F) -> ExitCode
    where
        Q: DeserializeOwned,
        R: Serialize,
        F: FnOnce(Q, BlobStore) -> Fut,
        Fut: Future<Output = anyhow::Result<R>>,
    {
        if let Err(e) = limit_self(config.worker_memory_budget, config.step_cpu_limit) {
            eprintln!("bindery {}: {e:#}", self.subcommand);
            return ExitCode::FAILURE;
        }
        let outcome = (|| -> anyhow::Result<R> {
            let request: Q =
                serde_json::from_reader(std::io::stdin().lock()).context("reading the request")?;
            let blobs = BlobStore::open(&config.blob, &config.azure)?;
            // One thread for the I/O: the limits are per process.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(work(request, blobs))
        })();
        match outcome {
            Ok(answer) => {
                let answer = Answer {
                    answer,
                    peak_rss: peak_rss(),
                };
                println!("{}", serde_json::to_string(&answer).unwrap_or_default());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bindery {}: {e:#}", self.subcommand);
                match fault::of_storage(&e) {
                    Some(Fault::Unavailable) => ExitCode::from(OutOfReach::EXIT_CODE),
                    Some(Fault::OutOfSpace) => ExitCode::from(StorageFull::EXIT_CODE),
                    _ => ExitCode::FAILURE,
                }
            }
        }
    }
}

/// What a child answers: its work's answer, and the most memory it held (bytes of resident
/// set), which the worker logs: what a step costs is what `WORKER_MEMORY_BUDGET` must hold.
#[derive(Debug, Serialize, serde::Deserialize)]
struct Answer<R> {
    answer: R,
    peak_rss: u64,
}

/// This process's peak resident set, in bytes: `VmHWM`, its own address space's high-water
/// mark. Not `getrusage`'s `ru_maxrss`, which Linux carries across `exec` from the address
/// space before it, so that every child would report at least the worker's size when it forked.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// Whether a line a child wrote says an allocation failed: the allocator's own message before
/// it aborts, or a panic over a failed reservation (the `image` crate unwraps one), which exits
/// 101 like any panic but is the memory limit all the same.
fn says_out_of_memory(line: &str) -> bool {
    line.starts_with("memory allocation of")
        || line.contains("TryReserveError")
        || line.contains("capacity overflow")
}

/// Memory (the data segment, which heap and anonymous mappings count against) and processor
/// time; no core file when a limit ends the process.
fn limit_self(memory: u64, cpu: Duration) -> anyhow::Result<()> {
    use nix::sys::resource::{Resource, setrlimit};
    setrlimit(Resource::RLIMIT_CORE, 0, 0).context("setting RLIMIT_CORE")?;
    setrlimit(Resource::RLIMIT_DATA, memory, memory).context("setting RLIMIT_DATA")?;
    let seconds = cpu.as_secs().max(1);
    // SIGXCPU at the soft limit says why; the hard limit (SIGKILL) is only a backstop.
    setrlimit(Resource::RLIMIT_CPU, seconds, seconds + 5).context("setting RLIMIT_CPU")?;
    // Dies with the worker: a child left behind would hold memory for nothing.
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .context("binding to the worker")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    const CHILD: Child = Child {
        subcommand: "test-child",
        work: "testing",
    };

    #[test]
    fn a_child_that_could_not_reach_the_blob_store_or_found_it_full_spends_no_attempt() {
        let config = Config::from_vars(std::iter::empty())
            .expect("config")
            .config;
        let book = BookId::unchecked("b");
        let exit = |code: i32| ExitStatus::from_raw(code << 8);
        let interpret = |status| {
            CHILD
                .interpret::<serde_json::Value>(&config, &book, status, false, "")
                .expect_err("a failure")
        };
        let unreachable = interpret(exit(i32::from(OutOfReach::EXIT_CODE)));
        assert!(fault::storage_out_of_reach(&unreachable), "{unreachable:#}");
        let full = interpret(exit(i32::from(StorageFull::EXIT_CODE)));
        assert_eq!(
            fault::of_storage(&full),
            Some(Fault::OutOfSpace),
            "{full:#}"
        );
        // Any other failure of the child is the job's, and spends an attempt.
        let other = interpret(exit(1));
        assert_eq!(fault::of_storage(&other), None, "{other:#}");
    }

    #[test]
    fn an_allocation_that_failed_is_read_as_the_memory_limit_however_it_ended() {
        for line in [
            "memory allocation of 12582912 bytes failed",
            "input layout already allocated with appropriate layout: TryReserveError { kind: AllocError { layout: Layout { size: 12288000, align: 1 (1 << 0) }, non_exhaustive: () } }",
            "thread 'main' panicked at library/alloc/src/raw_vec.rs: capacity overflow",
        ] {
            assert!(says_out_of_memory(line), "{line}");
        }
        assert!(!says_out_of_memory(
            "thread 'main' panicked at src/x.rs: index out of bounds"
        ));
        let config = Config::from_vars(std::iter::empty())
            .expect("config")
            .config;
        let book = BookId::unchecked("b");
        let panicked = ExitStatus::from_raw(101 << 8);
        match CHILD.interpret::<serde_json::Value>(&config, &book, panicked, true, "") {
            Ok(Ran::Stopped(e)) => assert_eq!(e.code(), "too_large"),
            other => panic!("expected a stop, got {other:?}"),
        }
    }

    #[test]
    fn a_child_stopped_by_a_limit_names_the_limit_and_the_work() {
        let config = Config::from_vars(std::iter::empty())
            .expect("config")
            .config;
        let book = BookId::unchecked("b");
        let xcpu = ExitStatus::from_raw(nix::sys::signal::Signal::SIGXCPU as i32);
        match CHILD.interpret::<serde_json::Value>(&config, &book, xcpu, false, "") {
            Ok(Ran::Stopped(e)) => {
                assert_eq!(e.code(), "too_complex");
                assert!(e.to_string().contains("testing"), "{e}");
                assert!(e.to_string().contains("STEP_CPU_LIMIT"), "{e}");
            }
            other => panic!("expected a stop, got {other:?}"),
        }
        let abort = ExitStatus::from_raw(nix::sys::signal::Signal::SIGABRT as i32);
        match CHILD.interpret::<serde_json::Value>(&config, &book, abort, false, "") {
            Ok(Ran::Stopped(e)) => assert_eq!(e.code(), "too_large"),
            other => panic!("expected a stop, got {other:?}"),
        }
    }
}
