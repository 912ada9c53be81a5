//! The interceptor that tells the model about the schema extensions its state's schema has this
//! request: the state prompt lists each transition's schema as written, and the pipeline shows no
//! schema of its own (`SchemaFormat::Described`), so without it a prompted model never learns a field
//! an extension added.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use claij_interceptors::{Context, Interceptor};
use claij_schema::SchemaDelta;

use crate::prompts::extensions_section;

/// Last in a state's chain: its `pre_schema` hook sees every delta the interceptors before it added,
/// its `pre_prompt` hook appends them to the system prompt ([`extensions_section`]). The two hooks
/// of one call run back to back with no await between them; the deltas wait in between keyed by
/// the call's context, so calls of one pipeline from several runs at once do not mix.
pub(super) fn extensions() -> impl Interceptor {
    let pending: Arc<Mutex<HashMap<usize, Vec<SchemaDelta>>>> = Arc::default();
    let seen = Arc::clone(&pending);
    claij_interceptors::from_fn("fsm-extensions")
        .pre_schema(move |schema, ctx: &Context| {
            let mut pending = seen.lock().unwrap_or_else(PoisonError::into_inner);
            if schema.deltas().is_empty() {
                pending.remove(&key(ctx));
            } else {
                pending.insert(key(ctx), schema.deltas().to_vec());
            }
            Ok(())
        })
        .pre_prompt(move |prompts, ctx: &Context| {
            let deltas = pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key(ctx));
            if let Some(section) = deltas.as_deref().and_then(extensions_section) {
                prompts.system_push(&section);
            }
            Ok(())
        })
}

/// The call's context, by address: the same in both hooks of one call.
fn key(ctx: &Context) -> usize {
    std::ptr::from_ref(ctx) as usize
}
