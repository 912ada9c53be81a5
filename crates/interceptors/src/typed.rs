//! Typed answers: the schema derived from a Rust type, compiled once per type, the value deserialized.

use std::any::{TypeId, type_name};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::Context;
use crate::error::Error;
use crate::pipeline::{Answer, Base, Pipeline};

/// Schemas derived from types, one per type for the life of the process (the pipeline then memoizes
/// the compiled validator by schema content).
static SCHEMAS: LazyLock<Mutex<HashMap<TypeId, Arc<Value>>>> = LazyLock::new(Mutex::default);

/// The JSON Schema of `T`, derived once.
pub fn schema_of<T: JsonSchema + 'static>() -> Arc<Value> {
    let mut schemas = SCHEMAS.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(
        schemas
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(schemars::schema_for!(T).to_value())),
    )
}

impl Pipeline {
    /// Asks for a `T`: the schema is derived from `T` (and grown by the chain's deltas), the validated
    /// value is deserialized.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use claij_backends::testing::Scripted;
    /// use claij_interceptors::{Chain, Config, Context, Pipeline};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// #[serde(rename_all = "lowercase")]
    /// enum Mood { Happy, Sad }
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review { stars: u8, mood: Mood }
    ///
    /// let backend = Arc::new(Scripted::replies([r#"{"stars": "4", "mood": "Happy"}"#]));
    /// let pipeline = Pipeline::new(backend, Config::new("m"), Chain::new());
    /// let review = futures_executor::block_on(pipeline.ask_as::<Review>(&mut Context::default(), "Rate it"))?;
    /// assert_eq!(review.value.stars, 4); // "4" coerced, "Happy" matched to "happy"
    /// # Ok::<(), claij_interceptors::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Pipeline::ask`], and [`Error::Typed`] if the valid value still does not deserialize.
    pub async fn ask_as<T>(&self, ctx: &mut Context, input: &str) -> Result<Answer<T>, Error>
    where
        T: JsonSchema + DeserializeOwned + 'static,
    {
        let answer = self
            .ask_with_base(ctx, input, Base::Schema(schema_of::<T>()), None)
            .await?;
        let value = T::deserialize(&answer.value).map_err(|e| Error::Typed {
            type_name: type_name::<T>(),
            message: e.to_string(),
            value: answer.value.clone(),
        })?;
        Ok(Answer {
            value,
            attempts: answer.attempts,
            usage: answer.usage,
            skipped: answer.skipped,
        })
    }
}
