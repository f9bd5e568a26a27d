//! `bindery healthcheck`: asks this machine's web server for `/healthz`, for a container's
//! `HEALTHCHECK`, whose image has no curl or shell to do it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::ExitCode;
use std::time::Duration;

use crate::config::Config;

/// How long the request may take; a container runtime's own timeout is usually 30 s.
const TIMEOUT: Duration = Duration::from_secs(5);

pub async fn run(config: &Config) -> ExitCode {
    let url = format!("http://{}/healthz", local_address(config.host, config.port));
    let result = async {
        reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()?
            .get(&url)
            .send()
            .await
    }
    .await;
    match result {
        Ok(response) if response.status().is_success() => ExitCode::SUCCESS,
        Ok(response) => {
            eprintln!("bindery healthcheck: {url} answered {}", response.status());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bindery healthcheck: {url} did not answer: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Where a process on this machine reaches the server bound to `host:port`: the loopback
/// address when it listens on every address, else that address.
fn local_address(host: IpAddr, port: u16) -> String {
    match host {
        IpAddr::V4(ip) if ip.is_unspecified() => format!("{}:{port}", Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => format!("[{}]:{port}", Ipv6Addr::LOCALHOST),
        IpAddr::V4(ip) => format!("{ip}:{port}"),
        IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_address_is_reached_through_loopback() {
        assert_eq!(
            local_address(IpAddr::from([0, 0, 0, 0]), 8080),
            "127.0.0.1:8080"
        );
        assert_eq!(local_address("::".parse().expect("ip"), 80), "[::1]:80");
        assert_eq!(
            local_address(IpAddr::from([10, 1, 2, 3]), 9000),
            "10.1.2.3:9000"
        );
    }
}
