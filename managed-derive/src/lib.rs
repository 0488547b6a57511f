//! `#[derive(ManagedResource)]`: a Crossplane managed resource kind declared
//! once, on its parameters struct (`spec.forProvider`).
//!
//! Use it through `crossplane-managed-types`, which re-exports it; its
//! documentation there (`crossplane_managed_types::ManagedResource`) is the
//! reference for every attribute. This crate only holds the macro, since a
//! procedural macro must live in a crate of its own.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, Error, Expr, Field, Fields, GenericParam, Ident, LitStr, Path,
    Result, Type,
};

mod docs;
mod names;

/// Declares a managed resource kind from its parameters struct; see
/// `crossplane_managed_types::ManagedResource` for the attributes.
#[proc_macro_derive(ManagedResource, attributes(managed))]
pub fn derive_managed_resource(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as DeriveInput);
    types_crate()
        .and_then(|types| expand(&input, &types))
        .unwrap_or_else(Error::into_compile_error)
        .into()
}

/// The struct-level `#[managed(...)]` settings.
struct KindAttrs {
    kind: LitStr,
    root: Option<LitStr>,
    singular: Option<LitStr>,
    plural: Option<LitStr>,
    group: LitStr,
    legacy_group: Option<LitStr>,
    version: LitStr,
    doc: Option<LitStr>,
    noun: Option<LitStr>,
    categories: Vec<LitStr>,
    rules: Vec<Expr>,
    observed: Option<Type>,
    connection_details: Option<Expr>,
    external_name: Option<Ident>,
}

/// A field's `reference(...)` settings.
#[derive(Clone)]
struct ReferenceAttrs {
    kind: LitStr,
    plural: LitStr,
    group: Option<LitStr>,
    legacy_group: Option<LitStr>,
    version: Option<LitStr>,
    value: Option<LitStr>,
}

/// A field's `#[managed(...)]` settings.
#[derive(Default)]
struct FieldAttrs {
    identifier: bool,
    not_observed: bool,
    init_doc: Option<LitStr>,
    observed_doc: Option<LitStr>,
    reference: Option<ReferenceAttrs>,
}

/// The derive's output for `input`, naming crossplane-managed-types
/// `types`.
fn expand(input: &DeriveInput, types: &Tokens) -> Result<Tokens> {
    let attrs = kind_attrs(input)?;
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named.named.iter().collect::<Vec<_>>(),
            _ => {
                return Err(Error::new(
                    input.span(),
                    "a parameters struct needs named fields",
                ));
            }
        },
        _ => {
            return Err(Error::new(
                input.span(),
                "ManagedResource derives on a struct only",
            ));
        }
    };
    let scope_param = scope_param(input)?;
    let params = &input.ident;
    let kind_name = attrs.kind.value();
    let root_name = attrs
        .root
        .as_ref()
        .map_or_else(|| kind_name.clone(), LitStr::value);
    let root = Ident::new(&root_name, attrs.kind.span());
    let init = format_ident!("{root_name}InitParameters");
    let observation = format_ident!("{root_name}Observation");
    let status = format_ident!("{root_name}Status");
    let spec = format_ident!("{root_name}Spec");
    let serde_attrs: Vec<&Attribute> = input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("serde"))
        .collect();

    let mut init_fields = Vec::new();
    let mut observed_fields = Vec::new();
    let mut references = Vec::new();
    for field in &fields {
        let field_attrs = field_attrs(field)?;
        let scoped = scope_param.as_ref().is_some_and(|s| mentions(&field.ty, s));
        if let Some(reference) = &field_attrs.reference {
            references.push(Reference::of(field, reference, &fields)?);
        }
        if scoped {
            if field_attrs.identifier || field_attrs.init_doc.is_some() {
                return Err(Error::new(
                    field.span(),
                    "a field of the scope's types is in forProvider only",
                ));
            }
            continue;
        }
        if !field_attrs.identifier {
            init_fields.push(init_field(field, &field_attrs)?);
        } else if field_attrs.init_doc.is_some() {
            return Err(Error::new(
                field.span(),
                "an identifier is not in initProvider: init_doc has nothing to document",
            ));
        }
        if !field_attrs.not_observed {
            observed_fields.push(observed_field(field, &field_attrs)?);
        }
    }
    if let Some(observed) = &attrs.observed {
        observed_fields.push(quote! {
            /// What the cloud reports beyond the parameters.
            #[serde(flatten)]
            pub reported: #observed,
        });
    }

    let derives = quote! {
        #[derive(Clone, Debug, Default, PartialEq, ::serde::Serialize, ::serde::Deserialize,
            ::schemars::JsonSchema)]
    };
    let init_doc = format!(
        " Values used only to create a {kind_name} (`spec.initProvider`); `forProvider` wins where both are set."
    );
    let observation_doc = format!(" The observed state of a {kind_name} (`status.atProvider`).");
    let status_doc = format!(" `status` of a {kind_name}.");
    let forms = quote! {
        #[doc = #init_doc]
        #derives
        #(#serde_attrs)*
        pub struct #init { #(#init_fields)* }

        #[doc = #observation_doc]
        #derives
        #(#serde_attrs)*
        pub struct #observation { #(#observed_fields)* }

        #[doc = #status_doc]
        pub type #status = #types::ManagedStatus<#observation>;
    };

    let scoped = |namespaced: bool| -> Result<Tokens> {
        let (scope, common, group) = if namespaced {
            (
                quote!(#types::Namespaced),
                quote!(#types::NamespacedResourceSpec),
                &attrs.group,
            )
        } else {
            let group = attrs
                .legacy_group
                .as_ref()
                .expect("only with a legacy group");
            (
                quote!(#types::ClusterScoped),
                quote!(#types::ResourceSpec),
                group,
            )
        };
        let for_provider = match &scope_param {
            Some(_) => quote!(#params<#scope>),
            None => quote!(#params),
        };
        let references = references
            .iter()
            .map(|r| r.in_scope(namespaced, &attrs, types));
        let resource = resource(&attrs, &root, &status, group, namespaced);
        let noun = attrs
            .noun
            .as_ref()
            .map_or_else(|| format!("the {kind_name}"), LitStr::value);
        let for_doc = format!("The desired state of {noun}.");
        let init_provider_doc = format!("Values used only when creating {noun}.");
        let connection_details = attrs
            .connection_details
            .as_ref()
            .map_or_else(|| quote!(&[]), |e| quote!(#e));
        let origin = attrs
            .external_name
            .clone()
            .unwrap_or_else(|| Ident::new("AssignedByCloud", Span::call_site()));
        Ok(quote! {
            #resource
            pub struct #spec {
                /// The Crossplane fields: policies, provider config, connection secret.
                #[serde(flatten)]
                pub resource: #common,
                #[doc = #for_doc]
                pub for_provider: #for_provider,
                #[doc = #init_provider_doc]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub init_provider: Option<#init>,
            }

            impl #types::Managed for #root {
                type Scoped = #scope;
                type ForProvider = #for_provider;
                type InitProvider = #init;
                type AtProvider = #observation;

                const CONNECTION_DETAILS: &'static [#types::ConnectionDetail] = #connection_details;
                const REFERENCES: &'static [#types::ReferenceField] = &[#(#references),*];
                const EXTERNAL_NAME_ORIGIN: #types::ExternalNameOrigin =
                    #types::ExternalNameOrigin::#origin;

                fn resource_spec(&self) -> &<#scope as #types::Scope>::Spec {
                    &self.spec.resource
                }
                fn for_provider(&self) -> &Self::ForProvider {
                    &self.spec.for_provider
                }
                fn for_provider_mut(&mut self) -> &mut Self::ForProvider {
                    &mut self.spec.for_provider
                }
                fn init_provider(&self) -> Option<&Self::InitProvider> {
                    self.spec.init_provider.as_ref()
                }
                fn managed_status(&self) -> Option<&#types::ManagedStatus<Self::AtProvider>> {
                    self.status.as_ref()
                }
                fn managed_status_mut(&mut self) -> &mut #types::ManagedStatus<Self::AtProvider> {
                    self.status.get_or_insert_with(#types::ManagedStatus::default)
                }
            }
        })
    };

    let namespaced = scoped(true)?;
    Ok(if attrs.legacy_group.is_some() {
        let legacy = scoped(false)?;
        let module_doc = format!(
            " The namespaced (Crossplane v2) {kind_name}, in `{}`.",
            attrs.group.value()
        );
        quote! {
            #forms
            #legacy
            #[doc = #module_doc]
            pub mod m {
                #[allow(unused_imports)]
                use super::*;
                #namespaced
            }
        }
    } else {
        quote! {
            #forms
            #namespaced
        }
    })
}

/// The `CustomResource` derive and attributes of one scope's spec struct.
fn resource(
    attrs: &KindAttrs,
    root: &Ident,
    status: &Ident,
    group: &LitStr,
    namespaced: bool,
) -> Tokens {
    let KindAttrs { kind, version, .. } = attrs;
    let root_name = root.to_string();
    let status_name = status.to_string();
    let singular = attrs
        .singular
        .clone()
        .unwrap_or_else(|| LitStr::new(&kind.value().to_lowercase(), kind.span()));
    let plural = attrs.plural.iter();
    let doc = attrs
        .doc
        .clone()
        .unwrap_or_else(|| LitStr::new(&format!("A {}.", kind.value()), kind.span()));
    let categories = attrs.categories.iter();
    let scope = namespaced.then(|| quote!(#[kube(namespaced)]));
    let rules = attrs.rules.iter();
    let spec_doc = format!("`spec` of a {}.", kind.value());
    quote! {
        #[doc = #spec_doc]
        #[derive(::kube::CustomResource, ::kube::KubeSchema, Clone, Debug, PartialEq,
            ::serde::Serialize, ::serde::Deserialize)]
        #[kube(
            group = #group,
            version = #version,
            kind = #kind,
            root = #root_name,
            singular = #singular,
            #(plural = #plural,)*
            status = #status_name,
            derive = "PartialEq",
            doc = #doc,
            category = "crossplane",
            category = "managed",
            #(category = #categories,)*
            printcolumn = r#"{"name":"READY","type":"string","jsonPath":".status.conditions[?(@.type=='Ready')].status"}"#,
            printcolumn = r#"{"name":"SYNCED","type":"string","jsonPath":".status.conditions[?(@.type=='Synced')].status"}"#,
            printcolumn = r#"{"name":"DRIFT","type":"integer","jsonPath":".status.drift.count"}"#,
            printcolumn = r#"{"name":"EXTERNAL-NAME","type":"string","jsonPath":".metadata.annotations.crossplane\\.io/external-name"}"#,
            printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
        )]
        #scope
        #(#[x_kube(validation = #rules)])*
        #[serde(rename_all = "camelCase")]
    }
}

/// A checked reference field: its names in the CRD and its target.
struct Reference {
    field: String,
    reference_field: String,
    selector_field: String,
    many: bool,
    target: ReferenceAttrs,
}

impl Reference {
    /// Checks that the struct has the field's `_ref(s)` and `_selector`
    /// siblings, and names all three as the CRD does.
    fn of(field: &Field, target: &ReferenceAttrs, fields: &[&Field]) -> Result<Self> {
        let ident = field.ident.as_ref().expect("named field");
        let many = names::is_option_of_vec(&field.ty);
        let stem = names::reference_stem(&ident.to_string(), many);
        let by_name = format!("{stem}_{}", if many { "refs" } else { "ref" });
        let selector = format!("{stem}_selector");
        for wanted in [&by_name, &selector] {
            if !fields
                .iter()
                .any(|f| f.ident.as_ref().is_some_and(|i| i == wanted))
            {
                return Err(Error::new(
                    field.span(),
                    format!("a reference needs a field `{wanted}` beside `{ident}`"),
                ));
            }
        }
        Ok(Self {
            field: names::camel(&ident.to_string()),
            reference_field: names::camel(&by_name),
            selector_field: names::camel(&selector),
            many,
            target: target.clone(),
        })
    }

    /// Its `ReferenceField` in one scope: the target's groups are that
    /// scope's, the kind's own unless the reference names them.
    fn in_scope(&self, namespaced: bool, kind: &KindAttrs, types: &Tokens) -> Tokens {
        let Self {
            field,
            reference_field,
            selector_field,
            many,
            target,
        } = self;
        let group = if namespaced {
            target.group.as_ref().unwrap_or(&kind.group)
        } else {
            target
                .legacy_group
                .as_ref()
                .or(kind.legacy_group.as_ref())
                .expect("a legacy kind has a legacy group")
        };
        let version = target.version.as_ref().unwrap_or(&kind.version);
        let (target_kind, plural) = (&target.kind, &target.plural);
        let value = target
            .value
            .as_ref()
            .map_or_else(|| "/status/atProvider/id".to_owned(), LitStr::value);
        quote! {
            #types::ReferenceField {
                field: #field,
                reference_field: #reference_field,
                selector_field: #selector_field,
                many: #many,
                target_group: #group,
                target_version: #version,
                target_kind: #target_kind,
                target_plural: #plural,
                target_value_pointer: #value,
            }
        }
    }
}

/// A field of the init form: the parameter's type, its first sentence (or
/// `init_doc`), its serde attributes and its schema attributes but
/// transforms, which carry forProvider's update rules (`immutable`) — save
/// list semantics (`list_*`), which hold in every form.
fn init_field(field: &Field, attrs: &FieldAttrs) -> Result<Tokens> {
    let ident = &field.ident;
    let ty = &field.ty;
    let doc = doc_of(field, attrs.init_doc.as_ref())?;
    let kept = field.attrs.iter().filter(|a| {
        a.path().is_ident("serde") || (a.path().is_ident("schemars") && !docs::is_update_rule(a))
    });
    Ok(quote! {
        #[doc = #doc]
        #(#kept)*
        pub #ident: #ty,
    })
}

/// A field of the observation: optional whatever the parameter's type, its
/// first sentence (or `observed_doc`), and only list semantics of its
/// schema attributes (the cloud's answer is not validated).
fn observed_field(field: &Field, attrs: &FieldAttrs) -> Result<Tokens> {
    let ident = &field.ident;
    let doc = doc_of(field, attrs.observed_doc.as_ref())?;
    let lists = field
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("schemars") && docs::is_list_semantics(a));
    let (ty, serde) = if names::is_option(&field.ty) {
        let serde = field.attrs.iter().filter(|a| a.path().is_ident("serde"));
        let ty = &field.ty;
        (quote!(#ty), quote!(#(#serde)*))
    } else {
        let ty = &field.ty;
        (
            quote!(Option<#ty>),
            quote!(#[serde(default, skip_serializing_if = "Option::is_none")]),
        )
    };
    Ok(quote! {
        #[doc = #doc]
        #serde
        #(#lists)*
        pub #ident: #ty,
    })
}

/// The doc text for a generated form: `explicit`, else the field's first
/// sentence. A field without docs is an error: every CRD field is described.
fn doc_of(field: &Field, explicit: Option<&LitStr>) -> Result<String> {
    if let Some(explicit) = explicit {
        return Ok(format!(" {}", explicit.value()));
    }
    let text = docs::text(&field.attrs);
    if text.is_empty() {
        return Err(Error::new(
            field.span(),
            "document the field (`///`): its docs describe it in the CRD",
        ));
    }
    Ok(format!(" {}", docs::first_sentence(&text)))
}

/// The generic parameter standing for the scope, if the struct has one.
fn scope_param(input: &DeriveInput) -> Result<Option<Ident>> {
    let mut params = input.generics.params.iter();
    let scope = match params.next() {
        None => None,
        Some(GenericParam::Type(t)) => Some(t.ident.clone()),
        Some(other) => {
            return Err(Error::new(
                other.span(),
                "the one generic parameter allowed is the scope (`S: Scope`)",
            ));
        }
    };
    if let Some(extra) = params.next() {
        return Err(Error::new(
            extra.span(),
            "the one generic parameter allowed is the scope (`S: Scope`)",
        ));
    }
    Ok(scope)
}

/// Whether `ty` names `param` anywhere (`S::Reference`, `Option<Vec<S::Selector>>`).
fn mentions(ty: &Type, param: &Ident) -> bool {
    quote!(#ty)
        .into_iter()
        .any(|t| names::token_mentions(&t, param))
}

/// What the user's crate calls crossplane-managed-types.
fn types_crate() -> Result<Tokens> {
    use proc_macro_crate::{FoundCrate, crate_name};
    match crate_name("crossplane-managed-types") {
        // The crate's own doc tests, tests and examples are crates of their
        // own that see it by its name; the library never derives.
        Ok(FoundCrate::Itself) => Ok(quote!(::crossplane_managed_types)),
        Ok(FoundCrate::Name(name)) => {
            let name = Ident::new(&name, Span::call_site());
            Ok(quote!(::#name))
        }
        Err(error) => Err(Error::new(
            Span::call_site(),
            format!("ManagedResource needs crossplane-managed-types as a dependency: {error}"),
        )),
    }
}

/// A setting's name (`kind` in `kind = "VPC"`); empty for a longer path,
/// which no setting is.
fn key_of(path: &Path) -> String {
    path.get_ident().map(Ident::to_string).unwrap_or_default()
}

fn kind_attrs(input: &DeriveInput) -> Result<KindAttrs> {
    let mut kind = None;
    let mut root = None;
    let mut singular = None;
    let mut plural = None;
    let mut group = None;
    let mut legacy_group = None;
    let mut version = None;
    let mut doc = None;
    let mut noun = None;
    let mut categories = Vec::new();
    let mut rules = Vec::new();
    let mut observed = None;
    let mut connection_details = None;
    let mut external_name = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("managed")) {
        attr.parse_nested_meta(|meta| {
            let key = key_of(&meta.path);
            match key.as_str() {
                "kind" => kind = Some(meta.value()?.parse()?),
                "root" => root = Some(meta.value()?.parse()?),
                "singular" => singular = Some(meta.value()?.parse()?),
                "plural" => plural = Some(meta.value()?.parse()?),
                "group" => group = Some(meta.value()?.parse()?),
                "legacy_group" => legacy_group = Some(meta.value()?.parse()?),
                "version" => version = Some(meta.value()?.parse()?),
                "doc" => doc = Some(meta.value()?.parse()?),
                "noun" => noun = Some(meta.value()?.parse()?),
                "category" => categories.push(meta.value()?.parse()?),
                "rule" => rules.push(meta.value()?.parse()?),
                "observed" => observed = Some(meta.value()?.parse()?),
                "connection_details" => connection_details = Some(meta.value()?.parse()?),
                "external_name" => {
                    let path: Path = meta.value()?.parse()?;
                    let ident = path
                        .get_ident()
                        .filter(|i| *i == "AssignedByCloud" || *i == "MetadataName")
                        .cloned()
                        .ok_or_else(|| {
                            meta.error("external_name is AssignedByCloud or MetadataName")
                        })?;
                    external_name = Some(ident);
                }
                _ => return Err(meta.error(format!("unknown kind setting `{key}`"))),
            }
            Ok(())
        })?;
    }
    let required = |value: Option<LitStr>, name: &str| {
        value.ok_or_else(|| {
            Error::new(
                input.ident.span(),
                format!("#[managed({name} = \"...\")] is required"),
            )
        })
    };
    Ok(KindAttrs {
        kind: required(kind, "kind")?,
        root,
        singular,
        plural,
        group: required(group, "group")?,
        legacy_group,
        version: required(version, "version")?,
        doc,
        noun,
        categories,
        rules,
        observed,
        connection_details,
        external_name,
    })
}

fn field_attrs(field: &Field) -> Result<FieldAttrs> {
    let mut attrs = FieldAttrs::default();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("managed")) {
        attr.parse_nested_meta(|meta| {
            let key = key_of(&meta.path);
            match key.as_str() {
                "identifier" => attrs.identifier = true,
                "not_observed" => attrs.not_observed = true,
                "init_doc" => attrs.init_doc = Some(meta.value()?.parse()?),
                "observed_doc" => attrs.observed_doc = Some(meta.value()?.parse()?),
                "reference" => {
                    let (mut kind, mut plural, mut group) = (None, None, None);
                    let (mut legacy_group, mut version, mut value) = (None, None, None);
                    meta.parse_nested_meta(|inner| {
                        let key = key_of(&inner.path);
                        let slot = match key.as_str() {
                            "kind" => &mut kind,
                            "plural" => &mut plural,
                            "group" => &mut group,
                            "legacy_group" => &mut legacy_group,
                            "version" => &mut version,
                            "value" => &mut value,
                            _ => {
                                return Err(
                                    inner.error(format!("unknown reference setting `{key}`"))
                                );
                            }
                        };
                        *slot = Some(inner.value()?.parse::<LitStr>()?);
                        Ok(())
                    })?;
                    let missing =
                        |name| meta.error(format!("a reference names its target's {name}"));
                    attrs.reference = Some(ReferenceAttrs {
                        kind: kind.ok_or_else(|| missing("kind"))?,
                        plural: plural.ok_or_else(|| missing("plural"))?,
                        group,
                        legacy_group,
                        version,
                        value,
                    });
                }
                _ => return Err(meta.error(format!("unknown field setting `{key}`"))),
            }
            Ok(())
        })?;
    }
    Ok(attrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The derive's error for `input`, which must be refused.
    fn refused(input: DeriveInput) -> String {
        match expand(&input, &quote!(::crossplane_managed_types)) {
            Ok(_) => panic!("accepted"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn a_kind_needs_its_kind_group_and_version() {
        let error = refused(syn::parse_quote! {
            #[managed(group = "example.org", version = "v1")]
            struct P { /// Docs.
                a: Option<String> }
        });
        assert!(error.contains("kind"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", version = "v1")]
            struct P { /// Docs.
                a: Option<String> }
        });
        assert!(error.contains("group"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "example.org")]
            struct P { /// Docs.
                a: Option<String> }
        });
        assert!(error.contains("version"), "{error}");
    }

    #[test]
    fn unknown_settings_and_bad_values_are_named() {
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1", colour = "blue")]
            struct P { /// Docs.
                a: Option<String> }
        });
        assert!(error.contains("unknown kind setting `colour`"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1", external_name = Random)]
            struct P { /// Docs.
                a: Option<String> }
        });
        assert!(error.contains("AssignedByCloud or MetadataName"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1")]
            struct P { /// Docs.
                #[managed(hidden)] a: Option<String> }
        });
        assert!(error.contains("unknown field setting `hidden`"), "{error}");
    }

    #[test]
    fn a_reference_needs_its_ref_and_selector_fields_and_a_target() {
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1")]
            struct P<S: Scope> {
                /// The VPC.
                #[managed(reference(kind = "VPC", plural = "vpcs"))]
                vpc_id: Option<String>,
                /// By name.
                vpc_id_ref: Option<S::Reference>,
            }
        });
        assert!(error.contains("`vpc_id_selector`"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1")]
            struct P {
                /// The VPC.
                #[managed(reference(kind = "VPC"))]
                vpc_id: Option<String>,
            }
        });
        assert!(error.contains("plural"), "{error}");
    }

    #[test]
    fn every_field_is_documented_and_scope_fields_stay_in_for_provider() {
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1")]
            struct P { a: Option<String> }
        });
        assert!(error.contains("document the field"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1")]
            struct P<S: Scope> { /// A secret.
                #[managed(identifier)] key: Option<S::SecretKeySelector> }
        });
        assert!(error.contains("forProvider only"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1")]
            struct P<S: Scope, T> { /// Docs.
                a: Option<String>, b: Option<T>, c: Option<S> }
        });
        assert!(error.contains("one generic parameter"), "{error}");
        let error = refused(syn::parse_quote! {
            #[managed(kind = "K", group = "g", version = "v1")]
            enum P { A }
        });
        assert!(error.contains("struct only"), "{error}");
    }

    #[test]
    fn a_good_kind_expands() {
        let input: DeriveInput = syn::parse_quote! {
            #[managed(kind = "K", group = "g", legacy_group = "l", version = "v1")]
            struct P { /// Region. Identifies it.
                #[managed(identifier)] region: String }
        };
        let out = expand(&input, &quote!(::t)).unwrap().to_string();
        for wanted in [
            "struct KInitParameters",
            "struct KObservation",
            "pub mod m",
            "\"l\"",
        ] {
            assert!(out.contains(wanted), "{wanted} in {out}");
        }
    }
}
