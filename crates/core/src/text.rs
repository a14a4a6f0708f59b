//! Plain-text tables for terminals and text files: one renderer for every latlab table
//! printed as text (the CLI's tables, `latlab sched`'s run summary and analysis).

/// A table with a header row; the first column is left-aligned, the rest right-aligned,
/// two spaces apart.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names and no rows.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells are blank; cells beyond the header are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as lines of text, each ending in a newline, trailing blanks trimmed.
    pub fn render(&self) -> String {
        let ncol = self.header.len();
        let mut width = vec![0usize; ncol];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(ncol) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = r.get(i).map(String::as_str).unwrap_or("");
                let pad = w - c.chars().count();
                if i == 0 {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let mut t = Table::new(["a", "bb"]);
        t.row(vec!["long name".into(), "1".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "a          bb");
        assert_eq!(lines[1], "long name   1");
    }

    #[test]
    fn short_rows_are_padded_and_extra_cells_dropped() {
        let mut t = Table::new(["name", "n", "µs"]);
        t.row(vec!["x".into()]);
        t.row(vec!["yy".into(), "10".into(), "3".into(), "extra".into()]);
        assert_eq!(t.render(), "name   n  µs\nx\nyy    10   3\n");
    }
}
