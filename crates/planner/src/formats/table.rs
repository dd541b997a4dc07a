//! CSV tables (the data files' format): rows read by column name. A reader
//! of our own, not the `csv` crate: the data files are a few kilobytes of
//! plain CSV with quoted commas, and the page ships every byte it links; the
//! calibration and price tests read every row of them through it.

/// One row of a CSV file, by column name.
pub struct Row {
    header: std::rc::Rc<Vec<String>>,
    fields: Vec<String>,
}

impl Row {
    pub fn get(&self, key: &str) -> &str {
        self.header
            .iter()
            .position(|h| h == key)
            .and_then(|i| self.fields.get(i))
            .map(String::as_str)
            .unwrap_or("")
    }
    pub fn num(&self, key: &str) -> Option<f64> {
        crate::formats::decimal::parse_f64(self.get(key).trim())
    }
}

fn split(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let cell = out.last_mut().expect("one cell");
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => cell.push(c),
        }
    }
    out
}

/// Read a CSV file with a header line; quoted fields may hold commas, and
/// lines that start with `#` are comments (a row's sources).
pub fn read_csv(text: &str) -> Vec<Row> {
    let mut lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let header = std::rc::Rc::new(lines.next().map(split).unwrap_or_default());
    lines
        .map(|l| Row {
            header: header.clone(),
            fields: split(l),
        })
        .collect()
}
