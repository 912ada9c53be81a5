//! What claij offers the MCP servers it starts when they ask *it* something: sampling (a model
//! answers their completion requests) and elicitation (how their questions are answered). One
//! place decides, for `claij mcp`, `ask`/`chat --interceptors mcp` and FSM service states:
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

/// How a server's question (MCP elicitation) is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Elicitation {
    /// The person at the terminal answers (a form built from the requested schema).
    Ask,
    /// Accepted with the requested schema's defaults; declined when a required field has none
    /// ([`super::elicitation::Defaults`]).
    Defaults,
    /// Declined (no elicitation capability is declared).
    #[default]
    Decline,
}

impl std::str::FromStr for Elicitation {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "ask" => Ok(Elicitation::Ask),
            "defaults" => Ok(Elicitation::Defaults),
            "decline" => Ok(Elicitation::Decline),
            _ => Err("expected ask, defaults or decline".to_owned()),
        }
    }
}

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

/// The elicitor of `policy`: `asker` to ask, the defaults, or none (declined).
fn elicitor(policy: Elicitation, asker: Option<Arc<dyn Elicitor>>) -> Option<Arc<dyn Elicitor>> {
    match policy {
        Elicitation::Ask => asker,
        Elicitation::Defaults => Some(Arc::new(super::elicitation::Defaults)),
        Elicitation::Decline => None,
    }
}
