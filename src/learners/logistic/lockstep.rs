//! Fits that share their passes over one design's rows.
//!
//! Objective perturbation's λ grid fits one trial's rows several times, each with its own
//! noise, and at appendix B's sizes every fit is bound by reading the rows (two passes per
//! L-BFGS iteration over up to 12.6 GB). The runner runs such sibling cells side by side, one
//! thread each, as the members of a [`Lockstep`]; a member's passes wait until every member
//! still fitting has asked for one, and then one member computes them all in one read of the
//! rows ([`Design::margins_each`], [`Design::weighted_sum_each`]). Each result is bit for bit
//! the member's own pass, so a fit's iterates, and its cell's record, do not depend on whether
//! it ran alone or in a group, nor on which member computed a pass.
//!
//! The members' models then predict together: a model's margins on its test and training
//! rows are a deferred request ([`predictions`]), computed once no member is fitting, so a
//! group's models read their rows once (at appendix B's 2^20 rows of D = 1500, 12.6 GB a
//! read). A member waiting for its predictions counts as waiting, so it holds up no round.
//!
//! Noise-free fits take part too (a trial's LR lambda siblings), but they are memoised: a
//! member may wait for a fit another thread computes, perhaps in another group whose own
//! members wait likewise. While it waits it stands [`aside`], not counted by its group, and
//! the thread that computes the fit does so [`within`] its own group, so no round ever waits
//! for a member that waits for a round.
//!
//! A round also takes the fits' requests on rows that nest with the computing member's
//! ([`Design::nests_in`]): a grown split's subsets of one trial are prefixes of one shuffled
//! order, each with its own column map and row scales, so the runner fits a trial's large
//! subsets of every N as one group (appendix B's 2^17-2^19 rows at D = 1000, 2^16-2^19 at
//! D = 1500), and each round reads the longest subset's source rows once for all of them
//! ([`margins_nested`], [`weighted_sum_nested`]: every sum still its own design's).
//!
//! A group [`Lockstep::on_pool`] splits each round across the pool's threads (margins by rows,
//! X^T c by output columns, [`Design::splits_combined`]), every entry still its own pass's:
//! the runner's group of the cells that fit one design in every trial (appendix B's whole
//! 2^20-row training set, forty fits of ten trials) runs alone, with the pool's threads idle.

use super::design::{Design, Pass, Share, margins_nested, weighted_sum_nested};
use crate::memo::Key;
use std::cell::RefCell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A group of fits run side by side; see the module doc.
pub struct Lockstep {
    state: Mutex<State>,
    turn: Condvar,
    /// Threads a round's passes split across, if any.
    pool: Option<Arc<rayon::ThreadPool>>,
}

#[derive(Default)]
struct State {
    /// Members not yet gone.
    active: usize,
    next_id: u64,
    /// This round's requests, one per waiting member.
    pending: Vec<Request>,
    /// Computed passes not yet collected, by request id.
    served: Vec<(u64, Vec<f64>)>,
    /// Requests computed in a round with others (what the group saved, for tests).
    shared: u64,
    /// The most predictions computed in one round (for tests).
    predicted_together: usize,
    /// The most fits' passes computed in one round (for tests).
    widest: usize,
}

struct Request {
    id: u64,
    /// The rows' key: a round combines the requests on the computing member's rows, and
    /// those on rows nested with them.
    key: Key,
    /// The member's design, which the round's computing member reads: the member waits in
    /// [`Lockstep::request`], holding it, until its request is served.
    design: DesignPtr,
    pass: Pass,
    /// A fitted model's predictions ([`predictions`]): computed only once no member is fitting.
    deferred: bool,
    input: Vec<f64>,
    out: Vec<f64>,
}

/// A waiting member's design, erased of its lifetime: dereferenced only while the request that
/// carries it is pending or being computed, when the member that lent it is blocked in
/// [`Lockstep::request`].
#[derive(Clone, Copy)]
struct DesignPtr(*const ());

// SAFETY: the pointer is only read (through `&Design`, which is `Sync`) by the member that
// computes a round, while the lending member is blocked waiting for its result.
unsafe impl Send for DesignPtr {}

impl DesignPtr {
    fn new(design: &Design) -> Self {
        DesignPtr((design as *const Design).cast())
    }

    /// SAFETY: only while the request carrying it is pending or in the round being computed.
    unsafe fn get<'d>(&self) -> &'d Design<'d> {
        // SAFETY: per the caller, the design the member lent is alive and unchanged.
        unsafe { &*self.0.cast::<Design<'d>>() }
    }
}

/// This thread's group while it runs a [`Lockstep::member`], and whether the group counts it
/// now (not while it stands [`aside`]). One slot with an explicit flag: the thread's state is
/// what it holds, never which of two thread-local keys holds it (a `thread_local!` key is a
/// `const`, so two references to one key need not compare equal).
///
/// Lifetime: the slot is filled by [`Lockstep::member`] and restored to what it held before
/// when that call returns or unwinds (its `Leave` guard), so it holds nothing across cells,
/// trials or datasets; it is per-thread only because a member's fit calls back into the group
/// from deep inside the solver's passes.
struct Membership {
    group: Arc<Lockstep>,
    counted: bool,
}

thread_local! {
    static MEMBERSHIP: RefCell<Option<Membership>> = const { RefCell::new(None) };
}

/// Makes this thread's group (if any) count it or not, returning whether it did, so the
/// caller can restore that. The group hears of a change only.
fn set_counted(counted: bool) -> Option<bool> {
    MEMBERSHIP.with(|m| {
        let mut m = m.borrow_mut();
        let m = m.as_mut()?;
        let was = std::mem::replace(&mut m.counted, counted);
        match (was, counted) {
            (true, false) => m.group.leave(),
            (false, true) => m.group.rejoin(),
            _ => {}
        }
        Some(was)
    })
}

/// Runs `f` with this thread counted by its group or not, as `counted` says; then as it was,
/// also when `f` unwinds.
fn counted_while<R>(counted: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<bool>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(was) = self.0 {
                set_counted(was);
            }
        }
    }
    let _restore = Restore(set_counted(counted));
    f()
}

/// Runs `f` with this thread out of its group, if it is in one: for a wait on shared work
/// (the memo) that another thread may be computing in a group of its own, which must not
/// wait for this member's passes meanwhile. Work `f` computes itself goes back in through
/// [`within`]. The member is counted again once `f` returns (or unwinds).
pub fn aside<R>(f: impl FnOnce() -> R) -> R {
    counted_while(false, f)
}

/// Runs `f`, work this thread computes while [`aside`] (a memoised fit), back in the group it
/// stood aside from, so its passes share the group's rounds; then stands aside again.
pub fn within<R>(f: impl FnOnce() -> R) -> R {
    counted_while(true, f)
}

impl Lockstep {
    /// A group of `members` fits.
    pub fn new(members: usize) -> Arc<Self> {
        Self::with(members, None)
    }

    /// A group of `members` fits whose rounds split across `pool`'s threads (which nothing
    /// else uses while the group runs).
    pub fn on_pool(members: usize, pool: Arc<rayon::ThreadPool>) -> Arc<Self> {
        Self::with(members, Some(pool))
    }

    fn with(members: usize, pool: Option<Arc<rayon::ThreadPool>>) -> Arc<Self> {
        Arc::new(Lockstep {
            state: Mutex::new(State {
                active: members,
                ..State::default()
            }),
            turn: Condvar::new(),
            pool,
        })
    }

    /// Runs `f` on this thread as one member: its objective-perturbation passes go through
    /// the group until `f` returns (or unwinds), when the member leaves.
    /// A thread already in a group (a worker that took up another cell while it waits) is
    /// back in its own once `f` is done.
    pub fn member<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        struct Leave(Option<Membership>);
        impl Drop for Leave {
            fn drop(&mut self) {
                let mine =
                    MEMBERSHIP.with(|m| std::mem::replace(&mut *m.borrow_mut(), self.0.take()));
                if let Some(Membership {
                    group,
                    counted: true,
                }) = mine
                {
                    group.leave();
                }
            }
        }
        let mine = Membership {
            group: Arc::clone(self),
            counted: true,
        };
        let _leave = Leave(MEMBERSHIP.with(|m| m.borrow_mut().replace(mine)));
        f()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A member that panicked left the state consistent (it only ever pushes whole
        // requests and results), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn leave(&self) {
        let mut s = self.lock();
        // Checked in release builds too: a count gone below zero would let rounds start
        // without their members.
        s.active = s
            .active
            .checked_sub(1)
            .expect("a member leaves its group once");
        drop(s);
        // The members still waiting may now all be waiting: one of them computes.
        self.turn.notify_all();
    }

    /// A member that left for a while ([`aside`]) is counted again: rounds wait for it.
    fn rejoin(&self) {
        self.lock().active += 1;
    }

    /// z = X theta through the group ([`Self::request`]), deferred for predictions.
    fn margins(&self, design: &Design, key: Key, deferred: bool, theta: &[f64], z: &mut Vec<f64>) {
        let out = std::mem::take(z);
        *z = self.request(design, key, Pass::Margins, deferred, theta.to_vec(), out);
    }

    /// The member's pass (into `out`, returned), computed once every member still in the
    /// group is waiting for one: by a waiting member, together with the other requests on its
    /// rows and on rows nested with them ([`outermost`]). (Members on other rows, which a
    /// per-cell selection could give, are served in later rounds, by one of their own.)
    fn request(
        &self,
        design: &Design,
        key: Key,
        pass: Pass,
        deferred: bool,
        input: Vec<f64>,
        out: Vec<f64>,
    ) -> Vec<f64> {
        let mut s = self.lock();
        let id = s.next_id;
        s.next_id += 1;
        s.pending.push(Request {
            id,
            key,
            design: DesignPtr::new(design),
            pass,
            deferred,
            input,
            out,
        });
        let mut arrived = true;
        loop {
            if let Some(at) = s.served.iter().position(|(i, _)| *i == id) {
                return s.served.swap_remove(at).1;
            }
            if s.pending.len() == s.active {
                if deferred && s.pending.iter().any(|r| !r.deferred) {
                    // Predictions wait for the fits: a fitting member computes this round.
                    // The member whose arrival completed it wakes them.
                    if arrived {
                        self.turn.notify_all();
                    }
                } else {
                    // Every member is waiting: this one computes its rows' requests, and the
                    // fits' requests on rows that nest with them, holding the lock (nobody
                    // else needs it until the round is served).
                    let outer = match deferred {
                        true => None,
                        false => outermost(design, key, &s.pending),
                    };
                    let (round, rest) =
                        std::mem::take(&mut s.pending)
                            .into_iter()
                            .partition(|r: &Request| {
                                r.deferred == deferred
                                    && (r.key == key
                                        || outer.is_some_and(|o| {
                                            // SAFETY: both are pending (`o` the requests' or
                                            // this member's), so their members wait.
                                            unsafe { r.design.get().nests_in(o.get()) }
                                        }))
                            });
                    s.pending = rest;
                    if round.len() > 1 {
                        s.shared += round.len() as u64;
                    }
                    if !deferred {
                        s.widest = s.widest.max(round.len());
                    }
                    if deferred {
                        s.predicted_together = s.predicted_together.max(round.len());
                    }
                    for (id, out) in compute(round, self.pool.as_deref()) {
                        s.served.push((id, out));
                    }
                    self.turn.notify_all();
                    continue;
                }
            }
            arrived = false;
            s = self.turn.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The longest design among `design` (under `key`) and the fits' `pending` requests on other
/// rows that nest with its own ([`Design::nests_in`], either way), if any does: a round reads
/// its rows for every request whose rows nest in it (appendix B's subsets of one trial, each
/// a prefix of the next in the trial's order). Requests under `key` are served either way.
fn outermost(design: &Design, key: Key, pending: &[Request]) -> Option<DesignPtr> {
    let (mut outer, mut rows, mut nested) = (DesignPtr::new(design), design.n_rows(), false);
    for r in pending.iter().filter(|r| !r.deferred && r.key != key) {
        // SAFETY: `r` is pending, so its member waits in `request`.
        let other = unsafe { r.design.get() };
        if other.n_rows() > rows && design.nests_in(other) {
            (outer, rows, nested) = (r.design, other.n_rows(), true);
        } else {
            nested |= other.nests_in(design);
        }
    }
    nested.then_some(outer)
}

/// One round's passes: the margins together, then the column sums together; over one design,
/// split across `pool`'s threads if given, or over nested designs in one pass over the longest.
fn compute(round: Vec<Request>, pool: Option<&rayon::ThreadPool>) -> Vec<(u64, Vec<f64>)> {
    let (margins, sums): (Vec<Request>, Vec<Request>) = round
        .into_iter()
        .partition(|r| matches!(r.pass, Pass::Margins));
    let mut done = Vec::new();
    for (pass, mut group) in [(Pass::Margins, margins), (Pass::WeightedSum, sums)] {
        // By design (equal keys, equal designs; each sum is its own whatever its neighbours).
        group.sort_by_key(|r| r.key);
        let mut outs: Vec<Vec<f64>> = group
            .iter_mut()
            .map(|r| std::mem::take(&mut r.out))
            .collect();
        let mut shares: Vec<Share> = Vec::new();
        let mut last = None;
        for (r, out) in group.iter().zip(outs.iter_mut()) {
            match shares.last_mut() {
                Some(share) if last == Some(r.key) => {
                    share.inputs.push(&r.input);
                    share.outs.push(out);
                }
                _ => shares.push(Share {
                    // SAFETY: `r` is in the round being computed, so its member waits.
                    design: unsafe { r.design.get() },
                    inputs: vec![&r.input],
                    outs: vec![out],
                }),
            }
            last = Some(r.key);
        }
        let nested = shares.len() > 1
            && match pass {
                Pass::Margins => margins_nested(&mut shares),
                Pass::WeightedSum => weighted_sum_nested(&mut shares),
            };
        if !nested {
            for Share {
                design,
                inputs,
                mut outs,
            } in shares
            {
                each_pass(design, pass, &inputs, &mut outs, pool);
            }
        }
        done.extend(group.iter().map(|r| r.id).zip(outs));
    }
    done
}

/// The pool to split a combined pass across, when it has several threads and the design's
/// passes split.
fn parts_pool<'p>(
    design: &Design,
    pool: Option<&'p rayon::ThreadPool>,
) -> Option<&'p rayon::ThreadPool> {
    pool.filter(|p| p.current_num_threads() > 1 && design.splits_combined())
}

/// `0 = b_0 <= b_1 <= ... <= b_parts = n`, each inner bound a multiple of `align` (parts may
/// be empty when n is small).
fn bounds(n: usize, parts: usize, align: usize) -> Vec<usize> {
    let mut b: Vec<usize> = (0..parts)
        .map(|p| (n * p / parts) / align * align)
        .collect();
    b.push(n);
    b
}

/// Runs `f(part, pieces)` on `pool`'s threads for each part `b_p..b_(p+1)` of `bounds`, with
/// `pieces` the same range of every output (outputs relative to their start).
fn in_parts(
    pool: &rayon::ThreadPool,
    bounds: &[usize],
    outs: &mut [&mut [f64]],
    f: impl Fn(std::ops::Range<usize>, &mut [&mut [f64]]) + Sync,
) {
    let mut parts: Vec<Vec<&mut [f64]>> = (1..bounds.len()).map(|_| Vec::new()).collect();
    for out in outs.iter_mut() {
        let mut rest: &mut [f64] = &mut out[..bounds[bounds.len() - 1]];
        for (part, w) in parts.iter_mut().zip(bounds.windows(2)) {
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
            part.push(piece);
            rest = tail;
        }
    }
    let f = &f;
    pool.scope(|s| {
        for (mut part, w) in parts.into_iter().zip(bounds.windows(2)) {
            s.spawn(move |_| f(w[0]..w[1], &mut part));
        }
    });
}

/// [`Design::margins_each`] by rows, or [`Design::weighted_sum_each`] by output columns,
/// across `pool`'s threads when the design splits and the vectors fit the whole pass.
fn each_pass(
    design: &Design,
    pass: Pass,
    ins: &[&[f64]],
    outs: &mut [&mut [f64]],
    pool: Option<&rayon::ThreadPool>,
) {
    // The length the parts cut and the multiple each cut is at: rows in the kernels' groups,
    // or output columns in sixteens (the AVX-512 kernel's block).
    let split = match pass {
        Pass::Margins => {
            let n = design.n_rows();
            outs.iter()
                .all(|z| z.len() >= n)
                .then_some((n, super::mapped::GROUP))
        }
        Pass::WeightedSum => {
            let (d, n) = (design.dim(), ins.first().map_or(0, |c| c.len()));
            let fits = n <= design.n_rows()
                && ins.iter().all(|c| c.len() == n)
                && outs.iter().all(|o| o.len() == d);
            fits.then_some((d, 16))
        }
    };
    match (parts_pool(design, pool), split) {
        (Some(pool), Some((len, align))) => {
            let b = bounds(len, pool.current_num_threads(), align);
            in_parts(pool, &b, outs, |range, part| {
                design.each_part(pass, range, ins, part)
            });
        }
        _ if pass == Pass::Margins => design.margins_each(ins, outs),
        _ => design.weighted_sum_each(ins, outs),
    }
}

/// The group this thread's fits belong to, if any.
fn current() -> Option<Arc<Lockstep>> {
    MEMBERSHIP.with(|m| {
        m.borrow()
            .as_ref()
            .filter(|m| m.counted)
            .map(|m| Arc::clone(&m.group))
    })
}

/// z = X theta, with the group's other members' passes when this thread is in one (and the
/// design has a key: rows without one cannot be told apart from other rows).
pub fn margins(design: &Design, theta: &[f64], z: &mut Vec<f64>) {
    match (current(), design.key()) {
        (Some(group), Some(&key)) => group.margins(design, key, false, theta, z),
        _ => design.margins(theta, z),
    }
}

/// A fitted model's margins z = X theta for its predictions: when this thread is in a group,
/// computed with the other members' predictions on the same rows (`key` names them) once no
/// member is fitting any more, so a group's members predict in one read of the rows (at
/// appendix B's 2^20 rows of D = 1500, 12.6 GB for each model). Each margin is bit for bit
/// [`Design::margins`]'s.
pub fn predictions(design: &Design, key: impl FnOnce() -> Key, theta: &[f64], z: &mut Vec<f64>) {
    match current() {
        Some(group) => group.margins(design, key(), true, theta, z),
        None => design.margins(theta, z),
    }
}

/// out = X^T c, with the group's other members' passes when this thread is in one.
pub fn weighted_sum(design: &Design, c: &[f64], out: &mut [f64]) {
    match (current(), design.key()) {
        (Some(group), Some(&key)) => {
            let done = group.request(
                design,
                key,
                Pass::WeightedSum,
                false,
                c.to_vec(),
                out.to_vec(),
            );
            out.copy_from_slice(&done);
        }
        _ => design.weighted_sum(c, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::logistic::mechanisms::objective_perturbation_with_noise;
    use crate::learners::logistic::solver::{Convergence, Solver, SolverSettings};
    use crate::memo::KeyBuilder;
    use crate::rng::{Rng, rng_from};
    use ndarray::{Array2, ArrayView1};
    use rand::Rng as _;

    type Fit = (Vec<f64>, Convergence);

    /// `f` of each of `items` as the members of one group, each on a thread of its own; the
    /// group and the results in `items`' order.
    fn as_members<T: Sync, R: Send>(
        items: &[T],
        f: impl Fn(&T) -> R + Sync,
    ) -> (Arc<Lockstep>, Vec<R>) {
        let group = Lockstep::new(items.len());
        let out = std::thread::scope(|s| {
            let members: Vec<_> = items
                .iter()
                .map(|item| {
                    let (group, f) = (group.clone(), &f);
                    s.spawn(move || group.member(|| f(item)))
                })
                .collect();
            members.into_iter().map(|m| m.join().unwrap()).collect()
        });
        (group, out)
    }

    /// n rows of d values uniform on (-1/spread, 1/spread) from the stream `seed`, labelled +1
    /// where `rule` of the row is positive and -1 elsewhere, and the stream to draw on with.
    fn labelled(
        (n, d): (usize, usize),
        spread: f64,
        seed: &str,
        rule: fn(ArrayView1<f64>) -> f64,
    ) -> (Array2<f64>, Vec<f64>, Rng) {
        let mut rng = rng_from(&[seed]);
        let x = Array2::from_shape_fn((n, d), |_| (rng.r#gen::<f64>() * 2.0 - 1.0) / spread);
        let label = |row| if rule(row) > 0.0 { 1.0 } else { -1.0 };
        let y = x.rows().into_iter().map(label).collect();
        (x, y, rng)
    }

    /// L-BFGS to a tight tolerance, the members' fits.
    fn lbfgs_tight() -> SolverSettings {
        SolverSettings {
            solver: Solver::Lbfgs,
            tol: 1e-10,
            ..SolverSettings::default()
        }
    }

    /// A fit's bits: theta, then the gradient norm, the objective and the iterations.
    fn bits(f: &Fit) -> Vec<u64> {
        let mut v: Vec<u64> = f.0.iter().map(|t| t.to_bits()).collect();
        v.extend([f.1.grad_norm.to_bits(), f.1.objective.to_bits()]);
        v.push(f.1.iterations as u64);
        v
    }

    /// Objective perturbation's fits at four lambdas, each with its own noise, run as the
    /// members of one group (with a fifth member that fits other rows, and a sixth that fits
    /// nothing), give every member's solo theta and convergence bit for bit, whichever member
    /// computes a round and whether its rounds split across threads; fits of different lengths
    /// leave as they finish, and most passes are computed in rounds of several.
    #[test]
    fn members_fit_as_they_would_alone() {
        let (n, d) = (3000, 40);
        let (x, y, mut rng) = labelled((n, d), 7.0, "lockstep", |r| r[0] + r[1]);
        let key = |what: &str| KeyBuilder::new(what).finish();
        let design = Design::dense(x.view()).with_key(key("rows"));
        let other = Design::dense(x.view()).with_key(key("other rows"));
        let settings = lbfgs_tight();
        let fits: Vec<(f64, Vec<f64>)> = [0.01, 1.0, 100.0, 1000.0]
            .into_iter()
            .map(|l| (l, (0..d).map(|_| rng.r#gen::<f64>() * 4.0 - 2.0).collect()))
            .collect();
        let fit = |des: &Design, (l, b): &(f64, Vec<f64>)| {
            objective_perturbation_with_noise(des, &y, *l, b, 0.0, &settings)
        };
        let alone: Vec<Fit> = fits.iter().map(|f| fit(&design, f)).collect();
        let other_alone = fit(&other, &fits[1]);
        // Twice alone, once with each round split across a pool of two threads.
        let pool = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap(),
        );
        for round in 0..3 {
            let group = match round {
                2 => Lockstep::on_pool(fits.len() + 2, Arc::clone(&pool)),
                _ => Lockstep::new(fits.len() + 2),
            };
            let (together, other_together) = std::thread::scope(|s| {
                let members: Vec<_> = fits
                    .iter()
                    .map(|f| {
                        let group = group.clone();
                        let design = &design;
                        s.spawn(move || group.member(|| fit(design, f)))
                    })
                    .collect();
                let (g, other, f1) = (group.clone(), &other, &fits[1]);
                let odd = s.spawn(move || g.member(|| fit(other, f1)));
                let g = group.clone();
                s.spawn(move || g.member(|| ()));
                let together: Vec<Fit> = members.into_iter().map(|m| m.join().unwrap()).collect();
                (together, odd.join().unwrap())
            });
            let passes: usize = alone.iter().map(|f| 2 * f.1.iterations + 1).sum();
            let shared = group.lock().shared as usize;
            assert!(shared * 2 > passes, "{shared} of {passes} passes shared");
            for (a, b) in alone.iter().zip(&together) {
                assert_eq!(bits(a), bits(b));
            }
            assert_eq!(bits(&other_alone), bits(&other_together));
            let its: Vec<usize> = alone.iter().map(|f| f.1.iterations).collect();
            assert!(
                its.iter().any(|&i| i != its[0]),
                "fits of different lengths: {its:?}"
            );
        }
    }

    /// Fits on nested subsets (each a prefix of the next in one shuffled order, each through its
    /// own column map and row scales: appendix B's N of one trial) run as one group: every
    /// member's theta and convergence are its solo ones bit for bit, and most passes are
    /// computed in rounds of several, over different designs.
    #[test]
    fn members_on_nested_subsets_fit_as_they_would_alone() {
        use crate::learners::logistic::design::{nested_designs, random_maps};
        use rand::seq::SliceRandom as _;
        let (rows, d) = (2600, 24);
        let rule = |r: ArrayView1<f64>| r[0] - r[1] + r[2] / 2.0;
        let (x, y, mut rng) = labelled((rows, d), 1.0, "lockstep-nested", rule);
        let mut order: Vec<u32> = (0..rows as u32).collect();
        order.shuffle(&mut rng);
        let lengths = [600usize, 1200, 2400];
        let a = |r: &mut Rng| 0.1 + r.r#gen::<f64>() / 4.0;
        let b = |r: &mut Rng| r.r#gen::<f64>() / 10.0 - 0.05;
        let maps = random_maps(&lengths, d, &mut rng, a, b);
        let scale = |r: &mut Rng| 0.5 + r.r#gen::<f64>() / 2.0;
        let designs: Vec<Design> =
            nested_designs(x.view(), &order, &lengths, &maps, &mut rng, scale)
                .into_iter()
                .zip(lengths)
                .map(|(des, n)| des.with_key(KeyBuilder::new("nested rows").u64(n as u64).finish()))
                .collect();
        let ys: Vec<Vec<f64>> = lengths
            .iter()
            .map(|&n| order[..n].iter().map(|&r| y[r as usize]).collect())
            .collect();
        let settings = lbfgs_tight();
        // Two lambdas on each subset, each fit with its own noise.
        let fits: Vec<(usize, f64, Vec<f64>)> = (0..lengths.len())
            .flat_map(|k| [(k, 0.01), (k, 10.0)])
            .map(|(k, l)| {
                (
                    k,
                    l,
                    (0..d).map(|_| rng.r#gen::<f64>() * 4.0 - 2.0).collect(),
                )
            })
            .collect();
        let fit = |(k, l, b): &(usize, f64, Vec<f64>)| {
            objective_perturbation_with_noise(&designs[*k], &ys[*k], *l, b, 0.0, &settings)
        };
        let alone: Vec<Fit> = fits.iter().map(fit).collect();
        let (group, together) = as_members(&fits, fit);
        for (a, b) in alone.iter().zip(&together) {
            assert_eq!(bits(a), bits(b));
        }
        let passes: usize = alone.iter().map(|f| 2 * f.1.iterations + 1).sum();
        let shared = group.lock().shared as usize;
        assert!(shared * 2 > passes, "{shared} of {passes} passes shared");
        // More shared than the siblings alone could (two per round, on each subset).
        assert!(
            group.lock().widest > 2,
            "widest round {}",
            group.lock().widest
        );
    }

    /// Members that finish their fits at different iterations predict together, once the last
    /// fit is done, each prediction bit for bit its solo one; the fits are unchanged.
    #[test]
    fn members_predict_together_after_the_last_fit() {
        let (n, d) = (2000, 12);
        let (x, y, mut rng) = labelled((n, d), 4.0, "lockstep-predict", |r| r[0] - r[1]);
        let fit_rows = Design::dense(x.view()).with_key(KeyBuilder::new("fit rows").finish());
        // Predictions read the rows in another order (as a model's do: raw rows, no key).
        let order: Vec<usize> = (0..n).rev().collect();
        let raw = Design::dense(x.view()).subset(&order);
        let key = || KeyBuilder::new("predicted rows").finish();
        let settings = lbfgs_tight();
        let noises: Vec<(f64, Vec<f64>)> = [0.01, 1.0, 100.0]
            .into_iter()
            .map(|l| (l, (0..d).map(|_| rng.r#gen::<f64>() * 4.0 - 2.0).collect()))
            .collect();
        let run = |(l, b): &(f64, Vec<f64>)| {
            let fit = objective_perturbation_with_noise(&fit_rows, &y, *l, b, 0.0, &settings);
            let mut z = vec![0.0; n];
            predictions(&raw, key, &fit.0, &mut z);
            (fit, z)
        };
        let alone: Vec<(Fit, Vec<f64>)> = noises.iter().map(run).collect();
        let its: Vec<usize> = alone.iter().map(|a| a.0.1.iterations).collect();
        assert!(
            its.iter().any(|&i| i != its[0]),
            "fits of one length: {its:?}"
        );
        let (group, together) = as_members(&noises, run);
        assert_eq!(group.lock().predicted_together, noises.len());
        let bits = |v: &[f64]| v.iter().map(|t| t.to_bits()).collect::<Vec<u64>>();
        for ((fa, za), (fb, zb)) in alone.iter().zip(&together) {
            assert_eq!(bits(&fa.0), bits(&fb.0));
            assert_eq!(fa.1.iterations, fb.1.iterations);
            assert_eq!(bits(za), bits(zb));
        }
    }

    /// The group counts a member exactly while it is neither aside nor gone: through nested
    /// [`aside`] and [`within`], an unwinding closure, and a member run inside another's
    /// (a worker taking up a second cell). Single-threaded, so every step is checked in a
    /// fixed order; the old two-slot bookkeeping failed it at the first return from `aside`.
    #[test]
    fn a_member_is_counted_exactly_while_it_is_in_its_group() {
        let group = Lockstep::new(2);
        let active = |g: &Arc<Lockstep>| g.lock().active;
        group.member(|| {
            assert_eq!(active(&group), 2);
            assert!(current().is_some());
            aside(|| {
                assert_eq!(active(&group), 1);
                assert!(current().is_none(), "an aside member's passes go alone");
                within(|| {
                    assert_eq!(active(&group), 2);
                    aside(|| assert_eq!(active(&group), 1));
                    within(|| assert_eq!(active(&group), 2));
                    assert_eq!(active(&group), 2);
                });
                assert_eq!(active(&group), 1);
            });
            assert_eq!(active(&group), 2);
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                aside(|| within(|| panic!("a fit fails")))
            }));
            assert!(unwound.is_err());
            assert_eq!(active(&group), 2);
            let other = Lockstep::new(1);
            other.member(|| {
                assert_eq!((active(&group), active(&other)), (2, 1));
                aside(|| assert_eq!((active(&group), active(&other)), (2, 0)));
            });
            assert_eq!(active(&other), 0);
            assert!(Arc::ptr_eq(&current().unwrap(), &group));
        });
        assert_eq!(active(&group), 1);
        assert!(current().is_none());
        // Outside any group both are no-ops.
        aside(|| within(|| assert!(current().is_none())));
    }

    /// Noise-free fits are memoised: two groups whose members fit the same two keys in
    /// opposite orders (each group's second member waiting for a fit the other group
    /// computes) all finish, each member with its solo fit bit for bit.
    #[test]
    fn memoised_fits_in_groups_that_wait_for_each_other_finish_as_alone() {
        use crate::learners::logistic::solver::Objective;
        type Bits = (Vec<u64>, usize);
        let bits =
            |f: &Fit| -> Bits { (f.0.iter().map(|t| t.to_bits()).collect(), f.1.iterations) };
        let lambdas = [0.01, 10.0];
        let (tx, rx) = std::sync::mpsc::channel::<(Vec<Bits>, Vec<(usize, Bits)>)>();
        // On a thread of its own, so that a deadlock fails the test instead of hanging it.
        std::thread::spawn(move || {
            let (n, d) = (2500, 30);
            let (x, y, _) = labelled((n, d), 6.0, "lockstep-memo", |r| r[0] - r[2]);
            let settings = lbfgs_tight();
            let plain = Design::dense(x.view());
            let alone: Vec<Bits> = lambdas
                .iter()
                .map(|&l| bits(&Objective::regularised(&plain, &y, l).minimise(&settings)))
                .collect();
            // Whether the groups wait for each other depends on which member of each key
            // computes it (one time in two): four runs, each on keyed rows of its own (unique
            // to this test), so the fits go through the memo afresh.
            let mut done = Vec::new();
            for run in 0..4 {
                let key = KeyBuilder::new("lockstep memo rows").u64(run).finish();
                let keyed = Design::dense(x.view()).with_key(key);
                let groups = [Lockstep::new(2), Lockstep::new(2)];
                let gate = std::sync::Barrier::new(4);
                done.extend(std::thread::scope(|s| {
                    let mut members = Vec::new();
                    for (g, group) in groups.iter().enumerate() {
                        for m in 0..2 {
                            // Group 0 fits lambda 0 then 1; group 1 the other way round.
                            let k = (g + m) % 2;
                            let (group, keyed, y, gate) = (group.clone(), &keyed, &y, &gate);
                            members.push(s.spawn(move || {
                                gate.wait();
                                let objective = Objective::regularised(keyed, y, lambdas[k]);
                                (k, bits(&group.member(|| objective.minimise(&settings))))
                            }));
                        }
                    }
                    members
                        .into_iter()
                        .map(|m| m.join().unwrap())
                        .collect::<Vec<_>>()
                }));
            }
            tx.send((alone, done)).unwrap();
        });
        let (alone, done) = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("every member finishes: no round waits for a member standing aside");
        assert_eq!(done.len(), 16);
        for (k, fit) in done {
            assert_eq!(fit, alone[k], "lambda {}", lambdas[k]);
        }
    }
}
