//! The decoding loop: prefill the prompt, then one token at a time (masked by the grammar when the
//! output is constrained), until an end token, the grammar's end, a stop sequence, the token limit or
//! cancellation. Near the token limit a constrained document is closed rather than cut (see
//! [`closing_plan`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use llguidance::Matcher;
use toktrie::TokenId;

use super::model::{Model, Prefill, Sequence};
use super::sample::Sampler;
use super::vocab::Vocab;
use super::{Generation, Timings};
use claij_backends::{Error, ErrorContext, FinishReason, Usage};

/// Masked tokens whose logit is within this many nats of the best one give their probability to
/// their longest allowed prefix ([`transfer_masked`]); the others carry no mass worth moving.
const TRANSFER_SPAN: f32 = 12.0;

/// The longest closing plan searched for ([`closing_plan`]): a document that needs more tokens than
/// this to finish is left as the token limit cuts it.
const MAX_PLAN: usize = 256;

/// Near the token limit (within the last plan's length and this many tokens), every sampled token is
/// checked: it is kept only when the document can still be closed within the limit after it.
const CLOSING_MARGIN: usize = 24;

/// Further from the limit, the closing plan is refreshed this often (in generated tokens).
const PLAN_EVERY: usize = 16;

/// Inside a JSON string, a word token that would repeat an n-gram of this many tokens already
/// written is banned ([`block_repeats`]): greedy decoding of a small model otherwise loops ("The
/// answer is: The answer is: …") until the token limit, and a penalty on single tokens is too weak
/// once punctuation is spared. Eight tokens lets any phrase occur twice, never a third time in a row.
const NO_REPEAT_NGRAM: usize = 8;

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
    /// How the prompt's matrix products are computed.
    pub(super) prefill: Prefill,
}

/// The repetition penalty: logits of recently generated tokens divided by `factor` (multiplied when
/// negative), except tokens the vocabulary marks as structure (punctuation and whitespace).
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

/// Bans (sets to `-inf`) each token that would complete an `n`-gram already in `tokens`, unless it
/// is structure (`structural`: punctuation and whitespace, which JSON repeats by nature) or banning
/// would leave no allowed token (the grammar's choice stands). Returns how many were banned.
fn block_repeats(
    logits: &mut [f32],
    tokens: &[TokenId],
    n: usize,
    structural: impl Fn(TokenId) -> bool,
) -> usize {
    let Some(k) = n.checked_sub(1).filter(|k| *k > 0 && tokens.len() > *k) else {
        return 0;
    };
    let prefix = &tokens[tokens.len() - k..];
    let mut banned: Vec<TokenId> = tokens
        .windows(n)
        .filter(|w| &w[..k] == prefix && !structural(w[k]))
        .map(|w| w[k])
        .filter(|&t| logits.get(t as usize).is_some_and(|l| l.is_finite()))
        .collect();
    banned.sort_unstable();
    banned.dedup();
    if banned.is_empty() {
        return 0;
    }
    let others = logits.iter().enumerate().any(|(index, l)| {
        l.is_finite() && TokenId::try_from(index).is_ok_and(|t| banned.binary_search(&t).is_err())
    });
    if !others {
        return 0;
    }
    for &t in &banned {
        if let Some(logit) = logits.get_mut(t as usize) {
            *logit = f32::NEG_INFINITY;
        }
    }
    banned.len()
}

/// Inside a string, bans every token that would close it right after whitespace: whitespace then `"`
/// (` "}`), or `"` first when the string so far ends with whitespace (`after_space`); unless nothing
/// else is allowed (a `maxLength` reached, say). Returns how many it banned.
///
/// Why: a small model often ends a string between words, `"The answer was "`, the closing quote
/// being likelier than a word it was penalised for repeating. Text does not end with a space, so
/// the model writes the next word instead, and ends the string after it.
fn keep_open_after_space<'a>(
    logits: &mut [f32],
    after_space: bool,
    bytes: impl Fn(TokenId) -> &'a [u8],
) -> usize {
    let closes_after_space = |token: &[u8]| {
        let space = token.iter().take_while(|b| b.is_ascii_whitespace()).count();
        token.get(space) == Some(&b'"') && (space > 0 || after_space)
    };
    let closing: Vec<usize> = logits
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .filter_map(|(index, _)| TokenId::try_from(index).ok().map(|t| (index, t)))
        .filter(|&(_, t)| closes_after_space(bytes(t)))
        .map(|(index, _)| index)
        .collect();
    let allowed = logits.iter().filter(|l| l.is_finite()).count();
    if closing.is_empty() || closing.len() == allowed {
        return 0;
    }
    for &index in &closing {
        logits[index] = f32::NEG_INFINITY;
    }
    closing.len()
}

/// Gives the probability of every token the grammar masks out to its longest prefix the grammar
/// allows (`raw`: the logits before masking; `masked`: after, masked tokens at `-inf`).
///
/// Why: a byte-level BPE vocabulary merges a string's closing quote with what follows (`",`, `"}`,
/// `.",`). After a document's last property the grammar masks `",`, the model's usual way to end a
/// string; without the transfer that wish is lost, and the model's next choice, often `,"` (a comma
/// *inside* the string, then the quote), wins: answers like `"IT,"`. With it, `",`'s probability goes
/// to `"`, which closes the string where the model meant to.
fn transfer_masked(raw: &[f32], masked: &mut [f32], prefixes: impl Fn(TokenId) -> Vec<TokenId>) {
    let Some(best) = raw
        .iter()
        .copied()
        .filter(|l| l.is_finite())
        .max_by(f32::total_cmp)
    else {
        return;
    };
    let allowed =
        |masked: &[f32], t: TokenId| masked.get(t as usize).is_some_and(|l| l.is_finite());
    let mut moved: Vec<(TokenId, f32)> = Vec::new();
    for (index, (&r, &m)) in raw.iter().zip(masked.iter()).enumerate() {
        if m.is_finite() || !r.is_finite() || r < best - TRANSFER_SPAN {
            continue;
        }
        let Ok(token) = TokenId::try_from(index) else {
            continue;
        };
        let target = prefixes(token)
            .into_iter()
            .rev()
            .find(|&p| p != token && allowed(masked, p));
        if let Some(target) = target {
            moved.push((target, (r - best).exp()));
        }
    }
    for (target, mass) in moved {
        if let Some(logit) = masked.get_mut(target as usize) {
            *logit = best + ((*logit - best).exp() + mass).ln();
        }
    }
}

/// The tokens that finish the document from the matcher's state, chosen by the grammar alone
/// ([`closing_token`]) with `scan` saying where the text so far stands, forced tokens included;
/// `None` when the grammar fails or needs more than [`MAX_PLAN`] tokens.
fn closing_plan(matcher: &Matcher, scan: &JsonScan, vocab: &Vocab) -> Option<Vec<TokenId>> {
    let mut matcher = matcher.deep_clone();
    let mut scan = scan.clone();
    let mut plan = Vec::new();
    loop {
        if matcher.is_error() {
            return None;
        }
        if matcher.is_stopped() || matcher.is_accepting().ok()? {
            return Some(plan);
        }
        if plan.len() >= MAX_PLAN {
            return None;
        }
        let mask = matcher.compute_mask().ok()?;
        let ideal = scan.closing_bytes();
        // Usually the longest allowed token that starts the ideal closing: found without a scan.
        let token = vocab
            .prefixes_of(&ideal)
            .into_iter()
            .rev()
            .find(|&t| mask.is_allowed(t));
        let token = match token {
            Some(token) => token,
            None => closing_token(mask.iter(), &ideal, |t| vocab.token_bytes(t))?,
        };
        matcher.consume_token(token).ok()?;
        let mut step = vec![token];
        if !matcher.is_stopped() {
            step.extend(matcher.consume_ff_tokens());
        }
        scan.feed(&vocab.decode(&step));
        plan.extend(step);
    }
}

/// Among `allowed` tokens, the one that brings a document closest to its end: the longest that starts
/// `ideal` (the bytes that would close the open string and containers, [`JsonScan::closing_bytes`]),
/// else the shortest ASCII letters or digits (a string that needs more characters, a number), else `,`
/// or `:` (a container that needs more entries), else the shortest token. Special tokens never.
fn closing_token<'v>(
    allowed: impl Iterator<Item = TokenId>,
    ideal: &[u8],
    bytes: impl Fn(TokenId) -> &'v [u8],
) -> Option<TokenId> {
    let rank = |b: &[u8]| -> (u8, usize) {
        if ideal.starts_with(b) {
            (0, usize::MAX - b.len())
        } else if b.iter().all(u8::is_ascii_alphanumeric) {
            (1, b.len())
        } else if b.iter().all(|c| matches!(c, b',' | b':')) {
            (2, b.len())
        } else {
            (3, b.len())
        }
    };
    let mut best: Option<((u8, usize), TokenId)> = None;
    for token in allowed {
        let b = bytes(token);
        if b.first()
            .is_none_or(|&first| first == toktrie::TokTrie::SPECIAL_TOKEN_MARKER)
        {
            continue;
        }
        let key = rank(b);
        if best.as_ref().is_none_or(|(k, _)| key < *k) {
            best = Some((key, token));
        }
    }
    best.map(|(_, token)| token)
}

/// Where a JSON text stands: inside a string or not, and the containers open.
#[derive(Debug, Clone, Default)]
struct JsonScan {
    /// The closing bracket of each open container, outermost first.
    open: Vec<u8>,
    in_string: bool,
    escaped: bool,
    /// Inside a string, right after whitespace: the string's text so far ends with a space.
    after_space: bool,
}

impl JsonScan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_string {
                self.after_space = false;
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    b' ' | b'\t' | b'\n' | b'\r' => self.after_space = true,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' => self.open.push(b'}'),
                b'[' => self.open.push(b']'),
                b'}' | b']' => {
                    self.open.pop();
                }
                _ => {}
            }
        }
    }

    /// The bytes that would end the text here: a quote for an open string, then the closing
    /// brackets, innermost first; nothing right after a backslash (an escape comes first).
    fn closing_bytes(&self) -> Vec<u8> {
        if self.escaped {
            return Vec::new();
        }
        let quote = self.in_string.then_some(b'"');
        quote
            .into_iter()
            .chain(self.open.iter().rev().copied())
            .collect()
    }
}

/// Reserves the tokens the grammar needs to finish the document: near the token limit, a sampled
/// token is kept only when the document can still be closed within the limit after it; otherwise the
/// last plan closes it.
#[derive(Default)]
struct Closer {
    /// The shortest completion found, and the number of generated tokens it was searched at.
    plan: Option<(usize, Vec<TokenId>)>,
    /// When the last search was (it may have found nothing).
    searched_at: Option<usize>,
}

impl Closer {
    /// Searches again when the plan is stale: always near the limit, every [`PLAN_EVERY`] tokens
    /// before. Returns the plan for the current state when every token must be checked, and the
    /// document can be closed within the `remaining` budget.
    fn before_step(
        &mut self,
        matcher: &Matcher,
        scan: &JsonScan,
        vocab: &Vocab,
        step: usize,
        remaining: usize,
    ) -> Option<Vec<TokenId>> {
        let near = self
            .plan
            .as_ref()
            .is_some_and(|(_, p)| remaining <= p.len() + CLOSING_MARGIN);
        let stale = match self.searched_at {
            None => true,
            Some(at) => at != step && (near || step - at >= PLAN_EVERY),
        };
        if stale {
            self.set(closing_plan(matcher, scan, vocab), step);
        }
        match &self.plan {
            Some((at, plan))
                if *at == step
                    && remaining <= plan.len() + CLOSING_MARGIN
                    && plan.len() <= remaining =>
            {
                Some(plan.clone())
            }
            _ => None,
        }
    }

    fn set(&mut self, plan: Option<Vec<TokenId>>, step: usize) {
        self.plan = plan.map(|p| (step, p));
        self.searched_at = Some(step);
    }
}

/// Runs `job` on `model`, after the keys and values `sequence` holds (a cached prefix of the prompt,
/// on the grid, or nothing); `sequence` ends holding the prompt and the answer. `on_text` receives
/// the answer as it grows, in whole UTF-8 characters.
pub(super) fn run(
    model: &Model,
    sequence: &mut Sequence,
    vocab: &Vocab,
    mut job: Job<'_>,
    on_text: &mut dyn FnMut(&str),
) -> Result<Generation, Error> {
    let mut timings = Timings {
        prompt_tokens: job.prompt.len(),
        ..Timings::default()
    };
    let started = Instant::now();
    let cached = sequence.len();
    if job.prompt.get(..cached) != Some(sequence.tokens.as_slice()) || cached >= job.prompt.len() {
        return Err(Error::other(
            "local",
            "the cached prefix does not match the prompt",
        ));
    }
    timings.cached_tokens = cached;
    let mut logits = model
        .prefill(sequence, &job.prompt[cached..], job.prefill)
        .map_err(evaluation_error)?;
    timings.prefill = started.elapsed();
    let decode_started = Instant::now();
    let mut position = job.prompt.len();
    let mut tokens: Vec<TokenId> = Vec::new();
    let mut text = Utf8Stream::default();
    let mut closer = Closer::default();
    let mut scan = JsonScan::default();
    let mut closed_early = false;
    let finish = loop {
        if job.cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        if tokens.len() >= job.max_tokens {
            break FinishReason::Length;
        }
        let remaining = job.max_tokens - tokens.len();
        let fallback = match job.matcher.as_ref() {
            Some(matcher) => closer.before_step(matcher, &scan, vocab, tokens.len(), remaining),
            None => None,
        };
        job.penalty
            .apply(&mut logits, &tokens, |t| vocab.is_structural(t));
        if let Some(matcher) = job.matcher.as_mut() {
            let mask_started = Instant::now();
            let mask = matcher.compute_mask().map_err(|e| grammar_error(&e))?;
            let raw = logits.clone();
            for (index, logit) in logits.iter_mut().enumerate() {
                let allowed = u32::try_from(index).is_ok_and(|t| mask.is_allowed(t));
                if index >= mask.len() || !allowed {
                    *logit = f32::NEG_INFINITY;
                }
            }
            transfer_masked(&raw, &mut logits, |t| vocab.prefixes(t));
            if scan.in_string {
                block_repeats(&mut logits, &tokens, NO_REPEAT_NGRAM, |t| {
                    vocab.is_structural(t)
                });
            }
            if scan.in_string && !scan.escaped {
                keep_open_after_space(&mut logits, scan.after_space, |t| vocab.token_bytes(t));
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
            let saved = fallback.as_ref().map(|_| matcher.deep_clone());
            matcher
                .consume_token(token)
                .map_err(|e| grammar_error(&e))?;
            if !matcher.is_stopped() {
                let forced = matcher.consume_ff_tokens();
                timings.forced_tokens += forced.len();
                feed.extend(forced);
            }
            grammar_done = matcher.is_stopped();
            if let (Some(saved), Some(plan)) = (saved, &fallback)
                && !grammar_done
            {
                // Near the limit: keep the token only if the document can still be closed after it.
                let mut after = scan.clone();
                after.feed(&vocab.decode(&feed));
                let next = closing_plan(matcher, &after, vocab);
                if next
                    .as_ref()
                    .is_some_and(|next| feed.len() + next.len() > remaining)
                {
                    *matcher = saved;
                    matcher
                        .consume_tokens(plan)
                        .map_err(|e| grammar_error(&e))?;
                    timings.forced_tokens += plan.len();
                    tokens.extend_from_slice(plan);
                    on_text(&text.push(&vocab.decode(plan)));
                    closed_early = true;
                    break FinishReason::Length;
                }
                closer.set(next, tokens.len() + feed.len());
            }
        }
        tokens.extend_from_slice(&feed);
        let bytes = vocab.decode(&feed);
        scan.feed(&bytes);
        let delta = text.push(&bytes);
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
        logits = model.step(sequence, &feed).map_err(evaluation_error)?;
        timings.forward_passes += 1;
        position += feed.len();
    };
    on_text(&text.flush());
    timings.generated_tokens = tokens.len();
    timings.decode = decode_started.elapsed();
    if closed_early {
        tracing::debug!(
            tokens = tokens.len(),
            "token limit near: the document was closed early"
        );
    }
    Ok(Generation {
        text: text.into_string(),
        finish_reason: finish,
        usage: Usage {
            input_tokens: job.prompt.len() as u64,
            output_tokens: tokens.len() as u64,
            cached_tokens: cached as u64,
            cost_usd: Some(0.0),
            ..Usage::default()
        },
        constrained: job.matcher.is_some(),
        closed_early,
        timings,
    })
}

fn evaluation_error(e: candle_core::Error) -> Error {
    Error::other("local", format!("model evaluation failed: {e}"))
}

fn cancelled() -> Error {
    Error::Cancelled {
        context: ErrorContext::new("local"),
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
    fn repeated_ngrams_are_blocked_unless_structure_or_the_only_choice() {
        // `1 2 3 1 2`: a 3-gram `1 2 3` exists, so after `1 2` the token 3 is banned.
        let mut logits = [0.0, 1.0, 1.0, 5.0, 1.0];
        assert_eq!(
            block_repeats(&mut logits, &[1, 2, 3, 1, 2], 3, |_| false),
            1
        );
        assert_eq!(logits[3], f32::NEG_INFINITY);
        assert_eq!(logits[4], 1.0);
        // No earlier `1 2`: nothing banned.
        let mut logits = [0.0, 1.0, 1.0, 5.0, 1.0];
        assert_eq!(
            block_repeats(&mut logits, &[4, 2, 3, 1, 2], 3, |_| false),
            0
        );
        // Structure repeats freely.
        let mut logits = [0.0, 1.0, 1.0, 5.0, 1.0];
        assert_eq!(
            block_repeats(&mut logits, &[1, 2, 3, 1, 2], 3, |t| t == 3),
            0
        );
        // When the grammar allows only the repeat, it stands.
        let mut logits = [
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            5.0,
            f32::NEG_INFINITY,
        ];
        assert_eq!(
            block_repeats(&mut logits, &[1, 2, 3, 1, 2], 3, |_| false),
            0
        );
        assert_eq!(logits[3], 5.0);
        // A loop of greedy picks ends: the second cycle may not complete a third.
        let mut tokens = vec![7, 8, 9, 10, 7, 8, 9, 10, 7, 8, 9];
        let mut logits = [0.0; 12];
        logits[10] = 9.0;
        logits[11] = 1.0;
        block_repeats(&mut logits, &tokens, 8, |_| false);
        assert_eq!(logits[10], f32::NEG_INFINITY, "{tokens:?}");
        tokens.truncate(4);
        let mut logits = [0.0; 12];
        logits[10] = 9.0;
        assert_eq!(block_repeats(&mut logits, &tokens, 8, |_| false), 0);
    }

    #[test]
    fn a_string_is_not_closed_right_after_a_space_unless_nothing_else_is_allowed() {
        let vocab: [&[u8]; 5] = [b"\"", b"\"}", b"yes", b" no", b" \"}"];
        let bytes = |t: TokenId| vocab[t as usize];
        let mut logits = [9.0, 8.0, 1.0, 0.5, 7.0];
        assert_eq!(keep_open_after_space(&mut logits, true, bytes), 3);
        let banned = f32::NEG_INFINITY;
        assert_eq!(logits, [banned, banned, 1.0, 0.5, banned]);
        // After a word, the quote may close the string, but not with a space before it.
        let mut logits = [9.0, 8.0, 1.0, 0.5, 7.0];
        assert_eq!(keep_open_after_space(&mut logits, false, bytes), 1);
        assert_eq!(logits, [9.0, 8.0, 1.0, 0.5, banned]);
        // A bound reached (only the quote allowed): it closes.
        let mut logits = [9.0, banned, banned, banned, banned];
        assert_eq!(keep_open_after_space(&mut logits, true, bytes), 0);
        assert_eq!(logits[0], 9.0);
        // The scan knows when a string's text ends with a space.
        let mut scan = JsonScan::default();
        scan.feed(br#"{"a": "The answer was "#);
        assert!(scan.after_space);
        scan.feed(b"yes");
        assert!(!scan.after_space);
        scan.feed(br#"", "b": "#);
        assert!(
            !scan.after_space,
            "a space between values is not in a string"
        );
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
    fn masked_tokens_give_their_probability_to_their_allowed_prefix() {
        // 0 `"`, 1 `",` (masked: the last property's string cannot be followed by a comma), 2 `,"`,
        // 3 `a`. The model wants `",`; without the transfer the in-string comma `,"` wins.
        let raw = [1.0, 5.0, 3.0, 0.0];
        let mut masked = [1.0, f32::NEG_INFINITY, 3.0, 0.0];
        let prefixes = |t: TokenId| if t == 1 { vec![0, 1] } else { vec![t] };
        transfer_masked(&raw, &mut masked, prefixes);
        assert_eq!(Sampler::Greedy.pick(&masked), Some(0), "{masked:?}");
        let expected = (1.0f32.exp() + 5.0f32.exp()).ln();
        assert!((masked[0] - expected).abs() < 1e-4, "{masked:?}");
        assert!(masked[1].is_infinite(), "a masked token stays masked");
        assert_eq!(
            &masked[2..],
            &[3.0, 0.0],
            "allowed tokens keep their logits"
        );

        // No allowed prefix: the mass is dropped; far below the best: ignored.
        let raw = [2.0, 9.0, -30.0];
        let mut masked = [2.0, f32::NEG_INFINITY, f32::NEG_INFINITY];
        transfer_masked(&raw, &mut masked, |t| vec![t]);
        assert_eq!(masked[0], 2.0);
        let mut masked = [2.0, 9.0, f32::NEG_INFINITY];
        transfer_masked(&raw, &mut masked, |_| vec![0, 2]);
        assert_eq!(
            masked[0], 2.0,
            "a token 39 nats below the best moves nothing"
        );
    }

    #[test]
    fn closing_tokens_finish_the_document_fastest() {
        #[track_caller]
        fn check(text: &str, allowed: &[&str], expected: &str) {
            let mut scan = JsonScan::default();
            scan.feed(text.as_bytes());
            let vocab: Vec<&[u8]> = allowed.iter().map(|t| t.as_bytes()).collect();
            let ids = 0..u32::try_from(vocab.len()).unwrap();
            let chosen = closing_token(ids, &scan.closing_bytes(), |t| vocab[t as usize]);
            assert_eq!(
                chosen.map(|t| allowed[t as usize]),
                Some(expected),
                "{text} {allowed:?}"
            );
        }
        // Inside a string a bracket is only text: the quote comes first.
        check(
            r#"{"a":"Par"#,
            &["is", ",\"", "]]]", "\"", "\"}", " the"],
            "\"}",
        );
        check(r#"{"a":["x"#, &["\"", "\"]}", "\"}"], "\"]}");
        check(r#"{"a":1"#, &["\"", "}", "]"], "}");
        check(r#"{"a":"say \"#, &["\"", "n", "\"}"], "n");
        // A string below its minimum length, an array below its minimum size.
        check(r#"{"a":""#, &["ab", "a", ",", "é"], "a");
        check(r#"{"a":["x""#, &[",", ":", "-"], ",");
        let none: [&[u8]; 1] = [b"\xffspecial"];
        assert_eq!(closing_token(0..1, b"}", |t| none[t as usize]), None);
    }

    #[test]
    fn the_scan_follows_strings_escapes_and_containers() {
        #[track_caller]
        fn check(text: &str, closing: &str) {
            let mut scan = JsonScan::default();
            scan.feed(text.as_bytes());
            assert_eq!(
                String::from_utf8_lossy(&scan.closing_bytes()),
                closing,
                "{text}"
            );
        }
        check("", "");
        check(r#"{"a":[{"b":"x]}"#, r#""}]}"#);
        check(r#"{"a":"q\"x"#, r#""}"#);
        check(r#"{"a":"q\"#, "");
        check(r#"{"a":[1,2],"b":{}}"#, "");
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
