//! A small incremental parser for server-sent events (the `text/event-stream` format): bytes in,
//! events out, no IO.
//!
//! Lines end with `\n`, `\r\n` or `\r`; `data:` lines accumulate (joined with `\n`), `event:` names
//! the event, lines starting with `:` are comments, a blank line dispatches. A chunk may end anywhere,
//! even inside a UTF-8 character. Unlike the browser algorithm, an event left without its blank line
//! when the stream ends is still dispatched by [`SseParser::finish`]: some servers end that way.

/// One event: its type (`event:` field, if any) and its data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The parser's state between chunks.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// The most bytes one event may hold (its data plus the line being read).
    max_event: usize,
    /// An event grew past `max_event`: parsing stopped.
    overflowed: bool,
    /// Bytes of a line not yet complete.
    line: Vec<u8>,
    /// The last chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseEvent {
    /// OpenAI's end-of-stream marker, `data: [DONE]`.
    pub(crate) fn is_done(&self) -> bool {
        self.data.trim() == "[DONE]"
    }
}

impl SseParser {
    /// A parser at the start of a stream, without a limit on events.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::with_max_event(usize::MAX)
    }

    /// A parser at the start of a stream whose events may hold at most `max_event` bytes.
    pub(crate) fn with_max_event(max_event: usize) -> Self {
        Self {
            max_event,
            overflowed: false,
            line: Vec::new(),
            after_cr: false,
            event: None,
            data: String::new(),
            has_data: false,
        }
    }

    /// Whether an event grew past the limit; then the parser reads nothing more.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Reads one chunk and returns the events it completed, up to an event past the limit (see
    /// [`SseParser::overflowed`]); nothing of that event is held beyond the limit.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if self.overflowed {
            return events;
        }
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            if !self.fits(end) {
                return events;
            }
            self.line.extend_from_slice(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.line_done(&line) {
                events.push(event);
            }
            if self.overflowed {
                return events;
            }
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        if self.fits(rest.len()) {
            self.line.extend_from_slice(rest);
        }
        events
    }

    /// Whether `more` bytes still fit the event in progress; marks the overflow when not.
    fn fits(&mut self, more: usize) -> bool {
        let size = self
            .data
            .len()
            .saturating_add(self.line.len())
            .saturating_add(more);
        if size > self.max_event {
            self.overflowed = true;
            self.line = Vec::new();
            self.data = String::new();
        }
        !self.overflowed
    }

    /// Ends the stream: the event in progress, if it has data.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        if self.overflowed {
            return None;
        }
        let line = std::mem::take(&mut self.line);
        let from_line = if line.is_empty() {
            None
        } else {
            self.line_done(&line)
        };
        from_line.or_else(|| self.dispatch())
    }

    /// Applies one complete line; a blank line dispatches.
    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.first() == Some(&b':') {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                // The line was counted while read; here it moves into `data` (the line is empty).
                if !self.fits(value.len() + 1) {
                    return None;
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            // `id` and `retry` matter to reconnecting browsers, not to one-shot API calls.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event: event.filter(|e| !e.is_empty()),
            data: std::mem::take(&mut self.data),
        })
    }
}
