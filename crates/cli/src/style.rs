//! Colour for people: when the terminal takes it, and what it marks.
//!
//! Text is styled here and printed through `anstream` (`anstream::println!`, `say_error!`),
//! which writes the escapes only when the choice says so: `--color always`, or `--color auto`
//! (the default) on a terminal with `NO_COLOR` unset — `CLICOLOR_FORCE` forces colour in auto
//! mode, as it does for clap's own messages. Piped or redirected output is plain text. `--json`
//! output is never styled in the first place.

use anstyle::{AnsiColor, Style};
use offsetlab_engine::narrative::{Event, EventKind};
use std::ffi::OsString;
use std::fmt::Display;

/// `--color WHEN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// Colour when the output is a terminal and NO_COLOR is not set (CLICOLOR_FORCE=1 forces it)
    #[default]
    Auto,
    /// Always colour, even into a pipe or a file
    Always,
    /// Never colour
    Never,
}

impl ColorWhen {
    /// Makes this the choice of every stream printed through `anstream`, clap's included.
    pub fn install(self) {
        anstream::ColorChoice::write_global(match self {
            Self::Auto => anstream::ColorChoice::Auto,
            Self::Always => anstream::ColorChoice::Always,
            Self::Never => anstream::ColorChoice::Never,
        });
    }

    /// `--color` as it stands on a command line clap refused (so that its error, or the help
    /// it prints, is coloured as asked): the last `--color WHEN` or `--color=WHEN` before `--`.
    pub fn from_raw_args(args: impl IntoIterator<Item = OsString>) -> Option<Self> {
        use clap::ValueEnum as _;
        let mut found = None;
        let mut args = args.into_iter().skip(1);
        while let Some(arg) = args.next() {
            let Some(arg) = arg.to_str().map(str::to_owned) else {
                continue;
            };
            let value = match arg.as_str() {
                "--" => break,
                "--color" => args.next().and_then(|v| v.to_str().map(str::to_owned)),
                _ => arg.strip_prefix("--color=").map(str::to_owned),
            };
            if let Some(v) = value.and_then(|v| Self::from_str(&v, true).ok()) {
                found = Some(v);
            }
        }
        found
    }
}

/// Section headings and the lines that frame a run.
pub const HEADING: Style = Style::new().bold();
/// A scenario line as it runs (`$ poll c1`).
pub const COMMAND: Style = Style::new().bold();
/// What matters less: timestamps, the clock moving, file names.
pub const DIM: Style = Style::new().dimmed();
/// Records lost, a failed `expect`, `error:`.
pub const LOSS: Style = AnsiColor::Red.on_default();
/// A crash (kill -9).
pub const CRASH: Style = AnsiColor::Red.on_default().bold();
/// Records applied again, duplicate rows, something to stop and look at.
pub const DUPLICATE: Style = AnsiColor::Yellow.on_default();
/// A figure that is as it should be (0 lost, 0 duplicates), an `expect` that holds.
pub const GOOD: Style = AnsiColor::Green.on_default();
/// A committed offset.
pub const COMMIT: Style = AnsiColor::Cyan.on_default();
/// An action the lab refused.
pub const REFUSED: Style = AnsiColor::Magenta.on_default();
/// `error:`.
pub const ERROR: Style = AnsiColor::Red.on_default().bold();
/// `warning:`.
pub const WARNING: Style = AnsiColor::Yellow.on_default().bold();
/// A question the tour asks.
pub const QUESTION: Style = AnsiColor::Blue.on_default().bold();

/// `text` in `style` (escapes that `anstream` strips where colour is off; none around nothing).
pub fn paint(style: Style, text: impl Display) -> String {
    let text = text.to_string();
    if text.is_empty() || style == Style::new() {
        return text;
    }
    format!("{style}{text}{style:#}")
}

/// A count where anything above 0 is bad: `bad` then, green at 0.
pub fn count(n: u64, bad: Style) -> Style {
    if n > 0 {
        bad
    } else {
        GOOD
    }
}

/// What a narrative event tells a learner, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Records skipped for good, or about to be.
    Loss,
    /// A record applied again, or anything else worth stopping at.
    Duplicate,
    Crash,
    Commit,
    Refused,
    /// The clock moving.
    Quiet,
    Plain,
}

/// The tone of `e`. The engine has one kind, `Warning`, for "stop and look": a loss is told
/// apart from a redelivery by what the warning says.
pub fn tone(e: &Event) -> Tone {
    match e.kind {
        EventKind::Crash => Tone::Crash,
        EventKind::Commit => Tone::Commit,
        EventKind::Refused => Tone::Refused,
        EventKind::Clock => Tone::Quiet,
        EventKind::Warning if speaks_of_loss(&e.text) => Tone::Loss,
        EventKind::Warning => Tone::Duplicate,
        _ => Tone::Plain,
    }
}

fn speaks_of_loss(text: &str) -> bool {
    ["for good", "deleted before this group read them", "records lost"]
        .iter()
        .any(|w| text.contains(w))
}

/// `e` as the engine prints it, coloured by its tone: the timestamp dimmed, the rest in the
/// tone's colour.
pub fn event(e: &Event) -> String {
    let text = e.to_string();
    let style = match tone(e) {
        Tone::Loss => LOSS,
        Tone::Duplicate => DUPLICATE,
        Tone::Crash => CRASH,
        Tone::Commit => COMMIT,
        Tone::Refused => REFUSED,
        Tone::Quiet => DIM,
        Tone::Plain => Style::new(),
    };
    match text.split_once("] ") {
        Some((at, rest)) => format!(
            "{}{}",
            paint(DIM, format!("{at}]")),
            paint(style, format!(" {rest}"))
        ),
        None => paint(style, text),
    }
}

/// `error: …` on stderr, the prefix in red where stderr takes colour.
macro_rules! say_error {
    ($($arg:tt)*) => {
        anstream::eprintln!("{} {}", $crate::style::paint($crate::style::ERROR, "error:"), format_args!($($arg)*))
    };
}

/// `warning: …` on stderr, the prefix in yellow where stderr takes colour.
macro_rules! say_warning {
    ($($arg:tt)*) => {
        anstream::eprintln!("{} {}", $crate::style::paint($crate::style::WARNING, "warning:"), format_args!($($arg)*))
    };
}

pub(crate) use {say_error, say_warning};

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        std::iter::once("offsetlab")
            .chain(v.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_color_flag_is_found_on_a_line_clap_refused() {
        assert_eq!(
            ColorWhen::from_raw_args(args(&["--color", "never", "--help"])),
            Some(ColorWhen::Never)
        );
        assert_eq!(
            ColorWhen::from_raw_args(args(&["run", "--color=always", "x"])),
            Some(ColorWhen::Always)
        );
        assert_eq!(
            ColorWhen::from_raw_args(args(&["--color=never", "--color", "always"])),
            Some(ColorWhen::Always)
        );
        assert_eq!(ColorWhen::from_raw_args(args(&["--", "--color", "never"])), None);
        assert_eq!(ColorWhen::from_raw_args(args(&["--color", "sometimes"])), None);
        assert_eq!(ColorWhen::from_raw_args(args(&["--color"])), None);
    }

    #[test]
    fn a_loss_is_red_and_a_redelivery_yellow() {
        let warn = |text: &str| Event {
            at: 0,
            kind: EventKind::Warning,
            text: text.into(),
        };
        assert_eq!(
            tone(&warn("auto-commit timer advanced g/t/0 to 8 while 3 polled record(s) were unprocessed: if c1#1 dies now they are skipped for good")),
            Tone::Loss
        );
        assert_eq!(
            tone(&warn(
                "c1#2 applied orders-0@4 (o-5) AGAIN: crash redelivery (one more row in the ledger)"
            )),
            Tone::Duplicate
        );
        let crash = Event {
            at: 0,
            kind: EventKind::Crash,
            text: "c1#1 crashed (kill -9)".into(),
        };
        assert_eq!(tone(&crash), Tone::Crash);
        let painted = event(&crash);
        assert!(painted.contains("\u{1b}["), "{painted:?}");
        assert!(painted.contains("c1#1 crashed (kill -9)"), "{painted:?}");
    }

    #[test]
    fn counts_are_green_at_zero() {
        assert_eq!(count(0, LOSS), GOOD);
        assert_eq!(count(3, LOSS), LOSS);
        assert_eq!(count(1, DUPLICATE), DUPLICATE);
    }
}
