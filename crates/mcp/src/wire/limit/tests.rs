//! The size bound on one message, byte by byte: what passes, what is cut, what answers a request.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use serde_json::{Value, json};

use super::*;

/// Feeds `input` to a reader with `limit`, in every split into two chunks (and byte by byte), and
/// checks each gives `expected` (error lines as [`sized`] shows them).
#[track_caller]
fn check(limit: usize, input: &str, expected: &str) {
    let bytes = input.as_bytes();
    let mut splits: Vec<Vec<&[u8]>> = (0..=bytes.len())
        .map(|i| vec![&bytes[..i], &bytes[i..]])
        .collect();
    splits.push(bytes.chunks(1).collect());
    for chunks in splits {
        let shared = Limit::new(limit);
        let mut lines = Lines::new(Arc::clone(&shared), "s");
        let mut out = Vec::new();
        for chunk in &chunks {
            lines.feed(chunk, &mut out);
        }
        let longest = input.lines().map(str::len).max().unwrap_or(0) as u64;
        let out: String = String::from_utf8(out)
            .unwrap()
            .split_inclusive('\n')
            .map(|line| sized(line, limit, longest))
            .collect();
        assert_eq!(out, expected, "limit {limit}, chunks {chunks:?}");
        assert_eq!(shared.in_progress(), None, "nothing is being dropped");
    }
}

/// An error line with its size (how far the message had come when the error was sent, which depends
/// on how the bytes arrived) checked to be over the limit and within the message, then shown as `B`,
/// and its nonce as `N`.
fn sized(line: &str, limit: usize, longest: u64) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(line) else {
        return line.to_owned();
    };
    let Some(report) = value.pointer_mut("/error/data/claijMessageTooLarge") else {
        return line.to_owned();
    };
    let bytes = report["bytes"].as_u64().unwrap();
    assert!(
        bytes > limit as u64 && bytes <= longest,
        "{bytes} bytes: {line}"
    );
    report["bytes"] = json!("B");
    report["nonce"] = json!("N");
    let message = value["error"]["message"].as_str().unwrap();
    value["error"]["message"] = json!(message.replace(&format!("is {bytes} bytes"), "is B bytes"));
    format!("{value}\n")
}

fn error(id: Value, limit: usize) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32000,
            "message": format!("the answer is B bytes or more, over the limit of {limit} bytes"),
            "data": {"claijMessageTooLarge": {"nonce": "N", "bytes": "B", "limit": limit}},
        }
    })
    .to_string()
}

#[test]
fn lines_within_the_limit_pass_unchanged() {
    check(20, "", "");
    check(20, "\n\n", "\n\n");
    check(20, "{\"id\":1}\n{\"a\":2}\n", "{\"id\":1}\n{\"a\":2}\n");
    // Exactly the limit (the newline is not counted); a torn last line is passed on as it is.
    check(8, "{\"id\":1}\n{\"a\"", "{\"id\":1}\n{\"a\"");
    check(20, "{\"id\":\"a\\\"b\"}\r\n", "{\"id\":\"a\\\"b\"}\r\n");
}

#[test]
fn an_oversized_answer_becomes_an_error_for_its_request() {
    // The Python SDK writes the id first: the error is known as soon as the limit is passed.
    let python = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"0123456789abcdef"}]}}"#;
    let expected = format!("{}\n{}\n{{\"id\":8}}\n", &python[..40], error(json!(7), 40));
    check(40, &format!("{python}\n{{\"id\":8}}\n"), &expected);
    // The TypeScript SDK writes it last: the error comes at the end of the line, with its size.
    let typescript = r#"{"result":{"content":[{"type":"text","text":"0123456789abcdef"}]},"jsonrpc":"2.0","id":"r-9"}"#;
    let expected = format!("{}\n{}\n", &typescript[..30], error(json!("r-9"), 30));
    check(30, &format!("{typescript}\n"), &expected);
}

#[test]
fn an_oversized_answer_keeps_its_id_exactly() {
    // A string id with escapes and spaces around it; an `id` nested deeper is not the message's.
    let line = r#"{ "result" : {"id": 99, "text": "xxxxxxxxxxxxxxxxxxxxxxxx"} , "id" : "a\"b" }"#;
    let expected = format!("{}\n{}\n", &line[..10], error(json!("a\"b"), 10));
    check(10, &format!("{line}\n"), &expected);
}

#[test]
fn oversized_requests_notifications_and_idless_lines_are_dropped() {
    let cases = [
        r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":"yyyyyyyyyy"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"yyyyyyyyyyyy"}}"#,
        r#"{"jsonrpc":"2.0","result":{"text":"yyyyyyyyyyyyyyyyyyyy"}}"#,
        r#"{"jsonrpc":"2.0","id":{"not":"an id"},"result":{"text":"yyyyyyyyyyyyyyyyyyyy"}}"#,
        r#"["not", "an", "object", "at", "all", "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"]"#,
    ];
    for line in cases {
        check(
            12,
            &format!("{line}\n{{\"id\":1}}\n"),
            &format!("{}\n{{\"id\":1}}\n", &line[..12]),
        );
    }
}

#[test]
fn the_answer_is_recognised_only_with_this_readers_nonce() {
    let shared = Limit::new(10);
    let mut lines = Lines::new(Arc::clone(&shared), "s");
    let mut out = Vec::new();
    let start = b"{\"id\":1,\"result\":\"0123456789\"";
    let size = start.len() as u64;
    lines.feed(start, &mut out);
    assert_eq!(
        shared.in_progress(),
        Some(Oversized { size, limit: 10 }),
        "the rest of the line is still to come"
    );
    lines.feed(b"\n", &mut out);
    assert_eq!(shared.in_progress(), None);
    let text = String::from_utf8(out).unwrap();
    let answer: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(
        shared.recognise(answer["error"].get("data")),
        Some(Oversized { size, limit: 10 })
    );
    let other = Limit::new(10);
    assert_eq!(other.recognise(answer["error"].get("data")), None);
    assert_eq!(
        shared.recognise(Some(&json!({"claijMessageTooLarge": {"bytes": 1}}))),
        None
    );
    assert_eq!(shared.recognise(None), None);
}

#[tokio::test]
async fn the_reader_passes_a_stream_through() {
    use tokio::io::AsyncReadExt as _;
    let big = format!("{{\"id\":2,\"result\":\"{}\"}}\n", "z".repeat(200_000));
    let input = format!("{{\"id\":1}}\n{big}{{\"id\":3}}\n");
    let mut reader = LimitedReader::new(input.as_bytes(), Limit::new(100_000), "s");
    let mut out = String::new();
    reader.read_to_string(&mut out).await.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{:?}", &out[..200]);
    assert_eq!(lines[0], "{\"id\":1}");
    assert_eq!(lines[1].len(), 100_000);
    let answer: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(answer["id"], 2);
    assert_eq!(lines[3], "{\"id\":3}");
}

/// Lines made of JSON-ish bytes and newlines, cut into chunks anywhere.
fn stream() -> impl proptest::strategy::Strategy<Value = (Vec<u8>, Vec<usize>)> {
    use proptest::prelude::*;
    (
        proptest::collection::vec(
            prop_oneof![
                Just(b'\n'),
                Just(b'"'),
                Just(b'\\'),
                Just(b'{'),
                Just(b'}'),
                Just(b':'),
                Just(b','),
                any::<u8>()
            ],
            0..400,
        ),
        proptest::collection::vec(1usize..64, 0..20),
    )
}

proptest::proptest! {
    /// Whatever the bytes and however they arrive: no panic; every line passed on is within the
    /// limit or is this reader's own error answer; input whose lines all fit passes unchanged; and
    /// nothing is left marked as being dropped once the input ends on a newline.
    #[test]
    fn every_line_passed_on_fits_or_is_our_answer(
        (input, cuts) in stream(),
        limit in 0usize..80,
    ) {
        let shared = Limit::new(limit);
        let mut lines = Lines::new(Arc::clone(&shared), "s");
        let mut out = Vec::new();
        let mut rest = &input[..];
        for cut in cuts {
            let (chunk, tail) = rest.split_at(cut.min(rest.len()));
            lines.feed(chunk, &mut out);
            rest = tail;
        }
        lines.feed(rest, &mut out);
        for line in out.split(|b| *b == b'\n') {
            let ours = serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|v| shared.recognise(v.pointer("/error/data")).map(|_| ()))
                .is_some();
            proptest::prop_assert!(line.len() <= limit || ours, "{:?}", String::from_utf8_lossy(line));
        }
        if input.split(|b| *b == b'\n').all(|line| line.len() <= limit) {
            proptest::prop_assert_eq!(&out, &input);
        }
        if input.last() == Some(&b'\n') || input.is_empty() {
            proptest::prop_assert_eq!(shared.in_progress(), None);
        }
    }
}
