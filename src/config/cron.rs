//! Cron expressions, as the schedule variables (`SCHEDULE_PRUNE_JOBS`…) and the schedules' admin
//! API take them. The worker's schedules run them (`jobs::schedule`).

use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// Parses a cron expression with 5 fields (minute precision) or 6 (leading seconds).
pub fn parse_cron(expression: &str) -> Result<Cron, String> {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(expression)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_and_six_field_expressions_parse() {
        assert!(parse_cron("*/5 * * * *").is_ok());
        assert!(parse_cron("0 17 * * * *").is_ok());
        assert!(parse_cron("every tuesday").is_err());
    }
}
