//! What claij offers the MCP servers it starts when they ask *it* something: sampling (a model
//! answers their completion requests) and elicitation (how their questions are answered). One
//! place decides, for `claij mcp`, `ask`/`chat --interceptors mcp` and FSM service states: the
//! flags [`Offer::over`] the MCP configuration's `samplingLlm` and `elicitation`, made into hooks by
//! [`Offer::hooks`].
//!
//! ```
//! use claij::mcp::offer::{Elicitation, Offer};
//!
//! let offer = Offer { elicitation: Some("defaults".parse().unwrap()), ..Offer::default() };
//! assert_eq!(offer.elicitation, Some(Elicitation::Defaults));
//! // Nothing said: sampling is not offered, questions are declined.
//! assert_eq!(Offer::default().elicitation.unwrap_or_default(), Elicitation::Decline);
//! assert!("maybe".parse::<Elicitation>().is_err());
//! ```

use std::sync::Arc;

use claij_mcp::{BackendSampler, Elicitor, Hooks};

use crate::client::Claij;

/// How a server's question (MCP elicitation) is answered (the configuration's `elicitation`).
pub use claij_mcp::Elicitation;

/// What the servers are offered: the model that answers sampling (`local` or PROVIDER:MODEL, as
/// `ask --llm`; none: sampling is not offered) and how questions are answered (none: declined).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offer {
    /// The model that answers the servers' sampling requests.
    pub sampling_llm: Option<String>,
    /// How the servers' questions are answered.
    pub elicitation: Option<Elicitation>,
}

/// Why an [`Offer`] cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// [`Elicitation::Ask`] without a terminal on stdin.
    #[error("elicitation `ask` needs a terminal on stdin: use defaults or decline")]
    NoTerminal,
    /// The sampling model does not open (unknown alias, no key...).
    #[error("sampling model: {0}")]
    Sampling(#[source] crate::Error),
}

impl Offer {
    /// The offer of `sampling_llm` and `elicitation` (a command's flags).
    #[must_use]
    pub fn new(sampling_llm: Option<String>, elicitation: Option<Elicitation>) -> Self {
        Offer {
            sampling_llm,
            elicitation,
        }
    }

    /// This offer (the flags), what it leaves unsaid taken from the settings' MCP configuration
    /// (`samplingLlm`, `elicitation`).
    #[must_use]
    pub fn over(self, settings: &crate::settings::Settings) -> Self {
        let config = settings.mcp.as_ref();
        Offer {
            sampling_llm: self
                .sampling_llm
                .or_else(|| config.and_then(|c| c.sampling_llm.clone())),
            elicitation: self.elicitation.or(config.and_then(|c| c.elicitation)),
        }
    }

    /// The hooks that make this offer: a [`BackendSampler`] over the sampling model (opened with
    /// `claij`), and the elicitor: `asker` for [`Elicitation::Ask`], the defaults, or none. When
    /// nothing is said, `unset` decides (`claij mcp chat` asks on a terminal, the rest decline).
    /// `terminal` says whether stdin is a terminal: without one nobody can be asked.
    ///
    /// # Errors
    ///
    /// [`Error::NoTerminal`] for `ask` without a terminal; the sampling model's error.
    pub fn hooks(
        &self,
        claij: &Claij,
        asker: Option<Arc<dyn Elicitor>>,
        terminal: bool,
        unset: Elicitation,
    ) -> Result<Hooks, Error> {
        let mut hooks = Hooks::default();
        if let Some(llm) = &self.sampling_llm {
            let opened =
                crate::model::open(Some(llm.as_str()), None, claij).map_err(Error::Sampling)?;
            hooks = hooks.with_sampler(BackendSampler::new(opened.backend, opened.model));
        }
        hooks.elicitor = match (self.elicitation, terminal) {
            (None, _) if unset == Elicitation::Ask => asker.filter(|_| terminal),
            (None, _) => elicitor(unset, asker),
            (Some(Elicitation::Ask), false) => return Err(Error::NoTerminal),
            (Some(policy), _) => elicitor(policy, asker),
        };
        Ok(hooks)
    }
}

/// How the MCP servers of a conversation's `mcp` interceptor start
/// ([`crate::conversation::Builder::services`]): the settings' servers, seen through the
/// conversation's project, offered `offer` (the flags) over what the configuration says
/// ([`Offer::over`], [`Offer::hooks`] with `asker` and `terminal`; nothing said declines), their
/// start's error as [`super::Error::said`] says it for `--interceptors mcp`.
///
/// # Errors
///
/// What [`Offer::hooks`] refuses (`ask` without a terminal, a sampling model that does not open).
pub fn starter(
    claij: &Claij,
    offer: Offer,
    asker: Option<Arc<dyn Elicitor>>,
    terminal: bool,
) -> Result<crate::conversation::StartServices, Error> {
    let settings = claij.settings().clone();
    let offer = offer.over(&settings);
    let hooks = offer.hooks(claij, asker, terminal, Elicitation::Decline)?;
    Ok(Box::new(move |project: Option<String>| {
        Box::pin(async move {
            let var = |name: &str| std::env::var(name);
            let started = super::start_configured(&settings, project.as_deref(), hooks, var);
            started
                .await
                .map_err(|e| e.said(Some("--interceptors mcp")).into())
        })
    }))
}

/// The elicitor of `policy`: `asker` to ask, the defaults, or none (declined).
fn elicitor(policy: Elicitation, asker: Option<Arc<dyn Elicitor>>) -> Option<Arc<dyn Elicitor>> {
    match policy {
        Elicitation::Ask => asker,
        Elicitation::Defaults => Some(Arc::new(super::elicitation::Defaults)),
        Elicitation::Decline => None,
    }
}
