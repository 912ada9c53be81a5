//! A server's prompts, as `claij mcp prompts` and `claij mcp prompt` show them: [`list`] gives
//! each started server's prompts ([`Listed`]: text and JSON), [`get`] fills one in with its
//! arguments after checking them against what the prompt declares (a required one missing, or one
//! it does not take, is refused before the request), and [`text`] is what a person reads of the
//! messages.
//!
//! ```
//! use claij::mcp::prompts::{check, text};
//! use serde_json::json;
//!
//! let declared = json!({"name": "weather", "arguments": [
//!     {"name": "city", "required": true}, {"name": "state"}
//! ]});
//! let given = [("state".to_owned(), "Estremadura".to_owned())];
//! let error = check("srv", &declared, &given).unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "prompt `srv.weather` needs the argument `city` (it takes: city, [state])"
//! );
//! let got = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Weather?"}}]});
//! assert_eq!(text(&got), "user: Weather?\n");
//! ```

use claij_mcp::Services;
use serde_json::{Map, Value, json};

use super::Error;

/// One server's prompts, as MCP JSON objects (`name`, `description`, `arguments`). `Display` is
/// the text listing: a line for the server, one per prompt (`server.NAME  DESCRIPTION  (arguments:
/// REQUIRED, [OPTIONAL])`).
#[derive(Debug, Clone)]
pub struct Listed {
    /// The configured name.
    pub server: String,
    /// Its prompts.
    pub prompts: Vec<Value>,
}

impl Listed {
    /// The JSON listing: `{"server", "prompts": [...]}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({"server": self.server, "prompts": self.prompts})
    }
}

impl std::fmt::Display for Listed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.prompts.len();
        writeln!(
            f,
            "{}: {n} prompt{}",
            self.server,
            if n == 1 { "" } else { "s" }
        )?;
        for prompt in &self.prompts {
            let name = prompt.get("name").and_then(Value::as_str).unwrap_or("");
            write!(f, "  {}.{name}", self.server)?;
            let description = prompt.get("description").and_then(Value::as_str);
            let first = description.and_then(|d| d.lines().next()).unwrap_or("");
            if !first.trim().is_empty() {
                write!(f, "  {}", first.trim())?;
            }
            let arguments = arguments(prompt);
            if !arguments.is_empty() {
                write!(f, "  (arguments: {arguments})")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// The arguments a prompt declares: `city, [state]` (optional ones in brackets).
fn arguments(prompt: &Value) -> String {
    declared(prompt)
        .map(|(name, required)| match required {
            true => name.to_owned(),
            false => format!("[{name}]"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each declared argument's name and whether it is required.
fn declared(prompt: &Value) -> impl Iterator<Item = (&str, bool)> {
    prompt
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|argument| {
            let name = argument.get("name")?.as_str()?;
            let required = argument.get("required").and_then(Value::as_bool) == Some(true);
            Some((name, required))
        })
}

/// Each server of `services` (in name order), with its prompts. A server that answers "method not
/// found" has none.
///
/// # Errors
///
/// A server's failed request (a timeout, a server gone, another protocol error).
pub async fn list(services: &Services) -> Result<Vec<Listed>, Error> {
    let mut listed = Vec::new();
    for name in services.names() {
        let Some(client) = services.client(name) else {
            continue;
        };
        let prompts = match client.prompts().await {
            Err(claij_mcp::Error::Protocol { code: -32601, .. }) => Vec::new(),
            other => other?,
        };
        listed.push(Listed {
            server: name.to_owned(),
            prompts,
        });
    }
    Ok(listed)
}

/// `prompt`'s arguments (as `server` lists it) checked against those `given`: each required one
/// given, none it does not declare.
///
/// # Errors
///
/// [`Error::PromptArgument`], naming the first argument missing (or not taken) and what the
/// prompt takes.
pub fn check(server: &str, prompt: &Value, given: &[(String, String)]) -> Result<(), Error> {
    let name = prompt.get("name").and_then(Value::as_str).unwrap_or("");
    let takes = match arguments(prompt) {
        takes if takes.is_empty() => "none".to_owned(),
        takes => takes,
    };
    let refuse = |message: String| Error::PromptArgument {
        prompt: format!("{server}.{name}"),
        message: format!("{message} (it takes: {takes})"),
    };
    if let Some((missing, _)) = declared(prompt)
        .find(|(argument, required)| *required && !given.iter().any(|(g, _)| g == argument))
    {
        return Err(refuse(format!("needs the argument `{missing}`")));
    }
    if let Some((unknown, _)) = given
        .iter()
        .find(|(g, _)| !declared(prompt).any(|(argument, _)| argument == g))
    {
        return Err(refuse(format!("takes no argument `{unknown}`")));
    }
    Ok(())
}

/// Fills in the prompt `name` of `server` (a server of `services`) with `args` (name, value),
/// once [`check`] passes: the server's `prompts/get` result (`{"description", "messages"}`).
///
/// # Errors
///
/// No such server ([`claij_mcp::Error::UnknownServer`]) or prompt ([`Error::UnknownPrompt`]);
/// what [`check`] refuses; the server's errors.
pub async fn get(
    services: &Services,
    server: &str,
    name: &str,
    args: &[(String, String)],
) -> Result<Value, Error> {
    let client = services
        .names()
        .contains(&server)
        .then(|| services.client(server))
        .flatten()
        .ok_or_else(|| claij_mcp::Error::UnknownServer {
            server: server.to_owned(),
            known: services.names().iter().map(|s| (*s).to_owned()).collect(),
        })?;
    let prompts = client.prompts().await?;
    let prompt = prompts
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| Error::UnknownPrompt {
            server: server.to_owned(),
            prompt: name.to_owned(),
            known: prompts
                .iter()
                .filter_map(|p| p.get("name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect(),
        })?;
    check(server, prompt, args)?;
    let args: Map<String, Value> = args
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    Ok(client.get_prompt(name, args).await?)
}

/// One `NAME=VALUE` argument (the value may hold `=`; the name is trimmed and not empty).
///
/// # Errors
///
/// No `=`, or nothing before it: the message says the form.
pub fn argument(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.to_owned()))
        }
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

/// What `claij mcp prompt` prints of a `prompts/get` result: [`text`], or with `json` the result as
/// pretty JSON.
#[must_use]
pub fn shown(got: &Value, json: bool) -> String {
    match json {
        true => super::pretty(got),
        false => text(got),
    }
}

/// What a person reads of a `prompts/get` result: `ROLE: TEXT` a message, text as it is, an
/// embedded resource's text, anything else described in brackets (`[image image/png]`,
/// `[resource demo://x]`); a line ending after each.
#[must_use]
pub fn text(got: &Value) -> String {
    let mut text = String::new();
    let messages = got.get("messages").and_then(Value::as_array);
    for message in messages.into_iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = &message["content"];
        let str_of = |value: &Value, key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let body = match content.get("type").and_then(Value::as_str) {
            Some("text") => str_of(content, "text"),
            Some("resource") => match content["resource"].get("text") {
                Some(Value::String(text)) => text.clone(),
                _ => format!("[resource {}]", str_of(&content["resource"], "uri")),
            },
            Some("resource_link") => format!("[resource {}]", str_of(content, "uri")),
            other => format!(
                "[{} {}]",
                other.unwrap_or("content"),
                str_of(content, "mimeType")
            )
            .replace(" ]", "]"),
        };
        text.push_str(&format!("{role}: {body}"));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn given(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn check_refuses_a_missing_required_argument_and_one_not_declared() {
        let prompt = json!({"name": "p", "arguments": [
            {"name": "city", "required": true}, {"name": "state", "required": false}
        ]});
        assert!(check("s", &prompt, &given(&[("city", "Lisbon")])).is_ok());
        let error = check("s", &prompt, &given(&[("cty", "Lisbon")])).unwrap_err();
        assert_eq!(error.kind(), crate::mcp::ErrorKind::PromptArgument);
        assert_eq!(
            error.to_string(),
            "prompt `s.p` needs the argument `city` (it takes: city, [state])"
        );
        let error = check("s", &prompt, &given(&[("city", "L"), ("zip", "1")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "prompt `s.p` takes no argument `zip` (it takes: city, [state])"
        );
        let bare = json!({"name": "q"});
        assert!(check("s", &bare, &[]).is_ok());
        let error = check("s", &bare, &given(&[("a", "1")])).unwrap_err();
        assert!(error.to_string().ends_with("(it takes: none)"), "{error}");
    }

    #[test]
    fn an_argument_is_name_equals_value() {
        assert_eq!(argument(" a =b=c"), Ok(("a".to_owned(), "b=c".to_owned())));
        assert_eq!(argument("a="), Ok(("a".to_owned(), String::new())));
        assert!(argument("=b").is_err() && argument("ab").is_err());
    }

    #[test]
    fn text_says_each_message_with_its_role() {
        let got = json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Hi"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "demo://a", "text": "A\n"}}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "demo://b", "blob": "AA=="}}},
            {"role": "assistant", "content": {"type": "image", "mimeType": "image/png", "data": "AA=="}}
        ]});
        assert_eq!(
            text(&got),
            "user: Hi\nuser: A\nuser: [resource demo://b]\nassistant: [image image/png]\n"
        );
    }
}
