//! The words a setting is spelled with, in scenario lines, on the page and in the CLI.

/// Gives a field-less enum its spellings: `ALL` (in order), `name()`, `Display` as the name, and
/// `FromStr` that takes exactly a name and refuses any other word naming what it expected.
/// `spelled!(CleanupPolicy, "cleanup.policy", { Delete => "delete", Compact => "compact" })`.
macro_rules! spelled {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in the order the docs and the page list them.
            pub const ALL: [$ty; [$(stringify!($variant)),+].len()] = [$(Self::$variant),+];

            /// The word a scenario line spells this value with.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL.into_iter().find(|v| v.name() == s).ok_or_else(|| {
                    format!(
                        "unknown {} '{s}' (expected {})",
                        $what,
                        $crate::spelled::alternatives(&Self::ALL.map(Self::name))
                    )
                })
            }
        }
    };
}

/// `a`, `a or b`, `a, b or c`.
pub fn alternatives(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use crate::log::CleanupPolicy;
    use crate::strategy::CommitStrategy;

    #[test]
    fn every_name_reads_back_and_other_words_are_refused() {
        for s in CommitStrategy::ALL {
            assert_eq!(s.name().parse::<CommitStrategy>(), Ok(s));
            assert_eq!(s.to_string(), s.name());
        }
        assert_eq!(
            "Delete".parse::<CleanupPolicy>(),
            Err("unknown cleanup.policy 'Delete' (expected delete, compact or compact,delete)".to_string())
        );
    }
}
