//! Tests of the citation check, the sources line and the renderer's edge cases.

use super::*;

/// Checks the messages of [`unknown_citations`] for `reply` against `known`.
#[track_caller]
fn check(reply: Value, known: &[&str], expected: &[&str]) {
    let messages: Vec<String> = unknown_citations(&reply, known)
        .into_iter()
        .map(|v| v.to_string())
        .collect();
    assert_eq!(messages, expected);
}

#[test]
fn citation_check() {
    check(json!({"answer": "no metadata"}), &["a"], &[]);
    check(json!({"metadata": {"hasSources": false}}), &[], &[]);
    check(
        json!({"metadata": {"citations": [{"noteId": "a"}, {"noteId": "b"}]}}),
        &["a", "b"],
        &[],
    );
    check(
        json!({"metadata": {"citations": [{"noteId": "a"}, {"noteId": "x"}, {"noteId": "y"}]}}),
        &["a", "b"],
        &[
            "/metadata/citations/1/noteId: unknown noteId `x`; the supplied notes are `a`, `b`",
            "/metadata/citations/2/noteId: unknown noteId `y`; the supplied notes are `a`, `b`",
        ],
    );
    check(
        json!({"metadata": {"citations": [{"noteId": "a"}]}}),
        &[],
        &[
            "/metadata/citations/0/noteId: unknown noteId `a`; no notes were supplied, so `citations` must be left out",
        ],
    );
    // Not a string: the schema reports it, not this check.
    check(
        json!({"metadata": {"citations": [{"noteId": 3}]}}),
        &[],
        &[],
    );
}

#[test]
fn sources_line_counts_what_was_used() {
    let line = |metadata: Value| sources_line(&serde_json::from_value(metadata).unwrap());
    assert_eq!(line(json!({"hasSources": false})), None);
    assert_eq!(
        line(json!({"hasSources": true, "sourceTypes": ["notes", "external"]})),
        Some("0 notes, 0 external sources".into())
    );
    assert_eq!(
        line(json!({
            "hasSources": true,
            "citations": [{"noteId": "a", "noteTitle": "A"}],
            "externalSources": [
                {"title": "t", "source": "s", "url": "u"},
                {"title": "t", "source": "s", "url": "u"}
            ],
            "usedProfile": true
        })),
        Some("1 note, 2 external sources, profile information".into())
    );
}

#[test]
fn render_without_sources_is_the_answer_alone() {
    let reply = json!({"answer": " 42 ", "metadata": {"hasSources": false}});
    assert_eq!(render_for_people(&reply), "Answer\n\n42\n");
    let broken = json!({"answer": "42", "metadata": {"hasSources": "yes"}});
    assert_eq!(render_for_people(&broken), "Answer\n\n42\n");
}

#[test]
fn prompt_escapes_attributes() {
    let doc = Document::new("a\"b", "Q&A <1>", "text");
    assert!(
        prompt([&doc]).ends_with("<note id=\"a&quot;b\" title=\"Q&amp;A &lt;1>\">\ntext\n</note>")
    );
}

#[test]
fn turn_documents_follow_the_interceptor_documents() {
    let citations = Citations::new(vec![Document::new("fixed", "F", "f")]);
    let mut ctx = Context::default();
    ctx.insert(Documents(vec![Document::new("turn", "T", "t")]));
    let ids: Vec<&str> = citations
        .documents_for(&ctx)
        .map(|d| d.id.as_str())
        .collect();
    assert_eq!(ids, ["fixed", "turn"]);
    let reply = json!({"metadata": {"citations": [{"noteId": "turn"}, {"noteId": "gone"}]}});
    assert_eq!(Interceptor::check(&citations, &reply, &ctx).len(), 1);
}
