//! A client of the Restate server for claij runs: start a run through the ingress, follow its
//! trail, give a waiting state its input, interrupt it, wait for its result; register a worker
//! through the admin API.

use std::time::Duration;

use claij_fsm::{Entry, Status};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::conversation::{CONVERSATION, TurnAnswer};
use crate::error::{Error, Result};
use crate::types::{RunRequest, RunResult, RunStatus};
use crate::workflow::WORKFLOW;

/// The limits of a [`Client`]: each has a default and a setter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// One request (start, status, provide, interrupt, register), connecting included.
    pub request_timeout: Duration,
    /// How long [`Client::follow`] and [`Client::attach`] wait for a run's end.
    pub run_timeout: Duration,
    /// How often [`Client::follow`] asks for the run's status.
    pub poll_interval: Duration,
    /// The largest response body read.
    pub max_body: usize,
    /// How much of an error response's body an error keeps.
    pub error_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            run_timeout: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(200),
            max_body: 16 * 1024 * 1024,
            error_body: 512,
        }
    }
}

impl Limits {
    /// Sets [`Limits::request_timeout`].
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`Limits::run_timeout`].
    #[must_use]
    pub fn with_run_timeout(mut self, timeout: Duration) -> Self {
        self.run_timeout = timeout;
        self
    }

    /// Sets [`Limits::poll_interval`].
    #[must_use]
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Sets [`Limits::max_body`].
    #[must_use]
    pub fn with_max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }
}

/// A run started (or found started) by [`Client::start`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Started {
    /// Restate's invocation id.
    pub invocation_id: String,
    /// The run id was already started: this is that run (a start is idempotent by run id).
    pub already: bool,
}

/// Where [`Client::follow`] left a run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Followed {
    /// It ended.
    Ended(RunResult),
    /// It waits for a person (in [`RunStatus::waiting_in`]).
    Waiting(RunStatus),
}

/// The client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    ingress: String,
    admin: Option<String>,
    limits: Limits,
    auth: Option<HeaderValue>,
}

impl Client {
    /// A client of the ingress at `ingress` (`http://127.0.0.1:8080`), with default [`Limits`].
    ///
    /// # Errors
    ///
    /// [`Error::Url`] when it is not an `http(s)://` URL.
    pub fn new(ingress: &str) -> Result<Self> {
        Ok(Self {
            http: reqwest::Client::new(),
            ingress: base(ingress)?,
            admin: None,
            limits: Limits::default(),
            auth: None,
        })
    }

    /// The admin API at `admin` (`http://127.0.0.1:9070`), for [`Client::register`].
    ///
    /// # Errors
    ///
    /// [`Error::Url`].
    pub fn with_admin(mut self, admin: &str) -> Result<Self> {
        self.admin = Some(base(admin)?);
        Ok(self)
    }

    /// Other limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sends `Authorization: Bearer {token}` (never shown in an error or a log).
    ///
    /// # Errors
    ///
    /// [`Error::Url`] when the token cannot be a header value (the token is not shown).
    pub fn with_bearer(mut self, token: &str) -> Result<Self> {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| Error::Url {
                url: self.ingress.clone(),
                message: "the bearer token is not a valid header value".into(),
            })?;
        value.set_sensitive(true);
        self.auth = Some(value);
        Ok(self)
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Starts run `run_id` of `request` without waiting for it. Starting the same id again
    /// starts nothing: [`Started::already`] says so.
    ///
    /// # Errors
    ///
    /// [`Error::Http`], [`Error::Status`], [`Error::Decode`].
    pub async fn start(&self, run_id: &str, request: &RunRequest) -> Result<Started> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Sent {
            invocation_id: String,
            #[serde(default)]
            status: String,
        }
        let url = self.handler_url(run_id, "run/send");
        let body = serde_json::to_value(request).map_err(|source| Error::Decode {
            url: url.clone(),
            source,
        })?;
        let sent: Sent = self.post(&url, Some(&body)).await?;
        Ok(Started {
            invocation_id: sent.invocation_id,
            already: sent.status == "PreviouslyAccepted",
        })
    }

    /// The run's status and trail so far (`None` before the run has started).
    ///
    /// # Errors
    ///
    /// [`Error::Http`], [`Error::Status`], [`Error::Decode`].
    pub async fn status(&self, run_id: &str) -> Result<Option<RunStatus>> {
        let url = self.handler_url(run_id, "status");
        match self.post(&url, None).await {
            Ok(status) => Ok(Some(status)),
            Err(Error::Status { status: 404, .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Gives `event` to the `human` state run `run_id` waits in (or the sub-FSM run it waits on
    /// waits in); the event is checked first, and a wrong one refused.
    ///
    /// # Errors
    ///
    /// [`Error::NotWaiting`]; [`Error::Status`] with status 400 for an event that fits no
    /// transition (the run waits on).
    pub async fn provide(&self, run_id: &str, event: &Value) -> Result<RunStatus> {
        let mut target = run_id.to_owned();
        loop {
            let status = self
                .status(&target)
                .await?
                .ok_or_else(|| Error::NotWaiting {
                    run: target.clone(),
                    state: None,
                })?;
            match (&status.sub_run, status.status) {
                (Some(sub), _) => target = sub.clone(),
                (None, Status::Waiting) => break,
                (None, _) => {
                    return Err(Error::NotWaiting {
                        run: target,
                        state: Some(status.state),
                    });
                }
            }
        }
        let url = self.handler_url(&target, "provide");
        match self.post(&url, Some(event)).await {
            Err(Error::Status { status: 409, .. }) => Err(Error::NotWaiting {
                run: target,
                state: None,
            }),
            other => other,
        }
    }

    /// Interrupts run `run_id` and the sub-FSM runs it waits on: the trail records
    /// `[state, "interrupted"]` (at once when it waits for a person, else after its current
    /// action).
    ///
    /// # Errors
    ///
    /// [`Error::Http`], [`Error::Status`].
    pub async fn interrupt(&self, run_id: &str) -> Result<()> {
        let mut target = Some(run_id.to_owned());
        while let Some(run) = target.take() {
            let url = self.handler_url(&run, "interrupt");
            let _: Value = self.post(&url, None).await?;
            target = self.status(&run).await?.and_then(|s| s.sub_run);
        }
        Ok(())
    }

    /// Waits for the run's end (at most [`Limits::run_timeout`]).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`], [`Error::Http`], [`Error::Status`], [`Error::Decode`].
    pub async fn attach(&self, run_id: &str) -> Result<RunResult> {
        let url = format!(
            "{}/restate/workflow/{WORKFLOW}/{}/attach",
            self.ingress,
            segment(run_id)
        );
        let request = self.authorized(self.http.get(&url).timeout(self.limits.run_timeout));
        let response = request.send().await.map_err(|source| {
            if source.is_timeout() {
                Error::Timeout {
                    run: run_id.to_owned(),
                    waited: self.limits.run_timeout,
                }
            } else {
                Error::Http {
                    method: "GET",
                    url: url.clone(),
                    source,
                }
            }
        })?;
        self.decode("GET", &url, response).await
    }

    /// The run's result if it has ended (`None` while it runs).
    ///
    /// # Errors
    ///
    /// [`Error::Http`], [`Error::Status`], [`Error::Decode`].
    pub async fn output(&self, run_id: &str) -> Result<Option<RunResult>> {
        let url = format!(
            "{}/restate/workflow/{WORKFLOW}/{}/output",
            self.ingress,
            segment(run_id)
        );
        match self.get(&url).await {
            Ok(result) => Ok(Some(result)),
            // 470: not ready yet; 404: not started yet.
            Err(Error::Status {
                status: 470 | 404, ..
            }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Follows run `run_id`: calls `on_entry` with each new transition of its trail as the
    /// status shows it (every [`Limits::poll_interval`]), until it ends or waits for a person.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] after [`Limits::run_timeout`], the requests' errors.
    pub async fn follow(&self, run_id: &str, mut on_entry: impl FnMut(&Entry)) -> Result<Followed> {
        let mut seen = 0;
        let deadline = tokio::time::Instant::now() + self.limits.run_timeout;
        loop {
            let status = self.status(run_id).await?;
            if let Some(status) = &status {
                for entry in status.trail.entries.iter().skip(seen) {
                    on_entry(entry);
                }
                seen = seen.max(status.trail.entries.len());
            }
            if let Some(result) = self.output(run_id).await? {
                for entry in result.trail.entries.iter().skip(seen) {
                    on_entry(entry);
                }
                return Ok(Followed::Ended(result));
            }
            if let Some(status) = &status
                && let Some(waiting) = self.waiting(status).await?
            {
                return Ok(Followed::Waiting(waiting));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Timeout {
                    run: run_id.to_owned(),
                    waited: self.limits.run_timeout,
                });
            }
            tokio::time::sleep(self.limits.poll_interval).await;
        }
    }

    /// One turn of conversation `session` (the `ClaijConversation` object): `message` asked in
    /// the conversation so far; turns of one session run one at a time, whichever worker serves
    /// them.
    ///
    /// # Errors
    ///
    /// [`Error::Status`] (422 when the model gave no valid reply), the request's errors.
    pub async fn turn(&self, session: &str, message: &str) -> Result<TurnAnswer> {
        let url = self.conversation_url(session, "turn");
        self.post(&url, Some(&Value::String(message.to_owned())))
            .await
    }

    /// The messages of conversation `session` so far.
    ///
    /// # Errors
    ///
    /// The request's errors.
    pub async fn history(&self, session: &str) -> Result<Vec<claij_backends::Message>> {
        let url = self.conversation_url(session, "history");
        self.post(&url, None).await
    }

    fn conversation_url(&self, session: &str, handler: &str) -> String {
        format!(
            "{}/{CONVERSATION}/{}/{handler}",
            self.ingress,
            segment(session)
        )
    }

    /// `status` when its run waits for a person, in itself or in the sub-FSM runs it waits on:
    /// then [`RunStatus::waiting_in`] names the state through the `fsm` states
    /// (`delegate/approve`).
    async fn waiting(&self, status: &RunStatus) -> Result<Option<RunStatus>> {
        let mut path = Vec::new();
        let mut current = status.clone();
        loop {
            if current.status == Status::Waiting
                && let Some(state) = &current.waiting_in
            {
                path.push(state.clone());
                let mut waiting = status.clone();
                waiting.status = Status::Waiting;
                waiting.waiting_in = Some(path.join("/"));
                return Ok(Some(waiting));
            }
            let Some(sub) = current.sub_run.clone() else {
                return Ok(None);
            };
            path.push(current.state.clone());
            match self.status(&sub).await? {
                Some(next) => current = next,
                None => return Ok(None),
            }
        }
    }

    /// Registers the worker at `worker_uri` (`http://127.0.0.1:9080`) with the admin API,
    /// replacing a registration of the same URI (so registering again is harmless).
    ///
    /// # Errors
    ///
    /// [`Error::Url`] without an admin URL ([`Client::with_admin`]), the request's errors.
    pub async fn register(&self, worker_uri: &str) -> Result<Value> {
        let admin = self.admin.as_ref().ok_or_else(|| Error::Url {
            url: String::new(),
            message: "no admin URL was given (Client::with_admin)".into(),
        })?;
        let url = format!("{admin}/deployments");
        self.post(&url, Some(&json!({"uri": worker_uri, "force": true})))
            .await
    }

    fn handler_url(&self, run_id: &str, handler: &str) -> String {
        format!("{}/{WORKFLOW}/{}/{handler}", self.ingress, segment(run_id))
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.auth {
            Some(auth) => request.header(AUTHORIZATION, auth.clone()),
            None => request,
        }
    }

    /// POSTs `body` as JSON; `None`: no body (a handler without input wants no content type).
    async fn post<T: DeserializeOwned>(&self, url: &str, body: Option<&Value>) -> Result<T> {
        let request = self.http.post(url).timeout(self.limits.request_timeout);
        let request = self.authorized(match body {
            Some(body) => request.json(body),
            None => request,
        });
        let response = request.send().await.map_err(|source| Error::Http {
            method: "POST",
            url: url.to_owned(),
            source: source.without_url(),
        })?;
        self.decode("POST", url, response).await
    }

    async fn get<T: DeserializeOwned>(&self, url: &str) -> Result<T> {
        let request = self.authorized(self.http.get(url).timeout(self.limits.request_timeout));
        let response = request.send().await.map_err(|source| Error::Http {
            method: "GET",
            url: url.to_owned(),
            source: source.without_url(),
        })?;
        self.decode("GET", url, response).await
    }

    async fn decode<T: DeserializeOwned>(
        &self,
        method: &'static str,
        url: &str,
        mut response: reqwest::Response,
    ) -> Result<T> {
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|source| Error::Http {
            method,
            url: url.to_owned(),
            source: source.without_url(),
        })? {
            if body.len() + chunk.len() > self.limits.max_body {
                return Err(Error::TooLarge {
                    url: url.to_owned(),
                    limit: self.limits.max_body,
                });
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let message: String = text.chars().take(self.limits.error_body).collect();
            return Err(Error::Status {
                method,
                url: url.to_owned(),
                status: status.as_u16(),
                message,
            });
        }
        // An empty body (a handler that returns nothing) reads as `null`.
        let body: &[u8] = if body.is_empty() { b"null" } else { &body };
        serde_json::from_slice(body).map_err(|source| Error::Decode {
            url: url.to_owned(),
            source,
        })
    }
}

/// `url` without a trailing slash, checked to be `http(s)://`.
fn base(url: &str) -> Result<String> {
    let trimmed = url.trim_end_matches('/');
    if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
        return Err(Error::Url {
            url: url.to_owned(),
            message: "expected an http:// or https:// URL".into(),
        });
    }
    if trimmed.contains(['?', '#']) || trimmed.contains('@') {
        return Err(Error::Url {
            url: "(not shown: it may hold credentials)".into(),
            message: "expected a URL without credentials, query or fragment".into(),
        });
    }
    Ok(trimmed.to_owned())
}

/// A run id as one path segment (child runs' ids hold `/`).
fn segment(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
