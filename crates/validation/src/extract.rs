//! Extraction of JSON from LLM prose.
