//! What unit tests share: the way to the test manuscripts, test pictures, and a database of
//! their own.

use std::path::PathBuf;

use crate::config::DatabaseUrl;
use crate::storage::Database;

// Shared with the integration tests (`tests/it`): where the test manuscripts are, what a test
// needs from outside the crate, and EPUBCheck.
#[path = "../tests/support/corpus.rs"]
pub mod corpus;
#[path = "../tests/support/epubcheck.rs"]
pub mod epubcheck;
#[allow(dead_code)] // the servers are for the integration tests
#[path = "../tests/support/need.rs"]
pub mod need;

/// A migrated SQLite database of the test's own, in a directory that lives as long as the
/// `TempDir` returned with it.
pub async fn sqlite_database() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = DatabaseUrl::Sqlite {
        path: dir.path().join("bindery.db"),
    };
    let db = Database::connect(&url, 2).await.expect("connect");
    db.migrate().await.expect("migrate");
    (dir, db)
}

/// A database of each backend the tests can reach, migrated up to `version`, with the
/// migrator that takes it on. PostgreSQL only under `scripts/test`.
pub async fn databases(
    version: i64,
    dir: &std::path::Path,
) -> Vec<(Database, sqlx::migrate::Migrator)> {
    let url = DatabaseUrl::Sqlite {
        path: dir.join("bindery.db"),
    };
    let sqlite = Database::connect(&url, 2).await.expect("connect");
    let Database::Sqlite(pool) = &sqlite else {
        unreachable!("opened SQLite")
    };
    let migrator = sqlx::migrate!("migrations/sqlite");
    migrator.run_to(version, pool).await.expect("migrate");
    let mut databases = vec![(sqlite, migrator)];
    let Ok(admin) = std::env::var("TEST_POSTGRES_URL") else {
        eprintln!("TEST_POSTGRES_URL is not set: PostgreSQL is left out (scripts/test sets it)");
        return databases;
    };
    use sqlx::Connection;
    let name = format!("bindery_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&admin).await.expect("connect");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("create database");
    let mut url = url::Url::parse(&admin).expect("TEST_POSTGRES_URL");
    url.set_path(&name);
    let pool = sqlx::PgPool::connect(url.as_str()).await.expect("connect");
    let migrator = sqlx::migrate!("migrations/postgres");
    migrator.run_to(version, &pool).await.expect("migrate");
    databases.push((Database::Postgres(pool), migrator));
    databases
}

/// A file of the committed test fixtures (`tests/fixtures/`, described in its README).
pub fn fixture(relative: &str) -> PathBuf {
    corpus::fixtures().join(relative)
}

/// A text fixture's contents.
pub fn fixture_text(relative: &str) -> String {
    std::fs::read_to_string(fixture(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// A 300×200 JPEG, left half red and right half blue, stored with EXIF orientation 6 ("turn
/// 90° clockwise to view"), as a phone stores a portrait photo. Upright it is 200×300, red
/// on top.
pub fn sideways_photo() -> Vec<u8> {
    use image::codecs::jpeg::JpegEncoder;
    use image::{ImageEncoder, Rgb, RgbImage};
    let picture = RgbImage::from_fn(300, 200, |x, _| {
        if x < 150 {
            Rgb([220, 0, 0])
        } else {
            Rgb([0, 0, 220])
        }
    });
    let exif: Vec<u8> = [
        &b"II*\0"[..],
        &8u32.to_le_bytes(),
        &1u16.to_le_bytes(),
        &0x0112u16.to_le_bytes(),
        &3u16.to_le_bytes(),
        &1u32.to_le_bytes(),
        &6u16.to_le_bytes(),
        &0u16.to_le_bytes(),
        &0u32.to_le_bytes(),
    ]
    .concat();
    let mut jpeg = Vec::new();
    let mut encoder = JpegEncoder::new_with_quality(&mut jpeg, 95);
    encoder.set_exif_metadata(exif).expect("test setup");
    encoder
        .write_image(picture.as_raw(), 300, 200, image::ExtendedColorType::Rgb8)
        .expect("test setup");
    jpeg
}

/// Asserts that `bytes` is [`sideways_photo`] turned upright: 200×300, red on top, and no
/// orientation note left to turn it again.
pub fn assert_upright(bytes: &[u8]) {
    use image::ImageDecoder;
    use image::metadata::Orientation;
    let upright = image::load_from_memory(bytes).expect("decodes").to_rgb8();
    assert_eq!(upright.dimensions(), (200, 300), "portrait now");
    let top = upright.get_pixel(100, 40);
    let bottom = upright.get_pixel(100, 260);
    assert!(top[0] > 150 && top[2] < 80, "top is red: {top:?}");
    assert!(
        bottom[2] > 150 && bottom[0] < 80,
        "bottom is blue: {bottom:?}"
    );
    let mut decoder = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .expect("test setup")
        .into_decoder()
        .expect("test setup");
    assert_eq!(
        decoder.orientation().expect("orientation"),
        Orientation::NoTransforms
    );
}
