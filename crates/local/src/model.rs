//! The llama forward pass, with the key-value cache held outside the weights: a request resumes from
//! the cached keys and values of the longest prefix it shares with an earlier one ([`super::cache`]),
//! and a prompt is read layer by layer: each layer's matrix products take all of the prompt's rows
//! at once, and its attention goes chunk by chunk, [`CHUNK`] tokens each.
//!
//! Why chunks on a fixed grid: the numbers attention produces depend on how many keys and rows it
//! has (the matrix kernels block and order their sums by shape). A prompt is always cut at multiples of
//! [`CHUNK`] from position 0, and a cached prefix is reused only up to such a multiple, only as far
//! as it was computed in whole chunks; so a request resumed from the cache does the same arithmetic,
//! bit for bit, as one run cold, and greedy decoding gives the same answer with or without the cache.

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor};
use toktrie::TokenId;

/// Prompt tokens per chunk: the grid prompts are cut on and cached prefixes are rounded down to.
pub(super) const CHUNK: usize = 32;

/// How the prompt's matrix products are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prefill {
    /// With the quantised weights as they are (Q8_0 after re-quantisation).
    Quantized,
    /// With the weights expanded to f32 (when the model loads, or on first use) and dense matrix products
    /// over all of the prompt's rows at once. A row's numbers do not depend on how many rows are
    /// read with it, so a resumed prompt computes every chunk as a cold one does.
    Dense,
}

/// A llama-architecture model's weights.
pub(super) struct Model {
    embeddings: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    eps: f32,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    neox: bool,
    cos: Tensor,
    sin: Tensor,
}

struct Layer {
    wq: Weight,
    wk: Weight,
    wv: Weight,
    wo: Weight,
    gate: Weight,
    up: Weight,
    down: Weight,
    attention_norm: Tensor,
    ffn_norm: Tensor,
}

/// A matrix: quantised, and its f32 expansion once a prompt was read with it.
struct Weight {
    quantized: QMatMul,
    source: std::sync::Arc<QTensor>,
    dense: std::sync::OnceLock<Tensor>,
}

/// A layer's matrices as one chunk uses them.
struct Matrices<'a> {
    layer: &'a Layer,
    /// The f32 expansions (wq, wk, wv, wo, gate, up, down) for [`Prefill::Dense`].
    dense: Option<[Tensor; 7]>,
}

/// Keys and values of one sequence, per layer (`[1, kv_heads, tokens, head_dim]`), and the tokens.
#[derive(Clone, Default)]
pub(super) struct Sequence {
    pub(super) tokens: Vec<TokenId>,
    /// The leading positions computed as whole prompt chunks on the grid: the part a later request
    /// may reuse.
    pub(super) exact: usize,
    kv: Vec<(Tensor, Tensor)>,
}

impl Sequence {
    /// The same sequence cut to its first `len` tokens (`len` at most its length), with keys and
    /// values copied out so the cut does not pin the longer buffers.
    pub(super) fn truncated(&self, len: usize) -> Result<Self> {
        self.cut(len, true)
    }

    /// The same sequence cut to its first `len` tokens, sharing the buffers (for a request about to
    /// extend it: the extension copies anyway).
    pub(super) fn prefix(&self, len: usize) -> Result<Self> {
        self.cut(len, false)
    }

    fn cut(&self, len: usize, copy: bool) -> Result<Self> {
        let len = len.min(self.tokens.len());
        let part = |t: &Tensor| {
            let t = t.narrow(2, 0, len)?;
            if copy { t.contiguous() } else { Ok(t) }
        };
        let kv = if len == 0 {
            Vec::new()
        } else {
            self.kv
                .iter()
                .map(|(k, v)| Ok((part(k)?, part(v)?)))
                .collect::<Result<_>>()?
        };
        Ok(Self {
            tokens: self.tokens[..len].to_vec(),
            exact: self.exact.min(len),
            kv,
        })
    }

    pub(super) fn len(&self) -> usize {
        self.tokens.len()
    }
}

impl super::cache::Prefix for Sequence {
    fn cut(&self, len: usize) -> Option<Self> {
        self.truncated(len).ok()
    }
}

fn weight(
    content: &Content,
    reader: &mut (impl std::io::Read + std::io::Seek),
    name: &str,
) -> Result<Weight> {
    let source = std::sync::Arc::new(content.tensor(reader, name, &Device::Cpu)?);
    Ok(Weight {
        quantized: QMatMul::from_arc(source.clone())?,
        source,
        dense: std::sync::OnceLock::new(),
    })
}

fn dense(
    content: &Content,
    reader: &mut (impl std::io::Read + std::io::Seek),
    name: &str,
) -> Result<Tensor> {
    content
        .tensor(reader, name, &Device::Cpu)?
        .dequantize(&Device::Cpu)
}

impl Model {
    /// Reads the weights of a llama-architecture GGUF model (no mixture of experts).
    pub(super) fn from_gguf(
        content: &Content,
        reader: &mut (impl std::io::Read + std::io::Seek),
        context_length: usize,
    ) -> Result<Self> {
        let meta = |key: &str| match content.metadata.get(key) {
            Some(value) => value.to_u32().map(|v| v as usize),
            None => candle_core::bail!("the metadata has no {key}"),
        };
        if meta("llama.expert_count").unwrap_or(0) > 1 {
            candle_core::bail!("mixture-of-experts models are not supported");
        }
        let n_head = meta("llama.attention.head_count")?;
        let n_kv_head = meta("llama.attention.head_count_kv")?;
        let blocks = meta("llama.block_count")?;
        let embedding = meta("llama.embedding_length")?;
        let rope_dim = meta("llama.rope.dimension_count")?;
        if n_head == 0 || n_kv_head == 0 || n_head % n_kv_head != 0 || embedding % n_head != 0 {
            candle_core::bail!(
                "inconsistent head counts ({n_head} heads, {n_kv_head} key-value heads)"
            );
        }
        let eps = content
            .metadata
            .get("llama.attention.layer_norm_rms_epsilon")
            .and_then(|v| v.to_f32().ok())
            .unwrap_or(1e-5);
        let base = content
            .metadata
            .get("llama.rope.freq_base")
            .and_then(|v| v.to_f32().ok())
            .unwrap_or(10_000.0);
        let architecture = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        let neox = matches!(
            architecture.as_str(),
            "qwen2" | "qwen3" | "phi3" | "stablelm"
        );
        let (cos, sin) = rotary(rope_dim, base, context_length.max(1))?;
        let embeddings = dense(content, reader, "token_embd.weight")?;
        let norm = dense(content, reader, "output_norm.weight")?;
        let output = match content.tensor(reader, "output.weight", &Device::Cpu) {
            Ok(tensor) => QMatMul::from_qtensor(tensor)?,
            Err(_) => {
                QMatMul::from_qtensor(content.tensor(reader, "token_embd.weight", &Device::Cpu)?)?
            }
        };
        let mut layers = Vec::with_capacity(blocks);
        for block in 0..blocks {
            let name = |suffix: &str| format!("blk.{block}.{suffix}.weight");
            layers.push(Layer {
                wq: weight(content, reader, &name("attn_q"))?,
                wk: weight(content, reader, &name("attn_k"))?,
                wv: weight(content, reader, &name("attn_v"))?,
                wo: weight(content, reader, &name("attn_output"))?,
                gate: weight(content, reader, &name("ffn_gate"))?,
                up: weight(content, reader, &name("ffn_up"))?,
                down: weight(content, reader, &name("ffn_down"))?,
                attention_norm: dense(content, reader, &name("attn_norm"))?,
                ffn_norm: dense(content, reader, &name("ffn_norm"))?,
            });
        }
        Ok(Self {
            embeddings,
            layers,
            norm,
            output,
            eps,
            n_head,
            n_kv_head,
            head_dim: embedding / n_head,
            neox,
            cos,
            sin,
        })
    }

    /// Expands every layer's matrices to f32 now (they are kept for [`Prefill::Dense`]).
    pub(super) fn expand_dense(&self) -> Result<()> {
        for layer in &self.layers {
            for weight in [
                &layer.wq,
                &layer.wk,
                &layer.wv,
                &layer.wo,
                &layer.gate,
                &layer.up,
                &layer.down,
            ] {
                weight.expand()?;
            }
        }
        Ok(())
    }

    /// Bytes of keys and values one cached token takes.
    pub(super) fn kv_bytes_per_token(&self) -> usize {
        self.layers.len() * 2 * self.n_kv_head * self.head_dim * std::mem::size_of::<f32>()
    }

    /// Reads `tokens` after `sequence` (a prompt, or what remains of one after a cached prefix) in
    /// chunks on the grid, extends `sequence` and returns the logits for the next token.
    /// `sequence` must end on the grid (`sequence.exact == sequence.len()`, a multiple of [`CHUNK`]).
    pub(super) fn prefill(
        &self,
        sequence: &mut Sequence,
        tokens: &[TokenId],
        mode: Prefill,
    ) -> Result<Vec<f32>> {
        if tokens.is_empty() {
            candle_core::bail!("an empty prompt");
        }
        let start = sequence.len();
        debug_assert!(start.is_multiple_of(CHUNK) && sequence.exact == start);
        // Chunks on the grid: the first may be shorter when `start` is not on it (never, by the
        // assertion above; kept for safety).
        let mut bounds = Vec::new();
        let mut at = start;
        while at < start + tokens.len() {
            let end = ((at / CHUNK + 1) * CHUNK).min(start + tokens.len());
            bounds.push((at, end));
            at = end;
        }
        let whole = bounds
            .iter()
            .take_while(|(from, to)| to - from == CHUNK)
            .count();
        let mut x = self.embed(tokens)?;
        if sequence.kv.is_empty() {
            sequence.kv = Vec::with_capacity(self.layers.len());
        }
        for (index, layer) in self.layers.iter().enumerate() {
            let matrices = Matrices {
                layer,
                dense: match mode {
                    Prefill::Dense => Some([
                        layer.wq.expand()?,
                        layer.wk.expand()?,
                        layer.wv.expand()?,
                        layer.wo.expand()?,
                        layer.gate.expand()?,
                        layer.up.expand()?,
                        layer.down.expand()?,
                    ]),
                    Prefill::Quantized => None,
                },
            };
            let mut kv = sequence.kv.get(index).cloned();
            x = self.layer(&matrices, &x, &mut kv, start, &bounds)?;
            let kv = match kv {
                Some(kv) => kv,
                None => candle_core::bail!("no keys and values after a layer"),
            };
            match sequence.kv.get_mut(index) {
                Some(slot) => *slot = kv,
                None => sequence.kv.push(kv),
            }
        }
        sequence.tokens.extend_from_slice(tokens);
        sequence.exact = start + whole * CHUNK;
        self.logits(&x)
    }

    /// Reads generated `tokens` (one sampled token and any the grammar forced after it) after
    /// `sequence` and returns the logits for the next token. They are not on the grid: the part of
    /// the sequence a later request may reuse does not grow.
    pub(super) fn step(&self, sequence: &mut Sequence, tokens: &[TokenId]) -> Result<Vec<f32>> {
        if tokens.is_empty() {
            candle_core::bail!("no token to read");
        }
        let start = sequence.len();
        let mut x = self.embed(tokens)?;
        for (index, layer) in self.layers.iter().enumerate() {
            let matrices = Matrices { layer, dense: None };
            let mut kv = sequence.kv.get(index).cloned();
            x = self.layer(
                &matrices,
                &x,
                &mut kv,
                start,
                &[(start, start + tokens.len())],
            )?;
            match (kv, sequence.kv.get_mut(index)) {
                (Some(kv), Some(slot)) => *slot = kv,
                (Some(kv), None) => sequence.kv.push(kv),
                (None, _) => candle_core::bail!("no keys and values after a layer"),
            }
        }
        sequence.tokens.extend_from_slice(tokens);
        self.logits(&x)
    }

    fn embed(&self, tokens: &[TokenId]) -> Result<Tensor> {
        let ids = Tensor::new(tokens, &Device::Cpu)?;
        self.embeddings.index_select(&ids, 0)?.unsqueeze(0)
    }

    /// The last position's logits.
    fn logits(&self, hidden: &Tensor) -> Result<Vec<f32>> {
        let (_, len, _) = hidden.dims3()?;
        let last = hidden.narrow(1, len - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, self.eps)?;
        self.output.forward(&last)?.flatten_all()?.to_vec1()
    }

    /// One transformer block over `x` (`[1, tokens, embedding]`, the tokens at positions
    /// `start..`), cut into the chunks `bounds` (absolute positions) for attention. The matrix
    /// products, norms and activations work row by row, so they take every row at once; each
    /// chunk attends to the keys up to its own end, as it would have alone.
    fn layer(
        &self,
        matrices: &Matrices<'_>,
        x: &Tensor,
        kv: &mut Option<(Tensor, Tensor)>,
        start: usize,
        bounds: &[(usize, usize)],
    ) -> Result<Tensor> {
        let layer = matrices.layer;
        let (_, len, embedding) = x.dims3()?;
        let h = candle_nn::ops::rms_norm(x, &layer.attention_norm, self.eps)?;
        let q = matrices.apply(0, &layer.wq, &h)?;
        let k = matrices.apply(1, &layer.wk, &h)?;
        let v = matrices.apply(2, &layer.wv, &h)?;
        let q = q
            .reshape((1, len, self.n_head, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let k = k
            .reshape((1, len, self.n_kv_head, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let v = v
            .reshape((1, len, self.n_kv_head, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let q = self.rope(&q, start)?;
        let k = self.rope(&k, start)?;
        let (k, v) = match kv.take() {
            Some((k_cache, v_cache)) => (
                Tensor::cat(&[&k_cache, &k], 2)?,
                Tensor::cat(&[&v_cache, &v], 2)?,
            ),
            None => (k, v),
        };
        *kv = Some((k.clone(), v.clone()));
        let repeat = self.n_head / self.n_kv_head;
        let mut outputs = Vec::with_capacity(bounds.len());
        for &(from, to) in bounds {
            let rows = to - from;
            let q = q.narrow(2, from - start, rows)?.contiguous()?;
            let k = candle_transformers::utils::repeat_kv(k.narrow(2, 0, to)?, repeat)?;
            let v = candle_transformers::utils::repeat_kv(v.narrow(2, 0, to)?, repeat)?;
            let scores = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
            let scores = if rows > 1 {
                scores.broadcast_add(&causal_mask(rows, from)?)?
            } else {
                scores
            };
            let attention = candle_nn::ops::softmax_last_dim(&scores)?;
            outputs.push(attention.matmul(&v.contiguous()?)?);
        }
        let y = match outputs.len() {
            1 => outputs.remove(0),
            _ => Tensor::cat(&outputs, 2)?,
        };
        let y = y.transpose(1, 2)?.reshape((1, len, embedding))?;
        let x = (matrices.apply(3, &layer.wo, &y)? + x)?;
        let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, self.eps)?;
        let gate = matrices.apply(4, &layer.gate, &h)?.silu()?;
        let up = matrices.apply(5, &layer.up, &h)?;
        let down = matrices.apply(6, &layer.down, &(gate * up)?)?;
        down + x
    }

    fn rope(&self, x: &Tensor, position: usize) -> Result<Tensor> {
        let (_, _, len, _) = x.dims4()?;
        let cos = self.cos.narrow(0, position, len)?;
        let sin = self.sin.narrow(0, position, len)?;
        if self.neox {
            candle_nn::rotary_emb::rope(x, &cos, &sin)
        } else {
            candle_nn::rotary_emb::rope_i(x, &cos, &sin)
        }
    }
}

impl Weight {
    /// The f32 matrix, expanded on first use and kept.
    fn expand(&self) -> Result<Tensor> {
        if let Some(dense) = self.dense.get() {
            return Ok(dense.clone());
        }
        let dense = self.source.dequantize(&Device::Cpu)?;
        Ok(self.dense.get_or_init(|| dense).clone())
    }
}

impl Matrices<'_> {
    /// `x` (`[1, tokens, in]`) times matrix `index` of the layer, transposed: with the dense
    /// matrix when there is one, else the quantised.
    ///
    /// A dense product gives each row the same numbers whatever the number of rows (the kernel
    /// blocks the sums by the inner dimension alone), except that a single row takes a
    /// matrix-vector path with another order; so a single row is computed as two.
    fn apply(&self, index: usize, weight: &Weight, x: &Tensor) -> Result<Tensor> {
        match self.dense.as_ref().and_then(|d| d.get(index)) {
            Some(w) => {
                let (_, len, width) = x.dims3()?;
                let x = x.reshape((len, width))?;
                let product = if len == 1 {
                    Tensor::cat(&[&x, &x], 0)?
                        .matmul(&w.t()?)?
                        .narrow(0, 0, 1)?
                } else {
                    x.matmul(&w.t()?)?
                };
                product.unsqueeze(0)
            }
            None => weight.quantized.forward(x),
        }
    }
}

/// Additive mask for `len` queries from `position` over `position + len` keys: `-inf` above the
/// diagonal.
fn causal_mask(len: usize, position: usize) -> Result<Tensor> {
    let keys = position + len;
    let mask: Vec<f32> = (0..len)
        .flat_map(|i| {
            (0..keys).map(move |j| {
                if j > position + i {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
        })
        .collect();
    Tensor::from_vec(mask, (len, keys), &Device::Cpu)
}

/// The rotary embedding's cosines and sines for every position up to `positions`.
fn rotary(dim: usize, base: f32, positions: usize) -> Result<(Tensor, Tensor)> {
    let theta: Vec<f32> = (0..dim)
        .step_by(2)
        .map(|i| 1.0 / base.powf(i as f32 / dim as f32))
        .collect();
    let count = theta.len();
    let theta = Tensor::from_vec(theta, (1, count), &Device::Cpu)?;
    let positions = Tensor::arange(0, positions as u32, &Device::Cpu)?
        .to_dtype(DType::F32)?
        .reshape((positions, 1))?;
    let angles = positions.matmul(&theta)?;
    Ok((angles.cos()?, angles.sin()?))
}
