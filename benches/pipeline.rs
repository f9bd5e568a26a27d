//! The conversion pipeline as jobs, end to end: a manuscript is submitted to a SQLite store
//! and one `bindery worker` process (release build, default concurrency) runs its workflow.
//! Prints one line per book: submit-to-ready wall time, the number of jobs, and the busiest
//! steps' summed run times. `scripts/bench-convert` measures the same books in one process.
//!
//! `cargo bench --bench pipeline` (the 1M-word book is made by repeating the novel
//! of `tests/fixtures`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bindery::books;
use bindery::config::{AzureConfig, BlobUrl, DatabaseUrl};
use bindery::convert::Options;
use bindery::jobs::JobQueue;
use bindery::pipeline::{self, Submission};
use bindery::storage::{BlobStore, Database};

/// The novel's directory: the committed fixtures, or `BINDERY_CORPUS` to measure another
/// copy laid out the same way (`markdown/`, `docx/`).
fn corpus() -> PathBuf {
    std::env::var_os("BINDERY_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

/// The novel's chapters repeated until the book has `words` words.
fn repeated_novel(words: usize) -> String {
    let novel = std::fs::read_to_string(corpus().join("markdown/love-among-the-chickens.md"))
        .expect("novel");
    let (front, body) = match novel
        .strip_prefix("---\n")
        .and_then(|r| r.split_once("\n---\n"))
    {
        Some((front, body)) => (format!("---\n{front}\n---\n"), body.to_owned()),
        None => (String::new(), novel.clone()),
    };
    let copies = words.div_ceil(body.split_whitespace().count().max(1));
    let mut out = front;
    for i in 1..=copies {
        for line in body.lines() {
            match line.strip_prefix("## ") {
                Some(title) => out.push_str(&format!("## {title} ({i})\n")),
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    out
}

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn run(label: &str, name: &str, manuscript: Vec<u8>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let db = Database::connect(
        &DatabaseUrl::Sqlite {
            path: data.join("bindery.db"),
        },
        2,
    )
    .await
    .expect("database");
    db.migrate().await.expect("migrate");
    let blobs = BlobStore::open(
        &BlobUrl::File {
            root: data.join("blobs"),
        },
        &AzureConfig::default(),
    )
    .expect("blobs");
    let queue = JobQueue::new(db.clone());
    let _worker = start_worker(data);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let started = Instant::now();
    let id = pipeline::upload(
        &db,
        &blobs,
        &queue,
        Submission {
            tenant: "bench".into(),
            file_name: name.into(),
            manuscript: manuscript.into(),
            cover: None,
            options: Options::default(),
        },
    )
    .await
    .expect("submit");
    let book = loop {
        let book = books::get(&db, &id).await.expect("read").expect("book");
        if book.status != books::BookStatus::Processing {
            break book;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "{label}: not ready after 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let took = started.elapsed();
    assert_eq!(book.status, "ready", "{label}: {:?}", book.error);
    let jobs = queue.workflow(&id).await.expect("workflow").jobs;
    let report: serde_json::Value =
        serde_json::from_str(book.report.as_deref().unwrap_or("{}")).expect("report");
    let steps: Vec<String> = report["timings"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|s| format!("{} {} ms", s["step"].as_str().unwrap_or("?"), s["millis"]))
                .collect()
        })
        .unwrap_or_default();
    println!(
        "pipeline {label}: submit to ready {} ms, {} jobs; summed step times: {}",
        took.as_millis(),
        jobs.len(),
        steps.join(", ")
    );
}

fn start_worker(data: &Path) -> Worker {
    Worker(
        Command::new(env!("CARGO_BIN_EXE_bindery"))
            .arg("worker")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATA_DIR", data)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("start bindery worker"),
    )
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let novel =
            std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
        run("markdown 50k words", "novel.md", novel).await;
        let docx = std::fs::read(corpus().join("docx/love-among-the-chickens.docx")).expect("docx");
        run("docx 50k words", "novel.docx", docx).await;
        run(
            "markdown 1M words",
            "big.md",
            repeated_novel(1_000_000).into_bytes(),
        )
        .await;
    });
}
