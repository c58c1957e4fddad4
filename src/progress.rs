//! The progress line of a long run: CUs encoded so far, then the dedup and write phases, on
//! stderr. Nothing is drawn under `-q`, when stderr is not a terminal (kernel builds, pipes,
//! tests) or while the run is younger than a second, and the line is cleared at the end.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before its progress is shown.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// A run's progress line.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    terminal: bool,
}

impl Progress {
    /// A hidden line, never shown when `quiet`; [`Progress::cus`] sets how many compile units
    /// the run has.
    pub fn new(quiet: bool) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("dwarf2btf: {msg} [{bar:30}] {pos}/{len} CUs, {elapsed}")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        bar.set_message("encoding");
        Progress {
            bar,
            start: Instant::now(),
            terminal: !quiet && std::io::stderr().is_terminal(),
        }
    }

    /// The run has `total` compile units.
    pub fn cus(&self, total: usize) {
        self.bar.set_length(total as u64);
    }

    /// `done` compile units are encoded and merged.
    pub fn cus_done(&self, done: usize) {
        self.show_if_long();
        self.bar.set_position(done as u64);
    }

    /// The run moved on to `phase` ("deduplicating", "writing").
    pub fn phase(&self, phase: &'static str) {
        self.show_if_long();
        self.bar.set_message(phase);
    }

    fn show_if_long(&self) {
        if self.terminal && self.bar.is_hidden() && self.start.elapsed() >= QUIET_FOR {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new(false)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
