//! The service as its operator sees it: jobs, queues, workers, schedules and tokens. The admin
//! API (`web::api::admin`) answers with these views and the admin pages (`web::pages::admin`)
//! show them; neither reaches into the other.

pub(crate) mod jobs;
pub(crate) mod queues;
pub(crate) mod schedules;
pub(crate) mod tokens;
pub(crate) mod workers;

use crate::web::error::ApiError;

/// A query parameter, with an empty value (an unset form field) counting as absent.
pub(crate) fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// An integer query parameter within `range`, or a 400 naming it.
pub(crate) fn integer(
    name: &'static str,
    value: &Option<String>,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, ApiError> {
    let Some(value) = given(value) else {
        return Ok(None);
    };
    match value.parse::<i64>() {
        Ok(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(ApiError::bad_request(
            "invalid_parameter",
            format!(
                "{name} must be a whole number from {} to {} (got {value:?}).",
                range.start(),
                range.end()
            ),
        )
        .field(name)),
    }
}
