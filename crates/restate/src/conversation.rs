//! The `ClaijConversation` virtual object: one conversation (an `ask`/`chat` session) per key, its
//! turns serialised by Restate across any number of workers, each model call journaled, the
//! interceptor context (history, memory) in the object's state.

use std::sync::Arc;

use claij_fsm::ContextState;
use claij_interceptors::{Context, ErrorChain, Pipeline};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wiring::Runners;

/// The object's service name (`/ClaijConversation/{session}/turn`).
pub const CONVERSATION: &str = "ClaijConversation";

const CONTEXT: &str = "context";

/// The conversation object (bind it through [`crate::Worker`]).
pub struct ClaijConversation {
    pub(crate) runners: Arc<Runners>,
}

/// One turn's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnAnswer {
    /// The validated reply.
    pub value: Value,
    /// How many attempts it took.
    pub attempts: usize,
    /// Completed turns of the conversation, this one included.
    pub turn: u64,
}

#[derive(Serialize, Deserialize)]
enum Turned {
    Answer {
        value: Value,
        attempts: usize,
        context: ContextState,
    },
    Failed(String),
}

#[restate_sdk::object(name = "ClaijConversation")]
impl ClaijConversation {
    /// Asks the model the user's `message` in this conversation (one turn at a time per key).
    #[handler]
    async fn turn(
        &self,
        ctx: ObjectContext<'_>,
        message: String,
    ) -> Result<Json<TurnAnswer>, HandlerError> {
        let Some(pipeline) = self.runners.wiring().conversation() else {
            return Err(
                TerminalError::new_with_code(501, "this worker serves no conversations").into(),
            );
        };
        let saved = ctx
            .get::<Json<ContextState>>(CONTEXT)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        let Json(turned) = ctx
            .run(move || ask(pipeline, saved, message))
            .name("turn")
            .await?;
        match turned {
            Turned::Answer {
                value,
                attempts,
                context,
            } => {
                let turn = context.turn;
                ctx.set(CONTEXT, Json(context));
                Ok(Json(TurnAnswer {
                    value,
                    attempts,
                    turn,
                }))
            }
            Turned::Failed(error) => Err(TerminalError::new_with_code(422, error).into()),
        }
    }

    /// The conversation's messages so far.
    #[handler]
    async fn history(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Vec<claij_backends::Message>>, HandlerError> {
        let saved = ctx
            .get::<Json<ContextState>>(CONTEXT)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        Ok(Json(saved.history.messages))
    }
}

/// One turn through the pipeline, from the saved context.
async fn ask(
    pipeline: Arc<Pipeline>,
    saved: ContextState,
    message: String,
) -> Result<Json<Turned>, HandlerError> {
    let mut context = Context::default();
    saved.apply_to(&mut context);
    let turned = match pipeline.ask(&mut context, &message).await {
        Ok(answer) => Turned::Answer {
            value: answer.value,
            attempts: answer.attempts.len(),
            context: ContextState::of(&context),
        },
        Err(error) => Turned::Failed(ErrorChain(&error).to_string()),
    };
    Ok(Json(turned))
}
