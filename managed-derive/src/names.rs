//! Names and types of fields, as the CRD and references see them.

use proc_macro2::TokenTree;
use syn::{GenericArgument, Ident, PathArguments, Type};

/// `snake_case` -> `camelCase`, as `#[serde(rename_all = "camelCase")]`.
pub fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The stem of a reference's fields: `vpc_id` for `vpc_id` (`vpc_id_ref`),
/// `subnet_id` for the list `subnet_ids` (`subnet_id_refs`).
pub fn reference_stem(field: &str, many: bool) -> String {
    if many {
        field.strip_suffix('s').unwrap_or(field).to_owned()
    } else {
        field.to_owned()
    }
}

/// The type inside `Option<...>`, if `ty` is one.
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(inner) => Some(inner),
        _ => None,
    }
}

/// Whether `ty` is `Option<...>`.
pub fn is_option(ty: &Type) -> bool {
    option_inner(ty).is_some()
}

/// Whether `ty` is `Option<Vec<...>>`: a reference filling it takes many
/// targets.
pub fn is_option_of_vec(ty: &Type) -> bool {
    matches!(
        option_inner(ty),
        Some(Type::Path(p)) if p.path.segments.last().is_some_and(|s| s.ident == "Vec")
    )
}

/// Whether a token (or a group's tokens) is `param`.
pub fn token_mentions(token: &TokenTree, param: &Ident) -> bool {
    match token {
        TokenTree::Ident(ident) => ident == param,
        TokenTree::Group(group) => group
            .stream()
            .into_iter()
            .any(|t| token_mentions(&t, param)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_serde_and_crossplane() {
        assert_eq!(camel("vpc_id"), "vpcId");
        assert_eq!(camel("region"), "region");
        assert_eq!(reference_stem("subnet_ids", true), "subnet_id");
        assert_eq!(reference_stem("vpc_id", false), "vpc_id");
        let ty: Type = syn::parse_quote!(Option<Vec<String>>);
        assert!(is_option(&ty) && is_option_of_vec(&ty));
        let ty: Type = syn::parse_quote!(String);
        assert!(!is_option(&ty));
    }
}
