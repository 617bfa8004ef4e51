//! Compiled recursion: saved frames spilled onto the continuation stack.
//!
//! A language-level recursion (a path back at a call point with more of
//! the interpreter's saved frames virtual, through a run-time branch, or,
//! for `jit::specialize`, without one once the frames are as many as a
//! virtual list holds, a recursion on constants:
//! `JitState::call_point`, `Lineage::grew_recursion`) would unroll the
//! recursion until the compilation gives up. Instead the merge point
//! *spills* the saved frames: each virtual frame's run-time values go onto
//! the continuation stack ([`crate::run::contstack`]) as words, followed by
//! the number of its [`Template`] (its type, constants, list lengths and the
//! types of the words), and the list becomes [`VPList::Spilled`] with no
//! virtual element. Its key is then that of the function's entry whatever
//! the depth, so the recursive call jumps back to code already compiled:
//! the interpreted function is compiled once, its calls are pushes of a few
//! words, and the frames live on the heap however deep the recursion goes.
//!
//! A pop with no virtual element left resumes before the pop
//! ([`crate::compile::schedule::Compilation::unspill`]): when the
//! continuation stack holds an entry of this call of residual code, a
//! flexswitch on its template number compiles, once per template, the
//! caller's continuation with the frame rebuilt virtual from the words
//! ([`unspill_top`]); the pop then takes it, and what the caller does next
//! (its return address promoted, its operand stack) is known while
//! compiling. When the stack holds none, the list is what it was before any
//! spill, and the pop goes to memory as before (a return below the depth at
//! which compiled code was entered).
//!
//! An interpreter that reads its frames in place (`frames.last()` at every
//! instruction) keeps its newest frame virtual (its current one, read at
//! once), and a spilled list's length counts the stack's entries
//! ([`entries`]): `len()` and `last()` stay exact over spilled frames. The
//! stack counts its entries as they are pushed and popped (see
//! `run::contstack`), in a register of compiled code; where the length only
//! locates the virtual frame (`last()`), it is not read at all.
//!
//! An operand stack the calls share (a `Vec` with a tail,
//! [`VList::Tail`]) is split with the frames: each spilled frame's part of
//! the tail (from its base to the next frame's) goes onto the stack as the
//! last words of its entry ([`Segment`]), and the callee's part stays the
//! tail. The `Vec` is not written: the list's part before the tail is then
//! *hidden* (its length a red of the list), the `Vec` holding only what is
//! below the oldest segment. Popping a frame puts its segment back into the
//! tail; so does a pop of the stack that finds the tail empty (the top
//! entry is popped first, `JitState::pops_hidden`). Whatever needs the
//! `Vec` itself calls [`materialize`], which appends the current call's
//! segments to it and marks their entries as in memory (each template has
//! such a twin). So a recursion's calls write neither the `Vec` nor its
//! length: the caller's values and its frame are one entry, as where each
//! frame owns its stack.
//!
//! Invariant: a spilled frame is named by nothing else in the state (its
//! object is dropped from the state's heap); a frame that is shared is not
//! spilled, and the recursion declines as before.
//! Invariant: a hidden segment belongs to an entry of the current call of
//! residual code, and no entry below one whose segment is in memory, or
//! one that is sealed (`contstack::SEALED`), has a hidden one (entries are
//! pushed on top; `materialize` moves them all, and seals the others it
//! passes).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::compile::redbox::RedBox;
use crate::compile::virtuals::{push_real, VDesc, VHeap, VObject, VPList, VPtr, MAX_VIRTUAL_PTRS};
use crate::compile::vlist::{InPlace, VList};
use crate::ir::builder::{Label, RegisterCell, ResidualBuilder};
use crate::ir::ops::{BinOp, CmpOp, Overflow, ValTy};
use crate::run::contstack;

/// How to rebuild a spilled frame from its words.
#[derive(Clone, Debug)]
pub enum Template {
    /// A virtual object: its constants kept, each run-time value a word.
    Object {
        /// The object as it was spilled (its run-time reds are stale).
        obj: VObject,
        /// For each red of the object (fields, then lists): a constant, or
        /// the index of its word.
        slots: Vec<Result<RedBox, usize>>,
        /// The types of the words.
        words: Vec<ValTy>,
        /// Words expected to be the length in memory of the operand stack
        /// at the pop plus a constant (see `relations`): word index and
        /// constant.
        related: Vec<(usize, i64)>,
        /// Where its part of a shared operand stack is.
        segment: Segment,
        /// Whether nothing of that stack was hidden below the entry when it
        /// was pushed: once it is popped, the stack's `Vec` holds all that
        /// is before its tail again.
        clear_below: bool,
    },
    /// A real object: one word, its address.
    Real,
}

/// A spilled frame's part of an operand stack its calls share: the
/// elements of the list below the callee's frame, pushed as the entry's last
/// words instead of into the `Vec` (which then holds only what is below
/// them: [`crate::compile::vlist::VList::Tail`]'s hidden part).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Segment {
    /// None: the frame's part of the list is where it was.
    None,
    /// The entry's last words are elements of the list, not in its `Vec`.
    Hidden {
        /// How many.
        words: usize,
        /// The template of the same entry once [`materialize`] moved them
        /// into the `Vec`.
        twin: u64,
    },
    /// The entry's last words were moved into the `Vec` (they are stale:
    /// the list's elements are there).
    InMemory {
        /// How many.
        words: usize,
    },
}

impl Template {
    /// The types of its words.
    pub fn word_types(&self) -> Vec<ValTy> {
        match self {
            Template::Object { words, .. } => words.clone(),
            Template::Real => vec![ValTy::Ptr],
        }
    }

    /// How many words it has.
    pub fn word_count(&self) -> usize {
        match self {
            Template::Object { words, .. } => words.len(),
            Template::Real => 1,
        }
    }
}

/// The identity of a template: what its slots hold, by type and constant.
#[derive(Clone, PartialEq, Eq, Hash)]
enum TemplateKey {
    Object {
        desc: usize,
        slots: Vec<Result<(ValTy, u64), ValTy>>,
        lists: Vec<u64>,
        related: Vec<(usize, i64)>,
        segment: (usize, bool),
        clear_below: bool,
    },
    Real,
}

#[derive(Default)]
struct Templates {
    all: Vec<Rc<Template>>,
    ids: HashMap<TemplateKey, u64>,
}

thread_local! {
    static TEMPLATES: RefCell<Templates> = RefCell::new(Templates::default());
}

/// The template numbered `id` in this thread.
pub fn template(id: u64) -> Option<Rc<Template>> {
    TEMPLATES.with(|t| t.borrow().all.get(id as usize).cloned())
}

fn register(key: TemplateKey, make: impl FnOnce() -> Template) -> u64 {
    TEMPLATES.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(id) = t.ids.get(&key) {
            return *id;
        }
        let id = t.all.len() as u64;
        debug_assert!(id >> contstack::TEMPLATE_BITS == 0, "a template number fits in an entry's low bits");
        t.all.push(Rc::new(make()));
        t.ids.insert(key, id);
        id
    })
}

/// The reds of an object, in the order [`set_object_reds`] takes them.
fn object_reds(o: &VObject) -> Vec<RedBox> {
    let mut r = o.fields.clone();
    for l in &o.lists {
        l.reds_into(&mut r);
    }
    r
}

fn set_object_reds(o: &mut VObject, reds: &[RedBox]) {
    let n = o.fields.len();
    o.fields.copy_from_slice(&reds[..n]);
    let mut at = n;
    for l in &mut o.lists {
        l.set_reds(reds, &mut at);
    }
}

/// Pushes the frame `p` (not a virtualizable object) onto the continuation
/// stack, with `segment`, its part of a shared operand stack (see
/// [`Segment`]), as its last words.
fn spill_one(
    b: &mut ResidualBuilder,
    heap: &VHeap,
    p: &VPtr,
    kept: Option<&VObject>,
    segment: &[RedBox],
    clear_below: bool,
) {
    let (id, words) = match heap.resolve(p) {
        VPtr::Real(r) => (register(TemplateKey::Real, || Template::Real), vec![r]),
        VPtr::Virtual(i) => {
            let o = &heap.objects[i as usize];
            let reds = object_reds(o);
            let mut slots = vec![];
            let mut key_slots = vec![];
            let mut words = vec![];
            for r in &reds {
                match r {
                    RedBox::Const { ty, bits } => {
                        slots.push(Ok(*r));
                        key_slots.push(Ok((*ty, *bits)));
                    }
                    RedBox::Var { ty, .. } => {
                        slots.push(Err(words.len()));
                        key_slots.push(Err(*ty));
                        words.push(*r);
                    }
                }
            }
            let related = kept.map_or(vec![], |k| relations(b, o, k, &slots));
            words.extend_from_slice(segment);
            let word_tys: Vec<ValTy> = words.iter().map(RedBox::ty).collect();
            let key = |hidden| TemplateKey::Object {
                desc: o.desc as *const _ as usize,
                slots: key_slots.clone(),
                lists: o.lists.iter().map(|l| l.key_word()).collect(),
                related: related.clone(),
                segment: (segment.len(), hidden),
                clear_below,
            };
            let template = |segment| Template::Object {
                obj: o.clone(),
                slots: slots.clone(),
                words: word_tys.clone(),
                related: related.clone(),
                segment,
                clear_below,
            };
            let k = segment.len();
            let id = if k == 0 {
                register(key(false), || template(Segment::None))
            } else {
                let twin = register(key(false), || template(Segment::InMemory { words: k }));
                register(key(true), || template(Segment::Hidden { words: k, twin }))
            };
            (id, words)
        }
    };
    if b.exec {
        let mut args = vec![RedBox::u64(words.len() as u64)];
        args.extend(words);
        args.push(RedBox::u64(id));
        b.red_call(contstack::push, "cont_push", &args, &[]);
        return;
    }
    // In place: room made by a call only when the buffer is full.
    let cs = stack_address_keeping(b, contstack::LEN);
    let len = b.red_load(ValTy::U64, &cs, contstack::LEN);
    let cs = stack_address_keeping(b, contstack::CAP);
    let cap = b.red_load(ValTy::U64, &cs, contstack::CAP);
    let n = RedBox::u64(words.len() as u64 + 1);
    let need = b.red_bin(BinOp::Add, Overflow::Wrap, &len, &n);
    let full = b.red_cmp(CmpOp::Gt, &need, &cap);
    b.red_call_if(&full, contstack::reserve, "cont_reserve", &[n], &[], &[]);
    let at = word_address(b, &len);
    for (k, w) in words.iter().chain(std::iter::once(&RedBox::u64(id))).enumerate() {
        b.red_store(&at, 8 * k as i32, w);
    }
    b.red_store(&cs, contstack::LEN, &need);
    count_entries(b, 1);
}

/// The words of a frame `o` spilled below the newest frame `kept` (of the
/// same type) that are a field of `kept` plus a constant, with that constant:
/// a caller's stack base beside its callee's. When the callee returns, an
/// interpreter that truncates a shared operand stack to its frame's base
/// leaves the stack's length in memory at the callee's base, so the
/// caller's base is that length plus the same constant; a pop checks it
/// (see [`unspill_top`]), and code after a return then places the caller's
/// locals relative to the stack's end instead of choosing at run time.
fn relations(b: &ResidualBuilder, o: &VObject, kept: &VObject, slots: &[Result<RedBox, usize>]) -> Vec<(usize, i64)> {
    if !std::ptr::eq(o.desc, kept.desc) {
        return vec![];
    }
    o.fields
        .iter()
        .zip(&kept.fields)
        .zip(slots)
        .filter_map(|((r, k), s)| match (s, r.ty()) {
            (Err(w), ValTy::U64 | ValTy::I64) => Some((*w, b.difference(k, r)?)),
            _ => None,
        })
        .collect()
}

/// How many entries the current call of residual code has on the stack
/// (the frames it spilled and did not pop yet): the stack's count, kept in
/// a register (see `run::contstack`); a load dropped where nothing uses it.
pub fn entries(b: &mut ResidualBuilder) -> RedBox {
    let cs = stack_address_keeping(b, contstack::COUNT);
    b.red_load(ValTy::U64, &cs, contstack::COUNT)
}

/// Adds `by` (wrapping: -1 takes one) to the stack's count of entries.
fn count_entries(b: &mut ResidualBuilder, by: u64) {
    let n = entries(b);
    let n = b.red_bin(BinOp::Add, Overflow::Wrap, &n, &RedBox::u64(by));
    b.red_store(&stack_address(), contstack::COUNT, &n);
}

/// The address of this thread's continuation stack, a constant of the
/// code compiled in it.
fn stack_address() -> RedBox {
    RedBox::constant(ValTy::Ptr, contstack::Raw::address())
}

/// The address of this thread's continuation stack, whose field at
/// `offset` (its length, count, buffer, capacity or base) compiled code then
/// keeps in a register (a `RegisterCell`): besides the code's own loads and
/// stores, only what it calls changes them (`contstack::reserve`, and
/// `contstack::enter` and `leave` around residual code).
fn stack_address_keeping(b: &mut ResidualBuilder, offset: i32) -> RedBox {
    b.keep_in_register(RegisterCell { address: contstack::Raw::address(), offset });
    stack_address()
}

/// The address of word `index` of the continuation stack's buffer.
fn word_address(b: &mut ResidualBuilder, index: &RedBox) -> RedBox {
    let cs = stack_address_keeping(b, contstack::WORDS);
    let buf = b.red_load(ValTy::Ptr, &cs, contstack::WORDS);
    b.red_index_addr(&buf, index, 8)
}

/// Branches on `cond` to two new labels: `(true side, false side)`.
fn fork(b: &mut ResidualBuilder, cond: &RedBox) -> (Label, Label) {
    let c = b.materialize(cond);
    let (t, _) = b.new_label(&[]);
    let (f, _) = b.new_label(&[]);
    b.branch(c, (t, &[]), (f, &[]));
    (t, f)
}

/// Reads the continuation stack's top entry in place: branches on whether
/// the current call of residual code has one, makes the side where it has
/// current, and returns the other side's label and the entry's template.
pub fn peek_top(b: &mut ResidualBuilder) -> (Label, RedBox) {
    let cs = stack_address_keeping(b, contstack::LEN);
    let len = b.red_load(ValTy::U64, &cs, contstack::LEN);
    let cs = stack_address_keeping(b, contstack::BASE);
    let base = b.red_load(ValTy::U64, &cs, contstack::BASE);
    let empty = b.red_cmp(CmpOp::Eq, &len, &base);
    let (t, f) = fork(b, &empty);
    b.switch_to(f);
    let last = b.red_bin(BinOp::Sub, Overflow::Wrap, &len, &RedBox::u64(1));
    let at = word_address(b, &last);
    // The template number is the word's low half, its first bytes on the
    // little-endian targets Cranelift compiles for here: one 32-bit load.
    const _: () = assert!(contstack::TEMPLATE_BITS == 32 && cfg!(target_endian = "little"));
    let template = b.red_load(ValTy::U32, &at, 0);
    (t, b.red_cast(&template, ValTy::U64))
}

/// Pops the top entry's words (of these types), in place in compiled code.
fn pop_words(b: &mut ResidualBuilder, tys: &[ValTy]) -> Vec<RedBox> {
    if b.exec {
        return b.red_call(contstack::pop, "cont_pop", &[RedBox::u64(tys.len() as u64)], tys);
    }
    let cs = stack_address_keeping(b, contstack::LEN);
    let len = b.red_load(ValTy::U64, &cs, contstack::LEN);
    let at = b.red_bin(BinOp::Sub, Overflow::Wrap, &len, &RedBox::u64(tys.len() as u64 + 1));
    let addr = word_address(b, &at);
    let words = tys.iter().enumerate().map(|(k, t)| b.red_load(*t, &addr, 8 * k as i32)).collect();
    b.red_store(&cs, contstack::LEN, &at);
    count_entries(b, u64::MAX);
    words
}

/// Spills the virtual elements of `l` onto the continuation stack, oldest
/// first, leaving it [`VPList::Spilled`] with none; false (nothing done)
/// when one cannot be spilled or `l` is real. With `counted` (the
/// interpreter reads its saved frames in place: the newest is its current
/// frame), its length is known from the stack's count of entries
/// ([`entries`]), and its newest element stays virtual. Each spilled frame
/// takes its segment of `segments` (see [`Segment`]; none when empty): false
/// when one with a segment is not virtual, or they do not match the frames.
/// `clear_below`: nothing of the operand stack is hidden so far.
pub fn spill_list(
    l: &mut VPList,
    b: &mut ResidualBuilder,
    heap: &VHeap,
    counted: bool,
    segments: &[Vec<RedBox>],
    clear_below: bool,
) -> bool {
    let (below, counted, mut items) = match l {
        VPList::Real(_) => return false,
        VPList::Virtual(items) => (None, counted, items.clone()),
        VPList::Over(a, items) => (Some(*a), counted, items.clone()),
        VPList::Spilled { below, counted, items } => (*below, *counted, items.clone()),
    };
    let kept = if counted { items.pop() } else { None };
    if items.is_empty() {
        return false;
    }
    // A virtualizable object is written back to its backing, never moved.
    let spillable = |p: &VPtr| match heap.resolve(p) {
        VPtr::Real(_) => true,
        VPtr::Virtual(i) => heap.objects[i as usize].backing.is_none(),
    };
    if !items.iter().all(spillable) {
        return false;
    }
    if !segments.is_empty()
        && (segments.len() != items.len()
            || items.iter().zip(segments).any(|(p, s)| !s.is_empty() && matches!(heap.resolve(p), VPtr::Real(_))))
    {
        return false;
    }
    // Each frame is related to the one above it, its callee (see
    // [`relations`]): the newest kept, or the next one spilled.
    let object = |p: Option<&VPtr>| match p.map(|p| heap.resolve(p)) {
        Some(VPtr::Virtual(i)) => Some(&heap.objects[i as usize]),
        _ => None,
    };
    let last = items.len() - 1;
    for (i, p) in items.iter().enumerate() {
        let kept = if i == last { object(kept.as_ref()) } else { object(items.get(i + 1)) };
        let segment = segments.get(i).map_or(&[][..], |s| &s[..]);
        // Nothing is hidden below it unless a frame spilled before took a
        // segment.
        let clear_below = clear_below && segments.iter().take(i).all(Vec::is_empty);
        spill_one(b, heap, p, kept, segment, clear_below);
    }
    *l = VPList::Spilled { below, counted, items: kept.into_iter().collect() };
    true
}

/// Where the one list with a tail (an operand stack the calls share) is
/// among the lists of `heap`'s objects with a backing, as (object, list),
/// if there is exactly one that `pick` takes.
pub(crate) fn backed_tail(heap: &VHeap, pick: impl Fn(&VList) -> bool) -> Option<(usize, usize)> {
    let mut at = heap.objects.iter().enumerate().filter(|(_, o)| o.backing.is_some() && o.forced.is_none()).flat_map(
        |(i, o)| {
            o.lists
                .iter()
                .enumerate()
                .filter(|(_, l)| matches!(l, VList::Tail(..)) && pick(l))
                .map(move |(j, _)| (i, j))
        },
    );
    let one = at.next()?;
    at.next().is_none().then_some(one)
}

/// The one list with a hidden part (see [`Segment`]) among the lists of
/// `heap`'s objects with a backing, if there is exactly one.
fn hidden_tail(heap: &mut VHeap) -> Option<&mut VList> {
    let (o, l) = backed_tail(heap, |l| matches!(l, VList::Tail(_, _, _, Some(_))))?;
    Some(&mut heap.objects[o].lists[l])
}

/// What a pop from the continuation stack found (see [`unspill_top`]).
#[derive(Default)]
pub struct Unspilled {
    /// The popped words expected to be the operand stack's length (before
    /// its tail) plus a constant (see `relations`).
    pub related: Vec<(RedBox, i64)>,
    /// Where nothing of the operand stack is hidden any more: its `Vec`'s
    /// address and layout, and its length in memory.
    pub visible: Option<(RedBox, &'static InPlace, RedBox)>,
}

/// Pops the top entry of the continuation stack, of template `id`, and
/// makes it the one virtual element of the spilled list `l`, its object
/// rebuilt in `heap` from the popped words; a hidden segment goes back into
/// the list it came from. `None` for a template this thread does not know,
/// or a segment without its list (nothing done).
pub fn unspill_top(l: &mut VPList, b: &mut ResidualBuilder, heap: &mut VHeap, id: u64) -> Option<Unspilled> {
    let t = template(id)?;
    let VPList::Spilled { items, .. } = l else { return None };
    if let Template::Object { segment: Segment::Hidden { .. }, .. } = &*t {
        hidden_tail(heap)?;
    }
    let tys = t.word_types();
    let mut vals = pop_words(b, &tys);
    let mut rel = vec![];
    let mut visible = None;
    let p = match &*t {
        Template::Real => VPtr::Real(vals.remove(0)),
        Template::Object { obj, slots, related, segment, clear_below, .. } => {
            rel = related.iter().map(|&(w, e)| (vals[w], e)).collect();
            match *segment {
                Segment::None => {}
                Segment::InMemory { words } => vals.truncate(vals.len() - words),
                Segment::Hidden { words, .. } => {
                    let seg = vals.split_off(vals.len() - words);
                    let Some(VList::Tail(_, tail, _, Some(m))) = hidden_tail(heap) else { return None };
                    *m = b.red_bin(BinOp::Sub, Overflow::Wrap, m, &RedBox::constant(m.ty(), words as u64));
                    // What is left below the tail is a length too.
                    b.know_length(m);
                    tail.splice(0..0, seg);
                    // The words were related to the length the callee's
                    // frame began at; they are now after the segment.
                    for (_, e) in &mut rel {
                        *e = e.wrapping_add(words as i64);
                    }
                }
            }
            if *clear_below {
                if let Some(VList::Tail(p, _, how, hidden)) = hidden_tail(heap) {
                    visible = Some((*p, how.0, hidden.take().expect("a hidden part")));
                }
            }
            let reds: Vec<RedBox> = slots
                .iter()
                .map(|s| match s {
                    Ok(c) => *c,
                    Err(k) => vals[*k],
                })
                .collect();
            let mut o = obj.clone();
            o.forced = None;
            set_object_reds(&mut o, &reds);
            heap.objects.push(o);
            VPtr::Virtual(heap.objects.len() as u32 - 1)
        }
    };
    items.insert(0, p);
    Some(Unspilled { related: rel, visible })
}

/// Undoes every spill of `l` still on the continuation stack, in execute
/// mode (before handing a state over to the interpreter): its entries
/// become virtual elements again, under those it has, and the list is what
/// it was before any spill. False when an entry's template is unknown.
pub fn unspill_all(l: &mut VPList, b: &mut ResidualBuilder, heap: &mut VHeap) -> bool {
    debug_assert!(b.exec, "unspill_all runs in execute mode");
    loop {
        let VPList::Spilled { below, items, .. } = l else { return true };
        let id = b.red_call(contstack::peek, "cont_peek", &[], &[ValTy::U64])[0].as_const().unwrap_or(contstack::EMPTY);
        if id == contstack::EMPTY {
            let (below, items) = (*below, std::mem::take(items));
            *l = match below {
                Some(a) => VPList::Over(a, items),
                None => VPList::Virtual(items),
            };
            return true;
        }
        if unspill_top(l, b, heap, id).is_none() {
            return false;
        }
    }
}

/// Moves the hidden part of an operand stack back into its `Vec` (see
/// [`Segment`]): the segments of the current call's entries, oldest first,
/// appended to the `Vec` by one call of its `extend`, and each entry's
/// template replaced by its twin whose segment is in memory. `[vec,
/// in_place] -> []`, `in_place` the address of the list's [`InPlace`].
///
/// The walk goes down from the top entry, and stops at one whose segment
/// is in memory or that is sealed ([`contstack::SEALED`]): entries are
/// only ever pushed on top, so none below such an entry has a hidden
/// segment. The entries it passes that have no segment are sealed, so that
/// the next walk stops there too instead of going down the whole
/// recursion: a deep one whose frames mostly have no segment (Ackermann's)
/// would otherwise walk every entry at each call of it.
///
/// # Safety
/// `buf` holds two words: the address of a live `Vec` of the element type
/// of the `InPlace` at the second.
pub unsafe extern "C" fn materialize(buf: *mut u64) -> u64 {
    crate::run::residual::run_callback(|| {
        // SAFETY: two words, as documented.
        let (vec, how) = unsafe { (*buf, *buf.add(1)) };
        // SAFETY: a descriptor of the generated code, which lives as long
        // as the program.
        let how: &InPlace = unsafe { &*(how as usize as *const InPlace) };
        // `[vec, n]`, then the segments' words, newest first until reversed.
        let mut args = vec![vec, 0];
        contstack::with_call_words(|w| {
            let mut at = w.len();
            TEMPLATES.with(|t| {
                let t = t.borrow();
                while at > 0 && w[at - 1] & contstack::SEALED == 0 {
                    let last = w[at - 1];
                    let t = t
                        .all
                        .get(contstack::template_of(last) as usize)
                        .expect("jitgen bug: a continuation entry of an unknown template");
                    let n = t.word_count();
                    assert!(at > n, "jitgen bug: a continuation entry longer than the stack");
                    match &**t {
                        Template::Object { segment: Segment::Hidden { words, twin }, .. } => {
                            args.extend(w[at - 1 - words..at - 1].iter().rev());
                            w[at - 1] = *twin | (last ^ contstack::template_of(last));
                        }
                        Template::Object { segment: Segment::InMemory { .. }, .. } => break,
                        _ => w[at - 1] = last | contstack::SEALED,
                    }
                    at -= n + 1;
                }
            });
        });
        if args.len() == 2 {
            return Ok(());
        }
        args[2..].reverse();
        args[1] = args.len() as u64 - 2;
        // SAFETY: `extend` takes the address, a count and that many
        // elements.
        if unsafe { (how.extend)(args.as_mut_ptr()) } != 0 {
            return Err(crate::ir::ops::ErrorKind::CallbackPanicked);
        }
        Ok(())
    })
}

/// Pushes onto a list of saved frames, which spill onto the continuation
/// stack where they would grow past their limit.
impl VPList {
    /// `push(x)`: onto the virtual elements while there are at most
    /// [`MAX_VIRTUAL_PTRS`] of them; past that, over a real part, those
    /// move into memory first, and over spilled frames (or in execute mode,
    /// of a virtual list) onto the continuation stack. A real list (a field,
    /// a `&mut Vec`) is pushed onto in memory. `Err` for a virtual list that
    /// would grow past the limit while compiling (it has no memory to move
    /// into), else whether residual code called into memory or the stack
    /// (facts about it are then stale).
    pub fn push(&mut self, b: &mut ResidualBuilder, heap: &mut VHeap, desc: &VDesc, x: VPtr) -> Result<bool, ()> {
        match self {
            // Execute mode runs a hand-over to its end (`jit::specialize`):
            // a recursion deeper than that goes onto the continuation stack.
            VPList::Virtual(items) if items.len() >= MAX_VIRTUAL_PTRS && b.exec => {
                if !spill_list(self, b, heap, desc.reads_in_place, &[], false) {
                    return Err(());
                }
                self.push(b, heap, desc, x).map(|_| true)
            }
            VPList::Virtual(items) if items.len() >= MAX_VIRTUAL_PTRS => Err(()),
            VPList::Virtual(items) => {
                items.push(x);
                Ok(false)
            }
            VPList::Real(a) => {
                push_real(b, heap, desc, *a, &x);
                Ok(true)
            }
            VPList::Over(_, items) if items.len() < MAX_VIRTUAL_PTRS => {
                items.push(x);
                Ok(false)
            }
            VPList::Over(..) => {
                self.flush(b, heap, desc);
                self.push(b, heap, desc, x).map(|_| true)
            }
            // Memory holds the frames below the spilled ones, so these go
            // onto the continuation stack too (this list is the state's one
            // spilled list: no other list's entries are among its own).
            VPList::Spilled { items, .. } if items.len() < MAX_VIRTUAL_PTRS => {
                items.push(x);
                Ok(false)
            }
            VPList::Spilled { .. } => {
                if !spill_list(self, b, heap, desc.reads_in_place, &[], false) {
                    return Err(());
                }
                self.push(b, heap, desc, x).map(|_| true)
            }
        }
    }

    /// [`VPList::push`] for a compilation that has no interpreter to leave
    /// a deep recursion to (`jit::specialize`'s): a virtual list that would
    /// grow past the limit goes onto the continuation stack, as in execute
    /// mode, instead of failing. A portal's compilation declines there and
    /// compiles where the recursion is entered from memory.
    pub fn push_spilling(
        &mut self,
        b: &mut ResidualBuilder,
        heap: &mut VHeap,
        desc: &VDesc,
        x: VPtr,
    ) -> Result<bool, ()> {
        match self {
            VPList::Virtual(items) if items.len() >= MAX_VIRTUAL_PTRS => {
                if !spill_list(self, b, heap, desc.reads_in_place, &[], false) {
                    return Err(());
                }
                self.push(b, heap, desc, x).map(|_| true)
            }
            _ => self.push(b, heap, desc, x),
        }
    }
}

/// A tail's hidden part comes back from the continuation stack.
impl VList {
    /// Moves a tail into its `Vec` (a call to [`InPlace::extend`], which
    /// makes the facts about `Vec`s stale), the hidden part first (a call
    /// to [`materialize`]), and returns the `Vec`'s
    /// address; the list stays a real one with an empty tail. `None` for a
    /// list without one.
    pub fn flush_tail(&mut self, b: &mut ResidualBuilder) -> Option<RedBox> {
        let VList::Tail(p, items, how, hidden) = self else { return None };
        if hidden.take().is_some() {
            let how_addr = RedBox::constant(ValTy::Ptr, how.0 as *const InPlace as u64);
            b.red_call(materialize, "cont_materialize", &[*p, how_addr], &[]);
        }
        if !items.is_empty() {
            let mut args = vec![*p, RedBox::u64(items.len() as u64)];
            args.append(items);
            b.red_call(how.0.extend, "vec_extend", &args, &[]);
        }
        Some(*p)
    }
}
