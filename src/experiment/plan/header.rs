//! The `[experiment]` section and the `[quick]` scale that overrides parts of the plan.

use super::check::Ctx;
use super::schema::RawPlan;
use super::{Adaptive, Fresh, Order, PlanError};

/// The `[experiment]` settings, checked, at the scale asked for.
pub(super) struct Header {
    pub(super) name: String,
    pub(super) repetitions: u32,
    pub(super) adaptive: Option<Adaptive>,
    pub(super) time_limit_s: f64,
    pub(super) order: Order,
    pub(super) fresh: Fresh,
    pub(super) noise_threshold: f64,
}

/// Read the plan's TOML; under `quick`, the `[quick.factors]` levels replace the full ones.
pub(super) fn read(ctx: &Ctx, quick: bool) -> Result<RawPlan, PlanError> {
    let mut raw: RawPlan = toml::from_str(ctx.text).map_err(|e| match e.span() {
        Some(s) => ctx.err(s, e.message()),
        None => PlanError(format!("{}: {}", ctx.file.display(), e.message())),
    })?;
    if quick {
        if let Some(q) = raw.quick.factors.clone() {
            let f = &mut raw.factors;
            macro_rules! over {
                ($($k:ident),*) => { $( if q.$k.is_some() { f.$k = q.$k; } )* };
            }
            over!(
                target,
                cache,
                device,
                scheduler,
                read_ahead_kb,
                nr_requests,
                rotational,
                network,
                lookaside,
                memory
            );
        }
    }
    Ok(raw)
}

pub(super) fn experiment(ctx: &Ctx, raw: &RawPlan, quick: bool) -> Result<Header, PlanError> {
    let x = &raw.experiment;
    let name = x.name.get_ref().clone();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(ctx.err(
            x.name.span(),
            "experiment name: use letters, digits, '-', '_' and '.'",
        ));
    }
    let (mut repetitions, mut adaptive) = repetitions(ctx, &x.repetitions)?;
    let mut time_limit = x.time_limit.as_ref().map_or(3600.0, |t| *t.get_ref());
    if let Some(t) = &x.time_limit {
        if !t.get_ref().is_finite() || *t.get_ref() <= 0.0 {
            return Err(ctx.err(
                t.span(),
                "time_limit: expected a positive number of seconds",
            ));
        }
    }
    if quick {
        if let Some(r) = &raw.quick.repetitions {
            // The quick scale's count replaces adaptive repetitions.
            repetitions = *r.get_ref();
            adaptive = None;
        }
        if let Some(t) = &raw.quick.time_limit {
            time_limit = *t.get_ref();
        }
    }
    if repetitions == 0 {
        return Err(ctx.err(x.repetitions.span(), "repetitions must be at least 1"));
    }
    let noise_threshold = x.noise_threshold.as_ref().map_or(0.05, |t| *t.get_ref());
    let (order, fresh) = (order(ctx, raw)?, fresh(ctx, raw)?);
    if let Some(t) = &x.noise_threshold {
        if !(0.0..=1.0).contains(t.get_ref()) {
            return Err(ctx.err(t.span(), "noise_threshold: expected a fraction from 0 to 1"));
        }
    }
    Ok(Header {
        name,
        repetitions,
        adaptive,
        time_limit_s: time_limit,
        order,
        fresh,
        noise_threshold,
    })
}

fn order(ctx: &Ctx, raw: &RawPlan) -> Result<Order, PlanError> {
    let x = &raw.experiment;
    Ok(match x.order.as_ref().map(|o| (o.get_ref().as_str(), o.span())) {
        None | Some(("random", _)) => Order::Random,
        Some(("interleaved", _)) => Order::Interleaved,
        Some((o, s)) => {
            return Err(ctx.err(
                s,
                format!("order {o:?}: expected \"random\" or \"interleaved\" (an experiment never runs all of one cell before the next)"),
            ))
        }
    })
}

fn fresh(ctx: &Ctx, raw: &RawPlan) -> Result<Fresh, PlanError> {
    let x = &raw.experiment;
    Ok(
        match x.fresh.as_ref().map(|o| (o.get_ref().as_str(), o.span())) {
            None | Some(("experiment", _)) => Fresh::Experiment,
            Some(("repetition", _)) => Fresh::Repetition,
            Some((o, s)) => {
                return Err(ctx.err(
                    s,
                    format!("fresh {o:?}: expected \"experiment\" or \"repetition\""),
                ))
            }
        },
    )
}

/// `repetitions = N`, or `{ min = N, max = M, ci = F }`: the rounds to run at least (the
/// count), and the adaptive settings.
fn repetitions(
    ctx: &Ctx,
    v: &toml::Spanned<toml::Value>,
) -> Result<(u32, Option<Adaptive>), PlanError> {
    let err = |m: String| ctx.err(v.span(), m);
    let count = |k: &str, x: &toml::Value| match x.as_integer() {
        Some(i) if (1..=1_000_000).contains(&i) => Ok(i as u32),
        _ => Err(err(format!(
            "repetitions{k}: expected a whole number from 1 to 1000000, found {x}"
        ))),
    };
    let t = match v.get_ref() {
        toml::Value::Table(t) => t,
        x @ toml::Value::Integer(_) => return Ok((count("", x)?, None)),
        x => {
            return Err(err(format!(
                "repetitions: expected a count or {{ min = 3, max = 30, ci = 0.05 }}, found {x}"
            )))
        }
    };
    if let Some(k) = t
        .keys()
        .find(|k| !["min", "max", "ci"].contains(&k.as_str()))
    {
        return Err(err(format!(
            "repetitions: unknown key `{k}` (adaptive repetitions take min, max and ci)"
        )));
    }
    let need = |k: &str| {
        t.get(k).ok_or_else(|| {
            err(format!(
                "repetitions: adaptive repetitions need `{k}` ({{ min = 3, max = 30, ci = 0.05 }})"
            ))
        })
    };
    let min = count(".min", need("min")?)?;
    let max = count(".max", need("max")?)?;
    let ci = match need("ci")? {
        toml::Value::Float(f) => *f,
        toml::Value::Integer(i) => *i as f64,
        x => return Err(err(format!("repetitions.ci: expected a number, found {x}"))),
    };
    if !(ci > 0.0 && ci < 1.0) {
        return Err(err(format!(
            "repetitions.ci = {ci}: expected a share of the mean between 0 and 1 (0.05 for ±5%)"
        )));
    }
    if min < 2 {
        return Err(err(format!(
            "repetitions.min = {min}: an interval needs at least 2 repetitions"
        )));
    }
    if min > max {
        return Err(err(format!(
            "repetitions: min = {min} is more than max = {max}"
        )));
    }
    Ok((min, Some(Adaptive { min, max, ci })))
}
