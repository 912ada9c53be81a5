//! A provider entry's gateway settings: `headers` and `query` added to every request and the
//! header that carries the key (`auth_header`), for gateways (Helicone, Portkey) and Azure OpenAI.
//!
//! A value may name environment variables as `${NAME}`, replaced when the provider is opened (an
//! unset or empty variable is an error naming it and the entry); `$$` writes one `$`. A value that
//! names a variable is secret, and so is any value whose name looks secret
//! ([`claij_backends::http::is_secret_name`]: `Helicone-Auth`, `x-portkey-api-key`, ...): secret
//! values are shown as `***` by `config show`, sent as sensitive headers and scrubbed from errors.
//! Names and literal values are checked when the file is read.

use std::ffi::OsString;
use std::fmt;

use crate::error::{Error, Result};
use claij_backends::HttpConfig;
use claij_backends::http::{Extra, check_header_name, check_header_value, is_secret_name};
use claij_backends::redact::MARKER;
use toml::Value;

use super::{Fail, as_str, as_table};

/// `headers`, `query` and `auth_header` of one provider entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gateway {
    /// Headers added to every request, in the file's order.
    pub headers: Vec<Setting>,
    /// Query parameters added to every request's URL, in the file's order.
    pub query: Vec<Setting>,
    /// The header that carries the key, bare; `None`: the provider's own.
    pub auth_header: Option<String>,
}

/// One header or query parameter: its name and its value, which may name variables.
#[derive(Clone, PartialEq, Eq)]
pub struct Setting {
    /// The header's or parameter's name.
    pub name: String,
    parts: Vec<Part>,
    secret: bool,
}

/// A piece of a value: text as written, or a variable's name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(String),
}

/// Which of an entry's tables a setting is in.
#[derive(Clone, Copy)]
enum Table {
    Headers,
    Query,
}

impl Gateway {
    /// Whether the entry sets anything of a gateway.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.query.is_empty() && self.auth_header.is_none()
    }

    /// Reads one of the entry's gateway keys (`headers`, `query`, `auth_header`) at `keys`.
    pub(super) fn read(&mut self, value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<()> {
        match keys.last().copied() {
            Some("headers") => self.headers = read_table(value, keys, Table::Headers, fail)?,
            Some("query") => self.query = read_table(value, keys, Table::Query, fail)?,
            _ => {
                let name = as_str(value, keys, fail)?;
                check_header_name(name).map_err(|problem| fail(keys, &problem.to_string()))?;
                self.auth_header = Some(name.to_owned());
            }
        }
        if let Some(name) = &self.auth_header
            && let Some(header) = self.headers.iter().find(|h| h.same_header(name))
        {
            let mut at = keys[..keys.len() - 1].to_vec();
            at.extend(["headers", header.name.as_str()]);
            let message = format!("auth_header puts the key in `{name}`: drop this header");
            return Err(fail(&at, &message));
        }
        Ok(())
    }
}

impl Gateway {
    /// `config` with these headers, parameters and key header, each `${NAME}` replaced by the
    /// variable `var` gives. `entry` is the provider entry's name, for errors.
    ///
    /// # Errors
    ///
    /// A variable that is unset, empty or not UTF-8, or whose value cannot be sent in its header:
    /// `providers.ENTRY.headers.NAME: VAR is not set`. The value itself is never shown.
    pub fn apply(
        &self,
        entry: &str,
        mut config: HttpConfig,
        var: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<HttpConfig> {
        for header in &self.headers {
            let extra = header.resolve(entry, Table::Headers, var)?;
            config = config.with_extra_header(extra);
        }
        for param in &self.query {
            let extra = param.resolve(entry, Table::Query, var)?;
            config = config.with_extra_query(extra);
        }
        if let Some(name) = &self.auth_header {
            config = config.with_auth_header(name.clone());
        }
        Ok(config)
    }
}

impl Setting {
    /// The variables the value names, in order.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Var(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The value for `config show`: `***` when secret, else the text as written.
    pub fn shown(&self) -> String {
        if self.secret {
            return MARKER.to_owned();
        }
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.replace('$', "$$"),
                Part::Var(name) => format!("${{{name}}}"),
            })
            .collect()
    }

    /// Whether this is the header `name` (header names are case-insensitive).
    fn same_header(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }

    /// The value with its variables read, as the backend takes it.
    fn resolve(
        &self,
        entry: &str,
        table: Table,
        var: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Extra> {
        let at = format!("providers.{entry}.{}.{}", table.key(), self.name);
        let mut value = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => value.push_str(text),
                Part::Var(name) => {
                    let read = var(name).filter(|v| !v.is_empty());
                    let read = read.ok_or_else(|| {
                        Error::key(format!(
                            "{at}: {name} is not set: export it or change the configuration"
                        ))
                    })?;
                    let read = read
                        .into_string()
                        .map_err(|_| Error::key(format!("{at}: {name} is not valid UTF-8")))?;
                    if matches!(table, Table::Headers) && check_header_value(&read).is_err() {
                        return Err(Error::config(format!(
                            "{at}: {name} has characters HTTP forbids in a header (a line break?)"
                        )));
                    }
                    value.push_str(&read);
                }
            }
        }
        Ok(if self.secret {
            Extra::secret(self.name.clone(), value)
        } else {
            Extra::new(self.name.clone(), value)
        })
    }
}

impl fmt::Debug for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Setting")
            .field("name", &self.name)
            .field("value", &self.shown())
            .finish()
    }
}

impl Table {
    fn key(self) -> &'static str {
        match self {
            Table::Headers => "headers",
            Table::Query => "query",
        }
    }
}

/// `headers` or `query`: a table of strings, each name and literal text checked.
fn read_table(value: &Value, keys: &[&str], table: Table, fail: &Fail<'_>) -> Result<Vec<Setting>> {
    let mut settings = Vec::new();
    for (name, value) in as_table(value, keys, fail)? {
        let mut keys = keys.to_vec();
        keys.push(name);
        let keys = keys.as_slice();
        let text = as_str(value, keys, fail)?;
        let parts = parse_value(text).map_err(|e| fail(keys, &e))?;
        match table {
            Table::Headers => {
                check_header_name(name).map_err(|problem| fail(keys, &problem.to_string()))?;
                if settings.iter().any(|s: &Setting| s.same_header(name)) {
                    return Err(fail(keys, "the header is given twice (names ignore case)"));
                }
                for part in &parts {
                    if let Part::Text(text) = part {
                        check_header_value(text)
                            .map_err(|problem| fail(keys, &problem.to_string()))?;
                    }
                }
            }
            Table::Query if name.is_empty() => {
                return Err(fail(keys, "a query parameter needs a name"));
            }
            Table::Query => {}
        }
        let secret = is_secret_name(name) || parts.iter().any(|p| matches!(p, Part::Var(_)));
        settings.push(Setting {
            name: name.clone(),
            parts,
            secret,
        });
    }
    Ok(settings)
}

/// A value's parts: `${NAME}` is the variable NAME (letters, digits and `_`, not starting with a
/// digit), `$$` one `$`, anything else text.
fn parse_value(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        literal.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(after) = after.strip_prefix('$') {
            literal.push('$');
            rest = after;
        } else if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = inner.find('}') else {
                return Err("`${` without its `}` (write `$$` for a `$`)".to_owned());
            };
            let name = &inner[..end];
            if !is_var_name(name) {
                return Err(format!(
                    "`${{{name}}}`: a variable's name has letters, digits and `_`, and does not \
                     start with a digit"
                ));
            }
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(Part::Var(name.to_owned()));
            rest = &inner[end + 1..];
        } else {
            literal.push('$');
            rest = after;
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() || parts.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(parts)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
pub(super) mod tests;
