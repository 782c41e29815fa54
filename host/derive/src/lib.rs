//! `#[derive(ErrorCode)]` for the error enums of Courier (see `courier_domain::error`).
//!
//! Every variant carries one `#[code(..)]` attribute:
//! - `#[code(PATH)]`: the variant answers with the `Code` constant at `PATH`;
//! - `#[code(via)]`: the variant's one field is itself an `ErrorCode` and answers for it;
//! - `#[code(fault)]`: the service's own fault; its one field (or the variant itself) is the
//!   error the log records, and the caller learns nothing of it.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{Data, DeriveInput, Fields, Path, parse_macro_input, spanned::Spanned};

#[proc_macro_derive(ErrorCode, attributes(code))]
pub fn derive_error_code(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

enum Rule {
    Code(Path),
    Via,
    Fault,
}

fn rule_of(variant: &syn::Variant) -> syn::Result<Rule> {
    let mut rules = variant.attrs.iter().filter(|a| a.path().is_ident("code"));
    let Some(attribute) = rules.next() else {
        return Err(syn::Error::new(
            variant.span(),
            "every variant needs #[code(CONSTANT)], #[code(via)] or #[code(fault)]",
        ));
    };
    if let Some(second) = rules.next() {
        return Err(syn::Error::new(second.span(), "one #[code] per variant"));
    }
    let path: Path = attribute.parse_args()?;
    Ok(if path.is_ident("via") {
        Rule::Via
    } else if path.is_ident("fault") {
        Rule::Fault
    } else {
        Rule::Code(path)
    })
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.span(),
            "ErrorCode is derived for enums",
        ));
    };
    let name = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let mut answers = Vec::new();
    let mut listings = Vec::new();
    for variant in &data.variants {
        let ident = &variant.ident;
        let only_field = || match &variant.fields {
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => Ok(quote!(Self::#ident(inner))),
            Fields::Named(fields) if fields.named.len() == 1 => {
                let field = fields.named[0].ident.as_ref().expect("named");
                Ok(quote!(Self::#ident { #field: inner }))
            }
            _ => Err(syn::Error::new(
                variant.span(),
                "#[code(via)] needs a variant of one field",
            )),
        };
        match rule_of(variant)? {
            Rule::Code(path) => {
                answers.push(quote! {
                    Self::#ident { .. } => ::courier_domain::error::Answer::Refused(&#path),
                });
                listings.push(quote! { codes.push(&#path); });
            }
            Rule::Via => {
                let pattern = only_field()?;
                let field_type = match &variant.fields {
                    Fields::Unnamed(fields) => &fields.unnamed[0].ty,
                    Fields::Named(fields) => &fields.named[0].ty,
                    Fields::Unit => unreachable!("only_field refused it"),
                };
                answers.push(quote! {
                    #pattern => ::courier_domain::error::ErrorCode::answer(inner),
                });
                listings.push(quote! {
                    <#field_type as ::courier_domain::error::ErrorCode>::codes(codes);
                });
            }
            Rule::Fault => match only_field() {
                Ok(pattern) => answers.push(quote! {
                    #pattern => ::courier_domain::error::Answer::Fault(inner),
                }),
                Err(_) => answers.push(quote! {
                    Self::#ident { .. } => ::courier_domain::error::Answer::Fault(self),
                }),
            },
        }
    }
    Ok(quote! {
        impl #impl_generics ::courier_domain::error::ErrorCode for #name #type_generics #where_clause {
            fn answer(&self) -> ::courier_domain::error::Answer<'_> {
                match self {
                    #(#answers)*
                }
            }

            fn codes(codes: &mut ::std::vec::Vec<&'static ::courier_domain::error::Code>) {
                #(#listings)*
            }
        }
    })
}
