//! Reading a field's doc comment and schema attributes, to carry them into
//! the init and observation forms.

use syn::{Attribute, Expr, Lit, Meta};

/// The field's doc comment as one line of text (`///` lines joined by
/// spaces, as the schema's description has them).
pub fn text(attrs: &[Attribute]) -> String {
    attrs
        .iter()
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(s) => Some(s.value().trim().to_owned()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first sentence of `text`: up to a period that ends the text or is
/// followed by a space and a capital letter (so `e.g. \`x\`` and `10.0.0.0`
/// do not end it).
pub fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b != b'.' {
            continue;
        }
        match (bytes.get(i + 1), bytes.get(i + 2)) {
            (None, _) => return text,
            (Some(b' '), Some(next)) if next.is_ascii_uppercase() => return &text[..=i],
            _ => {}
        }
    }
    text
}

/// Whether a `#[schemars(...)]` attribute holds a transform other than
/// list semantics: an update rule of forProvider's, such as `immutable`.
pub fn is_update_rule(attr: &Attribute) -> bool {
    tokens(attr).contains("transform") && !is_list_semantics(attr)
}

/// Whether a `#[schemars(...)]` attribute declares list semantics
/// (`transform = list_set`, `list_map(...)`, `list_atomic`).
pub fn is_list_semantics(attr: &Attribute) -> bool {
    let tokens = tokens(attr);
    tokens.contains("transform") && tokens.contains("list_")
}

/// An attribute's tokens as text, for the searches above.
fn tokens(attr: &Attribute) -> String {
    quote::ToTokens::to_token_stream(&attr.meta).to_string()
}

#[cfg(test)]
mod tests {
    use super::first_sentence;

    #[test]
    fn the_first_sentence_ends_at_a_period_before_a_capital() {
        assert_eq!(
            first_sentence("IPv4 range, e.g. `10.0.0.0/16`. Needed to create."),
            "IPv4 range, e.g. `10.0.0.0/16`."
        );
        assert_eq!(first_sentence("Tags of the VPC."), "Tags of the VPC.");
        assert_eq!(first_sentence("No period"), "No period");
        assert_eq!(
            first_sentence("Version 1.2 of it. More."),
            "Version 1.2 of it."
        );
    }
}
