//! The differences docs/CONFORMANCE.md explains, read from its tables: every table with a
//! "Matched by" column, each code span in that column a pattern
//!
//! ```text
//! API[@VERSIONS] CONVERSATION/STEP PATH
//! ```
//!
//! `API` is an API's name (`Metadata`) or `*`; `@3-5` or `@5` limits the versions; the step is
//! a glob (`*` any text); the path is a glob over the flattened path's segments (split at dots
//! outside brackets), `*` any text within a segment and `**` any number of segments. A row
//! without a reason (its last cell) is refused: every explanation says why.

#[derive(Debug, Clone)]
pub struct Pattern {
    /// As written in the document.
    pub text: String,
    pub line: usize,
    api: String,
    versions: Option<(i16, i16)>,
    step: String,
    path: Vec<String>,
}

#[derive(Debug)]
pub struct DocError(pub String);

fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    // A `|` inside a code span does not split cells.
    let mut out = vec![String::new()];
    let mut in_code = false;
    for c in row.chars() {
        match c {
            '|' if !in_code => out.push(String::new()),
            _ => {
                if c == '`' {
                    in_code = !in_code;
                }
                if let Some(s) = out.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// The path's segments: split at dots outside `[…]` and `{…}`.
pub fn segments(path: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0i32;
    for c in path.chars() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            _ => {}
        }
        if c == '.' && depth == 0 {
            out.push(String::new());
        } else if let Some(s) = out.last_mut() {
            s.push(c);
        }
    }
    out
}

fn parse_pattern(text: &str, line: usize) -> Result<Pattern, DocError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [api, step, path] = words.as_slice() else {
        return Err(DocError(format!(
            "docs/CONFORMANCE.md:{line}: `{text}` is not `API[@VERSIONS] CONVERSATION/STEP PATH`"
        )));
    };
    let (api, versions) = match api.split_once('@') {
        None => (api.to_string(), None),
        Some((a, v)) => {
            let (lo, hi) = v.split_once('-').unwrap_or((v, v));
            let parse = |s: &str| {
                s.parse::<i16>()
                    .map_err(|_| DocError(format!("docs/CONFORMANCE.md:{line}: bad versions in `{text}`")))
            };
            (a.to_string(), Some((parse(lo)?, parse(hi)?)))
        }
    };
    Ok(Pattern {
        text: text.to_string(),
        line,
        api,
        versions,
        step: step.to_string(),
        path: segments(path),
    })
}

/// Every pattern in the document.
pub fn read(doc: &str) -> Result<Vec<Pattern>, DocError> {
    let mut patterns = Vec::new();
    let mut column: Option<usize> = None;
    for (i, line) in doc.lines().enumerate() {
        let line_no = i + 1;
        if !line.trim_start().starts_with('|') {
            column = None;
            continue;
        }
        let cs = cells(line);
        if cs
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ':' || ch == ' '))
        {
            continue;
        }
        match column {
            None => column = cs.iter().position(|c| c == "Matched by"),
            Some(col) => {
                let Some(cell) = cs.get(col) else { continue };
                let spans = code_spans(cell);
                if spans.is_empty() {
                    continue;
                }
                let reason = cs.last().map(String::as_str).unwrap_or("");
                if cs.len() <= col + 1 || reason.is_empty() {
                    return Err(DocError(format!(
                        "docs/CONFORMANCE.md:{line_no}: a difference without its reason"
                    )));
                }
                for s in spans {
                    patterns.push(parse_pattern(&s, line_no)?);
                }
            }
        }
    }
    Ok(patterns)
}

/// `*` matches any text (none included).
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

fn segments_match(p: &[String], t: &[String]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some(s) if s == "**" => (0..=t.len()).any(|k| segments_match(&p[1..], &t[k..])),
        Some(s) => !t.is_empty() && glob(s, &t[0]) && segments_match(&p[1..], &t[1..]),
    }
}

impl Pattern {
    pub fn matches(&self, api: &str, version: i16, step: &str, path: &str) -> bool {
        (self.api == "*" || self.api == api)
            && self.versions.is_none_or(|(lo, hi)| (lo..=hi).contains(&version))
            && glob(&self.step, step)
            && segments_match(&self.path, &segments(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_paths_by_segment() {
        let p =
            parse_pattern("Metadata@0-3 metadata/* topics[*].partitions[*].leader_id", 1).expect("pattern");
        assert!(p.matches(
            "Metadata",
            2,
            "metadata/all",
            "topics[a.b].partitions[0].leader_id"
        ));
        assert!(!p.matches("Metadata", 4, "metadata/all", "topics[a].partitions[0].leader_id"));
        assert!(!p.matches(
            "Metadata",
            2,
            "metadata/all",
            "topics[a].partitions[0].leader_epoch"
        ));
        // A list item is part of its segment: `results*` takes `results[x]`, `**` the rest.
        let any = parse_pattern("* */* results*.**", 1).expect("pattern");
        assert!(any.matches("X", 0, "a/b", "results[x].configs[y].value"));
        assert!(any.matches("X", 0, "a/b", "results"));
        assert!(!any.matches("X", 0, "a/b", "other"));
    }

    #[test]
    fn tables_with_a_matched_by_column_are_read() {
        let doc = "| What | Matched by | Why |\n|---|---|---|\n| x | `Fetch f/* a.b` `Fetch f/* c` | because |\n\n| a | b |\n|---|---|\n| `not` | read |\n";
        let ps = read(doc).expect("read");
        assert_eq!(ps.len(), 2);
        assert!(read("| What | Matched by | Why |\n|---|---|---|\n| x | `Fetch f/* a` | |\n").is_err());
    }
}
