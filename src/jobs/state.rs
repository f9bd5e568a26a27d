//! A job's lifecycle state, as stored and as shown.
//!
//! The `state` column holds the lowercase name; rows decode it into [`JobState`] at the
//! boundary, so the rest of the program matches on the enum and a name the program does not
//! know is a decoding error rather than a string that silently compares unequal.

use std::fmt;

use serde::{Deserialize, Serialize};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Type};

/// Lifecycle states, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Available,
    /// Not due yet: delayed, waiting to retry, or snoozed.
    Scheduled,
    Waiting,
    Running,
    Completed,
    Discarded,
    Dead,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 8] = [
        JobState::Available,
        JobState::Scheduled,
        JobState::Waiting,
        JobState::Running,
        JobState::Completed,
        JobState::Discarded,
        JobState::Dead,
        JobState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Available => "available",
            JobState::Scheduled => "scheduled",
            JobState::Waiting => "waiting",
            JobState::Running => "running",
            JobState::Completed => "completed",
            JobState::Discarded => "discarded",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == s)
    }

    /// Finished for good (until an operator retries it).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Discarded | JobState::Dead | JobState::Cancelled
        )
    }

    /// Ended without success: what an operator may run again.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            JobState::Dead | JobState::Discarded | JobState::Cancelled
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so that column widths (`{:<10}`) apply as they do to a string.
        f.pad(self.as_str())
    }
}

impl<DB: Database> Type<DB> for JobState
where
    str: Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <str as Type<DB>>::type_info()
    }

    fn compatible(ty: &DB::TypeInfo) -> bool {
        <str as Type<DB>>::compatible(ty)
    }
}

impl<'r, DB: Database> Decode<'r, DB> for JobState
where
    &'r str: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <&'r str as Decode<'r, DB>>::decode(value)?;
        JobState::parse(text).ok_or_else(|| format!("unknown job state {text:?}").into())
    }
}

impl<'q, DB: Database> Encode<'q, DB> for JobState
where
    &'q str: Encode<'q, DB>,
{
    fn encode_by_ref(
        &self,
        buf: &mut <DB as Database>::ArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        let text: &'q str = self.as_str();
        <&'q str as Encode<'q, DB>>::encode_by_ref(&text, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for state in JobState::ALL {
            assert_eq!(JobState::parse(state.as_str()), Some(state));
            assert_eq!(state.to_string(), state.as_str());
            assert_eq!(
                serde_json::to_value(state).expect("serialize"),
                serde_json::Value::from(state.as_str())
            );
        }
        assert_eq!(JobState::parse("finished"), None);
        assert_eq!(format!("{:<10}|", JobState::Dead), "dead      |");
    }

    #[tokio::test]
    async fn an_unknown_stored_state_is_a_decoding_error() {
        let pool = sqlx::SqlitePool::connect("sqlite::memory:")
            .await
            .expect("connect");
        let known: JobState = sqlx::query_scalar("SELECT 'dead'")
            .fetch_one(&pool)
            .await
            .expect("decode");
        assert_eq!(known, JobState::Dead);
        let unknown = sqlx::query_scalar::<_, JobState>("SELECT 'finished'")
            .fetch_one(&pool)
            .await;
        assert!(
            matches!(unknown, Err(sqlx::Error::ColumnDecode { .. })),
            "{unknown:?}"
        );
        let bound: String = sqlx::query_scalar("SELECT $1")
            .bind(JobState::Cancelled)
            .fetch_one(&pool)
            .await
            .expect("bind");
        assert_eq!(bound, "cancelled");
    }
}
