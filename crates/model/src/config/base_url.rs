//! A provider's base URL (`providers.<name>.base_url`, issue 50) read into the parts the proxy
//! routes by: https or not, host, port, a path of plain segments; and whether the host is this
//! machine's loopback (plain http goes only there unless a provider says `allow_http`).
//! Not for: what a provider may be (`providers`), routing (`egress::providers`).

/// The parts of a base URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseUrl {
    pub https: bool,
    /// Lower case; an IPv6 address in brackets.
    pub host: String,
    pub port: Option<u16>,
    /// Without a trailing `/`; empty for the root.
    pub path: String,
}

impl BaseUrl {
    /// Parses `text`; the problem in words otherwise.
    pub fn parse(text: &str) -> Result<BaseUrl, String> {
        let uri: http::Uri = text
            .trim()
            .parse()
            .map_err(|_| format!("`{text}` is not a URL"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(format!("`{text}` is not an http or https URL")),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| format!("`{text}` names no host"))?;
        if authority.as_str().contains('@') {
            return Err("a base URL holds no user name or password (a key goes in `key:`)".into());
        }
        if uri.query().is_some() || text.contains('#') {
            return Err("a base URL has no query or fragment (parameters go in `query:`)".into());
        }
        let host = authority.host().to_ascii_lowercase();
        if host.is_empty() {
            return Err(format!("`{text}` names no host"));
        }
        let path = uri.path().trim_end_matches('/').to_string();
        let segment_ok = |s: &str| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
        };
        if !path.is_empty() && !path[1..].split('/').all(segment_ok) {
            return Err(format!(
                "`{}` is not a path the proxy can route (letters, digits and `-._~` between slashes)",
                uri.path()
            ));
        }
        Ok(BaseUrl {
            https,
            host,
            port: authority.port_u16(),
            path,
        })
    }

    /// Whether the host is this machine's loopback.
    pub fn is_loopback(&self) -> bool {
        if self.host == "localhost" {
            return true;
        }
        let bare = self.host.trim_start_matches('[').trim_end_matches(']');
        bare.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
    }

    /// `host` or `host:port`, as a `host` header says it.
    pub fn authority(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }
}
