//! The load: books from several tenants, uploaded through a random web process by careful
//! clients. Each upload carries an `Idempotency-Key`; on a connection error, a timeout or a 5xx
//! the client sends the same request again, and on a 429 it waits as `Retry-After` says.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use crate::common::{corpus, docx};

/// What a manuscript must become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Ready,
    /// Failed, with this error code.
    Failed(&'static str),
}

pub struct Manuscript {
    pub file_name: &'static str,
    pub bytes: Vec<u8>,
    pub expect: Expect,
}

/// The kinds of upload: the corpus novel as DOCX, Markdown and text, two small books, and
/// hostile files that must fail with their own codes. A zip bomb needs `MAX_INFLATED_SIZE`
/// under 16 MiB (the run sets 8 MiB).
pub fn manuscripts() -> Vec<Manuscript> {
    let read = |path: &str| std::fs::read(corpus().join(path)).expect("read a fixture");
    let novel_docx = read("docx/love-among-the-chickens.docx");
    let paragraph = "<w:p><w:r><w:t>Hello</w:t></w:r></w:p>";
    let laughs = br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&lol2;</w:t></w:r></w:p></w:body></w:document>"#;
    let small_markdown = (1..=5)
        .map(|n| format!("# Chapter {n}\n\nA short chapter, number {n}, of a small book.\n\n"))
        .collect::<String>();
    vec![
        Manuscript {
            file_name: "novel.docx",
            bytes: novel_docx.clone(),
            expect: Expect::Ready,
        },
        Manuscript {
            file_name: "novel.md",
            bytes: read("markdown/love-among-the-chickens.md"),
            expect: Expect::Ready,
        },
        Manuscript {
            file_name: "novel.txt",
            bytes: read("text/love-among-the-chickens.txt"),
            expect: Expect::Ready,
        },
        Manuscript {
            file_name: "small.md",
            bytes: small_markdown.into_bytes(),
            expect: Expect::Ready,
        },
        Manuscript {
            file_name: "small.txt",
            bytes: b"A Small Book\n\nIt has one chapter and two paragraphs.\n\nThe end.\n".to_vec(),
            expect: Expect::Ready,
        },
        Manuscript {
            file_name: "empty.md",
            bytes: Vec::new(),
            expect: Expect::Failed("empty_manuscript"),
        },
        Manuscript {
            file_name: "truncated.docx",
            bytes: novel_docx[..novel_docx.len() / 2].to_vec(),
            expect: Expect::Failed("corrupt_archive"),
        },
        Manuscript {
            file_name: "laughs.docx",
            bytes: docx::docx_with(laughs, &[]),
            expect: Expect::Failed("xml_doctype"),
        },
        Manuscript {
            file_name: "bomb.docx",
            bytes: docx::docx_with(
                &docx::document(paragraph),
                &[("word/media/big.bin", &vec![0u8; 16 << 20])],
            ),
            expect: Expect::Failed("zip_bomb"),
        },
    ]
}

/// Which manuscript the `n`-th book is: one in ten is hostile, and of the rest, three in five
/// are the novel.
pub fn manuscript_of(n: usize, manuscripts: &[Manuscript]) -> usize {
    let (good, hostile): (Vec<usize>, Vec<usize>) =
        (0..manuscripts.len()).partition(|&i| manuscripts[i].expect == Expect::Ready);
    if n % 10 == 9 {
        hostile[(n / 10) % hostile.len()]
    } else {
        good[n % good.len()]
    }
}

/// Which earlier upload the `n`-th sends a new version of, if any: under the faults, one upload
/// in ten revises its tenant's upload just before it (so often while that one still builds,
/// which the new version then supersedes), when that one is a good book of its own.
pub fn revises(
    n: usize,
    tenants: usize,
    quiet: usize,
    manuscripts: &[Manuscript],
) -> Option<usize> {
    let target = n.checked_sub(tenants)?;
    (n >= quiet
        && n % 10 == 4
        && target % 10 != 4
        && manuscripts[manuscript_of(target, manuscripts)].expect == Expect::Ready)
        .then_some(target)
}

/// The manuscript a new version of a book made of `manuscript` is: the next good one, so that
/// the book changes.
pub fn revision_of(manuscript: usize, manuscripts: &[Manuscript]) -> usize {
    let good: Vec<usize> = (0..manuscripts.len())
        .filter(|&i| manuscripts[i].expect == Expect::Ready)
        .collect();
    let at = good.iter().position(|&i| i == manuscript).unwrap_or(0);
    good[(at + 1) % good.len()]
}

/// The metadata a book is uploaded with, which the reference conversion is given too.
pub fn metadata(tenant: usize, manuscript: &Manuscript) -> [(&'static str, String); 2] {
    [
        ("title", format!("Chaos {}", manuscript.file_name)),
        ("author", format!("Tenant {tenant}")),
    ]
}

/// One book to upload.
#[derive(Clone, Debug)]
pub struct Planned {
    pub n: usize,
    pub tenant: usize,
    pub manuscript: usize,
    pub callback: bool,
    pub key: String,
    /// Uploaded while faults are injected.
    pub under_faults: bool,
    /// A new version of the book upload `n` made, with no metadata of its own (the book's
    /// carries over), rather than a book.
    pub revises: Option<usize>,
}

/// What came of one upload, over all its attempts.
#[derive(Clone, Debug)]
pub struct Submitted {
    pub planned: Planned,
    /// Unix milliseconds when the first attempt was sent.
    pub sent_at_ms: i64,
    /// The id of every 2xx answer (a retry whose first attempt had got through answers with
    /// the same book, `Idempotent-Replayed: true`).
    pub ids: Vec<String>,
    pub replayed: bool,
    /// Every attempt that did not get a 2xx, and why.
    pub retried: Vec<String>,
    /// Set when the client gave up or got an answer it must not: the run fails on it.
    pub refused: Option<String>,
    /// A new version's number, as the answer gave it.
    pub revision: Option<u64>,
}

pub struct Uploader {
    pub http: Client,
    pub tokens: Vec<String>,
    pub ports: Vec<u16>,
    pub callback_url: String,
    /// Uploads under way to each web process (by its index in `ports`), so that a fault can
    /// kill one in the middle of some.
    pub in_flight: Vec<AtomicUsize>,
    /// The book each accepted upload made, by the upload's `n`: where its new versions go.
    pub books: Mutex<BTreeMap<usize, String>>,
}

/// One upload under way, counted while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn start(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Uploader {
    pub fn new(http: Client, tokens: Vec<String>, ports: Vec<u16>, callback_url: String) -> Self {
        let in_flight = ports.iter().map(|_| AtomicUsize::new(0)).collect();
        Self {
            http,
            tokens,
            ports,
            callback_url,
            in_flight,
            books: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether an upload to the web process on `port` is under way.
    pub fn uploading(&self, port: u16) -> bool {
        self.ports
            .iter()
            .position(|&p| p == port)
            .is_some_and(|i| self.in_flight[i].load(Ordering::SeqCst) > 0)
    }

    /// Uploads one book as a careful client would, giving up only after `patience`.
    pub fn submit(
        &self,
        planned: &Planned,
        manuscript: &Manuscript,
        rng: &mut StdRng,
        patience: Duration,
    ) -> Submitted {
        let started = Instant::now();
        let mut done = Submitted {
            planned: planned.clone(),
            sent_at_ms: chrono::Utc::now().timestamp_millis(),
            ids: Vec::new(),
            replayed: false,
            retried: Vec::new(),
            refused: None,
            revision: None,
        };
        // A new version goes to the book its upload made (by this tenant's thread, earlier).
        let revised = match planned.revises {
            Some(target) => match self.books.lock().expect("books").get(&target) {
                Some(id) => Some(id.clone()),
                None => {
                    done.refused = Some(format!("upload {target}, which it revises, made no book"));
                    return done;
                }
            },
            None => None,
        };
        let mut backoff = Duration::from_millis(100);
        loop {
            let web = rng.random_range(..self.ports.len());
            let port = self.ports[web];
            let flight = InFlight::start(&self.in_flight[web]);
            let mut form = Form::new().part(
                "manuscript",
                Part::bytes(manuscript.bytes.clone()).file_name(manuscript.file_name),
            );
            if revised.is_none() {
                for (field, value) in metadata(planned.tenant, manuscript) {
                    form = form.text(field, value);
                }
                if planned.callback {
                    form = form.text("callback_url", self.callback_url.clone());
                }
            }
            let url = match &revised {
                Some(id) => format!("http://127.0.0.1:{port}/api/v1/books/{id}/revisions"),
                None => format!("http://127.0.0.1:{port}/api/v1/books"),
            };
            let answer = self
                .http
                .post(url)
                .bearer_auth(&self.tokens[planned.tenant])
                .header("Idempotency-Key", &planned.key)
                .multipart(form)
                .send();
            let wait = match answer {
                Ok(r) if r.status().is_success() => {
                    let replayed = r
                        .headers()
                        .get("idempotent-replayed")
                        .is_some_and(|v| v == "true");
                    let answer: Value = r.json().unwrap_or_default();
                    let made = match &revised {
                        Some(id) => answer["number"].as_u64().map(|number| {
                            done.revision = Some(number);
                            id.clone()
                        }),
                        None => answer["id"].as_str().map(str::to_owned),
                    };
                    match made {
                        Some(id) => {
                            if revised.is_none() {
                                self.books
                                    .lock()
                                    .expect("books")
                                    .insert(planned.n, id.clone());
                            }
                            done.ids.push(id);
                            done.replayed |= replayed;
                            return done;
                        }
                        None => {
                            done.retried
                                .push(format!("port {port}: 2xx without a book"));
                            backoff
                        }
                    }
                }
                Ok(r) if r.status() == 429 => {
                    let secs = r
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(1);
                    done.retried.push(format!("port {port}: 429"));
                    Duration::from_secs(secs)
                }
                Ok(r) if r.status().is_server_error() => {
                    let status = r.status();
                    let retry_after = r
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok());
                    let body = r.text().unwrap_or_default();
                    done.retried
                        .push(format!("port {port}: {status} {}", first_line(&body)));
                    // Sooner than Retry-After says when the other web process may answer.
                    retry_after.map_or(backoff, |s| Duration::from_secs(s).min(backoff))
                }
                Ok(r) => {
                    let status = r.status();
                    let body = r.text().unwrap_or_default();
                    done.refused = Some(format!("port {port}: {status} {body}"));
                    return done;
                }
                Err(e) => {
                    done.retried
                        .push(format!("port {port}: {}", error_kind(&e)));
                    backoff
                }
            };
            drop(flight);
            if started.elapsed() + wait > patience {
                done.refused = Some(format!(
                    "gave up after {:?} and {} attempts",
                    started.elapsed(),
                    done.retried.len() + 1
                ));
                return done;
            }
            // Time passes, not a wait for a condition: a careful client's back-off.
            std::thread::sleep(wait + Duration::from_millis(rng.random_range(0..100)));
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn error_kind(e: &reqwest::Error) -> &'static str {
    if e.is_connect() {
        "connection refused"
    } else if e.is_timeout() {
        "timeout"
    } else {
        "connection cut"
    }
}

/// Uploads `planned` books, one thread per tenant, each spacing its uploads `interval` apart.
pub fn submit_all(
    client: &Arc<Uploader>,
    manuscripts: &Arc<Vec<Manuscript>>,
    planned: Vec<Planned>,
    interval: Duration,
    seed: u64,
) -> Vec<Submitted> {
    let results = Arc::new(Mutex::new(Vec::new()));
    let tenants = client.tokens.len();
    let threads: Vec<_> = (0..tenants)
        .map(|tenant| {
            let mine: Vec<Planned> = planned
                .iter()
                .filter(|p| p.tenant == tenant)
                .cloned()
                .collect();
            let (client, manuscripts, results) =
                (client.clone(), manuscripts.clone(), results.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (tenant as u64 + 1));
                // Tenants start apart, so their uploads interleave.
                std::thread::sleep(interval.mul_f64(tenant as f64 / tenants as f64));
                for p in mine {
                    let next = Instant::now() + interval;
                    let done = client.submit(
                        &p,
                        &manuscripts[p.manuscript],
                        &mut rng,
                        Duration::from_secs(120),
                    );
                    results.lock().expect("results").push(done);
                    // The load's pace, not a wait for a condition.
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client thread panicked");
    }
    let mut results = std::mem::take(&mut *results.lock().expect("results"));
    results.sort_by_key(|s| s.planned.n);
    results
}
