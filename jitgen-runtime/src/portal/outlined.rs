//! A portal's loop outlined from its hook: what the generated code of an
//! outlined merge point goes through.
//!
//! The generated portal runs its merge point's loop (and the rest of its
//! body after it) in a closure called out of line, and calls the hook
//! outside it: a call of the hook in the loop's own function costs
//! the interpreter about 10% of its speed even where it never runs (its
//! arguments and what it gives back make no difference; PERFORMANCE.md).
//! Where the hook is to run, the closure returns the loop's state
//! ([`Flow::Sample`]); the portal calls the hook and enters the closure
//! again. Where the loop's code returns, the closure returns its value
//! ([`Flow::Done`]).
//!
//! A portal returning a `Result` or an `Option` keeps its `?`s: the
//! closure returns the same kind of value around a [`Flow`]
//! ([`Outlined::Step`]), so that a `?` leaves the closure with the
//! portal's own error, and only a `return` is rewritten ([`Outlined::done`]).

/// How an outlined loop left its closure.
#[derive(Debug)]
pub enum Flow<T, S> {
    /// The portal's value (or a `Result`'s success, an `Option`'s value).
    Done(T),
    /// The state of the loop at its merge point, for the hook.
    Sample(S),
}

/// A portal's return type whose outlined loop keeps its `?`s: the closure
/// returns [`Outlined::Step`], the same kind of value around a [`Flow`].
pub trait Outlined<S>: Sized {
    /// What the closure returns.
    type Step;
    /// The portal returns `self`.
    fn done(self) -> Self::Step;
    /// The hook is to run with the state `s`.
    fn sample(s: S) -> Self::Step;
    /// What the closure returned: the portal's value, or the state.
    fn resume(step: Self::Step) -> Flow<Self, S>;
}

impl<T, E, S> Outlined<S> for Result<T, E> {
    type Step = Result<Flow<T, S>, E>;
    #[inline(always)]
    fn done(self) -> Self::Step {
        self.map(Flow::Done)
    }
    #[inline(always)]
    fn sample(s: S) -> Self::Step {
        Ok(Flow::Sample(s))
    }
    #[inline(always)]
    fn resume(step: Self::Step) -> Flow<Self, S> {
        match step {
            Ok(Flow::Done(v)) => Flow::Done(Ok(v)),
            Ok(Flow::Sample(s)) => Flow::Sample(s),
            Err(e) => Flow::Done(Err(e)),
        }
    }
}

impl<T, S> Outlined<S> for Option<T> {
    type Step = Option<Flow<T, S>>;
    #[inline(always)]
    fn done(self) -> Self::Step {
        self.map(Flow::Done)
    }
    #[inline(always)]
    fn sample(s: S) -> Self::Step {
        Some(Flow::Sample(s))
    }
    #[inline(always)]
    fn resume(step: Self::Step) -> Flow<Self, S> {
        match step {
            Some(Flow::Done(v)) => Flow::Done(Some(v)),
            Some(Flow::Sample(s)) => Flow::Sample(s),
            None => Flow::Done(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop as the generated code outlines it: the closure's value is
    /// the portal's `Result` around a `Flow`.
    fn sum_to(n: i64, fail_at: i64) -> Result<i64, String> {
        type R = Result<i64, String>;
        let mut state = (0i64, 0i64);
        loop {
            let body = |(mut i, mut acc): (i64, i64)| -> <R as Outlined<(i64, i64)>>::Step {
                loop {
                    if i % 4 == 3 {
                        return <R as Outlined<_>>::sample((i, acc));
                    }
                    if i == fail_at {
                        Err(format!("at {i}"))?;
                    }
                    if i == n {
                        return <R as Outlined<_>>::done(Ok(acc));
                    }
                    acc += i;
                    i += 1;
                }
            };
            match <R as Outlined<_>>::resume(body(state)) {
                Flow::Done(r) => return r,
                Flow::Sample((i, acc)) => state = (i + 1, acc + i),
            }
        }
    }

    #[test]
    fn a_result_loop_samples_returns_and_keeps_its_question_marks() {
        assert_eq!(sum_to(10, -1), Ok(45));
        assert_eq!(sum_to(10, 6), Err("at 6".into()));
    }

    #[test]
    fn an_option_step_is_none_where_the_portal_returns_none() {
        let s: Option<Flow<i64, ()>> = <Option<i64> as Outlined<()>>::done(None);
        assert!(matches!(<Option<i64> as Outlined<()>>::resume(s), Flow::Done(None)));
        let s = <Option<i64> as Outlined<u8>>::sample(7);
        assert!(matches!(<Option<i64> as Outlined<u8>>::resume(s), Flow::Sample(7)));
    }
}
