//! The export fields: what SageMaker accepts, nothing that could break the
//! generated code.

fn all_chars(s: &str, ok: impl Fn(char) -> bool) -> bool {
    s.chars().all(ok)
}

/// An IAM role ARN or a bare role name (the SDK expands names).
pub fn valid_role(s: &str) -> bool {
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.len() <= 512
            && all_chars(n, |c| c.is_ascii_alphanumeric() || "+=,.@_-/".contains(c))
    };
    match s.strip_prefix("arn:") {
        Some(rest) => {
            let parts: Vec<&str> = rest.splitn(5, ':').collect();
            parts.len() == 5
                && parts[0].starts_with("aws")
                && all_chars(parts[0], |c| c.is_ascii_lowercase() || c == '-')
                && parts[1] == "iam"
                && parts[2].is_empty()
                && parts[3].len() == 12
                && all_chars(parts[3], |c| c.is_ascii_digit())
                && parts[4].strip_prefix("role/").is_some_and(name_ok)
        }
        None => s.len() <= 64 && name_ok(s) && !s.contains('/'),
    }
}

/// `s3://bucket[/prefix]`, bucket per S3 naming rules, prefix printable ASCII without quotes or backslashes.
pub fn valid_s3(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("s3://") else {
        return false;
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (3..=63).contains(&bucket.len())
        && all_chars(bucket, |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-'
        })
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && prefix.len() <= 900
        && all_chars(prefix, |c| c.is_ascii_graphic() && !"\"'\\`{}".contains(c))
}

/// SageMaker's job-name pattern: `^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`.
pub fn valid_job(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && all_chars(s, |c| c.is_ascii_alphanumeric() || c == '-')
}

/// A relative path to a Python script inside source_dir.
pub fn valid_entry(s: &str) -> bool {
    s.len() <= 256
        && s.ends_with(".py")
        && !s.starts_with('/')
        && !s.split('/').any(|p| p == ".." || p.is_empty())
        && s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && all_chars(s, |c| c.is_ascii_alphanumeric() || "_./-".contains(c))
}

/// A SageMaker training plan's ARN, as CreateTrainingJob's `TrainingPlanArn`
/// pattern has it (botocore's service model: 50 to 2,048 characters,
/// `arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:training-plan/.*`), its
/// name limited to the characters plans are named with; empty for none.
pub fn valid_training_plan(s: &str) -> bool {
    let parts: Vec<&str> = s.splitn(6, ':').collect();
    s.is_empty()
        || (parts.len() == 6
            && (50..=2048).contains(&s.len())
            && parts[0] == "arn"
            && parts[1].starts_with("aws")
            && all_chars(parts[1], |c| c.is_ascii_lowercase() || c == '-')
            && parts[2] == "sagemaker"
            && all_chars(parts[3], |c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
            })
            && parts[4].len() == 12
            && all_chars(parts[4], |c| c.is_ascii_digit())
            && parts[5].strip_prefix("training-plan/").is_some_and(|n| {
                !n.is_empty() && all_chars(n, |c| c.is_ascii_alphanumeric() || c == '-')
            }))
}

/// `org/name` (or `name`) as on the Hugging Face Hub.
pub fn valid_hf_model(s: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && p.starts_with(|c: char| c.is_ascii_alphanumeric())
            && all_chars(p, |c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    match s.split_once('/') {
        Some((org, name)) => part(org) && part(name),
        None => part(s),
    }
}
