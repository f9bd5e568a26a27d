//! Writing a role's log files in `LOG_DIR`: a file a day, and another part each time the day's
//! file reaches `LOG_MAX_FILE_SIZE`, keeping the newest `LOG_MAX_FILES` (see [`FileName`]).
//!
//! Written here rather than with `tracing-appender`'s roller, which rotates by time only, or
//! a size-rolling crate (`logroller`, `file-rotate`, `rolling-file`), which rotate by size or
//! by time and rename the files as they roll: a follower (`bindery logs --files`, the admin's
//! live log) holding the file open would then read a file that has become another.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;

use chrono::{NaiveDate, Utc};

use super::{FileName, role_files};

/// One role's files. It is the writer behind a `tracing_appender::non_blocking` thread, so
/// writes come one at a time.
pub struct Appender {
    dir: PathBuf,
    role: &'static str,
    max_size: u64,
    max_files: usize,
    open: Option<Open>,
}

struct Open {
    name: FileName,
    file: File,
    /// Bytes in the file, as this process knows them (another process may append as well).
    size: u64,
}

impl Appender {
    /// Creates `dir` if need be; the first write opens today's newest file.
    pub fn new(
        dir: PathBuf,
        role: &'static str,
        max_size: u64,
        max_files: usize,
    ) -> io::Result<Appender> {
        std::fs::create_dir_all(&dir)?;
        Ok(Appender {
            dir,
            role,
            max_size,
            max_files: max_files.max(1),
            open: None,
        })
    }

    /// The file a write of `len` bytes on `today` goes to: the open one while the day and the
    /// size allow, else the day's newest part with room, else a new part.
    fn file_for(&mut self, today: NaiveDate, len: u64) -> io::Result<&mut Open> {
        let fits = |open: &Open| open.size == 0 || open.size + len <= self.max_size;
        let keep = match &mut self.open {
            Some(open) if open.name.day == today && fits(open) => true,
            // Full as far as this process knows: another process sharing the file may have
            // rolled it already, or this one's count may be behind; the file says.
            Some(open) if open.name.day == today => {
                open.size = open.file.metadata()?.len();
                false
            }
            _ => false,
        };
        if !keep {
            let newest = role_files(&self.dir, self.role)?
                .last()
                .map(|(name, _)| *name)
                .filter(|name| name.day == today);
            let mut name = newest.unwrap_or(FileName {
                day: today,
                part: 0,
            });
            let mut open = self.open_file(name)?;
            if !fits(&open) {
                name.part += 1;
                open = self.open_file(name)?;
            }
            self.open = Some(open);
            self.prune()?;
        }
        Ok(self.open.as_mut().expect("opened above"))
    }

    fn open_file(&self, name: FileName) -> io::Result<Open> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(name.of(self.role)))?;
        let size = file.metadata()?.len();
        Ok(Open { name, file, size })
    }

    /// Deletes the oldest files beyond `max_files`.
    fn prune(&self) -> io::Result<()> {
        let files = role_files(&self.dir, self.role)?;
        let excess = files.len().saturating_sub(self.max_files);
        for (_, old) in &files[..excess] {
            match std::fs::remove_file(old) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}

impl Write for Appender {
    /// Takes one whole formatted line (the formatter writes each event at once), so a line is
    /// never split across two files.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let today = Utc::now().date_naive();
        let open = self.file_for(today, buf.len() as u64)?;
        open.file.write_all(buf)?;
        open.size += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.open {
            Some(open) => open.file.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &std::path::Path) -> Vec<String> {
        super::super::file_names(dir, "web")
    }

    #[test]
    fn a_full_file_rolls_to_the_next_part_and_the_oldest_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let day = Utc::now().date_naive().format("%Y-%m-%d").to_string();
        // Yesterday's files, and one from a process that ran earlier today.
        std::fs::write(dir.path().join("web.2000-01-01.log"), "old\n").expect("write");
        std::fs::write(dir.path().join(format!("web.{day}.log")), "earlier\n").expect("write");
        let mut files = Appender::new(dir.path().into(), "web", 20, 3).expect("appender");
        for n in 0..5 {
            files
                .write_all(format!("line {n} of ten\n").as_bytes())
                .expect("write");
        }
        files.flush().expect("flush");
        // The 8 bytes there and a 15-byte line pass the 20 allowed, and so do two lines: each
        // line begins a part, and only the newest 3 files are kept.
        assert_eq!(
            names(dir.path()),
            [
                format!("web.{day}.3.log"),
                format!("web.{day}.4.log"),
                format!("web.{day}.5.log")
            ]
        );
        let read = |part: u32| {
            std::fs::read_to_string(dir.path().join(format!("web.{day}.{part}.log"))).expect("read")
        };
        assert_eq!(read(5), "line 4 of ten\n");
        // A line longer than the limit still goes whole, alone in its file.
        files.write_all(&[b'x'; 50]).expect("write");
        assert_eq!(read(6).len(), 50);
        assert_eq!(names(dir.path()).len(), 3);
    }

    #[test]
    fn a_restarted_process_appends_to_the_days_newest_part() {
        let dir = tempfile::tempdir().expect("tempdir");
        let day = Utc::now().date_naive().format("%Y-%m-%d").to_string();
        std::fs::write(dir.path().join(format!("web.{day}.log")), "a\n").expect("write");
        std::fs::write(dir.path().join(format!("web.{day}.1.log")), "b\n").expect("write");
        let mut files = Appender::new(dir.path().into(), "web", 1000, 7).expect("appender");
        files.write_all(b"c\n").expect("write");
        let text = std::fs::read_to_string(dir.path().join(format!("web.{day}.1.log")));
        assert_eq!(text.expect("read"), "b\nc\n");
    }
}
