//! A minimal CSV reader for the reference data (quoted fields may hold commas).

pub struct Row {
    header: std::rc::Rc<Vec<String>>,
    fields: Vec<String>,
}

impl Row {
    pub fn get(&self, key: &str) -> &str {
        let i = self
            .header
            .iter()
            .position(|h| h == key)
            .unwrap_or_else(|| panic!("no column {key}"));
        self.fields.get(i).map(String::as_str).unwrap_or("")
    }
    pub fn num(&self, key: &str) -> f64 {
        self.get(key)
            .parse()
            .unwrap_or_else(|_| panic!("column {key} is not a number: {:?}", self.get(key)))
    }
    #[allow(dead_code)]
    pub fn opt(&self, key: &str) -> Option<f64> {
        self.get(key).parse().ok()
    }
}

fn split(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

pub fn read(text: &str) -> Vec<Row> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = std::rc::Rc::new(split(lines.next().expect("header")));
    lines
        .map(|l| Row {
            header: header.clone(),
            fields: split(l),
        })
        .collect()
}
