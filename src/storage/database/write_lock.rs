//! Reading the kernel's table of locks for a SQLite write lock
//! ([`Database::write_locked_by`](super::Database::write_locked_by)): the supervisor asks, so
//! that a database its own stuck worker has locked is not taken for an outage.

/// Whether `/proc/locks` text lists a write lock of `pid` on file `inode` (covering byte
/// `byte`, if given). A held lock's line reads `1: POSIX  ADVISORY  WRITE 1234 fd:01:5678 120
/// 120`; a waiter's has `->` after its number, and is not held.
pub(super) fn write_lock_in(table: &str, pid: u32, inode: u64, byte: Option<u64>) -> bool {
    let pid = pid.to_string();
    table.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let covers = |byte: u64| {
            let start = fields.get(6).and_then(|s| s.parse::<u64>().ok());
            let end = fields.get(7).and_then(|e| {
                if *e == "EOF" {
                    Some(u64::MAX)
                } else {
                    e.parse().ok()
                }
            });
            start.zip(end).is_some_and(|(s, e)| s <= byte && byte <= e)
        };
        fields.get(1) != Some(&"->")
            && fields.get(3) == Some(&"WRITE")
            && fields.get(4) == Some(&pid.as_str())
            && fields
                .get(5)
                .and_then(|file| file.rsplit(':').next())
                .and_then(|i| i.parse::<u64>().ok())
                == Some(inode)
            && byte.is_none_or(covers)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Database;

    #[test]
    fn a_held_write_lock_is_found_and_a_waiter_or_a_reader_is_not() {
        let table = "1: POSIX  ADVISORY  WRITE 1234 fd:01:5678 120 120\n\
                     1: -> POSIX  ADVISORY  WRITE 999 fd:01:5678 120 120\n\
                     2: POSIX  ADVISORY  READ 777 fd:01:5678 128 128\n\
                     3: FLOCK  ADVISORY  WRITE 1234 fd:01:42 0 EOF\n";
        assert!(write_lock_in(table, 1234, 5678, Some(120)));
        assert!(!write_lock_in(table, 1234, 5678, Some(121)), "another byte");
        assert!(write_lock_in(table, 1234, 42, None), "flock counts too");
        assert!(
            write_lock_in(table, 1234, 42, Some(7)),
            "to the end of the file"
        );
        assert!(
            !write_lock_in(table, 999, 5678, None),
            "only waiting for it"
        );
        assert!(!write_lock_in(table, 777, 5678, None), "a read lock");
        assert!(!write_lock_in(table, 1234, 1, None), "another file");
    }

    #[tokio::test]
    async fn a_process_writing_to_the_database_is_seen_holding_its_lock() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        let me = std::process::id();
        assert!(!db.write_locked_by(me));
        let Database::Sqlite(pool) = &db else {
            unreachable!()
        };
        let mut tx = pool.begin().await.expect("begin");
        sqlx::query("INSERT INTO workers (id, hostname, pid, version, started_at, heartbeat_at) VALUES ('w', 'h', 1, 'v', 0, 0)")
            .execute(&mut *tx)
            .await
            .expect("insert");
        assert!(db.write_locked_by(me), "inside a write transaction");
        tx.commit().await.expect("commit");
        assert!(!db.write_locked_by(me), "after it");
    }
}
