//! [`Chain`]: interceptors in order, each with its error policy.

use std::sync::Arc;

use crate::interceptor::{Interceptor, OnError};

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
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
