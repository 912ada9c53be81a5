//! [`Chain`]: interceptors in order, each with its error policy.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::context::{Carried, Context};
use crate::error::Error;
use crate::interceptor::{Interceptor, OnError, Stage};

/// An ordered stack of interceptors: the onion.
///
/// `pre_schema` and `pre_prompt` run in insertion order (the first interceptor pushed runs first);
/// `post_response` runs in reverse (the first pushed runs last), so an interceptor sees the response
/// after everything it wraps has acted on it, like Pedestal's leave stage or tower's layers.
///
/// ```
/// use claij_interceptors::{Chain, OnError, from_fn};
///
/// let chain = Chain::new()
///     .with(from_fn("memory"))
///     .with_policy(from_fn("metrics"), OnError::Skip);
/// assert_eq!(chain.names(), ["memory", "metrics"]);
/// ```
#[derive(Clone, Default)]
pub struct Chain {
    links: Vec<Link>,
}

/// One interceptor of a [`Chain`] and what to do when it fails.
#[derive(Clone)]
pub struct Link {
    /// The interceptor.
    pub interceptor: Arc<dyn Interceptor>,
    /// Its error policy.
    pub on_error: OnError,
}

impl Chain {
    /// An empty chain.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an interceptor that fails the request when it fails.
    pub fn push(&mut self, interceptor: impl Interceptor + 'static) {
        self.push_shared(Arc::new(interceptor), OnError::Fail);
    }

    /// Appends a shared interceptor with an error policy.
    pub fn push_shared(&mut self, interceptor: Arc<dyn Interceptor>, on_error: OnError) {
        self.links.push(Link {
            interceptor,
            on_error,
        });
    }

    /// The chain with an interceptor appended (fails the request when it fails).
    #[must_use]
    pub fn with(mut self, interceptor: impl Interceptor + 'static) -> Self {
        self.push(interceptor);
        self
    }

    /// The chain with an interceptor appended under an error policy.
    #[must_use]
    pub fn with_policy(
        mut self,
        interceptor: impl Interceptor + 'static,
        on_error: OnError,
    ) -> Self {
        self.push_shared(Arc::new(interceptor), on_error);
        self
    }

    /// The links in insertion order.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The interceptors' names in insertion order.
    pub fn names(&self) -> Vec<&str> {
        self.links.iter().map(|l| l.interceptor.name()).collect()
    }

    /// Whether the chain is empty.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// What each interceptor keeps in `ctx` for the next turn ([`Interceptor::carry`]), by name:
    /// what a conversation saved between processes needs besides the context's turn and history.
    /// Interceptors that keep nothing now are left out.
    ///
    /// ```
    /// use claij_interceptors::builtin::memory::Memory;
    /// use claij_interceptors::{Chain, Context};
    ///
    /// let chain = Chain::new().with(Memory::default());
    /// let mut ctx = Context::default();
    /// ctx.memory.summaries.push("The user's favourite colour is blue.".into());
    /// let saved = chain.carry(&ctx)?;
    /// assert_eq!(saved["memory"].version, 1);
    ///
    /// // Another process goes on from what was saved.
    /// let mut next = Context::default();
    /// chain.restore(&saved, &mut next)?;
    /// assert_eq!(next.memory, ctx.memory);
    /// # Ok::<(), claij_interceptors::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Hook`] (stage [`Stage::Carry`]) naming the interceptor whose state cannot be saved.
    pub fn carry(&self, ctx: &Context) -> Result<BTreeMap<String, Carried>, Error> {
        let mut carried = BTreeMap::new();
        for link in &self.links {
            let name = link.interceptor.name();
            match link.interceptor.carry(ctx) {
                Ok(Some(state)) => {
                    carried.insert(name.to_owned(), state);
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(Error::Hook {
                        interceptor: name.to_owned(),
                        stage: Stage::Carry,
                        source,
                    });
                }
            }
        }
        Ok(carried)
    }

    /// Gives each interceptor of the chain what [`Chain::carry`] saved under its name
    /// ([`Interceptor::restore`]), in insertion order; states of interceptors not in the chain are
    /// not read (a caller keeps them for a later run that has them).
    ///
    /// # Errors
    ///
    /// [`Error::Hook`] (stage [`Stage::Restore`]) naming the interceptor whose state cannot be read,
    /// whatever its error policy: a state is never silently dropped.
    pub fn restore(
        &self,
        carried: &BTreeMap<String, Carried>,
        ctx: &mut Context,
    ) -> Result<(), Error> {
        for link in &self.links {
            let name = link.interceptor.name();
            if let Some(state) = carried.get(name) {
                link.interceptor
                    .restore(state, ctx)
                    .map_err(|source| Error::Hook {
                        interceptor: name.to_owned(),
                        stage: Stage::Restore,
                        source,
                    })?;
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests;
