//! Typed answers: the schema derived from a Rust type, compiled once per type, the value deserialized;
//! and typed partial values ([`Partial`]) while the answer streams in.

use std::any::{TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::Context;
use crate::error::Error;
use crate::pipeline::{Answer, Base, Pipeline};

#[cfg(test)]
mod tests;

/// A `T` as it streams in: the JSON recovered from the reply so far (repaired as if it stopped
/// here), not yet validated, in which any field may be missing or unfinished.
///
/// Every field is read as an `Option`: [`Partial::get`] (a top-level field) and [`Partial::pointer`]
/// (anywhere, by JSON pointer) deserialize what is there into the type asked for, and say `None`
/// while it is absent or does not deserialize yet (a number still a string, a half-written enum
/// name, an object missing a required field). [`Partial::complete`] is the whole `T` once the value
/// so far deserializes as one.
///
/// This is derive-free on purpose: a generated "every field optional" twin of `T` would need a
/// derive macro on every type asked for (and a proc-macro crate); reading fields leniently from the
/// partial value works for any `T` that [`Pipeline::ask_as`] takes. A caller who wants a struct of
/// options can read the value into one with [`Partial::value`].
pub struct Partial<T> {
    value: Value,
    _type: PhantomData<fn() -> T>,
}

impl<T> Partial<T> {
    /// The partial value as it is.
    pub fn new(value: Value) -> Self {
        Self {
            value,
            _type: PhantomData,
        }
    }

    /// The JSON recovered so far.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The JSON recovered so far, owned.
    pub fn into_value(self) -> Value {
        self.value
    }

    /// The top-level field `name` as an `F`, if it is there and deserializes as one yet.
    pub fn get<F: DeserializeOwned>(&self, name: &str) -> Option<F> {
        self.value.get(name).and_then(|v| F::deserialize(v).ok())
    }

    /// The value at the JSON pointer `pointer` (`/steps/0/name`) as an `F`, if it is there and
    /// deserializes as one yet.
    pub fn pointer<F: DeserializeOwned>(&self, pointer: &str) -> Option<F> {
        self.value
            .pointer(pointer)
            .and_then(|v| F::deserialize(v).ok())
    }
}

impl<T: DeserializeOwned> Partial<T> {
    /// The whole `T`, once the value so far deserializes as one (it may still grow, and is not
    /// validated: the final answer is).
    pub fn complete(&self) -> Option<T> {
        T::deserialize(&self.value).ok()
    }
}

impl<T> Clone for Partial<T> {
    fn clone(&self) -> Self {
        Self::new(self.value.clone())
    }
}

impl<T> PartialEq for Partial<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T> fmt::Debug for Partial<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Partial").field(&self.value).finish()
    }
}

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
    /// use claij_test_support::Scripted;
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
        typed(answer)
    }

    /// [`Pipeline::ask_as`], streaming: `on_partial` gets a [`Partial<T>`] whenever the value
    /// recovered from the reply so far changes (see [`Pipeline::ask_streaming`]); the final value is
    /// validated and deserialized as by [`Pipeline::ask_as`]. A partial may come from an attempt that
    /// turns out invalid and is retried.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use claij_test_support::Scripted;
    /// use claij_interceptors::{Chain, Config, Context, Partial, Pipeline};
    ///
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Review { stars: u8, text: String }
    ///
    /// let backend = Arc::new(Scripted::replies([r#"{"stars": "4", "text": "Good"}"#]));
    /// let pipeline = Pipeline::new(backend, Config::new("m"), Chain::new());
    /// let seen: Mutex<Vec<Partial<Review>>> = Mutex::default();
    /// let review = futures_executor::block_on(pipeline.ask_as_streaming::<Review, _>(
    ///     &mut Context::default(),
    ///     "Review it",
    ///     |partial| seen.lock().unwrap().push(partial),
    /// ))?;
    /// let seen = seen.into_inner().unwrap();
    /// let last = seen.last().unwrap();
    /// // Partials are not validated: `stars` is still the string the model wrote...
    /// assert_eq!(last.get::<String>("text").as_deref(), Some("Good"));
    /// assert_eq!(last.get::<u8>("stars"), None);
    /// assert!(last.complete().is_none());
    /// // ...the answer is: "4" coerced to 4.
    /// assert_eq!(review.value.stars, 4);
    /// # Ok::<(), claij_interceptors::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Pipeline::ask_as`].
    pub async fn ask_as_streaming<T, F>(
        &self,
        ctx: &mut Context,
        input: &str,
        on_partial: F,
    ) -> Result<Answer<T>, Error>
    where
        T: JsonSchema + DeserializeOwned + 'static,
        F: Fn(Partial<T>) + Send + Sync,
    {
        let on_value = |value: &Value| on_partial(Partial::new(value.clone()));
        let answer = self
            .ask_with_base(ctx, input, Base::Schema(schema_of::<T>()), Some(&on_value))
            .await?;
        typed(answer)
    }
}

/// A valid answer deserialized as a `T`.
fn typed<T: DeserializeOwned>(answer: Answer) -> Result<Answer<T>, Error> {
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
