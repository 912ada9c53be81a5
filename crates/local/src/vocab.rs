//! A GGUF model's tokenizer, token trie and chat template, built from the file's own metadata.
//!
//! The file carries its vocabulary, merges, token types and chat template; nothing else is needed.
//! Only GPT-2-style byte-level BPE vocabularies are supported (SmolLM, Llama 3 and most recent
//! llama-architecture models); SentencePiece vocabularies are refused with a clear message.

use std::collections::HashMap;
use std::sync::Arc;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::tokenizer::TokenizerFromGguf as _;
use tokenizers::Tokenizer;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};

use claij_backends::{Message, Role};

/// Llama 3's pre-tokenizer split (llama.cpp's `llama-bpe`): contractions, letters, numbers of up to
/// three digits, punctuation runs, newlines, other whitespace.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A model's vocabulary as the decoder and the grammar engine need it.
pub(super) struct Vocab {
    pub(super) tokenizer: Tokenizer,
    pub(super) env: TokEnv,
    pub(super) template: ChatTemplate,
    /// Tokens that end the answer: the end-of-sequence token and the template's end-of-turn token.
    pub(super) stop: Vec<TokenId>,
    /// Tokens made only of punctuation and whitespace, which repeat by nature ([`is_structural`]).
    structural: Vec<bool>,
}

/// The model's tokenizer alone, from `tokenizer.ggml.*` metadata (GPT-2-style byte-level BPE only).
pub(super) fn tokenizer(content: &Content) -> Result<Tokenizer, String> {
    let kind = string(content, "tokenizer.ggml.model").unwrap_or_default();
    if kind != "gpt2" {
        return Err(format!(
            "unsupported tokenizer `{kind}`: only GPT-2-style byte-level BPE vocabularies are supported"
        ));
    }
    let mut tokenizer =
        Tokenizer::from_gguf(content).map_err(|e| format!("cannot build the tokenizer: {e}"))?;
    if let Some(pre) = pre_tokenizer(&string(content, "tokenizer.ggml.pre").unwrap_or_default())? {
        tokenizer.with_pre_tokenizer(Some(pre));
    }
    Ok(tokenizer)
}

impl Vocab {
    /// Builds the tokenizer and trie from `tokenizer.ggml.*` metadata.
    pub(super) fn from_gguf(content: &Content) -> Result<Self, String> {
        let tokenizer = tokenizer(content)?;
        let words = token_bytes(content)?;
        let eos = number(content, "tokenizer.ggml.eos_token_id")
            .ok_or("the file names no end-of-sequence token (tokenizer.ggml.eos_token_id)")?;
        let template = ChatTemplate::detect(
            string(content, "tokenizer.chat_template").as_deref(),
            |token| tokenizer.token_to_id(token),
        );
        let mut stop = vec![eos];
        if let Some(end) = template
            .end_of_turn()
            .and_then(|t| tokenizer.token_to_id(t))
            && !stop.contains(&end)
        {
            stop.push(end);
        }
        let structural = words.iter().map(|w| is_structural(w)).collect();
        let vocab_size = u32::try_from(words.len()).map_err(|_| "vocabulary too large")?;
        let mut info = TokRxInfo::new(vocab_size, eos);
        info.tok_bos = number(content, "tokenizer.ggml.bos_token_id");
        info.tok_end_of_turn = stop.get(1).copied();
        let trie = TokTrie::from(&info, &words).with_eos_tokens(&stop);
        let env: TokEnv = Arc::new(TrieEnv {
            trie,
            tokenizer: tokenizer.clone(),
        });
        Ok(Self {
            tokenizer,
            env,
            template,
            stop,
            structural,
        })
    }

    /// Whether `token` is only punctuation and whitespace.
    pub(super) fn is_structural(&self, token: TokenId) -> bool {
        self.structural
            .get(token as usize)
            .copied()
            .unwrap_or(false)
    }

    /// A token's bytes (a special token's start with [`TokTrie::SPECIAL_TOKEN_MARKER`]).
    pub(super) fn token_bytes(&self, token: TokenId) -> &[u8] {
        self.env.tok_trie().token(token)
    }

    /// The tokens whose bytes start `token`'s, shortest first, `token` included; none for a special
    /// token.
    pub(super) fn prefixes(&self, token: TokenId) -> Vec<TokenId> {
        let trie = self.env.tok_trie();
        let bytes = trie.token(token);
        if bytes
            .first()
            .is_none_or(|&b| b == TokTrie::SPECIAL_TOKEN_MARKER)
        {
            return Vec::new();
        }
        trie.all_prefixes(bytes)
    }

    /// The tokens whose bytes start `bytes`, shortest first.
    pub(super) fn prefixes_of(&self, bytes: &[u8]) -> Vec<TokenId> {
        self.env.tok_trie().all_prefixes(bytes)
    }

    /// Token ids of `text`, special tokens (`<|im_start|>`) recognised.
    pub(super) fn encode(&self, text: &str) -> Result<Vec<TokenId>, String> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| format!("cannot tokenize the prompt: {e}"))
    }

    /// The bytes of generated tokens (special tokens left out).
    pub(super) fn decode(&self, tokens: &[TokenId]) -> Vec<u8> {
        self.env.tok_trie().decode_ext(tokens, false)
    }

    pub(super) fn vocab_size(&self) -> usize {
        self.env.tok_trie().vocab_size()
    }
}

/// Whether a token's bytes are only ASCII punctuation and whitespace, which the repetition penalty
/// spares. All punctuation alike: sparing only JSON's (`,"` but not `."`) made a string end in a
/// comma more likely than in a full stop once a sentence had ended with `."`.
pub(super) fn is_structural(bytes: &[u8]) -> bool {
    bytes
        .first()
        .is_some_and(|&b| b != TokTrie::SPECIAL_TOKEN_MARKER)
        && bytes
            .iter()
            .all(|b| b.is_ascii_punctuation() || b.is_ascii_whitespace())
}

/// The tokenizer environment llguidance works with: the trie, and the tokenizer for forced text.
struct TrieEnv {
    trie: TokTrie,
    tokenizer: Tokenizer,
}

impl TokenizerEnv for TrieEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, bytes: &[u8]) -> Vec<TokenId> {
        let text = String::from_utf8_lossy(bytes);
        match self.tokenizer.encode_fast(text.as_ref(), false) {
            Ok(encoding) => encoding.get_ids().to_vec(),
            // The trie's greedy tokenization is always possible and still decodes to the same bytes.
            Err(_) => self.trie.greedy_tokenize(bytes),
        }
    }
}

/// A pre-tokenizer where candle's default is wrong for the file's `tokenizer.ggml.pre`.
fn pre_tokenizer(pre: &str) -> Result<Option<PreTokenizerWrapper>, String> {
    Ok(match pre {
        // SmolLM: every digit on its own, then GPT-2's byte-level split with no prefix space.
        "smollm" => Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
            PreTokenizerWrapper::Digits(Digits::new(true)),
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
        ]))),
        "llama-bpe" => {
            let split = Split::new(
                SplitPattern::Regex(LLAMA3_SPLIT.to_owned()),
                tokenizers::SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| format!("cannot build the llama-bpe pre-tokenizer: {e}"))?;
            Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
                PreTokenizerWrapper::Split(split),
                PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, false)),
            ])))
        }
        _ => None,
    })
}

/// Every token's bytes: byte-level tokens mapped back through GPT-2's byte alphabet, control tokens
/// marked as special for the trie.
fn token_bytes(content: &Content) -> Result<Vec<Vec<u8>>, String> {
    let tokens = match content.metadata.get("tokenizer.ggml.tokens") {
        Some(Value::Array(tokens)) => tokens,
        _ => return Err("the file has no vocabulary (tokenizer.ggml.tokens)".to_owned()),
    };
    let types = match content.metadata.get("tokenizer.ggml.token_type") {
        Some(Value::Array(types)) => Some(types),
        _ => None,
    };
    let alphabet = byte_alphabet();
    let mut words = Vec::with_capacity(tokens.len());
    for (index, token) in tokens.iter().enumerate() {
        let text = token
            .to_string()
            .map_err(|_| format!("token {index} is not a string"))?;
        let kind = types
            .and_then(|t| t.get(index))
            .and_then(|v| v.to_i32().ok())
            .unwrap_or(1);
        // 3: control (`<|im_end|>`), 4: user-defined.
        if kind == 3 || kind == 4 {
            let mut bytes = vec![TokTrie::SPECIAL_TOKEN_MARKER];
            bytes.extend_from_slice(text.as_bytes());
            words.push(bytes);
            continue;
        }
        let bytes: Option<Vec<u8>> = text.chars().map(|c| alphabet.get(&c).copied()).collect();
        // A token outside the byte alphabet can never be produced by the BPE; keep its UTF-8.
        words.push(bytes.unwrap_or_else(|| text.as_bytes().to_vec()));
    }
    Ok(words)
}

/// GPT-2's byte-level alphabet, reversed: printable bytes stand for themselves, the other 68 bytes
/// are shifted to U+0100 and up.
fn byte_alphabet() -> HashMap<char, u8> {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut map = HashMap::with_capacity(256);
    let mut shifted = 0x100u32;
    for byte in 0..=255u8 {
        if printable(byte) {
            map.insert(char::from(byte), byte);
        } else {
            if let Some(c) = char::from_u32(shifted) {
                map.insert(c, byte);
            }
            shifted += 1;
        }
    }
    map
}

fn string(content: &Content, key: &str) -> Option<String> {
    content
        .metadata
        .get(key)
        .and_then(|v| v.to_string().ok())
        .cloned()
}

fn number(content: &Content, key: &str) -> Option<u32> {
    content.metadata.get(key).and_then(|v| v.to_u32().ok())
}

/// How a conversation is laid out as one prompt, detected from the file's Jinja chat template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChatTemplate {
    /// `<|im_start|>role\n...<|im_end|>` (SmolLM, Qwen, many fine-tunes).
    ChatMl,
    /// `<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>` (Llama 3).
    Llama3,
    /// `[INST] ... [/INST]` with the system prompt in `<<SYS>>` (Llama 2, Mistral).
    Inst,
    /// No recognisable template: `System:` / `User:` / `Assistant:` lines.
    Plain,
}

impl ChatTemplate {
    /// The template the Jinja source follows; with none, ChatML when the vocabulary has its tokens.
    pub(super) fn detect(jinja: Option<&str>, token: impl Fn(&str) -> Option<u32>) -> Self {
        match jinja {
            Some(t) if t.contains("<|im_start|>") => Self::ChatMl,
            Some(t) if t.contains("<|start_header_id|>") => Self::Llama3,
            Some(t) if t.contains("[INST]") => Self::Inst,
            _ if token("<|im_start|>").is_some() && token("<|im_end|>").is_some() => Self::ChatMl,
            _ => Self::Plain,
        }
    }

    /// The token that closes a turn, when the template has one.
    pub(super) fn end_of_turn(self) -> Option<&'static str> {
        match self {
            Self::ChatMl => Some("<|im_end|>"),
            Self::Llama3 => Some("<|eot_id|>"),
            Self::Inst | Self::Plain => None,
        }
    }

    /// The prompt for `system` and `messages`, ending where the assistant's answer starts. System
    /// messages inside the conversation join the system prompt; tool results are user turns.
    pub(super) fn render(self, system: Option<&str>, messages: &[Message]) -> String {
        let mut system_parts: Vec<&str> = system.into_iter().collect();
        system_parts.extend(
            messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str()),
        );
        let system = system_parts.join("\n\n");
        let turns: Vec<(&str, String)> = messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| match m.role {
                Role::Assistant => ("assistant", m.content.clone()),
                Role::Tool => ("user", format!("Tool result:\n{}", m.content)),
                _ => ("user", m.content.clone()),
            })
            .collect();
        let mut out = String::new();
        match self {
            Self::ChatMl => {
                if !system.is_empty() {
                    out.push_str(&format!("<|im_start|>system\n{system}<|im_end|>\n"));
                }
                for (role, text) in &turns {
                    out.push_str(&format!("<|im_start|>{role}\n{text}<|im_end|>\n"));
                }
                out.push_str("<|im_start|>assistant\n");
            }
            Self::Llama3 => {
                out.push_str("<|begin_of_text|>");
                let header = |role: &str| format!("<|start_header_id|>{role}<|end_header_id|>\n\n");
                if !system.is_empty() {
                    out.push_str(&format!("{}{system}<|eot_id|>", header("system")));
                }
                for (role, text) in &turns {
                    out.push_str(&format!("{}{text}<|eot_id|>", header(role)));
                }
                out.push_str(&header("assistant"));
            }
            Self::Inst => {
                // [INST] needs alternating turns: consecutive user turns become one.
                let mut merged: Vec<(&str, String)> = Vec::with_capacity(turns.len());
                for (role, text) in turns {
                    match merged.last_mut() {
                        Some((last, previous)) if *last == role && role == "user" => {
                            previous.push_str("\n\n");
                            previous.push_str(&text);
                        }
                        _ => merged.push((role, text)),
                    }
                }
                let turns = merged;
                let mut pending_system = if system.is_empty() {
                    String::new()
                } else {
                    format!("<<SYS>>\n{system}\n<</SYS>>\n\n")
                };
                for (role, text) in &turns {
                    if *role == "assistant" {
                        out.push_str(&format!(" {text} </s>"));
                    } else {
                        out.push_str(&format!("<s>[INST] {pending_system}{text} [/INST]"));
                        pending_system.clear();
                    }
                }
                if turns.is_empty() {
                    out.push_str(&format!("<s>[INST] {pending_system}[/INST]"));
                }
            }
            Self::Plain => {
                if !system.is_empty() {
                    out.push_str(&format!("System: {system}\n\n"));
                }
                for (role, text) in &turns {
                    let who = if *role == "assistant" {
                        "Assistant"
                    } else {
                        "User"
                    };
                    out.push_str(&format!("{who}: {text}\n\n"));
                }
                out.push_str("Assistant:");
            }
        }
        out
    }
}
