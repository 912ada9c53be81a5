//! The decoding loop: prefill the prompt, then one token at a time (masked by the grammar when the
//! output is constrained), until an end token, the grammar's end, a stop sequence, the token limit or
//! cancellation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use llguidance::Matcher;
use toktrie::TokenId;

use super::sample::Sampler;
use super::vocab::Vocab;
use super::{Generation, Timings};
use crate::{Error, ErrorContext, FinishReason, Usage};

/// One generation's inputs.
pub(super) struct Job<'a> {
    pub(super) prompt: &'a [TokenId],
    pub(super) max_tokens: usize,
    pub(super) context_length: usize,
    pub(super) sampler: Sampler,
    pub(super) penalty: Penalty,
    pub(super) matcher: Option<Matcher>,
    pub(super) stop: &'a [String],
    pub(super) cancel: &'a AtomicBool,
}

/// The repetition penalty: logits of recently generated tokens divided by `factor` (multiplied when
/// negative), except tokens the vocabulary marks as JSON structure.
#[derive(Debug, Clone, Copy)]
pub(super) struct Penalty {
    pub(super) factor: f32,
    pub(super) window: usize,
}

impl Penalty {
    fn apply(self, logits: &mut [f32], recent: &[TokenId], structural: impl Fn(TokenId) -> bool) {
        if self.factor == 1.0 || !self.factor.is_finite() || self.factor <= 0.0 {
            return;
        }
        let start = recent.len().saturating_sub(self.window);
        let mut seen: Vec<TokenId> = recent[start..].to_vec();
        seen.sort_unstable();
        seen.dedup();
        for token in seen {
            if structural(token) {
                continue;
            }
            if let Some(logit) = logits.get_mut(token as usize) {
                *logit = if *logit > 0.0 {
                    *logit / self.factor
                } else {
                    *logit * self.factor
                };
            }
        }
    }
}

/// Runs `job` on `weights`; `on_text` receives the answer as it grows, in whole UTF-8 characters.
pub(super) fn run(
    weights: &mut ModelWeights,
    vocab: &Vocab,
    mut job: Job<'_>,
    on_text: &mut dyn FnMut(&str),
) -> Result<Generation, Error> {
    let mut timings = Timings {
        prompt_tokens: job.prompt.len(),
        ..Timings::default()
    };
    let started = Instant::now();
    // Position 0 replaces the key-value cache, so nothing of a previous request leaks into this one.
    let mut logits = forward(weights, job.prompt, 0)?;
    timings.prefill = started.elapsed();
    let decode_started = Instant::now();
    let mut position = job.prompt.len();
    let mut tokens: Vec<TokenId> = Vec::new();
    let mut text = Utf8Stream::default();
    let finish = loop {
        if job.cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        if tokens.len() >= job.max_tokens {
            break FinishReason::Length;
        }
        job.penalty
            .apply(&mut logits, &tokens, |t| vocab.is_structural(t));
        if let Some(matcher) = job.matcher.as_mut() {
            let mask_started = Instant::now();
            let mask = matcher.compute_mask().map_err(|e| grammar_error(&e))?;
            for (index, logit) in logits.iter_mut().enumerate() {
                let allowed = u32::try_from(index).is_ok_and(|t| mask.is_allowed(t));
                if index >= mask.len() || !allowed {
                    *logit = f32::NEG_INFINITY;
                }
            }
            timings.masks += 1;
            timings.mask_total += mask_started.elapsed();
        } else {
            // The output layer may be wider than the vocabulary.
            logits
                .iter_mut()
                .skip(vocab.vocab_size())
                .for_each(|l| *l = f32::NEG_INFINITY);
        }
        let Some(token) = job.sampler.pick(&logits) else {
            return Err(Error::other(
                "local",
                "the grammar allows no token: the schema cannot be completed",
            ));
        };
        if vocab.stop.contains(&token) {
            break FinishReason::Stop;
        }
        let mut feed = vec![token];
        let mut grammar_done = false;
        if let Some(matcher) = job.matcher.as_mut() {
            matcher
                .consume_token(token)
                .map_err(|e| grammar_error(&e))?;
            if !matcher.is_stopped() {
                let forced = matcher.consume_ff_tokens();
                timings.forced_tokens += forced.len();
                feed.extend(forced);
            }
            grammar_done = matcher.is_stopped();
        }
        tokens.extend_from_slice(&feed);
        let delta = text.push(&vocab.decode(&feed));
        if let Some(cut) = stop_sequence(text.full(), delta.len(), job.stop) {
            let kept = text.truncate(cut, delta.len());
            on_text(&kept);
            break FinishReason::Stop;
        }
        on_text(&delta);
        if grammar_done {
            break FinishReason::Stop;
        }
        if position + feed.len() >= job.context_length {
            break FinishReason::Length;
        }
        logits = forward(weights, &feed, position)?;
        timings.forward_passes += 1;
        position += feed.len();
    };
    on_text(&text.flush());
    timings.generated_tokens = tokens.len();
    timings.decode = decode_started.elapsed();
    Ok(Generation {
        text: text.into_string(),
        finish_reason: finish,
        usage: Usage {
            input_tokens: job.prompt.len() as u64,
            output_tokens: tokens.len() as u64,
            cost_usd: Some(0.0),
            ..Usage::default()
        },
        constrained: job.matcher.is_some(),
        timings,
    })
}

/// Logits for the next token after `tokens`, which start at `position`.
fn forward(
    weights: &mut ModelWeights,
    tokens: &[TokenId],
    position: usize,
) -> Result<Vec<f32>, Error> {
    let mut run = || -> candle_core::Result<Vec<f32>> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        weights.forward(&input, position)?.squeeze(0)?.to_vec1()
    };
    run().map_err(|e| Error::other("local", format!("model evaluation failed: {e}")))
}

fn cancelled() -> Error {
    Error::Cancelled {
        context: ErrorContext::provider("local"),
    }
}

fn grammar_error(e: &impl std::fmt::Display) -> Error {
    Error::other("local", format!("constrained decoding failed: {e}"))
}

/// Where a stop sequence starts, if one ends in the text's last `fresh` bytes (or overlaps them).
fn stop_sequence(text: &str, fresh: usize, stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|stop| {
            // A stop may straddle the previous tokens and the new ones.
            let from = text.len().saturating_sub(fresh + stop.len());
            let from = (from..text.len())
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(text.len());
            text[from..].find(stop.as_str()).map(|i| from + i)
        })
        .min()
}

/// Generated bytes turned into text as soon as they form whole characters.
#[derive(Default)]
struct Utf8Stream {
    text: String,
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes; returns the newly completed text.
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            // An incomplete character at the end waits for the next token; anything else is invalid
            // and decoded lossily.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => {
                let lossy = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                self.text.push_str(&lossy);
                return lossy;
            }
        };
        let done: Vec<u8> = self.pending.drain(..valid).collect();
        let delta = String::from_utf8_lossy(&done).into_owned();
        self.text.push_str(&delta);
        delta
    }

    /// Whatever is still pending, lossily.
    fn flush(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        self.text.push_str(&rest);
        rest
    }

    fn full(&self) -> &str {
        &self.text
    }

    /// Cuts the text at `at` (a stop sequence), given that the last `fresh` bytes were not shown
    /// yet; returns the part of them that survives.
    fn truncate(&mut self, at: usize, fresh: usize) -> String {
        let shown = self.text.len() - fresh;
        let kept = self.text.get(shown..at).unwrap_or_default().to_owned();
        self.text.truncate(at);
        self.pending.clear();
        kept
    }

    fn into_string(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_sequences_found_across_tokens() {
        assert_eq!(stop_sequence("hello END", 3, &["END".into()]), Some(6));
        assert_eq!(stop_sequence("hello EN", 2, &["END".into()]), None);
        assert_eq!(stop_sequence("ab\n\nc", 2, &["\n\n".into()]), Some(2));
        assert_eq!(stop_sequence("é stop", 4, &["stop".into()]), Some(3));
        assert_eq!(stop_sequence("x", 1, &[String::new()]), None);
    }

    #[test]
    fn the_penalty_spares_structure_and_old_tokens() {
        let penalty = Penalty {
            factor: 2.0,
            window: 4,
        };
        let mut logits = [4.0, -1.0, 4.0, 4.0, 4.0];
        // Token 0 is outside the window; 3 is structural; 1 and 2 are penalised once each.
        penalty.apply(&mut logits, &[0, 1, 2, 2, 3], |t| t == 3);
        assert_eq!(logits, [4.0, -2.0, 2.0, 4.0, 4.0]);
        let off = Penalty {
            factor: 1.0,
            window: 64,
        };
        off.apply(&mut logits, &[1, 2], |_| false);
        assert_eq!(logits, [4.0, -2.0, 2.0, 4.0, 4.0]);
    }

    #[test]
    fn utf8_waits_for_whole_characters() {
        let mut s = Utf8Stream::default();
        let e = "é".as_bytes();
        assert_eq!(s.push(&e[..1]), "");
        assert_eq!(s.push(&e[1..]), "é");
        assert_eq!(s.push(b"\xff"), "\u{fffd}");
        assert_eq!(s.full(), "é\u{fffd}");
        let mut s = Utf8Stream::default();
        s.push(b"abc");
        let fresh = s.push(b"de END").len();
        assert_eq!(s.truncate(6, fresh), "de ");
        assert_eq!(s.into_string(), "abcde ");
    }
}
