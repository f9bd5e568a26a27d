//! The parsers of variables' values: text in, a value or the problem in words out. The
//! declaration that uses one names the variable, so that an error can name it too.

use std::fmt;
use std::net::IpAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;
use std::time::Duration;

use url::Url;

use super::Secret;

type Parsed<T> = Result<T, String>;

pub fn text(value: &str) -> Parsed<String> {
    Ok(value.to_owned())
}

pub fn secret(value: &str) -> Parsed<Secret<String>> {
    Ok(Secret::new(value.to_owned()))
}

pub fn path(value: &str) -> Parsed<PathBuf> {
    Ok(PathBuf::from(value))
}

/// A directory that exists, as the process sees it at start.
pub fn directory(value: &str) -> Parsed<PathBuf> {
    let path = PathBuf::from(value);
    if path.is_dir() {
        Ok(path)
    } else {
        Err(format!(
            "is not a directory this process can see: {value} (create it, or unset the variable)"
        ))
    }
}

pub fn port(value: &str) -> Parsed<u16> {
    value
        .parse()
        .map_err(|_| "is not a TCP port: use a whole number from 0 to 65535".to_owned())
}

pub fn ip(value: &str) -> Parsed<IpAddr> {
    value
        .parse()
        .map_err(|_| "is not an IP address to bind to".to_owned())
}

pub fn boolean(value: &str) -> Parsed<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("is not a boolean: use true or false".to_owned()),
    }
}

pub fn positive(value: &str) -> Parsed<NonZeroUsize> {
    value
        .parse()
        .map_err(|_| "is not a whole number of at least 1".to_owned())
}

/// A count of at least 1, as `usize`.
pub fn count(value: &str) -> Parsed<usize> {
    positive(value).map(NonZeroUsize::get)
}

/// A count of at least 1, as `u64`.
pub fn count64(value: &str) -> Parsed<u64> {
    count(value).map(|n| n as u64)
}

/// Sizes accept bytes (`1048576`) or units (`20MiB`, `500 KB`).
pub fn size(value: &str) -> Parsed<u64> {
    let parsed = value
        .parse::<u64>()
        .or_else(|_| value.parse::<bytesize::ByteSize>().map(|b| b.as_u64()))
        .map_err(|_| "is not a size: use bytes or a unit, like 20MiB".to_owned())?;
    if parsed == 0 {
        return Err("must be more than 0".to_owned());
    }
    Ok(parsed)
}

pub fn show_size(bytes: &u64) -> String {
    bytesize::ByteSize(*bytes).to_string()
}

/// Durations accept plain seconds (`25`) or units (`500ms`, `25s`, `5m`, `1h 30m`).
pub fn duration(value: &str) -> Parsed<Duration> {
    let parsed = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => humantime::parse_duration(value)
            .map_err(|_| "is not a duration: use seconds or a unit, like 25s or 5m".to_owned())?,
    };
    if parsed < Duration::from_millis(100) {
        return Err("is too short: use at least 100ms".to_owned());
    }
    Ok(parsed)
}

/// A cron expression, or `off` (`None`).
pub fn schedule(value: &str) -> Parsed<Option<String>> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    super::cron::parse_cron(value)
        .map_err(|e| format!("is not a cron expression ({e}); or use `off`"))?;
    Ok(Some(value.to_owned()))
}

pub fn show_schedule(cron: &Option<String>) -> String {
    cron.clone().unwrap_or_else(|| "off".to_owned())
}

pub fn http_url(value: &str) -> Parsed<Url> {
    match Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        Ok(_) => Err("must be an http:// or https:// URL".to_owned()),
        Err(e) => Err(format!("is not a valid URL ({e})")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

pub fn log_format(value: &str) -> Parsed<LogFormat> {
    match value.to_ascii_lowercase().as_str() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err("is not a log format: use `text` or `json`".to_owned()),
    }
}

impl super::variable::Show for LogFormat {
    fn show(&self) -> String {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
        .to_owned()
    }
}

/// Who a first single sign-on may be: the account that already has the provider's verified
/// address, or only someone who opened an invitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignUp {
    Email,
    Invitation,
}

pub fn sign_up(value: &str) -> Parsed<SignUp> {
    match value.to_ascii_lowercase().as_str() {
        "email" => Ok(SignUp::Email),
        "invitation" => Ok(SignUp::Invitation),
        _ => Err("is not a sign-up rule: use `email` or `invitation`".to_owned()),
    }
}

impl super::variable::Show for SignUp {
    fn show(&self) -> String {
        match self {
            SignUp::Email => "email",
            SignUp::Invitation => "invitation",
        }
        .to_owned()
    }
}

/// `N` requests per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub requests: NonZeroU32,
    pub period: Duration,
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.period.as_secs() {
            1 => "s",
            60 => "min",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.requests)
    }
}

/// `N/s`, `N/min`, `N/h`, or `off` (`None`).
pub fn rate_limit(value: &str) -> Parsed<Option<RateLimit>> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let problem = || "is not a rate: use N/s, N/min or N/h (or off)".to_owned();
    let (n, unit) = value.split_once('/').ok_or_else(problem)?;
    let requests = n.trim().parse::<NonZeroU32>().map_err(|_| problem())?;
    let period = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        _ => return Err(problem()),
    };
    Ok(Some(RateLimit { requests, period }))
}

pub fn show_rate_limit(rate: &Option<RateLimit>) -> String {
    rate.map_or_else(|| "off".to_owned(), |r| r.to_string())
}

/// `true`, `false`, or `detected` (`None`).
pub fn detected_or_boolean(value: &str) -> Parsed<Option<bool>> {
    if value.eq_ignore_ascii_case("detected") {
        return Ok(None);
    }
    boolean(value).map(Some)
}

pub fn show_detected(value: &Option<bool>) -> String {
    value.map_or_else(|| "detected".to_owned(), |p| p.to_string())
}

pub fn log_filter(value: &str) -> Parsed<String> {
    tracing_subscriber::EnvFilter::try_new(value)
        .map_err(|e| format!("is not a valid log filter ({e})"))?;
    Ok(value.to_owned())
}

pub fn language(value: &str) -> Parsed<String> {
    crate::language::normalize(value).ok_or_else(|| "is not a BCP 47 language tag".to_owned())
}

pub fn failpoint(value: &str) -> Parsed<super::Failpoint> {
    value.parse()
}

impl super::variable::Show for super::Failpoint {
    fn show(&self) -> String {
        self.to_string()
    }
}
