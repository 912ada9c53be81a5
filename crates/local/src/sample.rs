//! Choosing the next token from logits: greedy, or temperature and nucleus (top-p) sampling with a
//! seeded generator, so a run is reproducible.

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Sampler {
    /// Always the most likely allowed token.
    Greedy,
    /// Sampled from the allowed tokens at `temperature`, keeping the smallest set whose probability
    /// reaches `top_p`.
    Random {
        temperature: f32,
        top_p: f32,
        rng: SplitMix64,
    },
}

impl Sampler {
    /// Greedy for a missing or zero temperature, sampling otherwise.
    pub(super) fn new(temperature: Option<f32>, top_p: f32, seed: u64) -> Self {
        match temperature {
            Some(t) if t > 0.0 && t.is_finite() => Self::Random {
                temperature: t,
                top_p: if top_p > 0.0 && top_p <= 1.0 {
                    top_p
                } else {
                    1.0
                },
                rng: SplitMix64(seed),
            },
            _ => Self::Greedy,
        }
    }

    /// The chosen token among those whose logit is finite (masked tokens are `-inf`), or `None` when
    /// every token is masked.
    pub(super) fn pick(&mut self, logits: &[f32]) -> Option<u32> {
        let best = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, l)| (i, *l))?;
        let Self::Random {
            temperature,
            top_p,
            rng,
        } = self
        else {
            return u32::try_from(best.0).ok();
        };
        // Softmax over the allowed tokens, relative to the best for stability.
        let mut candidates: Vec<(usize, f32)> = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .map(|(i, l)| (i, ((l - best.1) / *temperature).exp()))
            .collect();
        candidates.sort_by(|a, b| b.1.total_cmp(&a.1));
        let total: f32 = candidates.iter().map(|c| c.1).sum();
        let mut kept = 0.0;
        let mut cut = candidates.len();
        for (n, c) in candidates.iter().enumerate() {
            kept += c.1 / total;
            if kept >= *top_p {
                cut = n + 1;
                break;
            }
        }
        candidates.truncate(cut);
        let kept_total: f32 = candidates.iter().map(|c| c.1).sum();
        let mut target = rng.next_f32() * kept_total;
        for (index, weight) in &candidates {
            if target < *weight {
                return u32::try_from(*index).ok();
            }
            target -= weight;
        }
        candidates.last().and_then(|c| u32::try_from(c.0).ok())
    }
}

/// SplitMix64: a small, fast, well-distributed generator; plenty for sampling tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SplitMix64(pub(super) u64);

impl SplitMix64 {
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub(super) fn next_f32(&mut self) -> f32 {
        // 24 random bits: exactly representable, never 1.0.
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}
