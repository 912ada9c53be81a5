//! Loading a GGUF model: checks, vocabulary, and re-quantisation of weights candle has no fast kernel
//! for (Q4_1 → Q8_0), once, into a cache file next to the model.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use candle_core::Device;
use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::{GgmlDType, QTensor};

use super::model::Model;
use super::vocab::Vocab;
use super::{LoadError, LoadReport, Requantize};

/// The metadata key a re-quantised cache file carries: the fingerprint of the file it came from.
const SOURCE_KEY: &str = "claij.requantized_from";
/// Bumped whenever the cache format or the re-quantisation changes.
const CACHE_VERSION: &str = "q8_0-v1";

/// A model ready to run.
pub(super) struct Loaded {
    pub(super) weights: Model,
    pub(super) vocab: Vocab,
    pub(super) name: String,
    pub(super) context_length: usize,
    pub(super) report: LoadReport,
}

/// Reads, checks and prepares the model at `path`.
pub(super) fn load(path: &Path, requantize: &Requantize) -> Result<Loaded, LoadError> {
    let started = Instant::now();
    let corrupt = |reason: String| LoadError::Corrupt {
        path: path.to_owned(),
        reason,
    };
    let mut file = BufReader::new(File::open(path).map_err(|e| open_error(path, e))?);
    let content = Content::read(&mut file).map_err(|e| corrupt(e.to_string()))?;
    let architecture = meta_string(&content, "general.architecture").unwrap_or_default();
    if architecture != "llama" {
        return Err(LoadError::Unsupported {
            path: path.to_owned(),
            reason: format!(
                "architecture `{architecture}`; only llama-architecture models are supported"
            ),
        });
    }
    let experts = content
        .metadata
        .get("llama.expert_count")
        .and_then(|v| v.to_u32().ok())
        .unwrap_or(0);
    if experts > 1 {
        return Err(LoadError::Unsupported {
            path: path.to_owned(),
            reason: format!(
                "a mixture of {experts} experts; only dense llama-architecture models are supported"
            ),
        });
    }
    let vocab = Vocab::from_gguf(&content).map_err(|reason| LoadError::Unsupported {
        path: path.to_owned(),
        reason,
    })?;
    // The file name says what people downloaded ("SmolLM2-135M-Instruct.Q4_1"); `general.name` is often
    // a training-run label, so it is only the fallback.
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|n| !n.trim().is_empty())
        .or_else(|| meta_string(&content, "general.name").filter(|n| !n.trim().is_empty()))
        .unwrap_or_else(|| "local".to_owned());
    let context_length = content
        .metadata
        .get("llama.context_length")
        .and_then(|v| v.to_u32().ok())
        .map_or(2048, |n| n as usize);

    let slow = slow_tensors(&content);
    let mut report = LoadReport {
        path: path.to_owned(),
        load_time: Duration::ZERO,
        requantized_tensors: 0,
        cache: None,
        from_cache: false,
    };
    let weights = match requantize {
        _ if slow == 0 => weights_from(content, &mut file, context_length).map_err(corrupt)?,
        Requantize::Off => weights_from(content, &mut file, context_length).map_err(corrupt)?,
        Requantize::InMemory => {
            report.requantized_tensors = slow;
            let bytes = requantized(&content, &mut file, None).map_err(corrupt)?;
            weights_from_bytes(bytes, context_length).map_err(corrupt)?
        }
        Requantize::Cached(dir) => {
            report.requantized_tensors = slow;
            let dir = dir.clone().or_else(|| path.parent().map(Path::to_path_buf));
            let fingerprint = File::open(path)
                .and_then(|mut f| fingerprint(&mut f))
                .map_err(|e| open_error(path, e))?;
            let cache = dir.map(|d| d.join(cache_name(path)));
            match cache
                .as_deref()
                .and_then(|c| cached(c, &fingerprint, context_length))
            {
                Some(weights) => {
                    report.from_cache = true;
                    report.cache = cache;
                    weights
                }
                None => {
                    let bytes =
                        requantized(&content, &mut file, Some(&fingerprint)).map_err(corrupt)?;
                    if let Some(cache) = &cache {
                        match write_atomically(cache, &bytes) {
                            Ok(()) => report.cache = Some(cache.clone()),
                            Err(e) => tracing::warn!(
                                cache = %cache.display(),
                                error = %e,
                                "cannot write the re-quantised model; it is kept in memory only"
                            ),
                        }
                    }
                    weights_from_bytes(bytes, context_length).map_err(corrupt)?
                }
            }
        }
    };
    report.load_time = started.elapsed();
    Ok(Loaded {
        weights,
        vocab,
        name,
        context_length,
        report,
    })
}

pub(super) fn open_error(path: &Path, source: std::io::Error) -> LoadError {
    if source.kind() == std::io::ErrorKind::NotFound {
        LoadError::NotFound {
            path: path.to_owned(),
        }
    } else {
        LoadError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

fn meta_string(content: &Content, key: &str) -> Option<String> {
    content
        .metadata
        .get(key)
        .and_then(|v| v.to_string().ok())
        .cloned()
}

/// How many tensors use a format candle decodes slowly on CPU.
fn slow_tensors(content: &Content) -> usize {
    content
        .tensor_infos
        .values()
        .filter(|t| t.ggml_dtype == GgmlDType::Q4_1)
        .count()
}

fn weights_from<R: Read + Seek>(
    content: Content,
    reader: &mut R,
    context_length: usize,
) -> Result<Model, String> {
    Model::from_gguf(&content, reader, context_length).map_err(|e| e.to_string())
}

fn weights_from_bytes(bytes: Vec<u8>, context_length: usize) -> Result<Model, String> {
    let mut cursor = Cursor::new(bytes);
    let content = Content::read(&mut cursor).map_err(|e| e.to_string())?;
    weights_from(content, &mut cursor, context_length)
}

/// The whole model as GGUF bytes with slow tensors re-quantised to Q8_0; the metadata gains the
/// source fingerprint when there is one.
fn requantized<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    fingerprint: Option<&str>,
) -> Result<Vec<u8>, String> {
    let device = Device::Cpu;
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let mut tensors: Vec<(&str, QTensor)> = Vec::with_capacity(names.len());
    for name in names {
        let tensor = content
            .tensor(reader, name, &device)
            .map_err(|e| format!("tensor {name}: {e}"))?;
        let tensor = if tensor.dtype() == GgmlDType::Q4_1 {
            let dense = tensor
                .dequantize(&device)
                .map_err(|e| format!("tensor {name}: {e}"))?;
            QTensor::quantize(&dense, GgmlDType::Q8_0).map_err(|e| format!("tensor {name}: {e}"))?
        } else {
            tensor
        };
        tensors.push((name.as_str(), tensor));
    }
    let source = fingerprint.map(|f| Value::String(f.to_owned()));
    let mut metadata: Vec<(&str, &Value)> = content
        .metadata
        .iter()
        .filter(|(k, _)| k.as_str() != SOURCE_KEY)
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    if let Some(source) = &source {
        metadata.push((SOURCE_KEY, source));
    }
    let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata, &refs).map_err(|e| e.to_string())?;
    Ok(out.into_inner())
}

/// The cache file's name: the model's stem with a suffix naming the format.
fn cache_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map_or_else(|| "model".into(), |s| s.to_string_lossy());
    format!("{stem}.claij-{CACHE_VERSION}.gguf")
}

/// The weights from the cache file when it exists and was made from the same source.
fn cached(cache: &Path, fingerprint: &str, context_length: usize) -> Option<Model> {
    let mut file = BufReader::new(File::open(cache).ok()?);
    let content = Content::read(&mut file).ok()?;
    let source = content.metadata.get(SOURCE_KEY)?.to_string().ok()?;
    if source != fingerprint {
        return None;
    }
    match weights_from(content, &mut file, context_length) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(cache = %cache.display(), error = %e, "unreadable model cache; rebuilding it");
            None
        }
    }
}

/// Size plus an FNV-1a hash of the first and last MiB: cheap, and any re-download or edit changes it.
fn fingerprint(file: &mut File) -> std::io::Result<String> {
    const WINDOW: u64 = 1 << 20;
    let len = file.metadata()?.len();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let mut buffer = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.by_ref().take(WINDOW).read_to_end(&mut buffer)?;
    feed(&buffer);
    buffer.clear();
    file.seek(SeekFrom::Start(len.saturating_sub(WINDOW)))?;
    file.by_ref().take(WINDOW).read_to_end(&mut buffer)?;
    feed(&buffer);
    Ok(format!("{CACHE_VERSION}:{len}:{hash:016x}"))
}

/// Writes to a temporary sibling and renames it into place, so a reader never sees half a file and
/// two processes racing both end with a complete one.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp: PathBuf = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
