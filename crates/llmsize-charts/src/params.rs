//! Where a model's parameters go: one bar per component (the article's picture of GPT-2's
//! 124M), or, for several models, one bar per model in each component.

use llmsize_core::count::Category;
use llmsize_core::report::ParamsReport;
use llmsize_core::units::{human_count, share, thousands};
use plotters::style::RGBColor;

use crate::draw::{HBar, HBars, HRow, Header, bound};
use crate::units::count_scale;
use crate::{ChartError, MAX_SERIES};

/// The colour of a component, the same in every chart.
pub(crate) fn category_color(c: Category) -> RGBColor {
    match c {
        Category::TokenEmbedding => RGBColor(0x4e, 0x79, 0xa7),
        Category::PositionEmbedding => RGBColor(0xa0, 0xcb, 0xe8),
        Category::TokenTypeEmbedding => RGBColor(0x86, 0xbc, 0xb6),
        Category::EmbeddingProjection => RGBColor(0x49, 0x98, 0x94),
        Category::Attention => RGBColor(0xf2, 0x8e, 0x2b),
        Category::Ffn => RGBColor(0x59, 0xa1, 0x4f),
        Category::MoeRouter => RGBColor(0xb6, 0x99, 0x2d),
        Category::MoeExperts => RGBColor(0x8c, 0xd1, 0x7d),
        Category::MoeSharedExperts => RGBColor(0x3b, 0x7a, 0x35),
        Category::Norm => RGBColor(0x79, 0x70, 0x6e),
        Category::LmHead => RGBColor(0xb0, 0x7a, 0xa1),
        Category::LmHeadTransform => RGBColor(0xd4, 0xa6, 0xc8),
        Category::Pooler => RGBColor(0x9c, 0x75, 0x5f),
        Category::Ssm => RGBColor(0x76, 0xb7, 0xb2),
        Category::Vision => RGBColor(0xe1, 0x57, 0x59),
        Category::Audio => RGBColor(0xff, 0x9d, 0x9a),
        _ => RGBColor(0xd3, 0x72, 0x95),
    }
}

/// Parameters by component as SVG: one model's components with their exact counts and shares,
/// or several models side by side (one bar per model in each component, as `params A B`).
///
/// # Errors
/// [`ChartError::Empty`] without a report, [`ChartError::TooMany`] past [`MAX_SERIES`] models.
pub fn params_svg(reports: &[ParamsReport]) -> Result<String, ChartError> {
    bound("models", reports.len(), MAX_SERIES)?;
    match reports {
        [] => Err(ChartError::Empty("no model".to_owned())),
        [one] => one_model(one).svg(),
        many => comparison(many).svg(),
    }
}

fn estimate_mark(r: &ParamsReport) -> &'static str {
    if r.estimate.is_some() {
        "ESTIMATE — "
    } else {
        ""
    }
}

fn one_model(r: &ParamsReport) -> HBars {
    let c = &r.count;
    let tied = r.tied_embeddings == Some(true);
    let mut rows: Vec<HRow> = c
        .components
        .iter()
        .filter(|x| x.count > 0)
        .map(|x| HRow {
            label: x.category.as_str().to_owned(),
            color: category_color(x.category),
            bars: vec![HBar {
                series: 0,
                value: u128::from(x.count),
                note: share(x.count, c.total),
            }],
        })
        .collect();
    if tied && c.get(Category::LmHead) == 0 {
        rows.push(HRow {
            label: "lm_head".to_owned(),
            color: category_color(Category::LmHead),
            bars: vec![HBar {
                series: 0,
                value: 0,
                note: "tied to token_embedding".to_owned(),
            }],
        });
    }
    let mut lines = vec![format!(
        "{} parameters in total ({}), {} non-embedding · {}, {}",
        thousands(c.total),
        human_count(c.total),
        thousands(c.non_embedding()),
        r.model_type,
        r.architecture
    )];
    if let Some(a) = &c.active {
        lines.push(format!(
            "active per token: {} ({}), the routed experts a token uses",
            thousands(a.per_token),
            human_count(a.per_token)
        ));
    }
    let mut notes = Vec::new();
    if let Some(why) = &r.estimate {
        notes.push(format!("ESTIMATE: {why}"));
    }
    if tied {
        notes.push(
            "the output head is tied: it reuses the token_embedding matrix, counted once"
                .to_owned(),
        );
    }
    HBars {
        header: Header {
            title: format!(
                "{}{}: where the {} parameters go",
                estimate_mark(r),
                r.name,
                human_count(c.total)
            ),
            lines,
        },
        axis: "parameters".to_owned(),
        scale: count_scale(u128::from(
            c.components.iter().map(|x| x.count).max().unwrap_or(0),
        )),
        series: vec![r.name.clone()],
        rows,
        notes,
    }
}

fn comparison(reports: &[ParamsReport]) -> HBars {
    let rows: Vec<HRow> = Category::ALL
        .into_iter()
        .filter(|cat| reports.iter().any(|r| r.count.get(*cat) > 0))
        .map(|cat| HRow {
            label: cat.as_str().to_owned(),
            color: category_color(cat),
            bars: reports
                .iter()
                .enumerate()
                .map(|(i, r)| HBar {
                    series: i,
                    value: u128::from(r.count.get(cat)),
                    note: r.name.clone(),
                })
                .collect(),
        })
        .collect();
    let lines = reports
        .iter()
        .map(|r| {
            format!(
                "{}{}: {} parameters ({})",
                estimate_mark(r),
                r.name,
                thousands(r.count.total),
                human_count(r.count.total)
            )
        })
        .collect();
    let max = reports
        .iter()
        .flat_map(|r| r.count.components.iter().map(|x| x.count))
        .max()
        .unwrap_or(0);
    HBars {
        header: Header {
            title: format!(
                "Where the parameters go: {}",
                reports
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" vs ")
            ),
            lines,
        },
        axis: "parameters".to_owned(),
        scale: count_scale(u128::from(max)),
        series: reports.iter().map(|r| r.name.clone()).collect(),
        rows,
        notes: Vec::new(),
    }
}
