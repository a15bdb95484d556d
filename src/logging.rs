//! Logging: slog with a terminal drain on standard error, written by a background thread
//! so that a slow terminal never delays a client.

use slog::{o, Drain, Level, Logger};

/// A logger printing to standard error at info level, or debug level when `debug` is set.
pub fn terminal(debug: bool) -> Logger {
    let decorator = slog_term::TermDecorator::new().stderr().build();
    let drain = slog_term::FullFormat::new(decorator).build().fuse();
    let drain = slog_async::Async::new(drain)
        .chan_size(4096)
        .overflow_strategy(slog_async::OverflowStrategy::DropAndReport)
        .build()
        .fuse();
    let level = if debug { Level::Debug } else { Level::Info };
    Logger::root(drain.filter_level(level).fuse(), o!())
}

/// A logger that discards everything (for embedding and tests).
pub fn discard() -> Logger {
    Logger::root(slog::Discard, o!())
}
