//! Reading the log files the web and worker processes write (`LOG_DIR/ROLE.YYYY-MM-DD.log`,
//! see [`FileName`] and `appender`): the last lines of every role merged by time, then each new line once it is
//! complete, across daily rotation, files replaced under the same name, and truncation.
//!
//! Memory stays bounded whatever the files' sizes: the backlog is read backwards from the end
//! in blocks up to a byte budget, following reads at most a budget per poll, and a line longer
//! than [`MAX_LINE`] is cut.

pub mod appender;
pub mod text;

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

/// Longest line passed on, in bytes; the rest of a longer one is dropped.
pub const MAX_LINE: usize = 16 * 1024;
/// How much is read at a time.
const BLOCK: u64 = 64 * 1024;
/// Most bytes read backwards per role for the backlog.
const BACKLOG_BUDGET: u64 = 8 * 1024 * 1024;
/// Most bytes read per role per poll; a follower further behind catches up over several.
const POLL_BUDGET: u64 = 1024 * 1024;

/// One complete line of a log file.
#[derive(Debug, Clone, Serialize)]
pub struct LogLine {
    /// The process role whose file it came from (`web`, `worker`).
    pub role: &'static str,
    pub line: String,
    /// The line's own timestamp, as written, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The line's fields, when it is a JSON object (`LOG_FORMAT=json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Map<String, Value>>,
    /// Unix microseconds to order by: the line's timestamp, or for a line without one (a
    /// panic message, a wrapped line) that of the line before it, so it stays beside it.
    #[serde(skip)]
    at: Option<i64>,
}

impl LogLine {
    /// Parses a line written as JSON (`{"timestamp": …}`) or as text (`web[12] 2026-…Z  INFO …`).
    fn parse(role: &'static str, bytes: &[u8], previous: Option<i64>) -> Self {
        let line = text(bytes);
        let mut fields = None;
        let timestamp = if line.starts_with('{') {
            match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(map)) => {
                    let timestamp = map
                        .get("timestamp")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    fields = Some(map);
                    timestamp
                }
                _ => None,
            }
        } else {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or_default();
            // Skip the `role[pid]` tag that text lines start with.
            let word = if first.ends_with(']') {
                words.next().unwrap_or_default()
            } else {
                first
            };
            micros(word).is_some().then(|| word.to_owned())
        };
        let at = timestamp.as_deref().and_then(micros).or(previous);
        LogLine {
            role,
            line,
            timestamp,
            fields,
            at,
        }
    }
}

fn micros(timestamp: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .ok()
        .map(|t| t.timestamp_micros())
}

/// A line's bytes as text: invalid UTF-8 replaced, cut to [`MAX_LINE`] (marked with `…`).
fn text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.len() > MAX_LINE {
        let mut s = String::from_utf8_lossy(&bytes[..MAX_LINE]).into_owned();
        s.push('…');
        s
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Merges per-role sequences (each in file order) into one ordered by time. Each sequence keeps
/// its own order; on equal times the earlier sequence goes first.
pub fn merge(streams: Vec<Vec<LogLine>>) -> Vec<LogLine> {
    let total = streams.iter().map(Vec::len).sum();
    let mut iters: Vec<_> = streams
        .into_iter()
        .map(|s| s.into_iter().peekable())
        .collect();
    let mut merged = Vec::with_capacity(total);
    loop {
        let mut best: Option<(usize, Option<i64>)> = None;
        for (i, it) in iters.iter_mut().enumerate() {
            let Some(head) = it.peek() else { continue };
            // A line with no time at all (before any timestamped line) goes out first.
            if best.is_none_or(|(_, at)| head.at < at) {
                best = Some((i, head.at));
            }
        }
        let Some((i, _)) = best else { break };
        if let Some(line) = iters[i].next() {
            merged.push(line);
        }
    }
    merged
}

/// The log files of `role` in `dir` with their parsed names, oldest first: by day, then by
/// part within a day (see [`FileName`]). A missing directory has none.
pub fn role_files(dir: &Path, role: &str) -> io::Result<Vec<(FileName, PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        if let Some(name) = entry
            .file_name()
            .to_str()
            .and_then(|n| FileName::parse(n, role))
        {
            files.push((name, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

/// The name of a log file: `ROLE.YYYY-MM-DD.log` for a day's first file, and
/// `ROLE.YYYY-MM-DD.N.log` for the part a day begins each time its file reaches
/// `LOG_MAX_FILE_SIZE`. Files are never renamed, so a follower reading one keeps reading it;
/// orders by day, then part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileName {
    pub day: chrono::NaiveDate,
    pub part: u32,
}

impl FileName {
    pub fn parse(name: &str, role: &str) -> Option<FileName> {
        let rest = name
            .strip_prefix(role)?
            .strip_prefix('.')?
            .strip_suffix(".log")?;
        let (day, part) = match rest.split_once('.') {
            Some((day, part)) if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) => {
                (day, part.parse().ok().filter(|p| *p > 0)?)
            }
            Some(_) => return None,
            None => (rest, 0),
        };
        if day.len() != 10 {
            return None;
        }
        let day = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
        Some(FileName { day, part })
    }

    pub fn of(&self, role: &str) -> String {
        match self.part {
            0 => format!("{role}.{}.log", self.day.format("%Y-%m-%d")),
            part => format!("{role}.{}.{part}.log", self.day.format("%Y-%m-%d")),
        }
    }
}

/// Up to `n` of the last complete lines of `file` before `end`, oldest first, read backwards in
/// blocks, spending at most `budget` bytes; and the bytes after the last newline (a line still
/// being written). Empty lines are skipped.
fn last_lines(
    file: &File,
    end: u64,
    n: usize,
    budget: &mut u64,
) -> io::Result<(Vec<Vec<u8>>, Vec<u8>)> {
    let mut lines = Vec::new();
    // Bytes between the earliest newline found so far and the next one (or the partial line).
    let mut carry: Vec<u8> = Vec::new();
    let mut partial: Option<Vec<u8>> = None;
    let mut pos = end;
    while pos > 0 && lines.len() < n && *budget > 0 {
        let size = BLOCK.min(pos).min(*budget);
        pos -= size;
        *budget -= size;
        let mut block = vec![0u8; usize::try_from(size).unwrap_or(0)];
        file.read_exact_at(&mut block, pos)?;
        let mut segment_end = block.len();
        for i in (0..block.len()).rev() {
            if block[i] != b'\n' {
                continue;
            }
            let mut segment = block[i + 1..segment_end].to_vec();
            segment.append(&mut carry);
            segment_end = i;
            match partial {
                None => partial = Some(segment),
                Some(_) if !segment.is_empty() => {
                    lines.push(segment);
                    if lines.len() == n {
                        break;
                    }
                }
                Some(_) => {}
            }
        }
        if lines.len() == n {
            break;
        }
        let mut head = block[..segment_end].to_vec();
        head.append(&mut carry);
        carry = head;
    }
    // The file's first line has no newline before it.
    if pos == 0 && lines.len() < n {
        match partial {
            None => partial = Some(std::mem::take(&mut carry)),
            Some(_) if !carry.is_empty() => lines.push(std::mem::take(&mut carry)),
            Some(_) => {}
        }
    }
    lines.reverse();
    Ok((lines, partial.unwrap_or_default()))
}

/// The bytes of a line that is not complete yet, at most [`MAX_LINE`] + 1 of them (enough to
/// know it must be cut).
#[derive(Debug, Default)]
struct LineBuf {
    bytes: Vec<u8>,
}

impl LineBuf {
    fn append(&mut self, more: &[u8]) {
        let room = (MAX_LINE + 1).saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&more[..more.len().min(room)]);
    }

    /// Adds bytes read from the file; calls `complete` with each line they complete.
    fn push(&mut self, mut more: &[u8], mut complete: impl FnMut(&[u8])) {
        while let Some(newline) = more.iter().position(|b| *b == b'\n') {
            self.append(&more[..newline]);
            if !self.bytes.is_empty() {
                complete(&self.bytes);
            }
            self.bytes.clear();
            more = &more[newline + 1..];
        }
        self.append(more);
    }

    /// The unterminated rest, for a file that will not grow any more.
    fn take(&mut self) -> Option<Vec<u8>> {
        (!self.bytes.is_empty()).then(|| std::mem::take(&mut self.bytes))
    }
}

/// An open log file and how far it has been read.
#[derive(Debug)]
struct OpenFile {
    name: FileName,
    path: PathBuf,
    file: File,
    offset: u64,
    /// Device and inode, to notice the name now pointing at another file.
    id: (u64, u64),
}

impl OpenFile {
    fn open((name, path): (FileName, PathBuf)) -> io::Result<Self> {
        let file = File::open(&path)?;
        let meta = file.metadata()?;
        Ok(Self {
            name,
            path,
            file,
            offset: 0,
            id: (meta.dev(), meta.ino()),
        })
    }
}

/// Follows the files of one role: the newest, then the next when the day rolls over.
#[derive(Debug)]
struct Follower {
    role: &'static str,
    dir: PathBuf,
    open: Option<OpenFile>,
    pending: LineBuf,
    /// The time of the last line passed on, inherited by lines without one.
    last_at: Option<i64>,
    /// The last poll stopped at its budget with more to read.
    behind: bool,
}

impl Follower {
    /// The last `n` lines of the role (going back into older files when the newest has fewer),
    /// and a follower positioned right after them.
    fn start(dir: &Path, role: &'static str, n: usize) -> io::Result<(Self, Vec<LogLine>)> {
        let mut files = role_files(dir, role)?;
        let mut follower = Follower {
            role,
            dir: dir.to_path_buf(),
            open: None,
            pending: LineBuf::default(),
            last_at: None,
            behind: false,
        };
        let mut budget = BACKLOG_BUDGET;
        // Newest file first; each entry oldest line first.
        let mut parts: Vec<Vec<Vec<u8>>> = Vec::new();
        let mut found = 0;
        if let Some(newest) = files.pop() {
            let mut open = OpenFile::open(newest)?;
            let end = open.file.metadata()?.len();
            let (lines, partial) = last_lines(&open.file, end, n, &mut budget)?;
            open.offset = end;
            follower.pending.append(&partial);
            follower.open = Some(open);
            found += lines.len();
            parts.push(lines);
        }
        while let Some(older) = files.pop() {
            if found >= n || budget == 0 {
                break;
            }
            let file = File::open(&older.1)?;
            let end = file.metadata()?.len();
            let (mut lines, last) = last_lines(&file, end, n - found, &mut budget)?;
            // A rotated file's unterminated last line is as complete as it will ever be.
            if !last.is_empty() {
                lines.push(last);
            }
            if lines.len() > n - found {
                lines.drain(..lines.len() - (n - found));
            }
            found += lines.len();
            parts.push(lines);
        }
        let mut backlog = Vec::with_capacity(found);
        for bytes in parts.iter().rev().flatten() {
            let line = LogLine::parse(role, bytes, follower.last_at);
            follower.last_at = line.at;
            backlog.push(line);
        }
        Ok((follower, backlog))
    }

    fn emit(&mut self, bytes: &[u8], out: &mut Vec<LogLine>) {
        let line = LogLine::parse(self.role, bytes, self.last_at);
        self.last_at = line.at;
        out.push(line);
    }

    /// Appends the lines completed since the last poll to `out`.
    fn poll(&mut self, out: &mut Vec<LogLine>) -> io::Result<()> {
        let mut budget = POLL_BUDGET;
        self.behind = false;
        loop {
            // Look for a newer file, or the name reused, *before* reading to the end: whatever
            // was written to the old file before the new one appeared is then read first.
            let newest = role_files(&self.dir, self.role)?.pop();
            let Some(open) = self.open.as_mut() else {
                match newest {
                    // Every line of a file that appears while following is new.
                    Some(file) => {
                        self.open = Some(OpenFile::open(file)?);
                        continue;
                    }
                    None => return Ok(()),
                }
            };
            let rotated = newest.as_ref().is_some_and(|(name, _)| *name > open.name);
            let replaced = match std::fs::metadata(&open.path) {
                Ok(meta) => (meta.dev(), meta.ino()) != open.id,
                Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                Err(e) => return Err(e),
            };
            let len = open.file.metadata()?.len();
            if len < open.offset {
                // Truncated in place: what is there now was written since.
                open.offset = 0;
                self.pending = LineBuf::default();
            }
            let mut lines = Vec::new();
            while open.offset < len && budget > 0 {
                let size = (len - open.offset).min(BLOCK).min(budget);
                let mut block = vec![0u8; usize::try_from(size).unwrap_or(0)];
                let read = open.file.read_at(&mut block, open.offset)?;
                if read == 0 {
                    break;
                }
                open.offset += read as u64;
                budget = budget.saturating_sub(read as u64);
                self.pending
                    .push(&block[..read], |line| lines.push(line.to_vec()));
            }
            let caught_up = open.offset >= len;
            let next = match (rotated, newest) {
                (true, Some(newest)) => newest,
                _ => (open.name, open.path.clone()),
            };
            for line in lines {
                self.emit(&line, out);
            }
            if !caught_up {
                self.behind = true;
                return Ok(());
            }
            if !(rotated || replaced) {
                return Ok(());
            }
            if let Some(rest) = self.pending.take() {
                self.emit(&rest, out);
            }
            self.open = Some(OpenFile::open(next)?);
        }
    }
}

/// The merged tail of several roles' log files.
#[derive(Debug)]
pub struct Tail {
    followers: Vec<Follower>,
}

impl Tail {
    /// The last `n` lines of all `roles` together, ordered by time, and a tail that follows
    /// on from right after them.
    pub fn open(dir: &Path, roles: &[&'static str], n: usize) -> io::Result<(Self, Vec<LogLine>)> {
        let mut followers = Vec::with_capacity(roles.len());
        let mut streams = Vec::with_capacity(roles.len());
        for role in roles {
            let (follower, lines) = Follower::start(dir, role, n)?;
            followers.push(follower);
            streams.push(lines);
        }
        let mut backlog = merge(streams);
        if backlog.len() > n {
            backlog.drain(..backlog.len() - n);
        }
        Ok((Self { followers }, backlog))
    }

    /// The lines completed since the last call, ordered by time.
    pub fn poll(&mut self) -> io::Result<Vec<LogLine>> {
        let mut streams = Vec::with_capacity(self.followers.len());
        for follower in &mut self.followers {
            let mut lines = Vec::new();
            follower.poll(&mut lines)?;
            streams.push(lines);
        }
        Ok(merge(streams))
    }

    /// The last poll left lines unread (it reads a bounded amount): poll again without waiting.
    pub fn behind(&self) -> bool {
        self.followers.iter().any(|f| f.behind)
    }
}

/// The names of `role`'s log files in `dir`, oldest first (for tests).
#[cfg(test)]
pub(crate) fn file_names(dir: &Path, role: &str) -> Vec<String> {
    role_files(dir, role)
        .expect("files")
        .iter()
        .map(|(_, path)| {
            path.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open log");
        f.write_all(text.as_bytes()).expect("write log");
    }

    fn texts(lines: &[LogLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| format!("{}:{}", l.role, l.line))
            .collect()
    }

    fn text_line(role: &str, second: u32, message: &str) -> String {
        format!("{role}[1] 2026-03-01T10:00:{second:02}.000000Z  INFO bindery: {message}\n")
    }

    #[test]
    fn the_backlog_is_the_last_lines_of_both_roles_in_time_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let web = dir.path().join("web.2026-03-01.log");
        let worker = dir.path().join("worker.2026-03-01.log");
        for s in [1, 3, 5, 7] {
            append(&web, &text_line("web", s, &format!("w{s}")));
        }
        for s in [2, 4, 6] {
            append(&worker, &text_line("worker", s, &format!("k{s}")));
        }
        // A line with no timestamp of its own stays after the line it belongs to.
        append(&worker, "   at src/main.rs:1\n");
        let (_, backlog) = Tail::open(dir.path(), &["web", "worker"], 4).expect("open");
        let got: Vec<&str> = backlog
            .iter()
            .map(|l| l.line.rsplit(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(got, ["w5", "k6", "src/main.rs:1", "w7"]);
        assert_eq!(
            backlog[0].timestamp.as_deref(),
            Some("2026-03-01T10:00:05.000000Z")
        );
        assert_eq!(backlog[2].timestamp, None);
        assert_eq!(backlog[2].role, "worker");
    }

    #[test]
    fn backlog_reads_backwards_across_blocks_and_older_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = dir.path().join("web.2026-02-28.log");
        let new = dir.path().join("web.2026-03-01.log");
        // Enough lines that the newest file spans several blocks.
        let long = "x".repeat(300);
        for i in 0..400 {
            append(&new, &format!("line {i} {long}\n"));
        }
        append(&old, "old 1\nold 2\nold 3 without newline");
        let (_, backlog) = Tail::open(dir.path(), &["web"], 3).expect("open");
        let got: Vec<String> = backlog.iter().map(|l| l.line[..8].to_owned()).collect();
        assert_eq!(got, ["line 397", "line 398", "line 399"]);

        let (_, backlog) = Tail::open(dir.path(), &["web"], 402).expect("open");
        assert_eq!(backlog.len(), 402);
        assert_eq!(backlog[0].line, "old 2");
        assert_eq!(backlog[1].line, "old 3 without newline");
        assert!(backlog[2].line.starts_with("line 0 "));
    }

    #[test]
    fn a_partial_line_is_passed_on_once_complete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let web = dir.path().join("web.2026-03-01.log");
        append(&web, "done\nhalf");
        let (mut tail, backlog) = Tail::open(dir.path(), &["web"], 10).expect("open");
        assert_eq!(texts(&backlog), ["web:done"]);
        assert!(tail.poll().expect("poll").is_empty());
        append(&web, " of a line");
        assert!(tail.poll().expect("poll").is_empty(), "not complete yet");
        append(&web, "\nnext\nand a ");
        assert_eq!(
            texts(&tail.poll().expect("poll")),
            ["web:half of a line", "web:next"]
        );
        append(&web, "last\n");
        assert_eq!(texts(&tail.poll().expect("poll")), ["web:and a last"]);
    }

    #[test]
    fn following_crosses_daily_rotation_and_a_role_that_starts_later() {
        let dir = tempfile::tempdir().expect("tempdir");
        let day1 = dir.path().join("web.2026-03-01.log");
        append(&day1, "a\n");
        let (mut tail, _) = Tail::open(dir.path(), &["web", "worker"], 10).expect("open");
        // The last lines of the old day, then the new day's file.
        append(&day1, "b\nunterminated");
        append(&dir.path().join("web.2026-03-02.log"), "c\n");
        append(&dir.path().join("worker.2026-03-02.log"), "w\n");
        assert_eq!(
            texts(&tail.poll().expect("poll")),
            ["web:b", "web:unterminated", "web:c", "worker:w"]
        );
        append(&dir.path().join("web.2026-03-02.log"), "d\n");
        assert_eq!(texts(&tail.poll().expect("poll")), ["web:d"]);
    }

    #[test]
    fn a_days_further_parts_come_after_its_first_file_and_before_the_next_day() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            "web.2026-03-02.log",
            "web.2026-03-01.10.log",
            "web.2026-03-01.2.log",
            "web.2026-03-01.log",
            "web.2026-03-01.0.log",
            "web.2026-3-01.log",
            "web.2026-03-01..log",
            "worker.2026-03-01.log",
        ] {
            append(&dir.path().join(name), "x\n");
        }
        let names = file_names(dir.path(), "web");
        assert_eq!(
            names,
            [
                "web.2026-03-01.log",
                "web.2026-03-01.2.log",
                "web.2026-03-01.10.log",
                "web.2026-03-02.log"
            ]
        );
        // A follower on the day's first file moves on to its next part.
        let (mut tail, _) = Tail::open(dir.path(), &["web"], 0).expect("open");
        append(&dir.path().join("web.2026-03-02.1.log"), "later\n");
        assert_eq!(texts(&tail.poll().expect("poll")), ["web:later"]);
    }

    #[test]
    fn following_survives_truncation_and_a_replaced_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let web = dir.path().join("web.2026-03-01.log");
        append(&web, "one\ntwo\n");
        let (mut tail, _) = Tail::open(dir.path(), &["web"], 10).expect("open");
        std::fs::write(&web, "").expect("truncate");
        append(&web, "3\n");
        assert_eq!(texts(&tail.poll().expect("poll")), ["web:3"]);
        std::fs::remove_file(&web).expect("remove");
        append(&web, "fresh file, longer than the old one\n");
        assert_eq!(
            texts(&tail.poll().expect("poll")),
            ["web:fresh file, longer than the old one"]
        );
    }

    #[test]
    fn long_lines_are_cut_and_a_large_backlog_stays_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let web = dir.path().join("web.2026-03-01.log");
        append(&web, &format!("{}\nshort\n", "y".repeat(MAX_LINE * 3)));
        let (mut tail, backlog) = Tail::open(dir.path(), &["web"], 10).expect("open");
        assert_eq!(backlog.len(), 2);
        assert_eq!(backlog[0].line.chars().count(), MAX_LINE + 1);
        assert!(backlog[0].line.ends_with('…'));
        append(&web, &format!("{}\n", "z".repeat(MAX_LINE * 2)));
        let lines = tail.poll().expect("poll");
        assert_eq!(lines[0].line.chars().count(), MAX_LINE + 1);

        // More than a poll's budget at once: read over several polls, nothing lost.
        let line = format!("{}\n", "q".repeat(999));
        append(&web, &line.repeat(3000));
        let mut got = 0;
        loop {
            got += tail.poll().expect("poll").len();
            if !tail.behind() {
                break;
            }
        }
        assert_eq!(got, 3000);
    }

    #[test]
    fn json_lines_carry_their_fields() {
        let dir = tempfile::tempdir().expect("tempdir");
        append(
            &dir.path().join("worker.2026-03-01.log"),
            "{\"role\":\"worker\",\"pid\":7,\"timestamp\":\"2026-03-01T10:00:00.5Z\",\"level\":\"INFO\",\"message\":\"worker ready\"}\n",
        );
        append(
            &dir.path().join("web.2026-03-01.log"),
            &text_line("web", 1, "later"),
        );
        let (_, backlog) = Tail::open(dir.path(), &["web", "worker"], 10).expect("open");
        assert_eq!(backlog[0].role, "worker");
        let fields = backlog[0].fields.as_ref().expect("fields");
        assert_eq!(fields["message"], "worker ready");
        assert_eq!(
            backlog[0].timestamp.as_deref(),
            Some("2026-03-01T10:00:00.5Z")
        );
        assert_eq!(backlog[1].role, "web");
        assert!(backlog[1].fields.is_none());
        // Unrelated files in the directory are not logs of a role.
        append(&dir.path().join("web.log.bak"), "x\n");
        assert_eq!(role_files(dir.path(), "web").expect("files").len(), 1);
    }
}
