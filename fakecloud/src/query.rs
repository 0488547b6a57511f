//! Query-string extraction that answers bad input the way every other bad
//! input is answered: `400 InvalidParameterValue` as `application/problem+json`
//! naming the parameter, instead of axum's plain-text rejection (which says
//! "invalid digit found in string" without saying where).

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A query string deserialized into `T`, or a problem naming the parameter.
pub struct ProblemQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ProblemQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parse(parts.uri.query().unwrap_or_default()).map(ProblemQuery)
    }
}

fn parse<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let pairs = form_urlencoded::parse(query.as_bytes());
    serde_path_to_error::deserialize(serde_urlencoded::Deserializer::new(pairs)).map_err(|err| {
        let parameter = err.path().to_string();
        if parameter == "." {
            // Not about one present value, e.g. a missing required
            // parameter, whose name the message carries.
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "InvalidParameterValue",
                format!("query: {}", err.inner()),
            )
        } else {
            ApiError::invalid(&parameter, err.inner().to_string())
        }
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Filter {
        after_seq: Option<i64>,
        kind: Option<String>,
    }

    #[derive(Deserialize, Debug)]
    struct Required {
        region: String,
    }

    #[test]
    fn values_and_repeated_pairs_parse() {
        let filter: Filter = parse("afterSeq=7&kind=vpc").unwrap();
        assert_eq!(
            (filter.after_seq, filter.kind.as_deref()),
            (Some(7), Some("vpc"))
        );
        let pairs: Vec<(String, String)> = parse("tag=a%3D1&tag=b").unwrap();
        assert_eq!(
            pairs,
            [("tag".into(), "a=1".into()), ("tag".into(), "b".into())]
        );
        let empty: Filter = parse("").unwrap();
        assert_eq!((empty.after_seq, empty.kind), (None, None));
    }

    #[test]
    fn a_wrong_type_names_the_parameter() {
        let err = parse::<Filter>("afterSeq=lots").unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert_eq!(err.code, "InvalidParameterValue");
        assert_eq!(err.field.as_deref(), Some("afterSeq"));
        assert!(err.detail.starts_with("afterSeq: "), "{}", err.detail);
    }

    #[test]
    fn a_missing_parameter_is_named_in_the_detail() {
        assert_eq!(
            parse::<Required>("region=eu-west-1").unwrap().region,
            "eu-west-1"
        );
        let err = parse::<Required>("").unwrap_err();
        assert_eq!(err.field, None);
        assert!(
            err.detail.contains("missing field `region`"),
            "{}",
            err.detail
        );
    }

    #[test]
    fn an_unknown_parameter_is_named() {
        let err = parse::<Filter>("colour=red").unwrap_err();
        assert_eq!(err.code, "InvalidParameterValue");
        assert_eq!(err.field.as_deref(), Some("colour"));
        assert!(
            err.detail.contains("unknown field `colour`"),
            "{}",
            err.detail
        );
    }
}
