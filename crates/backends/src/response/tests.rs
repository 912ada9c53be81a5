//! Tests of the Assembler on hostile streams: provider indices and ids are input.

use proptest::prelude::*;

use super::*;

#[test]
fn an_index_at_the_top_of_the_range_does_not_overflow() {
    let mut assembler = Assembler::default();
    for event in [
        StreamEvent::ToolCall {
            index: u32::MAX,
            id: "a".into(),
            name: "f".into(),
        },
        StreamEvent::ToolCallInput {
            index: u32::MAX,
            part: "{}".into(),
        },
        // A new id under the same index: a new call, which has no slot above the top.
        StreamEvent::ToolCall {
            index: u32::MAX,
            id: "b".into(),
            name: "f".into(),
        },
    ] {
        assembler.push(event);
    }
    let response = assembler.finish();
    assert_eq!(response.tool_calls.len(), 1);
}

fn event() -> impl Strategy<Value = StreamEvent> {
    let index = prop_oneof![0u32..3, Just(u32::MAX)];
    let id = prop_oneof![Just(String::new()), "[ab]"];
    prop_oneof![
        ".{0,4}".prop_map(StreamEvent::Text),
        ".{0,4}".prop_map(StreamEvent::ToolInput),
        (index.clone(), id, "[fg]?").prop_map(|(index, id, name)| StreamEvent::ToolCall {
            index,
            id,
            name
        }),
        (index, "[{}\":a1 ]{0,4}")
            .prop_map(|(index, part)| StreamEvent::ToolCallInput { index, part }),
    ]
}

proptest! {
    /// Any order of any events assembles without a panic, and every call kept has a name and an id.
    #[test]
    fn any_stream_assembles(events in prop::collection::vec(event(), 0..24)) {
        let mut assembler = Assembler::default();
        for event in events {
            assembler.push(event);
        }
        let lenient = assembler.clone().finish();
        prop_assert!(lenient.tool_calls.iter().all(|c| !c.name.is_empty() && !c.id.is_empty()));
        if let Ok(strict) = assembler.try_finish("p") {
            prop_assert_eq!(strict.tool_calls.len(), lenient.tool_calls.len());
        }
    }
}
