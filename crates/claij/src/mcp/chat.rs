//! A chat over MCP servers: the MCP FSM (`llm` ⇄ `servicing` → `end`) whose input also carries
//! the chat so far ([`History`]: the last requests and their answers), a request a run; the
//! text of an answer ([`answer_text`]); a server's question to the person chatting
//! ([`Question`]) and the answer a line of theirs makes ([`reply`]); a whole chat, request after
//! request ([`Chat`]). Limits are the runner's: `with_max_transitions`, and
//! `with_max_repeated_calls` (a tool call that repeats an earlier one of the same request, with
//! the same arguments and result, is told to the model, and stopped past the limit).

use std::collections::VecDeque;
use std::sync::Arc;

use claij_backends::Backend;
use claij_fsm::{Fsm, Interrupt, Outcome, Runner};
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

/// The question a chat's run waits on in the MCP FSM's `asking` state (an MCP elicitation):
/// `Display` is what the person is told (who asks, what, and the shape of the answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The server that asks (`a server` when the event does not say).
    pub server: String,
    /// Its message.
    pub message: String,
    /// The requested schema, compact ([`claij_schema::to_compact`]).
    pub schema: String,
}

impl Question {
    /// The question in the waiting run's event (`{"elicitation": {server, message, schema}}`).
    #[must_use]
    pub fn of(event: &Value) -> Self {
        let question = &event["elicitation"];
        Question {
            server: question["server"].as_str().unwrap_or("a server").to_owned(),
            message: question["message"].as_str().unwrap_or_default().to_owned(),
            schema: claij_schema::to_compact(&question["schema"]),
        }
    }
}

impl std::fmt::Display for Question {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} asks: {}",
            self.server,
            crate::one_line(&self.message)
        )?;
        writeln!(
            f,
            "answer with a JSON object like {}",
            self.schema.trim_end()
        )
    }
}

/// The answer a person's `line` makes to a [`Question`] (what the run is given as `answer`):
/// `{"action": "accept", "content": {...}}` for a JSON object, `decline` for an empty line or
/// the end of input (`None`), `cancel` for `cancel`; `None` for anything else (ask again).
#[must_use]
pub fn reply(line: Option<&str>) -> Option<Value> {
    match line.map(str::trim) {
        None | Some("") => Some(json!({"action": "decline"})),
        Some("cancel") => Some(json!({"action": "cancel"})),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(content @ Value::Object(_)) => Some(json!({"action": "accept", "content": content})),
            _ => None,
        },
    }
}

/// A chat: the runner ([`runner`]) and the history its requests carry.
pub struct Chat {
    runner: Runner,
    history: History,
}

/// How one request of a [`Chat`] ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Answer {
    /// The model's answer: its text ([`answer_text`]).
    Valid(String),
    /// The model answered with an error result: its text.
    Error(String),
    /// The run failed (a limit, the model, a service): no answer.
    Failed(claij_fsm::Error),
    /// The run was interrupted while in `from`.
    Interrupted {
        /// The state it was in.
        from: String,
    },
    /// The run waits in `state` (a server's question) and no one answers.
    Unanswered {
        /// The state.
        state: String,
    },
    /// The run ended in a way this version does not know.
    Unfinished,
}

impl Chat {
    /// A chat with `runner` whose requests carry the last `history` exchanges.
    #[must_use]
    pub fn new(runner: Runner, history: usize) -> Self {
        Chat {
            runner,
            history: History::new(history),
        }
    }

    /// Runs `request` (with the history, [`History::input`]) to its answer. `ask` answers the
    /// servers' questions on the way (given the [`Question`], it returns the run's answer as
    /// [`reply`] makes it, or `None` when no one can answer: [`Answer::Unanswered`]). A valid or
    /// error answer joins the history.
    ///
    /// # Errors
    ///
    /// The run cannot start, or take the answer to a question ([`claij_fsm::Error`]), or `ask`
    /// fails.
    pub async fn answer<E: From<claij_fsm::Error>>(
        &mut self,
        request: &str,
        mut ask: impl AsyncFnMut(&Question) -> Result<Option<Value>, E>,
    ) -> Result<Answer, E> {
        let runner = &self.runner;
        let mut run = runner.start(self.history.input(request))?;
        let interrupt = Interrupt::new();
        loop {
            let outcome = match runner.run(&mut run, &interrupt, None).await {
                Ok(outcome) => outcome,
                Err(error) => return Ok(Answer::Failed(error)),
            };
            let answer = match outcome {
                Outcome::Finished { event, .. } => {
                    let text = answer_text(&event);
                    self.history.push(request, text.clone());
                    match is_error(&event) {
                        true => Answer::Error(text),
                        false => Answer::Valid(text),
                    }
                }
                Outcome::Waiting { state } if state == mcp_fsm::ASKING => {
                    match ask(&Question::of(&run.event)).await? {
                        Some(reply) => {
                            runner.provide(&mut run, json!({ "answer": reply }), None)?;
                            continue;
                        }
                        None => Answer::Unanswered { state },
                    }
                }
                Outcome::Waiting { state } => Answer::Unanswered { state },
                Outcome::Interrupted { from } => Answer::Interrupted { from },
                _ => Answer::Unfinished,
            };
            return Ok(answer);
        }
    }
}

/// The lines of `input`, read on a thread of their own and sent one by one (without their line
/// endings) until the end of input or a read error: a caller awaiting a line still hears signals,
/// and the process can end without that read finishing.
pub fn lines(
    input: impl std::io::BufRead + Send + 'static,
) -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in input.lines() {
            let Ok(line) = line else {
                break;
            };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
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

    #[test]
    fn a_question_says_who_asks_and_a_line_is_its_reply() {
        let event = json!({"elicitation": {"server": "srv", "message": "Who\nare you?",
            "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
        let question = Question::of(&event);
        assert_eq!(question.server, "srv");
        let shown = question.to_string();
        assert!(
            shown.starts_with("srv asks: Who are you?\nanswer with a JSON object like "),
            "{shown}"
        );
        assert!(shown.contains("name"), "{shown}");
        assert_eq!(Question::of(&json!({})).server, "a server");
        assert_eq!(reply(None), Some(json!({"action": "decline"})));
        assert_eq!(reply(Some("  ")), Some(json!({"action": "decline"})));
        assert_eq!(reply(Some("cancel")), Some(json!({"action": "cancel"})));
        assert_eq!(
            reply(Some(r#" {"name": "Ada"} "#)),
            Some(json!({"action": "accept", "content": {"name": "Ada"}}))
        );
        assert_eq!(reply(Some("[1]")), None);
        assert_eq!(reply(Some("Ada")), None);
    }

    /// A chat over no servers with a scripted model: a valid answer and an error result join the
    /// history the next request carries; a run that fails (the model has nothing more to say)
    /// does not.
    #[tokio::test]
    async fn a_chat_keeps_its_answers_in_the_history_and_not_its_failures() {
        let answer = |text: &str, error: bool| {
            json!({"id": ["llm", "end"],
                "result": {"content": [{"type": "text", "text": text}], "isError": error}})
            .to_string()
        };
        let backend = Arc::new(claij_test_support::Scripted::replies([
            answer("42", false),
            answer("no", true),
        ]));
        let service = McpService::new(claij_mcp::Services::from_clients([]));
        let mut config = Config::new("scripted");
        config.max_retries = 0;
        let runner = runner(service, backend.clone(), config).unwrap();
        let mut chat = Chat::new(runner, 5);
        let nobody = async |_: &Question| Ok::<_, claij_fsm::Error>(None);
        let valid = chat.answer("q1", nobody).await.unwrap();
        assert!(
            matches!(&valid, Answer::Valid(text) if text == "42"),
            "{valid:?}"
        );
        let error = chat.answer("q2", nobody).await.unwrap();
        assert!(
            matches!(&error, Answer::Error(text) if text == "no"),
            "{error:?}"
        );
        let failed = chat.answer("q3", nobody).await.unwrap();
        assert!(matches!(failed, Answer::Failed(_)), "{failed:?}");
        let failed = chat.answer("q4", nobody).await.unwrap();
        assert!(matches!(failed, Answer::Failed(_)), "{failed:?}");
        let requests = backend.requests();
        let sent = |i: usize| serde_json::to_string(&requests[i].messages).unwrap();
        assert!(
            sent(1).contains("q1") && sent(1).contains("42"),
            "{}",
            sent(1)
        );
        assert!(
            sent(2).contains("q2") && sent(2).contains("\\\"no\\\""),
            "{}",
            sent(2)
        );
        // q3 failed: q4 carries q1 and q2, not q3.
        assert!(
            !sent(3).contains("q3") && sent(3).contains("q2"),
            "{}",
            sent(3)
        );
    }
}
