//! The page (wasm32) embeds the data files without their provenance: the
//! `source` and `notes` texts the model never reads at run time; and of the
//! memory oracle's groups in coverage.json only the `sharding=` and `stage=`
//! ones its labels read (the family and checkpointing groups are for the docs). Native builds
//! (the CLI, the tests) embed them whole, so every entry keeps its source where
//! a test checks it. The files in data/ are never changed.

use std::{env, fs, path::Path};

/// Keys holding provenance or commentary, not figures.
const PROVENANCE: [&str; 10] = [
    "source",
    "host_link",
    "notes",
    "caveats",
    "conventions",
    "generated_for",
    "generated",
    "interconnect",
    "local_nvme",
    "price_confidence",
];

fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !PROVENANCE.contains(&k.as_str()));
            map.values_mut().for_each(strip);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
        serde_json::Value::Number(n) => {
            if let Some(x) = n.as_f64().filter(|x| x.fract() != 0.0) {
                *v = serde_json::json!(significant(x));
            }
        }
        _ => {}
    }
}

/// `x` to six significant digits: the page shows no figure to more (a
/// label's error to a tenth of a percent), and coverage.json's errors were
/// written to seventeen.
fn significant(x: f64) -> f64 {
    let digits = 6 - (x.abs().log10().floor() as i32 + 1);
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// The CSV without its last column (`source`); the first five columns hold no comma.
fn strip_csv(text: &str) -> String {
    text.lines()
        .map(|l| l.splitn(6, ',').take(5).collect::<Vec<_>>().join(","))
        .collect::<Vec<_>>()
        .join("\n")
}

fn main() {
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let lean = env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32");
    let names = [
        "hardware.json",
        "models.json",
        "sagemaker_prices.csv",
        "coverage.json",
        "sdk.json",
        "attention_kernels.csv",
    ];
    for name in names {
        println!("cargo:rerun-if-changed=data/{name}");
        let text = fs::read_to_string(Path::new("data").join(name)).expect("data file");
        let text = match (lean, name.ends_with(".json")) {
            (false, _) => text,
            (true, true) => {
                let mut v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
                strip(&mut v);
                if let Some(serde_json::Value::Array(groups)) = v.get_mut("memory_oracle") {
                    groups.retain(|g| {
                        g[0].as_str()
                            .is_some_and(|n| n.starts_with("sharding=") || n.starts_with("stage="))
                    });
                }
                v.to_string()
            }
            (true, false) => strip_csv(&text),
        };
        fs::write(Path::new(&out).join(name), text).expect("OUT_DIR is writable");
    }
}
