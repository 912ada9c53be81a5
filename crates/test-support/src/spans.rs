//! [`SpanCapture`]: a `tracing` layer for tests that records every span (name, parent, fields) and
//! every event (target, fields), so a test can assert the tree a run leaves as a subscriber sees it.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

/// The target of prompts and replies recorded on spans, enabled only on opt-in.
const CONTENT_TARGET: &str = "claij::content";

/// One span as captured: its name, the index of its parent in the capture and its fields as
/// recorded (strings as they are, anything else in its `Debug` form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedSpan {
    /// The span's name (`llm.call`).
    pub name: &'static str,
    /// Its parent's index in [`SpanCapture::spans`], `None` for a root.
    pub parent: Option<usize>,
    /// Field name to value, with what was recorded after the span was created.
    pub fields: BTreeMap<String, String>,
}

/// One event as captured: its target and its fields, as [`CapturedSpan::fields`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedEvent {
    /// The event's target (`claij::metrics`).
    pub target: &'static str,
    /// Field name to value.
    pub fields: BTreeMap<String, String>,
}

/// Records every span in creation order (span ids are reused, so spans are known by index) and
/// every event; `claij::content` is enabled only [`with content`](SpanCapture::with_content).
/// Clones share what they record.
///
/// ```
/// use claij_test_support::spans::SpanCapture;
///
/// let capture = SpanCapture::default();
/// {
///     let _default = capture.set_default();
///     let outer = tracing::info_span!("outer", answer = 42);
///     outer.in_scope(|| tracing::info_span!("inner").in_scope(|| tracing::info!(done = true)));
/// }
/// let spans = capture.spans();
/// assert_eq!((spans[1].name, spans[1].parent), ("inner", Some(0)));
/// assert_eq!(spans[0].fields["answer"], "42");
/// assert_eq!(capture.events()[0].fields["done"], "true");
/// ```
#[derive(Debug, Clone, Default)]
pub struct SpanCapture {
    spans: Arc<Mutex<Vec<CapturedSpan>>>,
    events: Arc<Mutex<Vec<CapturedEvent>>>,
    content: bool,
}

/// A span's index in the capture, kept in its extensions.
struct Index(usize);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl SpanCapture {
    /// A capture with `claij::content` enabled when `content` is.
    pub fn with_content(content: bool) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// Makes a registry with this layer the current thread's subscriber until the guard drops.
    pub fn set_default(&self) -> DefaultGuard {
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    /// The spans so far, in creation order.
    pub fn spans(&self) -> Vec<CapturedSpan> {
        self.spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The events so far, in order.
    pub fn events(&self) -> Vec<CapturedEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<S> Layer<S> for SpanCapture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // Asked each time: captures with and without content run side by side.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        self.content || metadata.target() != CONTENT_TARGET
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        span.extensions_mut().insert(Index(spans.len()));
        spans.push(CapturedSpan {
            name: attrs.metadata().name(),
            parent,
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(index) = ctx
            .span(id)
            .and_then(|s| s.extensions().get::<Index>().map(|i| i.0))
        else {
            return;
        };
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(span) = spans.get_mut(index) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(CapturedEvent {
                target: event.metadata().target(),
                fields,
            });
    }
}
