//! A chat over MCP servers: the MCP FSM (`llm` ⇄ `servicing` → `end`) whose input also carries
//! the chat so far ([`History`]: the last requests and their answers), a request a run; the
//! text of an answer ([`answer_text`]). Limits are the runner's: `with_max_transitions`, and
//! `with_max_repeated_calls` (a tool call that repeats an earlier one of the same request, with
//! the same arguments and result, is told to the model, and stopped past the limit).

use std::collections::VecDeque;
use std::sync::Arc;

use claij_backends::Backend;
use claij_fsm::{Fsm, Runner};
use claij_interceptors::Config;
use claij_mcp::mcp_fsm::{self, McpService};
use serde_json::{Value, json};

/// The exchanges a request carries by default.
pub const DEFAULT_HISTORY: usize = 10;

/// The most exchanges a request may carry.
pub const MAX_HISTORY: usize = 100;

/// The MCP FSM for `service`'s tools ([`mcp_fsm::definition_for`]), its input also taking the
/// chat's `history` ([`History::input`]), its `llm` state asking `backend` with `config`.
///
/// # Errors
///
/// [`crate::fsm::Error::Config`]: the MCP FSM's first transition has no object schema to add
/// the history to; [`crate::fsm::Error::Fsm`]: the machine cannot be built.
pub fn runner(
    service: McpService,
    backend: Arc<dyn Backend>,
    config: Config,
) -> Result<Runner, crate::fsm::Error> {
    let mut definition = mcp_fsm::definition_for(service.services());
    let start = definition
        .transitions
        .iter_mut()
        .find(|t| t.id.from == claij_fsm::definition::START && t.id.to == mcp_fsm::LLM)
        .and_then(|t| t.schema.get_mut("properties"))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| {
            crate::fsm::Error::Config(
                "the MCP FSM has no [\"start\", \"llm\"] object schema".to_owned(),
            )
        })?;
    start.insert(
        "history".to_owned(),
        json!({
            "type": "array",
            "description": "earlier requests of this chat and the answers given, oldest first",
            "items": {
                "type": "object",
                "properties": {"request": {"type": "string"}, "answer": {"type": "string"}},
                "required": ["request", "answer"]
            }
        }),
    );
    Ok(Runner::new(Fsm::new(definition)?)
        .with_llm(backend, config)
        .with_service(mcp_fsm::SERVICE, service))
}

/// The last exchanges of a chat, at most a limit.
#[derive(Debug, Clone, Default)]
pub struct History {
    limit: usize,
    exchanges: VecDeque<Value>,
}

impl History {
    /// No exchange yet; `limit` are kept (0: none, each request on its own).
    #[must_use]
    pub fn new(limit: usize) -> Self {
        History {
            limit,
            exchanges: VecDeque::new(),
        }
    }

    /// The run's input for `request`: `{"request"}`, with `history` (oldest first) when there is
    /// any.
    #[must_use]
    pub fn input(&self, request: &str) -> Value {
        let mut input = json!({ "request": request });
        if !self.exchanges.is_empty() {
            input["history"] = Value::Array(self.exchanges.iter().cloned().collect());
        }
        input
    }

    /// Keeps `request` and its `answer`, forgetting the oldest exchange past the limit.
    pub fn push(&mut self, request: &str, answer: String) {
        if self.limit == 0 {
            return;
        }
        if self.exchanges.len() == self.limit {
            self.exchanges.pop_front();
        }
        self.exchanges
            .push_back(json!({ "request": request, "answer": answer }));
    }
}

/// The text blocks of an answer (the MCP FSM's final event), one per line.
#[must_use]
pub fn answer_text(event: &Value) -> String {
    let blocks = event
        .pointer("/result/content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether an answer (the MCP FSM's final event) is the model's error result.
#[must_use]
pub fn is_error(event: &Value) -> bool {
    event.pointer("/result/isError") == Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_keeps_the_last_exchanges_oldest_first() {
        let mut history = History::new(2);
        assert_eq!(history.input("a"), json!({"request": "a"}));
        history.push("a", "1".to_owned());
        history.push("b", "2".to_owned());
        history.push("c", "3".to_owned());
        assert_eq!(
            history.input("d"),
            json!({"request": "d", "history": [
                {"request": "b", "answer": "2"},
                {"request": "c", "answer": "3"}
            ]})
        );
        let mut none = History::new(0);
        none.push("a", "1".to_owned());
        assert_eq!(none.input("b"), json!({"request": "b"}));
    }

    #[test]
    fn an_answer_is_its_text_blocks() {
        let event = json!({"result": {"content": [
            {"type": "text", "text": "one"}, {"type": "image"}, {"type": "text", "text": "two"}
        ], "isError": true}});
        assert_eq!(answer_text(&event), "one\ntwo");
        assert!(is_error(&event));
        assert!(!is_error(&json!({"result": {"content": []}})));
    }
}
