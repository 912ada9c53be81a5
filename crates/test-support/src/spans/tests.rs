//! The capture: the tree with fields recorded late, events by target, `claij::content` on opt-in.

use super::*;

fn run(capture: &SpanCapture) {
    let _default = capture.set_default();
    let outer = tracing::info_span!("outer", status = tracing::field::Empty);
    outer.in_scope(|| {
        let inner = tracing::info_span!("inner", n = 1);
        inner.in_scope(|| tracing::info!(target: "claij::metrics", counter = 2));
        if tracing::enabled!(target: "claij::content", tracing::Level::TRACE) {
            outer.record("status", "content on");
        }
        tracing::info_span!(target: "claij::content", "content").in_scope(|| {});
    });
    outer.record("status", "done");
}

#[test]
fn spans_keep_their_parents_and_late_fields_and_events_their_targets() {
    let capture = SpanCapture::default();
    run(&capture);
    let spans = capture.spans();
    let names: Vec<_> = spans.iter().map(|s| (s.name, s.parent)).collect();
    assert_eq!(names, [("outer", None), ("inner", Some(0))]);
    assert_eq!(spans[0].fields["status"], "done");
    assert_eq!(spans[1].fields["n"], "1");
    let events = capture.events();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].target, "claij::metrics");
    assert_eq!(events[0].fields["counter"], "2");
}

#[test]
fn content_is_enabled_only_on_opt_in() {
    let capture = SpanCapture::with_content(true);
    run(&capture);
    let names: Vec<_> = capture.spans().iter().map(|s| (s.name, s.parent)).collect();
    assert_eq!(
        names,
        [("outer", None), ("inner", Some(0)), ("content", Some(0))]
    );
    let without = SpanCapture::default();
    {
        let _default = without.set_default();
        assert!(!tracing::enabled!(target: "claij::content", tracing::Level::TRACE));
    }
}
