//! Where the runner's key goes in a model call (issue 46): in its provider's credential slot
//! (`providers::Slot`: `x-api-key`, `authorization: Bearer …`, Gemini's `x-goog-api-key` or
//! `key` query parameter) when the agent put its own route's placeholder there, whole, and
//! nowhere else. A placeholder of the session anywhere else in the request's head — another
//! header, another query parameter, the path — refuses the request, naming where it stood; the
//! body is never rewritten (a placeholder there stays a worthless string). Pure.
//! Not for: which provider a request is for (`egress::model`), what its answer may carry back
//! (`egress::scrub`).

use http::{HeaderMap, HeaderName, HeaderValue};

use super::providers::Slot;
use super::session::Route;

/// Where a placeholder stood that is not its provider's credential slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misplaced {
    /// `the header `anthropic-beta``, `the query parameter `q``, `the path`.
    pub place: String,
}

impl Misplaced {
    /// The refusal's words.
    pub fn message(&self, route: &Route) -> String {
        let slots: Vec<String> = route.provider.slots.iter().map(Slot::describe).collect();
        format!(
            "opentiger's proxy refused this request: a model key's placeholder stood in {}. The proxy puts {}'s key only in its credential slot ({}), on requests to {}; nowhere else",
            self.place,
            route.provider.name,
            slots.join(" or "),
            route.provider.authority()
        )
    }
}

/// Puts `route`'s keys in their slots of `headers` and `query` (the new query is returned);
/// refuses a placeholder in `path`, in another header or another query parameter, or in a slot
/// but not as its whole value. `placeholders`: every placeholder of the session (another
/// route's is refused anywhere: its key never goes to this host). A provider with a
/// `key_slot` gets the key there instead of where the agent put the placeholder; a provider
/// that takes no key gets none (the placeholder is removed).
pub fn place_key(
    headers: &mut HeaderMap,
    path: &str,
    query: Option<&str>,
    route: &Route,
    placeholders: &[&str],
) -> Result<Option<String>, Misplaced> {
    let holds = |text: &[u8]| {
        placeholders
            .iter()
            .any(|p| memchr::memmem::find(text, p.as_bytes()).is_some())
    };
    if holds(path.as_bytes()) {
        return Err(Misplaced {
            place: "the path".to_string(),
        });
    }
    let elsewhere = route.provider.key_slot.clone();
    // The key whose placeholder was found, when it goes elsewhere (or nowhere).
    let mut moved: Option<&str> = None;
    let names: Vec<HeaderName> = headers.keys().cloned().collect();
    for name in names {
        let values: Vec<HeaderValue> = headers.get_all(&name).iter().cloned().collect();
        if !values.iter().any(|v| holds(v.as_bytes())) {
            continue;
        }
        let mut placed = Vec::with_capacity(values.len());
        for value in values {
            if !holds(value.as_bytes()) {
                placed.push(value);
                continue;
            }
            let (slot, key) = route
                .provider
                .slots
                .iter()
                .find_map(|slot| in_header_slot(slot, &name, &value, route).map(|k| (slot, k)))
                .ok_or_else(|| Misplaced {
                    place: format!("the header `{}`", shown(name.as_str())),
                })?;
            match (&elsewhere, key) {
                (None, key) if !key.is_empty() => placed.extend(header_value(slot, key)),
                _ => moved = Some(key),
            }
        }
        headers.remove(&name);
        for value in placed {
            headers.append(name.clone(), value);
        }
    }
    let mut params = Vec::new();
    for param in query.into_iter().flat_map(|q| q.split('&')) {
        if !holds(param.as_bytes()) {
            params.push(param.to_string());
            continue;
        }
        let (name, value) = param.split_once('=').unwrap_or((param, ""));
        let key = route.provider.slots.iter().find_map(|slot| match slot {
            Slot::Query(slot) if slot == name => key_for(route, value),
            _ => None,
        });
        match (key, &elsewhere) {
            (Some(key), None) if !key.is_empty() => {
                params.push(format!("{name}={}", percent_encoded(key)))
            }
            (Some(key), _) => moved = Some(key),
            (None, _) => {
                return Err(Misplaced {
                    place: format!("the query parameter `{}`", shown(name)),
                })
            }
        }
    }
    if let (Some(key), Some(slot)) = (moved.filter(|k| !k.is_empty()), &elsewhere) {
        let header = match slot {
            Slot::Query(name) => {
                params.push(format!("{name}={}", percent_encoded(key)));
                None
            }
            Slot::Header(name) => HeaderName::from_bytes(name.as_bytes()).ok(),
            Slot::Bearer => Some(http::header::AUTHORIZATION),
        };
        if let (Some(header), Some(value)) = (header, header_value(slot, key)) {
            headers.insert(header, value);
        }
    }
    Ok((query.is_some() || !params.is_empty()).then(|| params.join("&")))
}

/// The key, when header `name` holding `value` is `slot` with one of `route`'s placeholders
/// whole.
fn in_header_slot<'a>(
    slot: &Slot,
    name: &HeaderName,
    value: &HeaderValue,
    route: &'a Route,
) -> Option<&'a str> {
    let text = value.to_str().ok()?;
    match slot {
        Slot::Header(slot) if name.as_str() == slot => key_for(route, text),
        Slot::Bearer if name == http::header::AUTHORIZATION => {
            let (scheme, token) = text.split_once(' ')?;
            if !scheme.eq_ignore_ascii_case("bearer") {
                return None;
            }
            key_for(route, token)
        }
        Slot::Header(_) | Slot::Bearer | Slot::Query(_) => None,
    }
}

/// `key` as the value of a header `slot`, marked sensitive.
fn header_value(slot: &Slot, key: &str) -> Option<HeaderValue> {
    let text = match slot {
        Slot::Bearer => format!("Bearer {key}"),
        Slot::Header(_) | Slot::Query(_) => key.to_string(),
    };
    let mut value = HeaderValue::from_str(&text).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The key whose placeholder `text` is, whole.
fn key_for<'a>(route: &'a Route, text: &str) -> Option<&'a str> {
    route
        .keys
        .iter()
        .find(|(_, placeholder, _)| placeholder == text)
        .map(|(_, _, key)| key.as_str())
}

pub(super) fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A name the agent chose, as data in a code span.
fn shown(text: &str) -> String {
    text.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_graphic() && c != '`' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::providers::by_route;
    use super::*;

    fn route(name: &str, keys: &[(&str, &str)]) -> Route {
        Route {
            provider: by_route(name).unwrap().clone(),
            keys: keys
                .iter()
                .map(|(p, k)| ("VAR".to_string(), p.to_string(), k.to_string()))
                .collect(),
        }
    }

    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a str,
        Option<&'a str>,
        Result<(&'a [(&'a str, &'a str)], Option<&'a str>), &'a str>,
    );

    #[test]
    fn the_key_goes_in_its_slot_and_nowhere_else() {
        const P: &str = "opentiger-placeholder-aa";
        const OTHER: &str = "opentiger-placeholder-bb";
        let cases: &[Case] = &[
            // (route, request headers, path, query, headers and query forwarded | refused at)
            (
                "anthropic",
                &[("x-api-key", P), ("anthropic-version", "2023-06-01")],
                "/v1/messages",
                Some("beta=true"),
                Ok((
                    &[
                        ("x-api-key", "sk-ant-K"),
                        ("anthropic-version", "2023-06-01"),
                    ],
                    Some("beta=true"),
                )),
            ),
            (
                "anthropic",
                &[("authorization", "bearer opentiger-placeholder-aa")],
                "/v1/messages",
                None,
                Ok((&[("authorization", "Bearer sk-ant-K")], None)),
            ),
            (
                "anthropic",
                &[("x-api-key", P), ("anthropic-beta", P)],
                "/v1/messages",
                None,
                Err("the header `anthropic-beta`"),
            ),
            (
                "anthropic",
                &[("x-api-key", "opentiger-placeholder-aa,x")],
                "/v1/messages",
                None,
                Err("the header `x-api-key`"),
            ),
            (
                "anthropic",
                &[("x-api-key", P)],
                "/v1/messages",
                Some("a=opentiger-placeholder-aa"),
                Err("the query parameter `a`"),
            ),
            (
                "anthropic",
                &[("x-api-key", P)],
                "/v1/models/opentiger-placeholder-aa",
                None,
                Err("the path"),
            ),
            (
                "anthropic",
                &[("x-api-key", OTHER)],
                "/v1/messages",
                None,
                Err("the header `x-api-key`"),
            ),
            (
                "openai",
                &[("x-api-key", P)],
                "/v1/responses",
                None,
                Err("the header `x-api-key`"),
            ),
            (
                "openai",
                &[("authorization", "Basic opentiger-placeholder-aa")],
                "/v1/responses",
                None,
                Err("the header `authorization`"),
            ),
            (
                "gemini",
                &[],
                "/v1beta/models/g:generateContent",
                Some("alt=sse&key=opentiger-placeholder-aa"),
                Ok((&[], Some("alt=sse&key=sk-ant-K"))),
            ),
            (
                "gemini",
                &[("x-goog-api-key", P)],
                "/v1beta/models",
                None,
                Ok((&[("x-goog-api-key", "sk-ant-K")], None)),
            ),
            (
                "gemini",
                &[],
                "/v1beta/models",
                Some("key=x&q=opentiger-placeholder-aa"),
                Err("the query parameter `q`"),
            ),
        ];
        for (name, given, path, query, expected) in cases {
            let route = route(name, &[(P, "sk-ant-K")]);
            let mut headers = HeaderMap::new();
            for (k, v) in *given {
                headers.append(
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                );
            }
            let got = place_key(&mut headers, path, *query, &route, &[P, OTHER]);
            match expected {
                Ok((sent, sent_query)) => {
                    let sent_query = sent_query.map(str::to_string);
                    assert_eq!(got, Ok(sent_query), "{name} {given:?}");
                    let mut forwarded: Vec<(String, String)> = headers
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
                        .collect();
                    let mut sent: Vec<(String, String)> = sent
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                    forwarded.sort();
                    sent.sort();
                    assert_eq!(forwarded, sent, "{name} {given:?}");
                }
                Err(place) => {
                    let refused = got.unwrap_err();
                    assert_eq!(refused.place, *place, "{name} {given:?}");
                    let words = refused.message(&route);
                    assert!(
                        !words.contains("sk-ant-K") && words.contains(place),
                        "{words}"
                    );
                }
            }
        }
    }
}
