//! Where the proxy sends what it lets through: the model APIs over https (rustls, the system's
//! roots), allowed hosts through CONNECT tunnels or plain http — and, for tests and local
//! stand-ins only, host names mapped to a port on this machine's loopback, reached over plain
//! http (`OPENTIGER_EGRESS_RESOLVE=api.anthropic.com=127.0.0.1:4000,registry.test=127.0.0.1:5000`).
//!
//! Not here: deciding what may go through (`proxy`, `session`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use http::{header, HeaderMap, HeaderName};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// The variable mapping host names to loopback ports (tests, local stand-ins).
pub const RESOLVE_VAR: &str = "OPENTIGER_EGRESS_RESOLVE";

use super::reply::ProxyBody;

pub type Upstream = Client<HttpsConnector<HttpConnector>, ProxyBody>;

/// The client every session shares (made on first use, inside the proxy's runtime).
pub fn client() -> &'static Upstream {
    static CLIENT: OnceLock<Upstream> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let connector = match builder.with_provider_and_native_roots(provider.clone()) {
            Ok(b) => b.https_or_http().enable_http1().build(),
            Err(e) => {
                tracing::warn!("no system certificates for the proxy's https ({e}): model APIs and allowed hosts over https will fail");
                let config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .expect("ring supports rustls's default protocol versions")
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth();
                hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(config)
                    .https_or_http()
                    .enable_http1()
                    .build()
            }
        };
        Client::builder(TokioExecutor::new()).build(connector)
    })
}

/// Headers of one connection, not of the message (RFC 9110 §7.6.1), removed before a request
/// or an answer is passed on; a websocket upgrade keeps its `connection` and `upgrade`.
pub fn strip_hop_by_hop(headers: &mut HeaderMap, websocket: bool) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .filter(|n| !(websocket && n == header::UPGRADE))
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        "proxy-connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
    ] {
        headers.remove(name);
    }
    if !websocket {
        headers.remove(header::CONNECTION);
        headers.remove(header::UPGRADE);
    }
}

/// Whether a request asks for a websocket.
pub fn is_websocket(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Host names mapped to loopback addresses by [`RESOLVE_VAR`]; entries naming anything but
/// loopback are ignored (said once).
pub fn overrides() -> &'static BTreeMap<String, SocketAddr> {
    static MAP: OnceLock<BTreeMap<String, SocketAddr>> = OnceLock::new();
    MAP.get_or_init(|| parse_overrides(&std::env::var(RESOLVE_VAR).unwrap_or_default()))
}

fn parse_overrides(text: &str) -> BTreeMap<String, SocketAddr> {
    let mut map = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let parsed = entry.split_once('=').and_then(|(host, addr)| {
            Some((
                host.trim().to_ascii_lowercase(),
                addr.trim().parse::<SocketAddr>().ok()?,
            ))
        });
        match parsed {
            Some((host, addr)) if addr.ip().is_loopback() => {
                map.insert(host, addr);
            }
            _ => tracing::warn!("{RESOLVE_VAR}: `{entry}` is not `host=127.0.0.1:port`; ignored"),
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_mapped() {
        let map = parse_overrides(
            "api.anthropic.com=127.0.0.1:4000, Registry.Test=[::1]:5000,evil=10.0.0.1:80,junk",
        );
        assert_eq!(
            map.keys().map(String::as_str).collect::<Vec<_>>(),
            ["api.anthropic.com", "registry.test"]
        );
    }
}
