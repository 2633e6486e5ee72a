//! CSV fields, quoted as RFC 4180 says, by one function for every CSV fsbench writes (a
//! run's `--csv`, an experiment's summary and its runs), so that a name holding a comma, a
//! quote or a line break stays one field in every reader.

use std::borrow::Cow;

/// When a field is put in quotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quote {
    /// When it must be: it holds a comma, a quote or a line break (CR or LF), or begins or
    /// ends with a space (which some readers trim).
    WhenNeeded,
    /// Always (free-text columns, so that every row of them reads alike).
    Always,
}

/// `s` as a CSV field: in quotes (quotes inside doubled) as `quote` says, else as it is.
pub fn field(s: &str, quote: Quote) -> Cow<'_, str> {
    let needed = s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ');
    if quote == Quote::Always || needed {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::{field, Quote};

    #[test]
    fn commas_quotes_and_line_breaks_are_quoted() {
        let w = Quote::WhenNeeded;
        assert_eq!(field("plain", w), "plain");
        assert_eq!(field("", w), "");
        assert_eq!(field("a,b", w), "\"a,b\"");
        assert_eq!(field("say \"hi\"", w), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines", w), "\"two\nlines\"");
        assert_eq!(field("cr\rhere", w), "\"cr\rhere\"");
        assert_eq!(field(" padded", w), "\" padded\"");
        assert_eq!(field("padded ", w), "\"padded \"");
        assert_eq!(field("in side", w), "in side");
        assert_eq!(field("plain", Quote::Always), "\"plain\"");
        assert_eq!(field("a\"b", Quote::Always), "\"a\"\"b\"");
    }

    /// A quoted field reads back whole: split on commas outside quotes, unquoted.
    #[test]
    fn quoted_fields_read_back_as_written() {
        let cells = ["x,y", "q\"uote", "line\nbreak", " lead", "plain"];
        let row: Vec<String> = cells
            .iter()
            .map(|c| field(c, Quote::WhenNeeded).into_owned())
            .collect();
        let row = row.join(",");
        let mut back = Vec::new();
        let (mut cur, mut quoted, mut chars) = (String::new(), false, row.chars().peekable());
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => back.push(std::mem::take(&mut cur)),
                (c, _) => cur.push(c),
            }
        }
        back.push(cur);
        assert_eq!(back, cells);
    }
}
