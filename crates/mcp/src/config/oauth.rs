//! A server entry's `oauth` settings: the client claij authorizes as at that server.

use std::fmt;

use serde_json::Value;

use super::config_error;
use crate::error::Error;

/// `"oauth": {"clientId": ..., "clientSecret": ..., "scopes": [...], "clientMetadataUrl": ...}` of
/// a streamable-HTTP server entry: each given field overrides the client's own OAuth settings for
/// that server. The secret never shows in `Debug` output or errors.
#[derive(Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// A client ID registered beforehand at the server's authorization server.
    pub client_id: Option<String>,
    /// The secret of [`OAuthSettings::client_id`], for a confidential client (`${VAR}` is the
    /// environment variable's value when the application expands it; claij's CLI does).
    pub client_secret: Option<String>,
    /// The scopes to ask for (default: those the server's challenge or metadata names).
    pub scopes: Vec<String>,
    /// The HTTPS URL of a client ID metadata document.
    pub client_metadata_url: Option<String>,
}

impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self
                    .client_secret
                    .as_ref()
                    .map(|_| claij_backends::redact::MARKER),
            )
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish()
    }
}

impl OAuthSettings {
    /// Reads the `oauth` value of the entry at `pointer`, naming no value in an error.
    pub(super) fn from_value(pointer: &str, value: &Value) -> Result<Self, Error> {
        let pointer = format!("{pointer}/oauth");
        let fields = value
            .as_object()
            .ok_or_else(|| config_error(&pointer, "expected an object"))?;
        let text = |key: &str| -> Result<Option<String>, Error> {
            match fields.get(key) {
                None => Ok(None),
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(_) => Err(config_error(
                    &format!("{pointer}/{key}"),
                    "expected a non-empty string",
                )),
            }
        };
        let client_id = text("clientId")?;
        let client_secret = text("clientSecret")?;
        let client_metadata_url = text("clientMetadataUrl")?;
        if client_secret.is_some() && client_id.is_none() {
            return Err(config_error(
                &format!("{pointer}/clientSecret"),
                "a client secret needs its `clientId`",
            ));
        }
        if let Some(url) = &client_metadata_url
            && !url.starts_with("https://")
        {
            return Err(config_error(
                &format!("{pointer}/clientMetadataUrl"),
                "expected an https URL",
            ));
        }
        let scopes = match fields.get("scopes") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item.as_str() {
                    Some(s) if !s.is_empty() && !s.contains(' ') => Ok(s.to_owned()),
                    _ => Err(config_error(
                        &format!("{pointer}/scopes/{i}"),
                        "a scope is a non-empty string without spaces",
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(config_error(
                    &format!("{pointer}/scopes"),
                    "expected an array of strings",
                ));
            }
        };
        Ok(Self {
            client_id,
            client_secret,
            scopes,
            client_metadata_url,
        })
    }
}
