//! The one [`Adapter`] implementation of the OpenAI family: OpenAI, OpenRouter and compatible
//! servers share the wire format, so each says only how its flavour differs ([`Flavour`]) and
//! every other method is the same translation.

use crate::{
    Adapter, ApiKey, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext, StreamEvent,
    WireRequest,
};

use super::translate::{self, Shape};

/// How one provider of the family differs from the others. Public only inside a private module:
/// no other crate can name it, so no other type joins the family.
pub trait Flavour: Send + Sync + 'static {
    /// The provider's name, for errors and logs.
    fn provider(&self) -> &str;

    /// What the provider offers for `model`.
    fn capabilities(&self, model: &str) -> Capabilities;

    /// The request's shape: token limit field, stop sequences, OpenRouter routing, extra headers.
    fn shape(&self) -> Shape<'_>;

    /// Last changes to a translated request (a compatible server's structured-output field).
    fn finish(&self, _wire: &mut WireRequest) {}

    /// The error for a non-2xx response, from the family's classification of it.
    fn classify(&self, error: Error, _status: u16, _body: &[u8]) -> Error {
        error
    }
}

impl<F: Flavour> Adapter for F {
    fn provider(&self) -> &str {
        Flavour::provider(self)
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        Flavour::capabilities(self, model)
    }

    fn transform_request(&self, request: &ChatRequest, stream: bool) -> Result<WireRequest, Error> {
        let mut shape = self.shape();
        let model = Some(request.model.as_str())
            .filter(|m| !m.is_empty())
            .or(shape.default_model)
            .unwrap_or_default();
        shape.drop_temperature =
            request.temperature.is_some() && self.capabilities(model).rejects_temperature;
        let mut wire = translate::request(shape, request, stream)?;
        self.finish(&mut wire);
        Ok(wire)
    }

    fn transform_response(
        &self,
        body: &[u8],
        context: &ErrorContext,
    ) -> Result<ChatResponse, Error> {
        translate::response(body, context)
    }

    fn classify_error(
        &self,
        status: u16,
        retry_after: Option<std::time::Duration>,
        body: &[u8],
        context: ErrorContext,
    ) -> Error {
        let error = translate::classify(status, retry_after, body, context);
        self.classify(error, status, body)
    }

    fn auth_headers(&self, key: &ApiKey) -> Vec<(&'static str, String)> {
        translate::bearer(key)
    }

    fn stream_event(
        &self,
        _event: Option<&str>,
        data: &str,
        context: &ErrorContext,
    ) -> Result<Vec<StreamEvent>, Error> {
        translate::stream_event(data, context)
    }
}
